package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/setup"
)

// bubblewrap is the local sandbox backend (shared/adapters/bwrap on
// Linux; newBubblewrap says why not elsewhere).
type bubblewrap interface {
	sandbox.Backend
	Close() error
}

// localExec returns the exec tool on the configured local sandbox backend
// (bubblewrap unless sandbox.backend says otherwise), or nil when the
// backend is none or cannot be made, which it logs with the reason. The
// backend is probed by the tool's probe, which serve runs once it
// listens: until it ends the tool is offered and a call waits for it; if
// it fails the tool is no longer offered, and a call is refused with the
// reason. exec never runs unsandboxed.
func localExec(cfg *config.Config, log *slog.Logger, quota *workspace.Quota) *probedTool {
	switch cfg.Sandbox.Backend {
	case config.SandboxNone:
		log.Info("exec tool not offered: sandbox.backend is none")
		return nil
	case config.SandboxFargate:
		log.Warn("exec tool not offered: sandbox.backend fargate runs on AWS only; use bubblewrap locally")
		return nil
	}
	backend, err := newBubblewrap(cfg.Home, time.Duration(cfg.Sandbox.Idle), log, func(agent string) (string, error) {
		if err := workspace.ValidName(agent); err != nil {
			return "", err
		}
		return filepath.Join(cfg.Home, "agents", agent), nil
	})
	if err != nil {
		log.Warn("exec tool not offered", "reason", err.Error())
		return nil
	}
	t, err := setup.ExecTool(cfg, backend, quota)
	if err != nil {
		backend.Close()
		log.Warn("exec tool not offered", "reason", err.Error())
		return nil
	}
	return &probedTool{Tool: t, backend: backend, log: log, done: make(chan struct{})}
}

// probedTool is a tool on a sandbox backend that is probed after it was
// registered (tool.Availability).
type probedTool struct {
	tool.Tool
	backend bubblewrap
	log     *slog.Logger
	done    chan struct{} // closed when the probe ended; err is set then
	err     error
}

// probe checks that the backend can make a sandbox, within 30 s.
func (t *probedTool) probe(ctx context.Context) {
	defer close(t.done)
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if t.err = t.backend.Probe(pctx); t.err != nil {
		t.log.Warn("exec tool not offered", "reason", t.err.Error())
		return
	}
	t.log.Info("exec tool offered", "sandbox", config.SandboxBubblewrap)
}

// Unavailable implements tool.Availability: nil while the probe runs.
func (t *probedTool) Unavailable() error {
	select {
	case <-t.done:
		return t.err
	default:
		return nil
	}
}

// Status is the sandbox's state for /health: starting, ok or unavailable.
func (t *probedTool) Status() string {
	select {
	case <-t.done:
		if t.err != nil {
			return "unavailable"
		}
		return "ok"
	default:
		return "starting"
	}
}

// Call waits for the probe, then runs the call if the backend works.
func (t *probedTool) Call(ctx context.Context, env tool.Env, args json.RawMessage) (string, error) {
	select {
	case <-t.done:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if t.err != nil {
		return "", fmt.Errorf("exec is not available here: %w", t.err)
	}
	return t.Tool.Call(ctx, env, args)
}

// Close stops the backend.
func (t *probedTool) Close() { t.backend.Close() }
