package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/config"
	"github.com/lambdaclaw/lambdaclaw/shared/files"
	"github.com/lambdaclaw/lambdaclaw/shared/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/prompt"
	"github.com/lambdaclaw/lambdaclaw/shared/ratelimit"
	"github.com/lambdaclaw/lambdaclaw/shared/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/skill"
	"github.com/lambdaclaw/lambdaclaw/shared/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/store/memstore"
	"github.com/lambdaclaw/lambdaclaw/shared/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/webfetch"
	"github.com/lambdaclaw/lambdaclaw/shared/workspace"
)

func getenv(k string) string { return os.Getenv(k) }

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "", "listen address HOST:PORT (default $LAMBDACLAW_ADDR or 127.0.0.1:8080)")
	cfgPath := fs.String("config", "", "config file (default $LAMBDACLAW_HOME/config.yaml)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	cfg, err := config.Load(*cfgPath, getenv)
	if err != nil {
		return err
	}
	if *addr != "" {
		cfg.Addr = *addr
	}
	log := newLogger(stderr, cfg.LogLevel)

	if err := os.MkdirAll(cfg.Home, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	db, err := sqlite.Open(cfg.DBPath())
	if err != nil {
		return err
	}
	defer db.Close()

	if _, created, err := workspace.Create(cfg.Home, config.DefaultAgent); err != nil {
		return err
	} else if created {
		log.Info("created the default agent workspace", "dir", workspace.Dir(cfg.Home, config.DefaultAgent))
	}
	if err := firstKey(ctx, db, cfg, stdout); err != nil {
		return err
	}
	mem, err := newLocalMemory(ctx, cfg, db, log)
	if err != nil {
		return err
	}
	skills := skill.NewCatalog(cfg.Home)
	skills.Warn = func(err error) { log.Warn("skill skipped", "err", err) }
	agents, err := buildAgents(cfg, skills, mem.Tools()...)
	if err != nil {
		return err
	}

	events := obs.NewEmitter(log, 4096)
	defer events.Close()
	hub := agent.NewHub()
	tg, tgRunner, err := newTelegram(cfg, db, log)
	if err != nil {
		return err
	}
	var replier agent.Replier = hub
	if tg != nil {
		replier = repliers{hub, tg}
	}
	loop := &agent.Loop{Store: agent.WithEphemeral(db, memstore.New()), Agents: agents, Prompter: prompt.New(skills, skill.Env{}), Replier: replier, Events: events, Log: log}
	loop.Recorder = mem.Recorder()
	defer mem.IndexWorkspaces(agents)()
	runCtx, cancelRuns := context.WithCancel(context.Background())
	driver := agent.NewDriver(runCtx, loop, log)
	defer func() {
		cancelRuns()
		driver.Wait()
	}()
	if tg != nil {
		tgRunner.Runner = driver
		tg.Run(runCtx, cfg.Telegram.Mode == "polling")
		defer func() {
			cancelRuns()
			tg.Wait()
		}()
		log.Info("telegram channel started", "mode", cfg.Telegram.Mode, "agent", cfg.Telegram.Agent)
	}
	if n, err := driver.Recover(ctx); err != nil {
		return err
	} else if n > 0 {
		log.Info("resuming unfinished runs", "sessions", n)
	}

	gw, err := gateway.New(gateway.Config{
		Runner: driver, Events: hub, Keys: db, Runs: db, Limiter: ratelimit.New(time.Minute),
		Agents: agents.Names, MaxBodyBytes: cfg.MaxBodyBytes, Log: log,
		Identity: agent.Identity{PerChannel: cfg.Sessions.Sharing == "per_channel", Links: cfg.Sessions.Links()},
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	var handler http.Handler = gw
	if tg != nil && cfg.Telegram.Mode == "webhook" {
		handler = withTelegram(gw, tg)
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	if len(cfg.Providers) == 0 {
		log.Warn("no LLM provider configured: chat requests will fail until you set OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server) or add providers to the config file")
	}
	log.Info("lambdaclaw listening", "addr", "http://"+ln.Addr().String(), "home", cfg.Home, "agents", agents.Names(), "version", version)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Upgraded WebSocket connections are not the HTTP server's to close.
	wsDone := make(chan error, 1)
	go func() { wsDone <- gw.Shutdown(shutCtx) }()
	if err := srv.Shutdown(shutCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-wsDone; err != nil {
		log.Warn("shutdown", "error", err)
	}
	return nil
}

// firstKey creates and prints an API key when none exists yet, so that a
// new user can call the API right away.
func firstKey(ctx context.Context, db *sqlite.DB, cfg *config.Config, stdout io.Writer) error {
	ks, err := db.ListKeys(ctx)
	if err != nil || len(ks) > 0 {
		return err
	}
	key, err := createKey(ctx, db, "first", nil, tool.Supervised.String(), cfg.DefaultRatePerMinute)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "API key (shown once): %s\n", key)
	return nil
}

// buildAgents makes one agent per workspace directory and per agent named
// in the config file, each with its provider chain and tools: the
// built-ins and extra (the memory tools), as the agent's tools list
// selects them.
func buildAgents(cfg *config.Config, skills *skill.Catalog, extra ...tool.Tool) (agent.Registry, error) {
	providers := map[string]llm.Provider{}
	for _, p := range cfg.Providers {
		op, err := newProvider(p)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", p.Name, err)
		}
		providers[p.Name] = llm.WithBreaker(llm.WithRetry(op, *p.Retries+1, 500*time.Millisecond, 10*time.Second), 5, 30*time.Second)
	}
	names, err := workspace.List(cfg.Home)
	if err != nil {
		return nil, err
	}
	for n := range cfg.Agents {
		if err := workspace.ValidName(n); err != nil {
			return nil, fmt.Errorf("config: agent %q: %w", n, err)
		}
		if _, _, err := workspace.Create(cfg.Home, n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	fetch, err := webfetch.New(webfetch.Config{})
	if err != nil {
		return nil, err
	}
	builtins := []tool.Tool{files.ReadFile(), files.WriteFile(), files.ListDir(), fetch, workspace.MemoryTool(), skill.LoadTool(skills, skill.Env{})}
	builtins = append(builtins, extra...)

	reg := agent.Registry{}
	for _, n := range names {
		ac := cfg.Agents[n]
		var chain []llm.Provider
		if len(ac.Providers) == 0 {
			for _, p := range cfg.Providers {
				chain = append(chain, providers[p.Name])
			}
		} else {
			for _, p := range ac.Providers {
				chain = append(chain, providers[p])
			}
		}
		tools, err := selectTools(builtins, ac.Tools)
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", n, err)
		}
		threshold, target, flush := ac.Compaction()
		reg[n] = &agent.Agent{
			Name: n, Provider: llm.NewChain(chain...), Model: ac.Model, Tools: tools,
			MaxToolIterations: ac.MaxToolIterations, Workspace: workspace.Dir(cfg.Home, n),
			Compaction: agent.Compaction{Threshold: threshold, Target: target, Flush: flush},
		}
	}
	return reg, nil
}

func selectTools(all []tool.Tool, names []string) (*tool.Registry, error) {
	if len(names) == 0 {
		return tool.NewRegistry(all...)
	}
	byName := map[string]tool.Tool{}
	for _, t := range all {
		byName[t.Definition().Name] = t
	}
	var picked []tool.Tool
	for _, n := range names {
		t, ok := byName[n]
		if !ok {
			known := make([]string, 0, len(all))
			for _, t := range all {
				known = append(known, t.Definition().Name)
			}
			return nil, fmt.Errorf("unknown tool %q (known: %s)", n, strings.Join(known, ", "))
		}
		picked = append(picked, t)
	}
	return tool.NewRegistry(picked...)
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil || level == "" {
		l = slog.LevelInfo
	}
	return slog.New(scrub.NewHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})))
}
