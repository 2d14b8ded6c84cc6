package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
)

// PromptCache remembers assembled system prompts and assembles one again
// only when a file it reads changed (size or modification time), appeared,
// disappeared, or the day turned. Checking costs a few stat calls instead of
// opening and reading every file on each model call.
type PromptCache struct {
	mu sync.Mutex
	m  map[string]cachedPrompt
}

type cachedPrompt struct {
	stamp string
	msgs  []chat.Message
}

// SystemPrompt returns what SystemPrompt(dir, now) returns, from the cache
// when nothing changed. The caller may modify the returned slice.
func (c *PromptCache) SystemPrompt(dir string, now time.Time) ([]chat.Message, error) {
	stamp := fingerprint(dir, now)
	c.mu.Lock()
	e, ok := c.m[dir]
	c.mu.Unlock()
	if ok && e.stamp == stamp {
		return slices.Clone(e.msgs), nil
	}
	msgs, err := SystemPrompt(dir, now)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]cachedPrompt{}
	}
	c.m[dir] = cachedPrompt{stamp: stamp, msgs: msgs}
	c.mu.Unlock()
	return slices.Clone(msgs), nil
}

// fingerprint describes the state of every file SystemPrompt reads.
func fingerprint(dir string, now time.Time) string {
	var b strings.Builder
	today := now.Format(dateLayout)
	y, m, d := now.Date()
	yesterday := time.Date(y, m, d-1, 12, 0, 0, 0, now.Location()).Format(dateLayout)
	b.WriteString(today)
	names := append(slices.Clone(promptOrder), filepath.Join(DailyDir, yesterday+".md"), filepath.Join(DailyDir, today+".md"))
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			b.WriteString("|-")
			continue
		}
		fmt.Fprintf(&b, "|%d.%d", fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String()
}
