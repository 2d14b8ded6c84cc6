//go:build !linux

package ecs

import (
	"fmt"
	"runtime"

	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
)

// limit refuses to start a command: the runner sets Linux's resource
// limits, and runs only in the sandbox task (linux/arm64). Other systems
// build this package for its Backend, which runs no commands itself.
func limit(int, sandbox.Limits) error {
	return fmt.Errorf("the sandbox runner runs on Linux only, not %s", runtime.GOOS)
}

// sweep has nothing to sweep where no command starts.
func sweep() {}
