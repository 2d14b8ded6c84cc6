package ecs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
)

// defaultPath is the commands' PATH unless the runner names another.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// commandEnv is the whole environment of a command: nothing of the
// task's (its credentials endpoint, the bucket) reaches it.
func commandEnv(home, pathVar string) []string {
	if pathVar == "" {
		pathVar = defaultPath
	}
	return []string{"PATH=" + pathVar, "HOME=" + home, "LANG=C.UTF-8"}
}

// waitDelay is how long a command's output is still read after it ended,
// for processes it left that hold its pipes.
const waitDelay = 2 * time.Second

// run runs command with /bin/sh -c in dir, with PATH pathVar, in a
// process group of its own,
// under the limits: it stops the group at the wall time or when stdout or
// stderr is over the output limit, and kills what the command left
// running when it ends.
func run(ctx context.Context, dir, command string, wall time.Duration, l sandbox.Limits, pathVar string) result {
	var (
		mu  sync.Mutex
		cut sandbox.Cut
		pid int
	)
	stop := func(why sandbox.Cut) {
		mu.Lock()
		defer mu.Unlock()
		if cut == sandbox.NotCut {
			cut = why
		}
		if pid > 0 {
			syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
	stdout := &capped{limit: l.Output, over: func() { stop(sandbox.Output) }}
	stderr := &capped{limit: l.Output, over: func() { stop(sandbox.Output) }}
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir, cmd.Env = dir, commandEnv(dir, pathVar)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = waitDelay
	start := time.Now()
	mu.Lock()
	err := cmd.Start()
	if err == nil {
		pid = cmd.Process.Pid
		err = limit(pid, l)
		if err != nil {
			syscall.Kill(-pid, syscall.SIGKILL)
			cmd.Wait()
		}
	}
	mu.Unlock()
	if err != nil {
		return result{ExitCode: -1, Error: fmt.Sprintf("start the command: %v", err)}
	}
	timer := time.AfterFunc(wall, func() { stop(sandbox.WallTime) })
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			stop(sandbox.WallTime)
		case <-done:
		}
	}()
	err = cmd.Wait()
	close(done)
	timer.Stop()
	res := result{Stdout: stdout.String(), Stderr: stderr.String(), Duration: time.Since(start)}
	mu.Lock()
	syscall.Kill(-pid, syscall.SIGKILL) // what it left behind
	pid, res.Cut = 0, cut
	mu.Unlock()
	sweep()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.ExitCode = 128 + int(ws.Signal())
			if ws.Signal() == syscall.SIGXFSZ && res.Cut == sandbox.NotCut {
				res.Cut = sandbox.FileSize
			}
		}
	case errors.Is(err, exec.ErrWaitDelay):
		// The command ended; what it left holding its output was killed.
	default:
		res.ExitCode = -1
	}
	return res
}

// capped keeps the first limit bytes written to it and calls over, once,
// when more come.
type capped struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	limit  int64
	over   func()
	called bool
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	room := c.limit - int64(c.buf.Len())
	if int64(len(p)) <= room {
		c.buf.Write(p)
		c.mu.Unlock()
		return len(p), nil
	}
	c.buf.Write(p[:max(room, 0)])
	first := !c.called
	c.called = true
	c.mu.Unlock()
	if first {
		c.over()
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}
