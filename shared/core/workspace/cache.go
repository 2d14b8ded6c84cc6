package workspace

import (
	"context"
	"errors"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
)

// PromptCache remembers assembled system prompts and assembles one again
// only when a file it reads changed (its filestore.Version), appeared,
// disappeared, or the day turned. Checking costs a Stat per file instead
// of reading every file on each model call.
type PromptCache struct {
	mu sync.Mutex
	m  map[string]cachedPrompt
}

type cachedPrompt struct {
	stamp string
	msgs  []chat.Message
}

// SystemPrompt returns what SystemPrompt(ctx, ws, now) returns, from the
// cache when nothing changed; key names the workspace in the cache (the
// agent's name). The files skipped are reported only when the prompt is
// assembled, not again from the cache. The caller may modify the returned
// slice.
func (c *PromptCache) SystemPrompt(ctx context.Context, key string, ws filestore.FS, now time.Time) ([]chat.Message, []error, error) {
	stamp, absent := fingerprint(ctx, ws, now)
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && e.stamp == stamp {
		return slices.Clone(e.msgs), nil, nil
	}
	msgs, skipped, err := assemble(ctx, ws, now, absent)
	if err != nil {
		return nil, nil, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]cachedPrompt{}
	}
	c.m[key] = cachedPrompt{stamp: stamp, msgs: msgs}
	c.mu.Unlock()
	return slices.Clone(msgs), skipped, nil
}

// fileStater is a store that can describe a file more cheaply than Stat
// when it need not tell whether a directory is in a missing file's place
// (S3: one HEAD, where Stat also lists the name as a directory).
type fileStater interface {
	StatFile(ctx context.Context, name string) (filestore.Entry, error)
}

// fingerprint describes the state of every file SystemPrompt reads, and
// names those that are missing.
func fingerprint(ctx context.Context, ws filestore.FS, now time.Time) (string, map[string]bool) {
	var b strings.Builder
	b.WriteString(now.Format(dateLayout))
	if ws == nil {
		return b.String(), nil
	}
	stat := ws.Stat
	if f, ok := ws.(fileStater); ok {
		stat = f.StatFile
	}
	absent := map[string]bool{}
	for _, p := range promptParts(now) {
		e, err := stat(ctx, p.name)
		if errors.Is(err, fs.ErrNotExist) {
			absent[p.name] = true
		}
		if err != nil || e.Version == "" {
			b.WriteString("|-")
			continue
		}
		b.WriteString("|" + string(e.Version))
	}
	return b.String(), absent
}

// FileVersions returns the version of each bootstrap file (Files) of ws
// that exists; one that cannot be looked at is an error.
func FileVersions(ctx context.Context, ws filestore.FS) (map[string]filestore.Version, error) {
	stat := ws.Stat
	if f, ok := ws.(fileStater); ok {
		stat = f.StatFile
	}
	out := map[string]filestore.Version{}
	for _, name := range promptOrder {
		e, err := stat(ctx, name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return nil, err
		default:
			out[name] = e.Version
		}
	}
	return out, nil
}
