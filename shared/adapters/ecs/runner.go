package ecs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
)

// Limits of the runner.
const (
	// maxCommandBytes bounds a req/<n> object.
	maxCommandBytes = 1 << 20
	// maxWorkspaceBytes bounds the files of a workspace synced in, and
	// those written back by one command, together.
	maxWorkspaceBytes = 1 << 30
	// maxWorkspaceFiles bounds the files of a workspace, in the bucket
	// and on the task's disk.
	maxWorkspaceFiles = 20_000
	// defaultPoll is how often the task looks for its next command.
	defaultPoll = 200 * time.Millisecond
)

// Runner is the task's side: it serves the commands of one control
// directory, one at a time, until it has been idle for Idle.
type Runner struct {
	// Bucket is the workspace bucket's root.
	Bucket filestore.FS
	// Control is the control directory of this task's generation
	// (sandbox/<sid>/<gen>).
	Control string
	// Dir is the local directory the workspace is synced into, the
	// commands' working directory and HOME; it must exist.
	Dir string
	// Idle is how long the runner waits for a command before it closes.
	Idle time.Duration
	// Poll is how often it looks for the next command (200 ms if zero).
	Poll time.Duration
	// Socket is where the tool bridge listens during a command that
	// offers it (sandbox.SocketPath in the task); empty offers none.
	// ToolsDir is where the tools' descriptions are written for it
	// (sandbox.ToolsDir).
	Socket, ToolsDir string
	// Path is the commands' PATH (the usual directories if empty).
	Path string
	// Logf, if set, tells what the runner does (never a command's
	// output).
	Logf func(format string, args ...any)

	// workspace is the prefix synced into Dir; base what was synced of
	// each file, by name; used the remote workspace's size, as synced in.
	workspace string
	base      map[string]synced
	used      int64
}

// synced is a file as the last sync left it on both sides, and its size.
type synced struct {
	remote, local filestore.Version
	size          int64
}

// Serve runs commands until the runner closes after Idle without one
// (nil) or fails (an error: the task should exit non-zero). A cancelled ctx
// ends it with ctx's error.
func (r *Runner) Serve(ctx context.Context) error {
	if r.Bucket == nil || r.Control == "" || r.Dir == "" || r.Idle <= 0 {
		return errors.New("sandbox runner: bucket, control directory, local directory and idle time are required")
	}
	poll := r.poll()
	last := time.Now()
	for n := 1; ; {
		cmd, err := r.next(ctx, n)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if time.Since(last) < r.Idle {
				if err := sleep(ctx, poll); err != nil {
					return err
				}
				continue
			}
			closed, _ := json.Marshal(command{Closed: true})
			_, err := r.Bucket.WriteFile(ctx, reqName(r.Control, n), closed, filestore.Absent)
			if errors.Is(err, filestore.ErrConflict) {
				continue // a command came just now: serve it
			}
			if err != nil {
				return fmt.Errorf("sandbox runner: close: %w", err)
			}
			r.logf("idle for %s after %d commands: closed", r.Idle, n-1)
			return nil
		case err != nil:
			return err
		case cmd.Closed:
			return nil
		}
		r.logf("command %d", n)
		res := r.handle(ctx, n, cmd)
		data, err := json.Marshal(res)
		if err != nil {
			return fmt.Errorf("sandbox runner: result %d: %w", n, err)
		}
		if _, err := r.Bucket.WriteFile(ctx, resName(r.Control, n), data, filestore.Absent); err != nil {
			return fmt.Errorf("sandbox runner: result %d: %w", n, err)
		}
		n++
		last = time.Now()
	}
}

// next reads the n-th command; fs.ErrNotExist while there is none.
func (r *Runner) next(ctx context.Context, n int) (command, error) {
	data, _, err := r.Bucket.ReadFile(ctx, reqName(r.Control, n), maxCommandBytes+1)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return command{}, err
		}
		return command{}, fmt.Errorf("sandbox runner: read command %d: %w", n, err)
	}
	var c command
	if len(data) > maxCommandBytes {
		return command{}, fmt.Errorf("sandbox runner: command %d is over %d bytes", n, maxCommandBytes)
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return command{}, fmt.Errorf("sandbox runner: command %d: %w", n, err)
	}
	return c, nil
}

// poll is how often the runner looks for commands and bridge replies.
func (r *Runner) poll() time.Duration {
	if r.Poll <= 0 {
		return defaultPoll
	}
	return r.Poll
}

// handle syncs the workspace in, runs the n-th command, with the tool
// bridge if it offers it, and writes back what it changed.
func (r *Runner) handle(ctx context.Context, n int, c command) result {
	if c.Workspace == "" || c.Command == "" || c.Wall <= 0 {
		return result{ExitCode: -1, Error: "the command, its workspace and its wall time are required"}
	}
	limits := c.Limits.WithDefaults()
	if err := limits.Check(); err != nil {
		return result{ExitCode: -1, Error: fmt.Sprintf("limits: %v", err)}
	}
	remote, err := r.Bucket.Sub(c.Workspace)
	if err != nil {
		return result{ExitCode: -1, Error: fmt.Sprintf("workspace %q: %v", c.Workspace, err)}
	}
	if c.Workspace != r.workspace {
		if err := emptyDir(r.Dir); err != nil {
			return result{ExitCode: -1, Error: fmt.Sprintf("clear the local workspace: %v", err)}
		}
		r.workspace, r.base = c.Workspace, map[string]synced{}
	}
	local := osroot.New(r.Dir)
	if err := r.syncIn(ctx, remote, local, limits.FileSize); err != nil {
		return result{ExitCode: -1, Error: fmt.Sprintf("sync the workspace in: %v", err)}
	}
	if c.Bridge && r.Socket != "" {
		if r.ToolsDir != "" {
			if err := writeTools(r.ToolsDir, c.Tools); err != nil {
				return result{ExitCode: -1, Error: fmt.Sprintf("the tools' descriptions: %v", err)}
			}
		}
		stop, err := r.relay(ctx, n)
		if err != nil {
			return result{ExitCode: -1, Error: fmt.Sprintf("the tool bridge: %v", err)}
		}
		defer stop()
	}
	res := run(ctx, r.Dir, c.Command, c.Wall, limits, r.Path)
	if res.Error != "" {
		return res
	}
	room := limits.Disk
	if c.Quota > 0 {
		room = min(room, max(c.Quota-r.used, 0))
	}
	kept, over, err := r.syncOut(ctx, remote, local, limits.FileSize, room)
	res.Kept = kept
	if over && (res.Cut == sandbox.NotCut || res.Cut == sandbox.FileSize) {
		res.Cut = sandbox.Disk
	}
	if err != nil {
		res.WriteBack = err.Error()
	}
	return res
}

// syncIn makes the local workspace hold the remote one's files, reading
// only those that changed since the last sync.
func (r *Runner) syncIn(ctx context.Context, remote filestore.FS, local *osroot.FS, maxFile int64) error {
	root, err := os.OpenRoot(r.Dir)
	if err != nil {
		return err
	}
	defer root.Close()
	seen := map[string]bool{}
	var total int64
	err = remote.Walk(ctx, ".", func(name string, e filestore.Entry) error {
		if seen[name] = true; len(seen) > maxWorkspaceFiles {
			return fmt.Errorf("the workspace has over %d files", maxWorkspaceFiles)
		}
		if total += e.Size; e.Size > maxFile || total > maxWorkspaceBytes {
			return &fs.PathError{Op: "sync", Path: name, Err: fmt.Errorf("over the limits: %d bytes a file, %d together", maxFile, int64(maxWorkspaceBytes))}
		}
		if b, ok := r.base[name]; ok && b.remote == e.Version {
			if le, err := local.Stat(ctx, name); err == nil && le.Version == b.local {
				return nil
			}
		}
		data, re, err := remote.ReadFile(ctx, name, maxFile+1)
		if err != nil {
			return err
		}
		if int64(len(data)) > maxFile {
			return &fs.PathError{Op: "sync", Path: name, Err: fmt.Errorf("over %d bytes", maxFile)}
		}
		// Whatever the command left at name (a link, a directory) goes.
		if err := root.RemoveAll(name); err != nil {
			return err
		}
		le, err := local.WriteFile(ctx, name, data, filestore.Any)
		if err != nil {
			return err
		}
		r.base[name] = synced{remote: re.Version, local: le.Version, size: int64(len(data))}
		return nil
	})
	if err != nil {
		return err
	}
	r.used = total
	var stale []string
	count := 0
	err = local.Walk(ctx, ".", func(name string, _ filestore.Entry) error {
		if count++; count > maxWorkspaceFiles {
			return fmt.Errorf("the local workspace has over %d files", maxWorkspaceFiles)
		}
		if !seen[name] {
			stale = append(stale, name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, name := range stale {
		if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	for name := range r.base {
		if !seen[name] {
			delete(r.base, name)
		}
	}
	return nil
}

// syncOut writes the files the command added or changed to the remote
// workspace and deletes those it deleted, each only if the remote file is
// still what was synced in, and growing the workspace by room bytes at
// most. It returns the names it left as they are (changed remotely
// meanwhile, or over the limits), sorted, and whether any was over room.
// Links and other files that are not regular are not written back.
func (r *Runner) syncOut(ctx context.Context, remote filestore.FS, local *osroot.FS, maxFile, room int64) ([]string, bool, error) {
	var (
		kept  []string
		over  bool
		grown int64
	)
	present := map[string]bool{}
	var total int64
	cv, _ := remote.(filestore.ContentVersioner)
	err := local.Walk(ctx, ".", func(name string, le filestore.Entry) error {
		if present[name] = true; len(present) > maxWorkspaceFiles {
			return fmt.Errorf("the workspace has over %d files", maxWorkspaceFiles)
		}
		b, had := r.base[name]
		if had && b.local == le.Version {
			return nil
		}
		if total += le.Size; le.Size > maxFile || total > maxWorkspaceBytes {
			kept = append(kept, name)
			return nil
		}
		data, le, err := local.ReadFile(ctx, name, maxFile+1)
		if err != nil {
			return err
		}
		if int64(len(data)) > maxFile {
			kept = append(kept, name)
			return nil
		}
		growth := int64(len(data)) - b.size
		if growth > 0 && grown+growth > room {
			kept, over = append(kept, name), true
			return nil
		}
		cond := filestore.Absent
		if had {
			cond = b.remote
			if cv != nil && cv.ContentVersion(data) == b.remote {
				r.base[name] = synced{remote: b.remote, local: le.Version, size: b.size} // touched, same bytes
				return nil
			}
		}
		re, err := remote.WriteFile(ctx, name, data, cond)
		if errors.Is(err, filestore.ErrConflict) {
			kept = append(kept, name)
			delete(r.base, name)
			return nil
		}
		if err != nil {
			return err
		}
		r.base[name] = synced{remote: re.Version, local: le.Version, size: int64(len(data))}
		grown += growth
		return nil
	})
	if err != nil {
		slices.Sort(kept)
		return kept, over, err
	}
	for _, name := range slices.Sorted(maps.Keys(r.base)) {
		if present[name] {
			continue
		}
		b := r.base[name]
		delete(r.base, name)
		re, err := remote.Stat(ctx, name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return kept, over, err
		case re.Version != b.remote:
			kept = append(kept, name)
		default:
			if err := remote.Remove(ctx, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return kept, over, err
			}
		}
	}
	slices.Sort(kept)
	return kept, over, nil
}

// emptyDir removes everything in dir, keeping dir.
func emptyDir(dir string) error {
	es, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, e := range es {
		if err := root.RemoveAll(e.Name()); err != nil {
			return err
		}
	}
	return nil
}

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (r *Runner) logf(format string, args ...any) {
	if r.Logf != nil {
		r.Logf(format, args...)
	}
}
