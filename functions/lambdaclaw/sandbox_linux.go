package main

import (
	"io"
	"log/slog"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/bwrap"
)

// What this program also is inside a bubblewrap sandbox: the tool
// bridge's client, and the sandbox's first program, which sets its limits.
const (
	bridgeClient = bwrap.ClientName
	sandboxInit  = bwrap.InitCommand
)

// newBubblewrap makes the bubblewrap backend with its data under home:
// workspace gives an agent's workspace directory.
func newBubblewrap(home string, idle time.Duration, log *slog.Logger, workspace func(agent string) (string, error)) (bubblewrap, error) {
	return bwrap.New(bwrap.Config{Home: home, Idle: idle, Log: log, Workspace: workspace})
}

// runSandboxInit is the sandbox's first program (bwrap.Init).
func runSandboxInit(args []string, stderr io.Writer) error { return bwrap.Init(args, stderr) }
