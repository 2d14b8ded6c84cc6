// Package sandbox is the port of sandboxed code execution (seed 004,
// "Sandbox Execution"): a Backend runs one shell command in an isolated
// environment that belongs to an owner's session, under Limits, with the
// agent's workspace at /workspace and a Bridge through which a script calls
// the agent's tools.
//
// A sandbox belongs to one owner and session: a backend never lets another
// owner's session reuse or see it (its /tmp, its processes), even under the
// same session id. Backends: adapters/bwrap (bubblewrap, local) and the
// Fargate backend of functions/sandbox (AWS).
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
)

// Backend runs commands in sandboxes.
type Backend interface {
	// Exec runs req.Command with /bin/sh -c in the sandbox of req's owner
	// and session, creating it or reusing a warm one. A command that runs
	// and ends, even cut by a limit, is a Result with a nil error; an error
	// means the sandbox itself failed and nothing (more) ran.
	Exec(ctx context.Context, req Request) (Result, error)
	// Probe checks that the backend can run a command at all, at startup;
	// an error (wrapping ErrUnavailable) says why not, and exec is then
	// not offered.
	Probe(ctx context.Context) error
}

// Bounded is a Backend that takes longer than a command's wall time:
// one that starts a remote worker and copies the workspace to and from it.
type Bounded interface {
	// Bound returns the longest Exec takes for a command that may run
	// for wall.
	Bound(wall time.Duration) time.Duration
}

// Request is one command to run.
type Request struct {
	// Owner, Agent and SessionID name the sandbox: one per owner and
	// session, whose workspace is Agent's.
	Owner     string
	Agent     string
	SessionID string
	// Command is run as /bin/sh -c Command, in /workspace.
	Command string
	// Timeout bounds this command's wall time; zero or more than
	// Limits.WallTime means Limits.WallTime.
	Timeout time.Duration
	Limits  Limits
	// Workspace is the agent's workspace, read-write at /workspace: a
	// backend gives the command a copy of its regular files and writes
	// back what the command changed (never links), within Limits.Disk
	// and Quota.
	Workspace filestore.FS
	// Quota, when positive, is the most the workspace may hold (the sum
	// of its regular files' sizes): what the command adds to it counts
	// against the quota, and what would cross it is not written back.
	Quota int64
	// Bridge serves the script's tool calls; nil offers none.
	Bridge Bridge
}

// Bridge is how a script in the sandbox reaches the agent's tools. Calls go
// through the same policy and scrubbing as the model's, and are evented in
// the run.
type Bridge interface {
	// Tools describes the tools a script may call, sorted by name.
	Tools() []chat.ToolDef
	// Call runs one tool with JSON arguments and returns its (scrubbed)
	// output; an error is the refusal or failure to show the script.
	Call(ctx context.Context, name string, args json.RawMessage) (string, error)
}

// Limits bound one command. Zero fields take DefaultLimits' values when
// passed through WithDefaults.
type Limits struct {
	// Memory is the memory each process may write (its heap and private
	// mappings; RLIMIT_DATA locally), in bytes.
	Memory int64 `json:"memory,omitempty"`
	// CPUs is how many CPUs the command's processes may run on.
	CPUs int `json:"cpus,omitempty"`
	// Pids is how many processes (and threads) may exist at once.
	Pids int `json:"pids,omitempty"`
	// FileSize is the largest file a process may write, in bytes.
	FileSize int64 `json:"file_size,omitempty"`
	// Output is how much of stdout and of stderr is kept, each, in bytes;
	// a command writing more is stopped.
	Output int64 `json:"output,omitempty"`
	// WallTime is the longest a command may run.
	WallTime time.Duration `json:"wall_time,omitempty"`
	// Disk is what the command may write in all, in bytes: its /tmp and
	// what it adds to /workspace together.
	Disk int64 `json:"disk,omitempty"`
}

// DefaultLimits are seed 004's: 512 MB, 1 CPU, 256 processes; a 64 MB
// file, 1 MB of output and 30 seconds (under the loop's 60 s per tool
// call); and 256 MB of disk.
func DefaultLimits() Limits {
	return Limits{Memory: 512 << 20, CPUs: 1, Pids: 256, FileSize: 64 << 20, Output: 1 << 20, WallTime: 30 * time.Second, Disk: 256 << 20}
}

// WithDefaults returns l with its zero fields set from DefaultLimits.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	if l.Memory == 0 {
		l.Memory = d.Memory
	}
	if l.CPUs == 0 {
		l.CPUs = d.CPUs
	}
	if l.Pids == 0 {
		l.Pids = d.Pids
	}
	if l.FileSize == 0 {
		l.FileSize = d.FileSize
	}
	if l.Output == 0 {
		l.Output = d.Output
	}
	if l.WallTime == 0 {
		l.WallTime = d.WallTime
	}
	if l.Disk == 0 {
		l.Disk = d.Disk
	}
	return l
}

// Check says what is wrong with l, after WithDefaults.
func (l Limits) Check() error {
	var errs []error
	if l.Memory < 16<<20 {
		errs = append(errs, fmt.Errorf("memory %d is under 16 MB", l.Memory))
	}
	if l.CPUs < 1 {
		errs = append(errs, fmt.Errorf("cpus %d is under 1", l.CPUs))
	}
	if l.Pids < 8 {
		errs = append(errs, fmt.Errorf("pids %d is under 8", l.Pids))
	}
	if l.FileSize < 1 {
		errs = append(errs, fmt.Errorf("file_size %d is under 1", l.FileSize))
	}
	if l.Output < 1<<10 {
		errs = append(errs, fmt.Errorf("output %d is under 1 KB", l.Output))
	}
	if l.WallTime < time.Second {
		errs = append(errs, fmt.Errorf("wall_time %s is under a second", l.WallTime))
	}
	if l.Disk < 1<<20 {
		errs = append(errs, fmt.Errorf("disk %d is under 1 MB", l.Disk))
	}
	return errors.Join(errs...)
}

// Wall is the wall time req may run: its Timeout within its limit.
func (req Request) Wall() time.Duration {
	if req.Timeout > 0 && req.Timeout < req.Limits.WallTime {
		return req.Timeout
	}
	return req.Limits.WallTime
}

// Cut names the limit that stopped a command.
type Cut string

// The limits a backend tells apart. A process that hits the memory or
// process limit usually fails on its own (an allocation or a fork
// refused) and exits, which a backend reports as Memory or Pids when it can
// tell, and otherwise as the plain exit it was.
const (
	NotCut   Cut = ""
	WallTime Cut = "wall_time"
	Output   Cut = "output"
	CPUTime  Cut = "cpu_time"
	FileSize Cut = "file_size"
	Memory   Cut = "memory"
	Pids     Cut = "pids"
	// Disk: the command wrote more than Limits.Disk (its /tmp and its
	// additions to /workspace), or more than the workspace's quota had
	// room for; what did not fit was not written back.
	Disk Cut = "disk"
)

// Result is what a command did.
type Result struct {
	// Stdout and Stderr are what it wrote, each at most Limits.Output
	// bytes. Stderr is not yet scrubbed: the exec tool scrubs it.
	Stdout string
	Stderr string
	// ExitCode is the shell's exit status; 128+n for a signal n, -1 when
	// the sandbox stopped it without one.
	ExitCode int
	// Cut is the limit that stopped it, NotCut if none did.
	Cut Cut
	// Duration is how long the command ran.
	Duration time.Duration
}

// KeptNote is what a backend that syncs the workspace back adds to the
// result's stderr for the files the command changed that it did not write
// back (changed there meanwhile, over the limits, or not a regular file,
// such as a symbolic link); "" for none.
func KeptNote(kept []string) string {
	if len(kept) == 0 {
		return ""
	}
	return fmt.Sprintf("\n[sandbox: not written back to the workspace, changed there meanwhile, over the limits or not a regular file: %s]", strings.Join(kept, ", "))
}

// ErrUnavailable wraps why a backend cannot run anything (not installed,
// failing its probe); the exec tool is then not offered.
var ErrUnavailable = errors.New("sandbox unavailable")
