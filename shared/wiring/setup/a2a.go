package setup

import (
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/remotea2a"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/tools/webfetch"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// CardTimeout bounds reading the remote A2A agents' cards at startup.
const CardTimeout = 5 * time.Second

// RemoteA2A returns the tools of the configured remote A2A agents
// (a2a.agents), <name>__ask each, sorted by name. Their cards are read
// concurrently, within CardTimeout; an agent whose card could not be read
// is logged, offered all the same, and its card read at its first call.
func RemoteA2A(ctx context.Context, cfg *config.Config, log *slog.Logger) ([]tool.Tool, error) {
	if len(cfg.A2A.Agents) == 0 {
		return nil, nil
	}
	nets, err := cfg.Outbound.Networks()
	if err != nil {
		return nil, err
	}
	public, err := webfetch.Client(&webfetch.Config{Allow: webfetch.AllowNetworks(nets), Timeout: cfg.A2A.Timeout()})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, CardTimeout)
	defer cancel()
	names := slices.Sorted(maps.Keys(cfg.A2A.Agents))
	tools := make([]tool.Tool, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		ag := cfg.A2A.Agents[name]
		wg.Go(func() {
			t, err := remotea2a.New(ctx, remotea2a.Config{
				Name: name, CardURL: ag.URL, Token: ag.Token.Value(), Header: ag.Header, ReadOnly: ag.ReadOnly,
				Timeout: cfg.A2A.Timeout(), Public: public,
			})
			if t != nil {
				tools[i] = t
			}
			errs[i] = err
		})
	}
	wg.Wait()
	var out []tool.Tool
	for i, t := range tools {
		if t == nil {
			return nil, errs[i]
		}
		if errs[i] != nil {
			log.Warn("remote A2A agent: its card could not be read; it is offered, and its card read at its first call", "agent", names[i], "error", errs[i])
		}
		out = append(out, t)
	}
	return out, nil
}
