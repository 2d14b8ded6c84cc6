package ecs

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
)

// threadRoom is what the process limit leaves for the runner's own
// threads: RLIMIT_NPROC counts every thread of the user, the runner's too.
const threadRoom = 64

// limit sets the resource limits of the command's shell, pid, just
// started: the memory it may write (RLIMIT_DATA, as locally), the size of a file it writes and how many
// processes its user may have. Memory and CPU as a whole are the task's
// (its task definition).
func limit(pid int, l sandbox.Limits) error {
	for _, rl := range []struct {
		res int
		n   uint64
	}{
		{unix.RLIMIT_DATA, uint64(l.Memory)},
		{unix.RLIMIT_FSIZE, uint64(l.FileSize)},
		{unix.RLIMIT_NPROC, uint64(l.Pids + threadRoom)},
	} {
		if err := unix.Prlimit(pid, rl.res, &unix.Rlimit{Cur: rl.n, Max: rl.n}, nil); err != nil {
			return fmt.Errorf("prlimit %d: %w", rl.res, err)
		}
	}
	return nil
}

// sweep kills what the commands left running, even what left their
// process group, and reaps it, when the runner is its container's init
// (PID 1, as in the sandbox task, which has no other init: an init
// process's /proc/1/environ would show the commands the task's credentials
// endpoint, where the non-dumpable runner's does not). There every process
// the runner may signal is a command's; kill(-1) spares the runner itself.
// Elsewhere (tests) the process group's kill is all there is.
func sweep() {
	if os.Getpid() != 1 {
		return
	}
	unix.Kill(-1, unix.SIGKILL)
	for {
		_, err := unix.Wait4(-1, nil, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil { // ECHILD: none left
			return
		}
	}
}
