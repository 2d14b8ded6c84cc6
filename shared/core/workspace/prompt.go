package workspace

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
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

// SystemPrompt assembles the workspace at dir into system messages: one per
// non-empty bootstrap file in the order IDENTITY, SOUL, USER, TOOLS, AGENTS,
// BOOTSTRAP, MEMORY, then yesterday's and today's daily logs (dates in now's
// location) when present. Each message starts with a header naming its file,
// and each file is capped at MaxPromptFile bytes. A missing workspace, or
// one with nothing to say, gives the single Fallback message. Files are
// read through an *os.Root: symbolic links leading out of the workspace are
// an error, not followed.
func SystemPrompt(dir string, now time.Time) ([]chat.Message, error) {
	fallback := []chat.Message{{Role: chat.System, Content: Fallback}}
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fallback, nil
	}
	if err != nil {
		return nil, fmt.Errorf("workspace: open %s: %w", dir, err)
	}
	defer root.Close()

	// name is the path inside the root; shown is its slash form for the model.
	type part struct{ name, shown, note string }
	parts := make([]part, 0, len(promptOrder)+2)
	for _, f := range promptOrder {
		parts = append(parts, part{name: f, shown: f})
	}
	y, m, d := now.Date()
	for _, l := range []struct {
		day  time.Time
		note string
	}{
		{time.Date(y, m, d-1, 12, 0, 0, 0, now.Location()), " (yesterday's log)"},
		{now, " (today's log)"},
	} {
		file := l.day.Format(dateLayout) + ".md"
		parts = append(parts, part{name: filepath.Join(DailyDir, file), shown: path.Join(DailyDir, file), note: l.note})
	}

	var msgs []chat.Message
	for _, p := range parts {
		text, truncated, err := readCapped(root, p.name, MaxPromptFile)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("workspace: read %s: %w", p.name, err)
		}
		text = strings.TrimSpace(text)
		if text == "" {
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "## %s%s\n\n%s", p.shown, p.note, text)
		if truncated {
			fmt.Fprintf(&b, "\n\n[%s is longer than %d KiB; the rest is not shown]", p.shown, MaxPromptFile>>10)
		}
		msgs = append(msgs, chat.Message{Role: chat.System, Content: b.String()})
	}
	if len(msgs) == 0 {
		return fallback, nil
	}
	return msgs, nil
}
