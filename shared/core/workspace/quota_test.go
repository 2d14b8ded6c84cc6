package workspace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
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
			q, err := NewQuota(Limits{MaxFileBytes: 200, WorkspaceQuotaBytes: 1000})
			if err != nil {
				t.Fatal(err)
			}
			tl := memoryTool{now: func() time.Time { return time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC) }, quota: q}
			out, err := tl.Call(context.Background(), tool.Env{Workspace: osroot.New(dir)}, json.RawMessage(tt.args))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrLimit) {
					t.Fatalf("got %q, %v; want an error matching ErrLimit containing %q", out, err, tt.wantErr)
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

func TestUsageStale(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		s    *space
		now  time.Time
	}{
		{"never measured", &space{}, at},
		{"fresh", &space{measured: at}, at.Add(UsageMaxAge)},
		{"old", &space{measured: at}, at.Add(UsageMaxAge + time.Nanosecond)},
		{"slow walk, fresh", &space{measured: at, walk: time.Second}, at.Add(walkShare * time.Second)},
		{"slow walk, old", &space{measured: at, walk: time.Second}, at.Add(walkShare*time.Second + time.Nanosecond)},
		{"marked unknown", &space{used: 5, walk: time.Second}, at},
	}
	var got []bool
	for _, tt := range tests {
		got = append(got, tt.s.stale(tt.now))
	}
	if diff := cmp.Diff([]bool{true, false, true, false, true, true}, got); diff != "" {
		t.Errorf("stale, in the order of the cases (-want +got):\n%s", diff)
	}
}

func TestNewQuota(t *testing.T) {
	tests := []struct {
		name string
		l    Limits
		ok   bool
	}{
		{"positive", Limits{MaxFileBytes: 1, WorkspaceQuotaBytes: 1}, true},
		{"zero file limit", Limits{WorkspaceQuotaBytes: 1}, false},
		{"negative quota", Limits{MaxFileBytes: 1, WorkspaceQuotaBytes: -1}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := NewQuota(tt.l)
			if (err == nil) != tt.ok {
				t.Fatalf("NewQuota(%+v) = %v, %v; want ok %v", tt.l, q, err, tt.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "must be positive") {
				t.Errorf("error %q does not say the limits must be positive", err)
			}
		})
	}
}

func TestSizeText(t *testing.T) {
	got := []string{SizeText(10 << 20), SizeText(100 << 10), SizeText(1536), SizeText(1<<20 + 1), SizeText(0)}
	want := []string{"10 MiB", "100 KiB", "1536 bytes", "1048577 bytes", "0 bytes"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sizeText (-want +got):\n%s", diff)
	}
}
