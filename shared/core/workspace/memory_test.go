package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

func newMemoryTool(t *testing.T, now time.Time) memoryTool {
	return memoryTool{now: func() time.Time { return now }, quota: defaultQuota(t)}
}

// defaultQuota is a Quota with the default limits of the configuration.
func defaultQuota(t *testing.T) *Quota {
	t.Helper()
	q, err := NewQuota(Limits{MaxFileBytes: config.DefaultMaxFileBytes, WorkspaceQuotaBytes: config.DefaultWorkspaceQuotaBytes})
	if err != nil {
		t.Fatal(err)
	}
	return q
}

type step struct {
	name    string
	args    string
	want    string
	wantErr string
}

// runSteps runs steps in order against one workspace; each sees the
// effects of the ones before.
func runSteps(t *testing.T, tl tool.Tool, env tool.Env, steps []step) {
	t.Helper()
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			out, err := tl.Call(context.Background(), env, json.RawMessage(s.args))
			if err != nil && strings.Contains(err.Error(), os.TempDir()) {
				t.Errorf("error leaks a host path: %v", err)
			}
			if s.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), s.wantErr) {
					t.Fatalf("got %q, %v; want error containing %q", out, err, s.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(s.want, out); diff != "" {
				t.Errorf("output mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMemoryTool(t *testing.T) {
	home := t.TempDir()
	dir, _, err := create(home, "bot")
	if err != nil {
		t.Fatal(err)
	}
	env := tool.Env{Agent: "bot", Workspace: osroot.New(dir)}
	now := time.Date(2026, 2, 21, 9, 30, 0, 0, time.UTC)
	huge := strings.Repeat("h", MaxMemoryWrite+1)
	soul, err := Template("SOUL.md", "bot")
	if err != nil {
		t.Fatal(err)
	}
	runSteps(t, newMemoryTool(t, now), env, []step{
		// MEMORY.md
		{name: "read template", args: `{"action":"read"}`, want: "# Memory\n"},
		{name: "append", args: `{"action":"append","content":"- likes tea"}`, want: "appended 11 bytes to MEMORY.md (now 21 bytes)"},
		{name: "append again", args: `{"action":"append","content":"- lives in Oslo\n"}`, want: "appended 16 bytes to MEMORY.md (now 37 bytes)"},
		{name: "read appended", args: `{"action":"read"}`, want: "# Memory\n- likes tea\n- lives in Oslo\n"},
		{name: "replace", args: `{"action":"replace","content":"# Memory\n- likes green tea"}`, want: "replaced MEMORY.md (26 bytes)"},
		{name: "append after no newline", args: `{"action":"append","content":"- cat: Miso"}`, want: "appended 11 bytes to MEMORY.md (now 39 bytes)"},
		{name: "read replaced", args: `{"action":"read"}`, want: "# Memory\n- likes green tea\n- cat: Miso\n"},
		{name: "append empty", args: `{"action":"append","content":"  "}`, wantErr: "needs non-empty content"},
		{name: "append without content", args: `{"action":"append"}`, wantErr: `action append needs "content"`},
		{name: "append huge", args: fmt.Sprintf(`{"action":"append","content":%q}`, huge), wantErr: "over the 256 KiB limit"},
		{name: "append past file limit", args: fmt.Sprintf(`{"action":"append","content":%q}`, huge[:MaxMemoryWrite-10]), wantErr: "MEMORY.md would grow to"},
		{name: "replace huge", args: fmt.Sprintf(`{"action":"replace","content":%q}`, huge), wantErr: "over the 256 KiB limit"},
		{name: "replace nul", args: `{"action":"replace","content":"a\u0000b"}`, wantErr: "NUL byte"},
		{name: "read with content", args: `{"action":"read","content":"x"}`, wantErr: `action read does not take "content"`},
		{name: "read with file", args: `{"action":"read","file":"../x"}`, wantErr: `action read does not take "file"`},

		// daily logs
		{name: "list before any", args: `{"action":"list_daily"}`, want: "there are no daily logs yet"},
		{name: "read today missing", args: `{"action":"read_daily"}`, want: "there is no daily log for 2026-02-21"},
		{name: "append today", args: `{"action":"append_daily","content":"met Ana"}`, want: "added to memory/2026-02-21.md (now 30 bytes): - 09:30 met Ana"},
		{name: "append multi-line", args: `{"action":"append_daily","content":"plan:\nship it\n"}`, want: "added to memory/2026-02-21.md (now 54 bytes): - 09:30 plan: …"},
		{name: "read today", args: `{"action":"read_daily"}`, want: "# 2026-02-21\n\n- 09:30 met Ana\n- 09:30 plan:\n  ship it\n"},
		{name: "append other day", args: `{"action":"append_daily","date":"2026-02-20","content":"late note"}`, want: "added to memory/2026-02-20.md (now 32 bytes): - 09:30 late note"},
		{name: "read other day", args: `{"action":"read_daily","date":"2026-02-20"}`, want: "# 2026-02-20\n\n- 09:30 late note\n"},
		{name: "empty date is today", args: `{"action":"read_daily","date":""}`, want: "# 2026-02-21\n\n- 09:30 met Ana\n- 09:30 plan:\n  ship it\n"},
		{name: "list", args: `{"action":"list_daily"}`, want: "2 daily logs, newest first:\n2026-02-21 (54 bytes)\n2026-02-20 (32 bytes)"},
		{name: "date traversal", args: `{"action":"read_daily","date":"../../etc"}`, wantErr: `date "../../etc" is not a day`},
		{name: "date traversal append", args: `{"action":"append_daily","date":"../../etc/passwd","content":"x"}`, wantErr: "is not a day"},
		{name: "date not a day", args: `{"action":"read_daily","date":"2026-02-30"}`, wantErr: "is not a day"},
		{name: "date wrong form", args: `{"action":"read_daily","date":"21.02.2026"}`, wantErr: "is not a day"},
		{name: "date with nul", args: `{"action":"read_daily","date":"2026-02-21\u0000"}`, wantErr: "is not a day"},
		{name: "append daily huge", args: fmt.Sprintf(`{"action":"append_daily","content":%q}`, huge), wantErr: "over the 256 KiB limit"},
		{name: "append daily empty", args: `{"action":"append_daily","content":""}`, wantErr: "needs non-empty content"},
		{name: "list with date", args: `{"action":"list_daily","date":"2026-02-21"}`, wantErr: `does not take "date"`},

		// bootstrap files
		{name: "read soul", args: `{"action":"read_bootstrap","file":"SOUL.md"}`, want: soul},
		{name: "update user", args: `{"action":"update_bootstrap","file":"USER.md","content":"# User\n- Name: Ana\n"}`, want: "replaced USER.md (19 bytes)"},
		{name: "read user", args: `{"action":"read_bootstrap","file":"USER.md"}`, want: "# User\n- Name: Ana\n"},
		{name: "empty tools", args: `{"action":"update_bootstrap","file":"TOOLS.md","content":""}`, want: "replaced TOOLS.md (0 bytes)"},
		{name: "read empty", args: `{"action":"read_bootstrap","file":"TOOLS.md"}`, want: "TOOLS.md is empty"},
		{name: "bootstrap without file", args: `{"action":"read_bootstrap"}`, wantErr: `action read_bootstrap needs "file"`},
		{name: "update without content", args: `{"action":"update_bootstrap","file":"SOUL.md"}`, wantErr: `needs "content"`},
		{name: "file traversal", args: `{"action":"read_bootstrap","file":"../x"}`, wantErr: `file "../x" cannot be used here: use one of IDENTITY.md, USER.md, SOUL.md, TOOLS.md, AGENTS.md`},
		{name: "file traversal update", args: `{"action":"update_bootstrap","file":"../../etc/passwd","content":"x"}`, wantErr: "cannot be used here"},
		{name: "file absolute", args: `{"action":"read_bootstrap","file":"/etc/passwd"}`, wantErr: "cannot be used here"},
		{name: "file memory", args: `{"action":"update_bootstrap","file":"MEMORY.md","content":"x"}`, wantErr: "cannot be used here"},
		{name: "file bootstrap ritual", args: `{"action":"update_bootstrap","file":"BOOTSTRAP.md","content":"x"}`, wantErr: "cannot be used here"},
		{name: "file case", args: `{"action":"read_bootstrap","file":"soul.md"}`, wantErr: "cannot be used here"},
		{name: "update huge", args: fmt.Sprintf(`{"action":"update_bootstrap","file":"SOUL.md","content":%q}`, huge), wantErr: "over the 256 KiB limit"},

		// the first-run ritual
		{name: "complete with file", args: `{"action":"complete_bootstrap","file":"BOOTSTRAP.md"}`, wantErr: `action complete_bootstrap does not take "file"`},
		{name: "complete with content", args: `{"action":"complete_bootstrap","content":"x"}`, wantErr: `does not take "content"`},
		{name: "complete bootstrap", args: `{"action":"complete_bootstrap"}`, want: "deleted BOOTSTRAP.md: the first-run ritual is completed and will not be shown again"},
		{name: "complete again", args: `{"action":"complete_bootstrap"}`, want: "the first-run ritual is already completed: there is no BOOTSTRAP.md"},

		// malformed calls
		{name: "no action", args: `{}`, wantErr: `"action" is required`},
		{name: "no arguments", args: ``, wantErr: `"action" is required`},
		{name: "unknown action", args: `{"action":"delete"}`, wantErr: `unknown action "delete"`},
		{name: "unknown field", args: `{"action":"read","path":"/etc/passwd"}`, wantErr: `unknown argument "path" (allowed: action, content, date, file)`},
		{name: "wrong type", args: `{"action":"append","content":42}`, wantErr: `"content" must be a string, got number`},
		{name: "bad json", args: `{"action":"read"`, wantErr: "incomplete"},
		{name: "not an object", args: `"read"`, wantErr: "expected a JSON object, got string"},
	})

	want := map[string]string{
		"MEMORY.md":            "# Memory\n- likes green tea\n- cat: Miso\n",
		"memory/2026-02-21.md": "# 2026-02-21\n\n- 09:30 met Ana\n- 09:30 plan:\n  ship it\n",
		"memory/2026-02-20.md": "# 2026-02-20\n\n- 09:30 late note\n",
		"USER.md":              "# User\n- Name: Ana\n",
		"TOOLS.md":             "",
		"SOUL.md":              soul,
	}
	got := tree(t, dir)
	for name, content := range want {
		if got[name] != content {
			t.Errorf("%s = %q, want %q", name, got[name], content)
		}
	}
	if _, ok := got["BOOTSTRAP.md"]; ok {
		t.Error("BOOTSTRAP.md still there after complete_bootstrap")
	}
	for _, name := range []string{"IDENTITY.md", "AGENTS.md", "memory/", "skills/"} {
		if _, ok := got[name]; !ok {
			t.Errorf("%s is gone; complete_bootstrap deletes only BOOTSTRAP.md", name)
		}
	}
	for name := range got {
		if strings.Contains(name, ".tmp-") {
			t.Errorf("temporary file left behind: %s", name)
		}
	}
	if _, err := os.Stat(filepath.Join(home, "x")); err == nil {
		t.Error("a file was written outside the workspace")
	}
}

func TestMemoryToolHostileWorkspace(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "ws")
	writeFiles(t, tmp, map[string]string{"secret.txt": "TOP SECRET", "ws/AGENTS.md": "guide"})
	if err := os.Symlink(filepath.Join("..", "secret.txt"), filepath.Join(dir, "MEMORY.md")); err != nil {
		t.Skipf("symbolic links unavailable: %v", err)
	}
	if err := os.Symlink(tmp, filepath.Join(dir, "memory")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "secret.txt"), filepath.Join(dir, "BOOTSTRAP.md")); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 2, 21, 9, 30, 0, 0, time.UTC)
	runSteps(t, newMemoryTool(t, now), tool.Env{Workspace: osroot.New(dir)}, []step{
		{name: "read memory link", args: `{"action":"read"}`, wantErr: "symbolic link leading outside the workspace"},
		{name: "append memory link", args: `{"action":"append","content":"x"}`, wantErr: "symbolic link leading outside the workspace"},
		{name: "daily dir link", args: `{"action":"append_daily","content":"x"}`, wantErr: "symbolic link leading outside the workspace"},
		{name: "list daily dir link", args: `{"action":"list_daily"}`, wantErr: "symbolic link leading outside the workspace"},
		{name: "normal file still readable", args: `{"action":"read_bootstrap","file":"AGENTS.md"}`, want: "guide"},
		{name: "complete removes the link only", args: `{"action":"complete_bootstrap"}`, want: "deleted BOOTSTRAP.md: the first-run ritual is completed and will not be shown again"},
	})
	b, err := os.ReadFile(filepath.Join(tmp, "secret.txt"))
	if err != nil || string(b) != "TOP SECRET" {
		t.Errorf("secret.txt = %q, %v; want it untouched", b, err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "2026-02-21.md")); err == nil {
		t.Error("a daily log was written outside the workspace")
	}

	for _, d := range []string{"SOUL.md", "BOOTSTRAP.md"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runSteps(t, newMemoryTool(t, now), tool.Env{Workspace: osroot.New(dir)}, []step{
		{name: "read dir", args: `{"action":"read_bootstrap","file":"SOUL.md"}`, wantErr: "cannot use SOUL.md: it is not a regular file"},
		{name: "update dir", args: `{"action":"update_bootstrap","file":"SOUL.md","content":"x"}`, wantErr: "cannot use SOUL.md: it is not a regular file"},
		{name: "complete dir", args: `{"action":"complete_bootstrap"}`, wantErr: "cannot use BOOTSTRAP.md: it is not a regular file"},
	})
	if fi, err := os.Stat(filepath.Join(dir, "BOOTSTRAP.md")); err != nil || !fi.IsDir() {
		t.Errorf("complete_bootstrap removed a directory named BOOTSTRAP.md: %v", err)
	}
}

func TestMemoryToolMissingWorkspace(t *testing.T) {
	tl := newMemoryTool(t, time.Now())
	for _, tc := range []struct {
		name    string
		env     tool.Env
		wantErr string
	}{
		{"unset", tool.Env{Agent: "a"}, "has no workspace"},
		{"missing", tool.Env{Agent: "a", Workspace: osroot.New(filepath.Join(t.TempDir(), "gone"))}, "workspace does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runSteps(t, tl, tc.env, []step{
				{name: "read", args: `{"action":"read"}`, wantErr: tc.wantErr},
				{name: "append_daily", args: `{"action":"append_daily","content":"x"}`, wantErr: tc.wantErr},
				{name: "complete_bootstrap", args: `{"action":"complete_bootstrap"}`, wantErr: tc.wantErr},
			})
		})
	}
}

func TestMemoryToolListCap(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"memory/notes.md": "not a log", "memory/2026-13-01.md": "bad date"}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range maxDailyListed + 3 {
		files["memory/"+start.AddDate(0, 0, i).Format(dateLayout)+".md"] = "x"
	}
	writeFiles(t, dir, files)
	out, err := MemoryTool(defaultQuota(t)).Call(context.Background(), tool.Env{Workspace: osroot.New(dir)}, json.RawMessage(`{"action":"list_daily"}`))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out, "\n")
	want := []string{
		fmt.Sprintf("%d daily logs, newest first:", maxDailyListed+3),
		start.AddDate(0, 0, maxDailyListed+2).Format(dateLayout) + " (1 bytes)",
		"... 3 older logs not shown",
	}
	got := []string{lines[0], lines[1], lines[len(lines)-1]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("list_daily mismatch (-want +got):\n%s", diff)
	}
	if len(lines) != maxDailyListed+2 {
		t.Errorf("list_daily has %d lines, want %d", len(lines), maxDailyListed+2)
	}
}

func TestMemoryToolDefinition(t *testing.T) {
	tl := MemoryTool(defaultQuota(t))
	p := tl.Policy()
	for action, want := range map[string]tool.Effect{"read": tool.Read, "read_bootstrap": tool.Read, "append": tool.WriteShared,
		"update_bootstrap": tool.WriteShared, "complete_bootstrap": tool.WriteShared, "bogus": tool.WriteShared} {
		if got := p.EffectOf(json.RawMessage(`{"action":"` + action + `"}`)); got != want {
			t.Errorf("%s: effect %s, want %s", action, got, want)
		}
	}
	d := tl.Definition()
	var schema struct {
		Type       string   `json:"type"`
		Required   []string `json:"required"`
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(d.Parameters, &schema); err != nil {
		t.Fatalf("parameters are not JSON: %v", err)
	}
	got := []any{d.Name, schema.Type, schema.Required, schema.Properties["action"].Enum, schema.Properties["file"].Enum}
	want := []any{"workspace_memory", "object", []string{"action"}, actionNames, editable}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("definition mismatch (-want +got):\n%s", diff)
	}
	if len(actionNames) != len(actionArgs) {
		t.Errorf("%d action names for %d actions", len(actionNames), len(actionArgs))
	}
}

// Two processes (two Lambda instances: each its own tool and quota)
// appending to one MEMORY.md at once lose no line.
func TestMemoryToolConcurrentAppends(t *testing.T) {
	dir := t.TempDir()
	const writers = 6
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			env := tool.Env{Agent: "a", Workspace: osroot.New(dir)}
			_, errs[i] = newMemoryTool(t, time.Now()).Call(context.Background(), env, json.RawMessage(fmt.Sprintf(`{"action":"append","content":"line %d"}`, i)))
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Errorf("append: %v", err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, MemoryFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	slices.Sort(lines)
	var want []string
	for i := range writers {
		want = append(want, fmt.Sprintf("line %d", i))
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("MEMORY.md lines (-want +got):\n%s", diff)
	}
}
