package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/prometheus"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/a2a"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/mcpserver"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/ratelimit"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/telegram"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/wsproto"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/media"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/prompt"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/core/skill"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/memstore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
	filestool "github.com/lambdaclaw/lambdaclaw/shared/tools/files"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentset"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/channelset"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/setup"
)

func getenv(k string) string { return os.Getenv(k) }

func serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", "", "Run the gateway: the OpenAI-compatible API, the WebSocket endpoint, the MCP server (/mcp) and,\nwhen configured, the messaging channels (Telegram, WhatsApp, Discord, Slack). On first start it creates the default agent and prints an API key;\nat a terminal, with no provider and no config file, it first asks for a provider, a model and a key.\nOne server a home: serve holds $LAMBDACLAW_HOME/serve.lock while it runs, and a second one on the same home\nor port stops at once, before it opens anything.", stderr)
	addr := fs.String("addr", "", "listen address HOST:PORT (default $LAMBDACLAW_ADDR or 127.0.0.1:8080)")
	loadConfig := fs.withConfig()
	if _, err := fs.parse(args, 0, 0, stdout); err != nil {
		return err
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	if needsSetup(cfg) {
		if cfg, err = firstRun(ctx, cfg, confirmInput, stdout, loadConfig); err != nil {
			return err
		}
	}
	if *addr != "" {
		cfg.Addr = *addr
	}
	if err := checkListenAddr(cfg.Addr); err != nil {
		return err
	}
	if cfg.Telegram.Enabled || cfg.Channels.WhatsApp.Enabled || cfg.Channels.Discord.Enabled || cfg.Channels.Slack.Enabled {
		names, err := buildAgentNames(cfg)
		if err != nil {
			return err
		}
		if cfg.Telegram.Enabled && !slices.Contains(names, cfg.Telegram.Agent) {
			return fmt.Errorf("config: telegram.agent: %w", noAgent(cfg.Telegram.Agent, names))
		}
		if wa := cfg.Channels.WhatsApp; wa.Enabled && !slices.Contains(names, wa.Agent) {
			return fmt.Errorf("config: channels.whatsapp.agent: %w", noAgent(wa.Agent, names))
		}
		if cfg.Channels.Discord.Enabled && !slices.Contains(names, cfg.Channels.Discord.Agent) {
			return fmt.Errorf("config: channels.discord.agent: %w", noAgent(cfg.Channels.Discord.Agent, names))
		}
		if cfg.Channels.Slack.Enabled && !slices.Contains(names, cfg.Channels.Slack.Agent) {
			return fmt.Errorf("config: channels.slack.agent: %w", noAgent(cfg.Channels.Slack.Agent, names))
		}
	}
	beats, err := setup.Heartbeats(cfg, cfg.Telegram.Enabled)
	if err != nil {
		return err
	}
	log := newLogger(stderr, cfg.LogLevel)

	if err := os.MkdirAll(cfg.Home, 0o700); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	// Before anything is opened: the port is this server's, and so is the
	// home (a second serve on it stops here).
	ln, err := listen(cfg.Addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	unlock, err := lockHome(cfg.Home)
	if err != nil {
		return err
	}
	defer unlock()
	// The workspaces are made while the database opens: both wait mostly
	// for the disk.
	home := osroot.New(cfg.Home)
	var making sync.WaitGroup
	var madeErr error
	making.Go(func() { madeErr = agentset.CreateWorkspaces(ctx, cfg, home, log, config.DefaultAgent) })
	defer making.Wait()
	db, err := sqlite.Open(cfg.DBPath())
	if err != nil {
		return err
	}
	defer db.Close()

	// The first key is made while the rest is built: its queries open
	// the database's first connections, a reader and the writer, each of
	// which parses the schema.
	var keying sync.WaitGroup
	var keyErr error
	keying.Go(func() { keyErr = firstKey(ctx, db, cfg, stdout) })
	defer keying.Wait()
	emb, err := newEmbedder(ctx, cfg.Embeddings)
	if err != nil {
		return err
	}
	mem, err := newLocalMemory(cfg, db, emb, log)
	if err != nil {
		return err
	}
	skills := skill.NewCatalog(cfg.Home)
	skills.Warn = func(err error) { log.Warn("skill skipped", "err", err) }
	jobs := db.Schedule(nil)
	quota, err := agentset.Quota(cfg)
	if err != nil {
		return err
	}
	tools, err := agentset.Tools(cfg, skills, quota, jobs)
	if err != nil {
		return err
	}
	// The files of conversations (what people send, what agents send with
	// send_file) are kept under the home's media/, history referring to
	// them; send_file's are delivered by the channels that send files
	// (senders, filled in as they are built).
	lim := cfg.Limits.Media.Chat()
	files := &media.Store{FS: osroot.New(cfg.Home), MaxBytes: int64(max(lim.Of(chat.PartImage), lim.Of(chat.PartAudio), lim.Of(chat.PartFile)))}
	senders := filestool.FileSenders{}
	tools = append(tools, filestool.SendFile(files, senders))
	exec := localExec(cfg, log, quota)
	if exec != nil {
		defer exec.Close()
		tools = append(tools, exec)
	}
	remote, err := setup.RemoteA2A(ctx, cfg, log)
	if err != nil {
		return err
	}
	tools = append(tools, remote...)
	builder, err := setup.NewBuilder(ctx, cfg, home, append(tools, mem.Tools()...), sdkAWS)
	if err != nil {
		return err
	}
	startMCP, stopMCP, err := serveMCPServers(cfg, builder, log)
	if err != nil {
		return err
	}
	defer stopMCP()
	created := func(name string) (time.Time, error) { return workspace.Created(cfg.Home, name) }
	if making.Wait(); madeErr != nil {
		return madeErr
	}
	agents, err := agentset.NewWorkspaces(home, builder.Build, created, log)
	if err != nil {
		return err
	}

	metrics := prometheus.New()
	events := obs.NewEmitter(log, 4096, metrics)
	defer events.Close()
	hub := agent.NewHub()
	media, err := setup.Media(cfg)
	if err != nil {
		return err
	}
	tgReplier, err := newTelegramReplier(cfg, db, media, log)
	if err != nil {
		return err
	}
	replier := agent.Router{gateway.Channel: hub, wsproto.Channel: hub}
	if tgReplier != nil {
		replier[telegram.ChannelName] = tgReplier
		senders[telegram.ChannelName] = tgReplier
	}
	identity := agent.Identity{PerChannel: cfg.Sessions.Sharing == "per_channel", Links: cfg.Sessions.Links()}
	chans, err := channelset.Build(ctx, &cfg.Channels, channelset.Env{Store: db.Channel, Identity: identity, Media: media, Log: log})
	if err != nil {
		return err
	}
	for _, c := range chans {
		replier[c.Name] = c.Replier
		senders[c.Name] = c.Replier
	}
	checkIns, err := agentset.CheckIns(cfg, jobs, log)
	if err != nil {
		return err
	}
	if tgReplier != nil {
		checkIns.Deliver[schedule.DeliverTelegram] = schedule.Via(tgReplier, telegram.ChannelName)
	}
	replier[schedule.Channel] = checkIns
	prompter := prompt.New(skills, skill.Env{})
	prompter.Warn = prompt.EventWarn(events.Emit)
	loop := &agent.Loop{Store: agent.WithEphemeral(db, memstore.New()), Agents: agents, Prompter: prompter, Replier: replier, Events: events, Log: log,
		Limits:     agent.Limits{MaxReplyBytes: cfg.Limits.MaxReplyBytes, MaxToolArgsBytes: cfg.Limits.MaxToolArgsBytes, MaxToolResultBytes: cfg.Limits.MaxToolResultBytes},
		Delegation: agent.DelegationLimits{MaxDepth: cfg.Limits.DelegationDepth, MaxFanOut: cfg.Limits.DelegationFanOut, Timeout: time.Duration(cfg.Limits.DelegationTimeout)}}
	loop.Recorder = mem.Recorder()
	var tgNotices agent.Replier
	if tgReplier != nil {
		tgNotices = tgReplier
	}
	if loop.Budgets, err = agentset.Budgets(cfg, db, tgNotices, telegram.ChannelName); err != nil {
		return err
	}
	loop.Media = files
	runCtx, cancelRuns := context.WithCancel(context.Background())
	driver := agent.NewDriver(runCtx, loop, log)
	loop.Lanes = driver // delegations' child runs
	defer func() {
		cancelRuns()
		driver.Wait()
	}()
	var tg *telegram.Channel
	if tgReplier != nil {
		if tg, err = telegram.NewChannel(tgReplier, driver); err != nil {
			return err
		}
		tg.Run(runCtx, cfg.Telegram.Mode == "polling")
		defer func() {
			cancelRuns()
			tg.Wait()
		}()
		log.Info("telegram channel started", "mode", cfg.Telegram.Mode, "agent", cfg.Telegram.Agent)
	}
	routes := map[string]http.Handler{}
	for _, c := range chans {
		if err := c.Start(driver); err != nil {
			return err
		}
		c.Engine.Run(runCtx)
		defer func() {
			cancelRuns()
			c.Engine.Wait()
		}()
		maps.Copy(routes, c.Routes)
		log.Info(c.Name+" channel started", "agent", c.Agent, "routes", slices.Collect(maps.Keys(c.Routes)))
	}
	mcpSrv, err := mcpserver.New(mcpserver.Config{
		Runner: driver, Events: hub, Sessions: db, Agents: agents, Names: agents.Names, Identity: identity,
		MaxBodyBytes: cfg.MaxBodyBytes, Version: currentBuild().Version, Log: log,
	})
	if err != nil {
		return err
	}
	a2aSrv, err := a2a.New(a2a.Config{
		Runner: driver, Events: hub, Outcomes: loop, Stopper: driver, HasAgent: agents.Has, Names: agents.Names,
		DefaultAgent: config.DefaultAgent, Identity: identity, Skills: agentset.SkillsOf(agents, skills),
		MaxBodyBytes: cfg.MaxBodyBytes, Version: currentBuild().Version, Log: log,
	})
	if err != nil {
		return err
	}
	cons, err := newConsole(cfg, db, agents, skills, jobs, mem, files, loop.Budgets, log)
	if err != nil {
		return err
	}
	var components func() map[string]string
	if exec != nil {
		components = func() map[string]string { return map[string]string{"sandbox": exec.Status()} }
	}
	gw, err := gateway.New(gateway.Config{
		Components: components,
		Console:    cons,
		Runner:     driver, Events: hub, Keys: db, Runs: db, Limiter: ratelimit.New(time.Minute),
		Agents: agents.Names, HasAgent: agents.Has, Created: agents.Created, Embedder: emb, MaxBodyBytes: cfg.MaxBodyBytes, Log: log,
		Responses: db, Threads: loop, Metrics: metrics.Handler(),
		MaxConcurrentPerKey: cfg.Server.MaxConcurrentPerKey, MaxWebSocketsPerKey: cfg.Server.MaxWebSocketsPerKey,
		Identity: identity, MCP: mcpSrv, A2A: a2aSrv, Media: cfg.Limits.Media.Chat(),
	})
	if err != nil {
		return err
	}
	// The gateway delivers check-ins to WebSocket users; set before any
	// run can end.
	checkIns.Deliver[schedule.DeliverWS] = gw.CheckIns()
	if keying.Wait(); keyErr != nil {
		return keyErr
	}
	if n, err := driver.Recover(ctx); err != nil {
		return err
	} else if n > 0 {
		log.Info("resuming unfinished runs", "sessions", n)
	}
	// Scheduled check-ins: the heartbeats' jobs follow the configuration;
	// the poller claims due firings and starts them through the driver,
	// after the unfinished runs are back in their lanes.
	if err := schedule.SyncHeartbeats(ctx, jobs, beats); err != nil {
		return err
	}
	poller := &schedule.Poller{Timers: jobs, Runner: &schedule.Runner{Engine: jobs, Loop: loop, Lane: driver}, Log: log}

	if tg != nil && cfg.Telegram.Mode == "webhook" {
		routes[config.TelegramWebhookPath] = tg
	}
	srv := newServer(withRoutes(gw, routes), cfg.Server)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	// Said once it serves: a log line is scrubbed, which is work of its own.
	if len(cfg.Providers) == 0 {
		log.Warn("no LLM provider configured: chat requests will fail until you set OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server) or add providers to the config file")
	}
	mem.logState()
	log.Info("lambdaclaw listening", "addr", "http://"+ln.Addr().String(), "home", cfg.Home, "agents", agents.Names(), "version", currentBuild().Version)
	fmt.Fprintf(stdout, "Serving on http://%s (the web console is its / page; data in %s). Ctrl-C stops.\n", ln.Addr(), cfg.Home)
	// What serving does not need starts once the server listens: the
	// sandbox's probe (the exec tool waits for it), eager MCP servers, the
	// schedule's poller and the indexing of the workspaces' memory files.
	var starting sync.WaitGroup
	defer func() {
		cancelRuns()
		stopMCP()
		starting.Wait()
	}()
	if exec != nil {
		starting.Go(func() { exec.probe(runCtx) })
	}
	starting.Go(startMCP)
	starting.Go(func() { poller.Run(runCtx) })
	for _, c := range chans {
		if c.Receive != nil {
			starting.Go(func() {
				if err := c.Receive(runCtx); err != nil && runCtx.Err() == nil {
					log.Error(c.Name+" receiver stopped", "error", err)
				}
			})
		}
	}
	defer mem.IndexWorkspaces(agents.Current())()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Upgraded WebSocket connections are not the HTTP server's to close,
	// nor are the streams of MCP sessions.
	mcpSrv.Close()
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

// newServer returns the HTTP server, bounded against slow clients.
// ReadTimeout covers a request's headers and body only: net/http clears the
// read deadline once the body has been read and when a connection is
// hijacked, so it cuts neither a streamed (SSE) answer nor a WebSocket.
// There is no WriteTimeout, which would cut both.
func newServer(h http.Handler, c config.Server) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: time.Duration(c.ReadHeaderTimeout),
		ReadTimeout:       time.Duration(c.ReadTimeout),
		IdleTimeout:       time.Duration(c.IdleTimeout),
	}
}

// withRoutes mounts the channels' webhook routes beside the gateway's.
func withRoutes(gw http.Handler, routes map[string]http.Handler) http.Handler {
	if len(routes) == 0 {
		return gw
	}
	mux := http.NewServeMux()
	for path, h := range routes {
		mux.Handle(path, h)
	}
	mux.Handle("/", gw)
	return mux
}

// firstKey creates and prints an API key when none exists yet, so that a
// new user can call the API right away.
func firstKey(ctx context.Context, db *sqlite.DB, cfg *config.Config, stdout io.Writer) error {
	ks, err := db.ListKeys(ctx)
	if err != nil || len(ks) > 0 {
		return err
	}
	key, _, err := apikey.Create(ctx, db, store.APIKey{Name: "first", Autonomy: tool.Supervised.String(), RatePerMinute: cfg.DefaultRatePerMinute, Admin: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "API key (shown once): %s\n", key)
	return nil
}

// listenFD is the first descriptor systemd passes (SD_LISTEN_FDS_START).
const listenFD = 3

// listen returns the socket passed by systemd socket activation
// (LISTEN_FDS=1, LISTEN_PID naming this process), which keeps its port
// across restarts, or else a new listener on addr.
func listen(addr string) (net.Listener, error) {
	if os.Getenv("LISTEN_PID") != strconv.Itoa(os.Getpid()) {
		ln, err := net.Listen("tcp", addr)
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("listen on %s: the address is in use, by another server: stop it, or pass --addr HOST:PORT (or LAMBDACLAW_ADDR)", addr)
		}
		if err != nil {
			return nil, fmt.Errorf("listen: %w", err)
		}
		return ln, nil
	}
	n := os.Getenv("LISTEN_FDS")
	for _, k := range []string{"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"} {
		os.Unsetenv(k) // not for the processes the tools start
	}
	if n != "1" {
		return nil, fmt.Errorf("socket activation: LISTEN_FDS=%q, want one socket", n)
	}
	f := os.NewFile(listenFD, "systemd socket")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("socket activation: %w", err)
	}
	return ln, nil
}

// checkListenAddr checks a listen address before anything is created.
func checkListenAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = net.LookupPort("tcp", port)
	}
	if err != nil {
		return fmt.Errorf("listen address %q: want HOST:PORT, such as 127.0.0.1:8080: %w", addr, err)
	}
	return nil
}

func newLogger(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil || level == "" {
		l = slog.LevelInfo
	}
	return slog.New(scrub.NewHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})))
}
