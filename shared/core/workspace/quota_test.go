package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/tools/files"
)

// TestMemoryToolQuota writes memory into a workspace that already holds
// 900 bytes (big.txt), under limits of 200 bytes per file and 1000 per
// workspace. Writes over a limit are refused whole: the workspace keeps
// its files, and no file or directory is created.
func TestMemoryToolQuota(t *testing.T) {
	x := func(n int) string { return strings.Repeat("x", n) }
	start := map[string]string{"big.txt": x(900), "SOUL.md": x(10)}
	tests := []struct {
		name    string
		args    string
		want    string
		wantErr string
		after   map[string]string
	}{
		{name: "append fits", args: fmt.Sprintf(`{"action":"append","content":%q}`, x(89)),
			want: "appended 89 bytes to MEMORY.md (now 90 bytes)", after: map[string]string{"MEMORY.md": x(89) + "\n"}},
		{name: "append over the quota", args: fmt.Sprintf(`{"action":"append","content":%q}`, x(100)),
			wantErr: `cannot write "MEMORY.md": the workspace would hold 1011 bytes, over its quota of 1000 bytes`},
		{name: "replace over the quota", args: fmt.Sprintf(`{"action":"replace","content":%q}`, x(91)),
			wantErr: `cannot write "MEMORY.md": the workspace would hold 1001 bytes`},
		{name: "replace over the file limit", args: fmt.Sprintf(`{"action":"replace","content":%q}`, x(201)),
			wantErr: `cannot write "MEMORY.md": it would be 201 bytes, over the limit of 200 bytes per file`},
		{name: "daily log over the quota", args: fmt.Sprintf(`{"action":"append_daily","content":%q}`, x(90)),
			wantErr: `cannot write "memory/2026-03-01.md": the workspace would hold 1023 bytes`},
		{name: "daily log fits", args: `{"action":"append_daily","content":"ok"}`,
			want: "added to memory/2026-03-01.md (now 25 bytes): - 09:30 ok", after: map[string]string{"memory/": "", "memory/2026-03-01.md": "# 2026-03-01\n\n- 09:30 ok\n"}},
		{name: "bootstrap update over the quota", args: fmt.Sprintf(`{"action":"update_bootstrap","file":"SOUL.md","content":%q}`, x(101)),
			wantErr: `cannot write "SOUL.md": the workspace would hold 1001 bytes`},
		{name: "bootstrap update growing within the quota", args: fmt.Sprintf(`{"action":"update_bootstrap","file":"SOUL.md","content":%q}`, x(100)),
			want: "replaced SOUL.md (100 bytes)", after: map[string]string{"SOUL.md": x(100)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, start)
			q, err := files.NewQuota(files.Limits{MaxFileBytes: 200, WorkspaceQuotaBytes: 1000})
			if err != nil {
				t.Fatal(err)
			}
			tl := memoryTool{now: func() time.Time { return time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC) }, quota: q}
			out, err := tl.Call(context.Background(), tool.Env{Workspace: dir}, json.RawMessage(tt.args))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, files.ErrLimit) {
					t.Fatalf("got %q, %v; want an error matching files.ErrLimit containing %q", out, err, tt.wantErr)
				}
			} else if err != nil || out != tt.want {
				t.Fatalf("got %q, %v; want %q", out, err, tt.want)
			}
			want := maps.Clone(start)
			maps.Copy(want, tt.after)
			if diff := cmp.Diff(want, tree(t, dir)); diff != "" {
				t.Errorf("workspace (-want +got):\n%s", diff)
			}
		})
	}
}

// TestToolsShareQuota runs write_file and workspace_memory at once on one
// workspace and one Quota: 100-byte writes into a 1000-byte quota, so
// exactly ten of them pass, whichever tool makes them.
func TestToolsShareQuota(t *testing.T) {
	const writers = 12
	dir := t.TempDir()
	q, err := files.NewQuota(files.Limits{MaxFileBytes: 1000, WorkspaceQuotaBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	wf, mem := files.WriteFile(q), MemoryTool(q)
	env := tool.Env{Workspace: dir}
	var wg sync.WaitGroup
	errs := make([]error, 2*writers)
	for i := range writers {
		wg.Go(func() {
			args, _ := json.Marshal(map[string]string{"path": fmt.Sprintf("f%02d.txt", i), "content": strings.Repeat("w", 100)})
			_, errs[i] = wf.Call(context.Background(), env, args)
		})
		wg.Go(func() {
			// 99 bytes and the newline that ends every entry.
			args, _ := json.Marshal(map[string]string{"action": "append", "content": strings.Repeat("m", 99)})
			_, errs[writers+i] = mem.Call(context.Background(), env, args)
		})
	}
	wg.Wait()
	var ok, refused int
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, files.ErrLimit):
			refused++
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	var used int64
	for _, content := range tree(t, dir) {
		used += int64(len(content))
	}
	if diff := cmp.Diff([]int64{10, 2*writers - 10, 1000}, []int64{int64(ok), int64(refused), used}); diff != "" {
		t.Errorf("[succeeded, refused, bytes used] (-want +got):\n%s", diff)
	}
}
