package workspace

import (
	"context"
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
// agent's name). The caller may modify the returned slice.
func (c *PromptCache) SystemPrompt(ctx context.Context, key string, ws filestore.FS, now time.Time) ([]chat.Message, error) {
	stamp := fingerprint(ctx, ws, now)
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if ok && e.stamp == stamp {
		return slices.Clone(e.msgs), nil
	}
	msgs, err := SystemPrompt(ctx, ws, now)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]cachedPrompt{}
	}
	c.m[key] = cachedPrompt{stamp: stamp, msgs: msgs}
	c.mu.Unlock()
	return slices.Clone(msgs), nil
}

// fingerprint describes the state of every file SystemPrompt reads.
func fingerprint(ctx context.Context, ws filestore.FS, now time.Time) string {
	var b strings.Builder
	b.WriteString(now.Format(dateLayout))
	if ws == nil {
		return b.String()
	}
	for _, p := range promptParts(now) {
		e, err := ws.Stat(ctx, p.name)
		if err != nil || e.Version == "" {
			b.WriteString("|-")
			continue
		}
		b.WriteString("|" + string(e.Version))
	}
	return b.String()
}
