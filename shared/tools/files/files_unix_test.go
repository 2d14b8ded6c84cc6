//go:build unix

package files

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestSpecialFiles(t *testing.T) {
	f := newFixture(t)
	if err := syscall.Mkfifo(filepath.Join(f.ws, "pipe"), 0o644); err != nil {
		t.Skipf("cannot make a FIFO: %v", err)
	}
	runCases(t, f, ReadFile(), []toolCase{
		{name: "read fifo", args: `{"path":"pipe"}`, wantErr: "not a regular file (named pipe)"},
	})
	runCases(t, f, WriteFile(defaultQuota(t)), []toolCase{
		{name: "replace fifo", args: `{"path":"pipe","content":"x"}`, wantErr: "not a regular file (named pipe)"},
		{name: "append fifo", args: `{"path":"pipe","content":"x","append":true}`, wantErr: "not a regular file (named pipe)"},
	})
	out, err := ListDir().Call(t.Context(), f.env(), []byte(`{}`))
	if err != nil || !strings.Contains(out, "pipe (named pipe)") {
		t.Errorf("list_dir = %q, %v; want the FIFO shown as a named pipe", out, err)
	}
}
