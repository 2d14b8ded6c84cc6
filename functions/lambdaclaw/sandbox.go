package main

import (
	"context"
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
// (bubblewrap unless sandbox.backend says otherwise) and the function that
// stops it, or no tool when the backend is none or does not work, which
// it logs with the reason: exec never runs unsandboxed.
func localExec(ctx context.Context, cfg *config.Config, log *slog.Logger, quota *workspace.Quota) (tool.Tool, func()) {
	none := func() {}
	switch cfg.Sandbox.Backend {
	case config.SandboxNone:
		log.Info("exec tool not offered: sandbox.backend is none")
		return nil, none
	case config.SandboxFargate:
		log.Warn("exec tool not offered: sandbox.backend fargate runs on AWS only; use bubblewrap locally")
		return nil, none
	}
	backend, err := newBubblewrap(cfg.Home, time.Duration(cfg.Sandbox.Idle), log, func(agent string) (string, error) {
		if err := workspace.ValidName(agent); err != nil {
			return "", err
		}
		return filepath.Join(cfg.Home, "agents", agent), nil
	})
	if err != nil {
		log.Warn("exec tool not offered", "reason", err.Error())
		return nil, none
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := backend.Probe(pctx); err != nil {
		backend.Close()
		log.Warn("exec tool not offered", "reason", err.Error())
		return nil, none
	}
	t, err := setup.ExecTool(cfg, backend, quota)
	if err != nil {
		backend.Close()
		log.Warn("exec tool not offered", "reason", err.Error())
		return nil, none
	}
	log.Info("exec tool offered", "sandbox", config.SandboxBubblewrap)
	return t, func() { backend.Close() }
}
