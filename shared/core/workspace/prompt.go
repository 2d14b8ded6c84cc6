package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
)

// MaxPromptFile is the most of each file SystemPrompt includes.
const MaxPromptFile = 64 << 10

// Fallback is the system prompt of an agent without a workspace.
const Fallback = "You are a helpful assistant."

// dateLayout names daily logs: memory/YYYY-MM-DD.md.
const dateLayout = "2006-01-02"

// WithoutBootstrap returns msgs, a SystemPrompt, without BOOTSTRAP.md's
// message, in place.
func WithoutBootstrap(msgs []chat.Message) []chat.Message {
	header := "## " + BootstrapFile + "\n"
	return slices.DeleteFunc(msgs, func(m chat.Message) bool { return strings.HasPrefix(m.Content, header) })
}

// SystemPrompt assembles the workspace ws into system messages: one per
// non-empty bootstrap file in the order IDENTITY, SOUL, USER, TOOLS, AGENTS,
// BOOTSTRAP, MEMORY, then yesterday's and today's daily logs (dates in now's
// location) when present. Each message starts with a header naming its file,
// and each file is capped at MaxPromptFile bytes. A missing workspace (nil,
// or without files), or one with nothing to say, gives the single Fallback
// message. A file the workspace cannot give (a symbolic link leading out of
// it, a directory or a device in a file's place, a read that fails) is
// left out and named in skipped, so a workspace broken by a command never
// fails a turn; err is only the context's.
func SystemPrompt(ctx context.Context, ws filestore.FS, now time.Time) (msgs []chat.Message, skipped []error, err error) {
	return assemble(ctx, ws, now, nil)
}

// assemble is SystemPrompt, not reading the files absent names (known
// missing).
func assemble(ctx context.Context, ws filestore.FS, now time.Time, absent map[string]bool) ([]chat.Message, []error, error) {
	fallback := []chat.Message{{Role: chat.System, Content: Fallback}}
	if ws == nil {
		return fallback, nil, nil
	}
	var (
		msgs    []chat.Message
		skipped []error
	)
	for _, p := range promptParts(now) {
		if absent[p.name] {
			continue
		}
		text, truncated, err := readCapped(ctx, ws, p.name, MaxPromptFile)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			skipped = append(skipped, fmt.Errorf("workspace file %s left out of the system prompt: %w", p.name, err))
			continue
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "## %s%s\n\n%s", p.name, p.note, text)
		if truncated {
			fmt.Fprintf(&b, "\n\n[%s is longer than %d KiB; the rest is not shown]", p.name, MaxPromptFile>>10)
		}
		msgs = append(msgs, chat.Message{Role: chat.System, Content: b.String()})
	}
	if len(msgs) == 0 {
		return fallback, skipped, nil
	}
	return msgs, skipped, nil
}

// promptPart is a file SystemPrompt reads, with the note of its header.
type promptPart struct{ name, note string }

// promptParts lists the files of the prompt at now.
func promptParts(now time.Time) []promptPart {
	parts := make([]promptPart, 0, len(promptOrder)+2)
	for _, f := range promptOrder {
		parts = append(parts, promptPart{name: f})
	}
	y, m, d := now.Date()
	yesterday := time.Date(y, m, d-1, 12, 0, 0, 0, now.Location())
	return append(parts,
		promptPart{name: dailyPath(yesterday.Format(dateLayout)), note: " (yesterday's log)"},
		promptPart{name: dailyPath(now.Format(dateLayout)), note: " (today's log)"})
}
