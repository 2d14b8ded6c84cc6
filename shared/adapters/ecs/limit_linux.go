package ecs

import (
	"fmt"

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
