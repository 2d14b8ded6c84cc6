package workspace

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// Limits bound what the tools write into agent workspaces.
type Limits struct {
	// MaxFileBytes caps the size of one file a tool writes.
	MaxFileBytes int64
	// WorkspaceQuotaBytes caps the total size of the regular files in a
	// workspace, whoever wrote them.
	WorkspaceQuotaBytes int64
}

// UsageMaxAge is how long a workspace's measured usage is trusted, or
// walkShare times as long as the walk that measured it took, if longer:
// walking then takes at most about 1/walkShare of the time of a workspace
// written without pause. The tools' own writes keep the usage exact in
// between; files that someone else adds are seen at the next measurement.
const (
	UsageMaxAge = 10 * time.Second
	walkShare   = 100
)

// ErrLimit is matched (errors.Is) by the errors of writes refused because
// they would cross a limit; nothing was written.
var ErrLimit = errors.New("over a workspace limit")

// limitError is a write refused by a limit, worded for the model.
type limitError struct{ msg string }

func (e *limitError) Error() string        { return e.msg }
func (e *limitError) Is(target error) bool { return target == ErrLimit }

// Quota enforces Limits on every tool that writes into the workspaces
// (write_file and workspace_memory share one Quota), so that their writes
// are checked together.
//
// A workspace's usage is the sum of the sizes of the regular files in it,
// symbolic links not followed. It is measured by walking the workspace,
// then kept up to date by the writes made through the Quota, and measured
// again when older than UsageMaxAge (longer for a workspace so large that
// walking it is slow), so a large workspace is not walked on every write
// while files added by the user still count. A write that the usage would
// refuse measures again first, so a refusal never rests on stale figures.
// Writes into one workspace go one at a time: two of them cannot both
// pass the check and together exceed the quota.
type Quota struct {
	limits Limits
	// now is the clock of the usage's age; tests replace it.
	now func() time.Time

	mu     sync.Mutex
	spaces map[string]*space // by workspace
}

// space is the usage of one workspace. Its mutex is held for the whole of
// a write (Quota.Begin to Write.End), and guards the fields.
type space struct {
	mu sync.Mutex
	// used is the usage in bytes, measured at measured and adjusted by
	// the writes since; a zero measured means it must be measured.
	used     int64
	measured time.Time
	// walk is how long the last measurement took.
	walk time.Duration
}

// NewQuota returns a Quota enforcing l, whose limits must be positive.
func NewQuota(l Limits) (*Quota, error) {
	if l.MaxFileBytes <= 0 || l.WorkspaceQuotaBytes <= 0 {
		return nil, fmt.Errorf("workspace: limits must be positive, got %d bytes per file and %d per workspace", l.MaxFileBytes, l.WorkspaceQuotaBytes)
	}
	return &Quota{limits: l, now: time.Now, spaces: map[string]*space{}}, nil
}

// SetClock replaces the clock by which the quota judges how old a
// measured usage is (time.Now by default), for tests and simulations.
func (q *Quota) SetClock(now func() time.Time) { q.now = now }

// Limits returns the limits the Quota enforces.
func (q *Quota) Limits() Limits { return q.limits }

// Write is one write into a workspace, between Quota.Begin and Write.End.
type Write struct {
	q     *Quota
	s     *space
	ctx   context.Context
	ws    filestore.FS
	grown int64
	// unknown says the write failed part-way: the workspace's usage must
	// be measured again.
	unknown bool
}

// Begin waits until no other write runs in env's workspace and starts
// one. Call End when the write is over. A workspace is known by its
// agent's name, and a local one also by its directory.
func (q *Quota) Begin(ctx context.Context, env tool.Env) (*Write, error) {
	key := env.Agent
	if d, ok := env.Workspace.(interface{ Dir() string }); ok {
		key += "\x00" + d.Dir()
	}
	q.mu.Lock()
	s := q.spaces[key]
	if s == nil {
		s = &space{}
		q.spaces[key] = s
	}
	q.mu.Unlock()
	s.mu.Lock()
	w := &Write{q: q, s: s, ctx: ctx, ws: env.Workspace}
	if s.stale(q.now()) {
		if err := w.measure(); err != nil {
			s.mu.Unlock()
			return nil, err
		}
	}
	return w, nil
}

// stale reports whether the usage must be measured again at now.
func (s *space) stale(now time.Time) bool {
	return s.measured.IsZero() || now.Sub(s.measured) > max(UsageMaxAge, walkShare*s.walk)
}

// measure walks the workspace and records its usage.
func (w *Write) measure() error {
	start := w.q.now()
	used, err := Usage(w.ctx, w.ws)
	if err != nil {
		return err
	}
	w.s.used, w.s.measured = used, w.q.now()
	w.s.walk = w.s.measured.Sub(start)
	return nil
}

// Fit checks that the file shown to the model as name may become size
// bytes long while the workspace grows by growth bytes (negative when it
// shrinks). Its error, matching ErrLimit, says which limit the write
// would cross.
func (w *Write) Fit(name string, size, growth int64) error {
	l := w.q.limits
	if size > l.MaxFileBytes {
		return &limitError{fmt.Sprintf("cannot write %q: it would be %d bytes, over the limit of %s per file; nothing was written",
			name, size, SizeText(l.MaxFileBytes))}
	}
	if growth <= 0 || w.s.used+growth <= l.WorkspaceQuotaBytes {
		return nil
	}
	if err := w.measure(); err != nil {
		return err
	}
	if w.s.used+growth <= l.WorkspaceQuotaBytes {
		return nil
	}
	return &limitError{fmt.Sprintf("cannot write %q: the workspace would hold %d bytes, over its quota of %s (it holds %d bytes now); "+
		"nothing was written: make room by shortening files, or ask the user to",
		name, w.s.used+growth, SizeText(l.WorkspaceQuotaBytes), w.s.used)}
}

// MaxFile is the most bytes a file may hold after the write.
func (w *Write) MaxFile() int64 { return w.q.limits.MaxFileBytes }

// Grew records that the write changed the size of the workspace by n
// bytes.
func (w *Write) Grew(n int64) { w.grown += n }

// Unknown records that the write failed part-way, so its effect on the
// workspace is not known: the next write measures the workspace again.
func (w *Write) Unknown() { w.unknown = true }

// End finishes the write and lets the next one into the workspace.
func (w *Write) End() {
	if w.unknown {
		w.s.measured = time.Time{}
	} else {
		w.s.used += w.grown
	}
	w.s.mu.Unlock()
}

// Usage returns the sum of the sizes of the regular files in ws, without
// following symbolic links.
func Usage(ctx context.Context, ws filestore.FS) (int64, error) {
	var used int64
	err := ws.Walk(ctx, ".", func(_ string, e filestore.Entry) error {
		used += e.Size
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("cannot measure the workspace's size: %w", err)
	}
	return used, nil
}

// SizeText writes a limit in the largest binary unit that divides it.
func SizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
