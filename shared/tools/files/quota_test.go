package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
)

// tree lists the regular files under dir and their contents, the
// directories as "name/" and symbolic links as "-> target".
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			got[rel+"/"] = ""
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			got[rel] = "-> " + target
			return err
		}
		b, err := os.ReadFile(p)
		got[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// newTestQuota returns a workspace.Quota whose clock stands still.
func newTestQuota(t *testing.T, l workspace.Limits) *workspace.Quota {
	t.Helper()
	q, err := workspace.NewQuota(l)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	q.SetClock(func() time.Time { return at })
	return q
}

// TestWriteFileLimits writes into a workspace of 200 bytes (a.txt 100,
// b.txt 100) under limits of 150 bytes per file and 400 per workspace.
// A write over a limit is refused whole: the workspace stays as it was.
func TestWriteFileLimits(t *testing.T) {
	x := func(n int) string { return strings.Repeat("x", n) }
	start := map[string]string{"a.txt": x(100), "b.txt": x(100)}
	tests := []struct {
		name    string
		args    string
		want    string
		wantErr string
		// after is what the workspace holds afterwards besides start.
		after map[string]string
	}{
		{name: "create at the file limit", args: fmt.Sprintf(`{"path":"c.txt","content":%q}`, x(150)),
			want: "created c.txt (150 bytes)", after: map[string]string{"c.txt": x(150)}},
		{name: "create over the file limit", args: fmt.Sprintf(`{"path":"new/c.txt","content":%q}`, x(151)),
			wantErr: `cannot write "new/c.txt": it would be 151 bytes, over the limit of 150 bytes per file; nothing was written`},
		{name: "replace over the file limit", args: fmt.Sprintf(`{"path":"a.txt","content":%q}`, x(151)),
			wantErr: `cannot write "a.txt": it would be 151 bytes, over the limit of 150 bytes per file`},
		{name: "append up to the file limit", args: fmt.Sprintf(`{"path":"a.txt","content":%q,"append":true}`, x(50)),
			want: "appended 50 bytes to a.txt (now 150 bytes)", after: map[string]string{"a.txt": x(150)}},
		{name: "append crossing the file limit", args: fmt.Sprintf(`{"path":"a.txt","content":%q,"append":true}`, x(51)),
			wantErr: `cannot write "a.txt": it would be 151 bytes, over the limit of 150 bytes per file`},
		{name: "append to a new file over the file limit", args: fmt.Sprintf(`{"path":"d/log.txt","content":%q,"append":true}`, x(151)),
			wantErr: `over the limit of 150 bytes per file`},
		{name: "create up to the quota", args: fmt.Sprintf(`{"path":"c.txt","content":%q}`, x(150)),
			want: "created c.txt (150 bytes)", after: map[string]string{"c.txt": x(150)}},
		{name: "replace growing up to the quota", args: fmt.Sprintf(`{"path":"a.txt","content":%q}`, x(150)),
			want: "replaced a.txt (150 bytes)", after: map[string]string{"a.txt": x(150)}},
		{name: "replace shrinking", args: `{"path":"a.txt","content":"short"}`,
			want: "replaced a.txt (5 bytes)", after: map[string]string{"a.txt": "short"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range start {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			q := newTestQuota(t, workspace.Limits{MaxFileBytes: 150, WorkspaceQuotaBytes: 400})
			out, err := WriteFile(q).Call(context.Background(), tool.Env{Workspace: osroot.New(dir)}, json.RawMessage(tt.args))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, workspace.ErrLimit) {
					t.Fatalf("got %q, %v; want an workspace.ErrLimit containing %q", out, err, tt.wantErr)
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

// TestQuotaSequence runs writes in order against one workspace under a
// quota of 300 bytes, with files added and removed behind the tools' back.
func TestQuotaSequence(t *testing.T) {
	x := func(n int) string { return strings.Repeat("x", n) }
	dir := t.TempDir()
	q := newTestQuota(t, workspace.Limits{MaxFileBytes: 200, WorkspaceQuotaBytes: 300})
	// The steps run one after another, as does the clock.
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	q.SetClock(func() time.Time { return now })
	wf := WriteFile(q)
	userWrite := func(name string, n int) func(t *testing.T) {
		return func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(x(n)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	steps := []struct {
		name string
		// before runs first: a change made by the user, or time passing.
		before  func(t *testing.T)
		args    string
		want    string
		wantErr string
	}{
		{name: "first file", args: fmt.Sprintf(`{"path":"a.txt","content":%q}`, x(200)), want: "created a.txt (200 bytes)"},
		{name: "second file fits", args: fmt.Sprintf(`{"path":"b.txt","content":%q}`, x(100)), want: "created b.txt (100 bytes)"},
		{name: "one byte more is refused", args: `{"path":"c.txt","content":"x"}`,
			wantErr: `the workspace would hold 301 bytes, over its quota of 300 bytes (it holds 300 bytes now)`},
		{name: "append refused whole", args: `{"path":"b.txt","content":"xy","append":true}`, wantErr: "over its quota"},
		{name: "an empty file fits", args: `{"path":"empty.txt","content":""}`, want: "created empty.txt (0 bytes)"},
		{name: "replacing by a shorter file frees room", args: fmt.Sprintf(`{"path":"a.txt","content":%q}`, x(150)), want: "replaced a.txt (150 bytes)"},
		{name: "the room is used", args: fmt.Sprintf(`{"path":"c.txt","content":%q}`, x(50)), want: "created c.txt (50 bytes)"},
		{name: "a file the user deleted frees room at once", before: func(t *testing.T) {
			if err := os.Remove(filepath.Join(dir, "a.txt")); err != nil {
				t.Fatal(err)
			}
		}, args: fmt.Sprintf(`{"path":"d.txt","content":%q}`, x(150)), want: "created d.txt (150 bytes)"},
		{name: "a file the user added counts once the usage is old", before: func(t *testing.T) {
			if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			userWrite("sub/user.txt", 290)(t)
			now = now.Add(workspace.UsageMaxAge + time.Second)
		}, args: `{"path":"e.txt","content":"x"}`, wantErr: "the workspace would hold 591 bytes"},
		{name: "symbolic links are not followed", before: func(t *testing.T) {
			if err := os.Symlink("sub", filepath.Join(dir, "sublink")); err != nil {
				t.Skipf("symbolic links unavailable: %v", err)
			}
			now = now.Add(workspace.UsageMaxAge + time.Second)
		}, args: `{"path":"e.txt","content":"x"}`, wantErr: "the workspace would hold 591 bytes"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if s.before != nil {
				s.before(t)
			}
			out, err := wf.Call(context.Background(), tool.Env{Workspace: osroot.New(dir)}, json.RawMessage(s.args))
			if s.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), s.wantErr) || !errors.Is(err, workspace.ErrLimit) {
					t.Fatalf("got %q, %v; want an workspace.ErrLimit containing %q", out, err, s.wantErr)
				}
				return
			}
			if err != nil || out != s.want {
				t.Fatalf("got %q, %v; want %q", out, err, s.want)
			}
		})
	}
	want := map[string]string{"b.txt": x(100), "c.txt": x(50), "d.txt": x(150), "empty.txt": "", "sub/": "", "sub/user.txt": x(290), "sublink": "-> sub"}
	got := tree(t, dir)
	if _, ok := got["sublink"]; !ok {
		delete(want, "sublink") // no symbolic links here
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("workspace (-want +got):\n%s", diff)
	}
}

// TestQuotaConcurrentWrites starts more writes at once than the quota
// holds: exactly as many as fit succeed, the others are refused, and the
// workspace ends within its quota.
func TestQuotaConcurrentWrites(t *testing.T) {
	const size, quota, writers = 100, 1000, 25
	tests := []struct {
		name   string
		append bool
	}{
		{"separate files", false},
		{"appends to one file", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			q := newTestQuota(t, workspace.Limits{MaxFileBytes: quota, WorkspaceQuotaBytes: quota})
			wf := WriteFile(q)
			var wg sync.WaitGroup
			errs := make([]error, writers)
			for i := range writers {
				wg.Go(func() {
					path := fmt.Sprintf("f%02d.txt", i)
					if tt.append {
						path = "log.txt"
					}
					args, _ := json.Marshal(map[string]any{"path": path, "content": strings.Repeat("x", size), "append": tt.append})
					_, errs[i] = wf.Call(context.Background(), tool.Env{Workspace: osroot.New(dir)}, args)
				})
			}
			wg.Wait()
			var ok, refused int
			for _, err := range errs {
				switch {
				case err == nil:
					ok++
				case errors.Is(err, workspace.ErrLimit):
					refused++
				default:
					t.Errorf("unexpected error: %v", err)
				}
			}
			used, err := workspace.Usage(context.Background(), osroot.New(dir))
			if err != nil {
				t.Fatal(err)
			}
			got := []int64{int64(ok), int64(refused), used}
			if diff := cmp.Diff([]int64{quota / size, writers - quota/size, quota}, got); diff != "" {
				t.Errorf("[succeeded, refused, bytes used] (-want +got):\n%s", diff)
			}
		})
	}
}

// BenchmarkWriteFile measures a write_file call (an append) into
// workspaces of growing size, and the walk that measuring such a
// workspace costs: the walk is what the kept usage saves on most writes.
func BenchmarkWriteFile(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		dir := b.TempDir()
		for i := range n {
			sub := filepath.Join(dir, fmt.Sprintf("d%03d", i/100))
			if err := os.MkdirAll(sub, 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%05d.txt", i)), []byte("some text"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		q, err := workspace.NewQuota(workspace.Limits{MaxFileBytes: 1 << 20, WorkspaceQuotaBytes: 1 << 30})
		if err != nil {
			b.Fatal(err)
		}
		wf := WriteFile(q)
		env := tool.Env{Workspace: osroot.New(dir)}
		args := json.RawMessage(`{"path":"notes/log.txt","content":"one more line\n","append":true}`)
		b.Run(fmt.Sprintf("files=%d/write_file", n), func(b *testing.B) {
			// The first write measures the workspace; the loop's writes
			// use the usage kept since.
			if _, err := wf.Call(context.Background(), env, args); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := wf.Call(context.Background(), env, args); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("files=%d/walk", n), func(b *testing.B) {
			ws := osroot.New(dir)
			for b.Loop() {
				if _, err := workspace.Usage(context.Background(), ws); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// exactly ten of them pass, whichever tool makes them.
func TestToolsShareQuota(t *testing.T) {
	const writers = 12
	dir := t.TempDir()
	q, err := workspace.NewQuota(workspace.Limits{MaxFileBytes: 1000, WorkspaceQuotaBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	wf, mem := WriteFile(q), workspace.MemoryTool(q)
	env := tool.Env{Workspace: osroot.New(dir)}
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
		case errors.Is(err, workspace.ErrLimit):
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
