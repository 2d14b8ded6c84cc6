//go:build !linux

package main

import (
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
)

// The names this program answers to in a sandbox (sandbox_linux.go);
// there are no sandboxes here.
const (
	bridgeClient = "lambdaclaw-tool"
	sandboxInit  = "sandbox-init"
)

// newBubblewrap says why there is no sandbox: bubblewrap is Linux's, so
// serve offers no exec tool on this system.
func newBubblewrap(string, time.Duration, *slog.Logger, func(string) (string, error)) (bubblewrap, error) {
	return nil, fmt.Errorf("%w: bubblewrap sandboxes need Linux, this is %s", sandbox.ErrUnavailable, runtime.GOOS)
}

// runSandboxInit refuses: no sandbox starts it here.
func runSandboxInit([]string, io.Writer) error {
	return fmt.Errorf("%s runs inside a bubblewrap sandbox, on Linux only", sandboxInit)
}
