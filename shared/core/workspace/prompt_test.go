package workspace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

func sys(s string) chat.Message { return chat.Message{Role: chat.System, Content: s} }

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSystemPrompt(t *testing.T) {
	east := time.FixedZone("UTC+9", 9*3600)
	// 2026-03-01 01:30 in UTC+9 is still 2026-02-28 in UTC: the logs
	// follow now's location.
	now := time.Date(2026, 3, 1, 1, 30, 0, 0, east)
	big := strings.Repeat("x", MaxPromptFile+10)

	cases := []struct {
		name  string
		files map[string]string
		want  []chat.Message
	}{
		{
			name: "seed order, empty files skipped, recent logs",
			files: map[string]string{
				"MEMORY.md":            "# Memory\n- likes tea\n",
				"BOOTSTRAP.md":         "ritual",
				"AGENTS.md":            "guidelines",
				"TOOLS.md":             "",
				"USER.md":              "  \n\n",
				"SOUL.md":              "be kind",
				"IDENTITY.md":          "Name: bot",
				"memory/2026-03-01.md": "today's notes",
				"memory/2026-02-28.md": "yesterday's notes",
				"memory/2026-02-27.md": "too old",
				"memory/2026-03-02.md": "tomorrow",
				"notes.md":             "not a bootstrap file",
				"skills/x/SKILL.md":    "skill",
			},
			want: []chat.Message{
				sys("## IDENTITY.md\n\nName: bot"),
				sys("## SOUL.md\n\nbe kind"),
				sys("## AGENTS.md\n\nguidelines"),
				sys("## BOOTSTRAP.md\n\nritual"),
				sys("## MEMORY.md\n\n# Memory\n- likes tea"),
				sys("## memory/2026-02-28.md (yesterday's log)\n\nyesterday's notes"),
				sys("## memory/2026-03-01.md (today's log)\n\ntoday's notes"),
			},
		},
		{
			name:  "truncated file",
			files: map[string]string{"SOUL.md": big},
			want: []chat.Message{
				sys("## SOUL.md\n\n" + big[:MaxPromptFile] + "\n\n[SOUL.md is longer than 64 KiB; the rest is not shown]"),
			},
		},
		{
			name:  "only today's log",
			files: map[string]string{"memory/2026-03-01.md": "note"},
			want:  []chat.Message{sys("## memory/2026-03-01.md (today's log)\n\nnote")},
		},
		{
			name:  "nothing to say",
			files: map[string]string{"SOUL.md": "\n"},
			want:  []chat.Message{sys(Fallback)},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tc.files)
			got, err := systemPrompt(dir, now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("SystemPrompt mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSystemPromptMissingWorkspace(t *testing.T) {
	got, err := systemPrompt(filepath.Join(t.TempDir(), "nope"), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]chat.Message{sys("You are a helpful assistant.")}, got); diff != "" {
		t.Errorf("fallback mismatch (-want +got):\n%s", diff)
	}
}

func TestSystemPromptNewWorkspace(t *testing.T) {
	dir, _, err := create(t.TempDir(), "bot")
	if err != nil {
		t.Fatal(err)
	}
	headers := func() []string {
		t.Helper()
		got, err := systemPrompt(dir, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		var headers []string
		for _, m := range got {
			if m.Role != chat.System {
				t.Errorf("message role %q, want system", m.Role)
			}
			headers = append(headers, strings.SplitN(m.Content, "\n", 2)[0])
		}
		return headers
	}
	want := []string{"## IDENTITY.md", "## SOUL.md", "## USER.md", "## TOOLS.md", "## AGENTS.md", "## BOOTSTRAP.md", "## MEMORY.md"}
	if diff := cmp.Diff(want, headers()); diff != "" {
		t.Errorf("headers mismatch (-want +got):\n%s", diff)
	}

	// Once the agent completes the first-run ritual, it leaves the prompt.
	if _, err := MemoryTool(defaultQuota(t)).Call(context.Background(), tool.Env{Workspace: osroot.New(dir)}, json.RawMessage(`{"action":"complete_bootstrap"}`)); err != nil {
		t.Fatal(err)
	}
	want = slices.DeleteFunc(want, func(h string) bool { return h == "## BOOTSTRAP.md" })
	if diff := cmp.Diff(want, headers()); diff != "" {
		t.Errorf("headers after complete_bootstrap mismatch (-want +got):\n%s", diff)
	}
}

// A file the workspace cannot give is left out of the prompt and
// reported, and the rest of the prompt is still built: a command in the
// sandbox that breaks a bootstrap file never fails a turn.
func TestSystemPromptSkipsUnreadableFiles(t *testing.T) {
	tests := []struct {
		name string
		// breakIt puts something unreadable at MEMORY.md of dir.
		breakIt func(dir string) error
	}{
		{"a link leaving the workspace", func(dir string) error {
			return os.Symlink(filepath.Join("..", "secret.txt"), filepath.Join(dir, "MEMORY.md"))
		}},
		{"an absolute link to a device", func(dir string) error { return os.Symlink("/dev/zero", filepath.Join(dir, "MEMORY.md")) }},
		{"a named pipe", func(dir string) error { return unix.Mkfifo(filepath.Join(dir, "MEMORY.md"), 0o644) }},
		{"a directory", func(dir string) error { return os.Mkdir(filepath.Join(dir, "MEMORY.md"), 0o755) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			dir := filepath.Join(tmp, "ws")
			writeFiles(t, tmp, map[string]string{"secret.txt": "TOP SECRET", "ws/SOUL.md": "soul", "ws/USER.md": "user"})
			if err := tt.breakIt(dir); err != nil {
				t.Skipf("cannot make it: %v", err)
			}
			got, skipped, err := SystemPrompt(context.Background(), osroot.New(dir), time.Now())
			if err != nil {
				t.Fatalf("SystemPrompt failed: %v", err)
			}
			want := []chat.Message{{Role: chat.System, Content: "## SOUL.md\n\nsoul"}, {Role: chat.System, Content: "## USER.md\n\nuser"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("prompt (-want +got):\n%s", diff)
			}
			if len(skipped) != 1 || !strings.Contains(skipped[0].Error(), "MEMORY.md") {
				t.Errorf("skipped %v, want MEMORY.md named", skipped)
			}
		})
	}
}
