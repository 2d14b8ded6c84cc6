package tests

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// TestWorkspaceLimits configures small file limits and lets the model
// write past them with write_file and workspace_memory: each write over a
// limit is refused whole, with a tool result that says which limit, and
// the files the user put in the workspace count towards its quota.
func TestWorkspaceLimits(t *testing.T) {
	t.Parallel()
	const quota = 200_000
	fake := newFake(t)
	g := startGateway(t, fake, fmt.Sprintf("limits:\n  max_file_bytes: 1000\n  workspace_quota_bytes: %d\n", quota))
	c := g.client(g.createKey(t, "--autonomy", "full"))

	// The user fills the workspace to 50 bytes short of its quota.
	var used int64
	err := filepath.WalkDir(g.workspace(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			fi, ierr := d.Info()
			used += fi.Size()
			err = ierr
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	g.writeWorkspaceFile("user.bin", strings.Repeat("u", int(quota-50-used)))

	steps := []struct {
		name string
		call fakellm.ToolCall
		// result is part of the tool result the model gets.
		result string
		// file is the workspace file the step writes, and content what it
		// holds afterwards ("" when the step must leave it as it was).
		file, content string
	}{
		{"write_file over the quota", fakellm.ToolCall{Name: "write_file", Arguments: fmt.Sprintf(`{"path":"notes/a.txt","content":%q}`, strings.Repeat("a", 100))},
			fmt.Sprintf("the workspace would hold %d bytes, over its quota of 200000 bytes", quota+50), "notes", ""},
		{"memory append over the quota", fakellm.ToolCall{Name: "workspace_memory", Arguments: fmt.Sprintf(`{"action":"append","content":%q}`, strings.Repeat("m", 100))},
			`cannot write "MEMORY.md": the workspace would hold`, "MEMORY.md", ""},
		{"write_file over the file limit", fakellm.ToolCall{Name: "write_file", Arguments: fmt.Sprintf(`{"path":"b.txt","content":%q}`, strings.Repeat("b", 1001))},
			`cannot write "b.txt": it would be 1001 bytes, over the limit of 1000 bytes per file`, "b.txt", ""},
		{"write_file within both", fakellm.ToolCall{Name: "write_file", Arguments: `{"path":"c.txt","content":"fits"}`},
			"created c.txt (4 bytes)", "c.txt", "fits"},
	}
	for i, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			fake.Reset()
			s.call.ID = fmt.Sprintf("call_%d", i)
			path := filepath.Join(g.workspace(), s.file)
			before, beforeErr := os.ReadFile(path)
			fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{s.call}}, fakellm.Reply{Content: "done"})
			if got := ask(t, c, "write it"); got != "done" {
				t.Errorf("reply = %q, want done", got)
			}
			reqs := fake.Requests()
			if len(reqs) != 2 {
				t.Fatalf("fake LLM got %d requests, want 2", len(reqs))
			}
			var result string
			for _, m := range reqs[1].Messages {
				if m.Role == "tool" && m.ToolCallID == s.call.ID {
					result = m.Content
				}
			}
			if !strings.Contains(result, s.result) {
				t.Errorf("tool result %q does not contain %q", result, s.result)
			}
			data, err := os.ReadFile(path)
			switch {
			case s.content == "" && (string(data) != string(before) || os.IsNotExist(err) != os.IsNotExist(beforeErr)):
				t.Errorf("%s = %q, %v after a refused write; want it as it was: %q, %v", s.file, data, err, before, beforeErr)
			case s.content != "" && string(data) != s.content:
				t.Errorf("%s = %q, %v; want %q", s.file, data, err, s.content)
			}
		})
	}
}
