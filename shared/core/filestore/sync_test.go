package filestore_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	s3fs "github.com/lambdaclaw/lambdaclaw/shared/adapters/s3"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

var limits = filestore.SyncOptions{MaxFileBytes: 1 << 10, MaxTotalBytes: 4 << 10}

// contents maps every file of f to its content.
func contents(t *testing.T, f filestore.FS) map[string]string {
	t.Helper()
	out := map[string]string{}
	ctx := context.Background()
	if err := f.Walk(ctx, ".", func(name string, _ filestore.Entry) error {
		data, _, err := f.ReadFile(ctx, name, 1<<20)
		out[name] = string(data)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func put(t *testing.T, f filestore.FS, files map[string]string) {
	t.Helper()
	for name, data := range files {
		if _, err := f.WriteFile(context.Background(), name, []byte(data), filestore.Any); err != nil {
			t.Fatal(err)
		}
	}
}

// reads counts the ReadFile calls of an S3 FS.
type reads struct {
	*s3fs.FS
	n int
}

func (r *reads) ReadFile(ctx context.Context, name string, limit int64) ([]byte, filestore.Entry, error) {
	r.n++
	return r.FS.ReadFile(ctx, name, limit)
}

// A local directory pushed to S3 and pulled back: Sync makes the
// destination equal to the source, passes over links, compares files of
// one size by ETag without reading S3, and does nothing the second time.
func TestSyncDirectoryAndS3(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	local := osroot.New(dir)
	put(t, local, map[string]string{"AGENTS.md": "same", "memory/2025-01-02.md": "new!", "empty.md": "", "MEMORY.md": "local"})
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link.md")); err != nil {
		t.Fatal(err)
	}
	remote := &reads{FS: cloudtest.S3FS(t, "agents/main")}
	put(t, remote, map[string]string{"AGENTS.md": "same", "memory/2025-01-02.md": "old!", "stale.md": "gone soon", "MEMORY.md": "remote, longer"})
	sameBefore, err := remote.Stat(ctx, "AGENTS.md")
	if err != nil {
		t.Fatal(err)
	}

	want := []filestore.Change{
		{Kind: filestore.Skipped, Name: "link.md", Mode: fs.ModeSymlink},
		{Kind: filestore.Updated, Name: "MEMORY.md", Size: 5},
		{Kind: filestore.Added, Name: "empty.md"},
		{Kind: filestore.Updated, Name: "memory/2025-01-02.md", Size: 4},
		{Kind: filestore.Deleted, Name: "stale.md", Size: 9},
	}
	dry := limits
	dry.DryRun = true
	got, err := filestore.Sync(ctx, remote, local, dry)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dry run (-want +got):\n%s", diff)
	}
	if c := contents(t, remote); c["stale.md"] == "" || c["memory/2025-01-02.md"] != "old!" {
		t.Errorf("the dry run changed S3: %v", c)
	}

	remote.n = 0
	got, err = filestore.Sync(ctx, remote, local, limits)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("push (-want +got):\n%s", diff)
	}
	if remote.n != 0 {
		t.Errorf("push read S3 %d times, want none (ETags are MD5s)", remote.n)
	}
	wantFiles := map[string]string{"AGENTS.md": "same", "memory/2025-01-02.md": "new!", "empty.md": "", "MEMORY.md": "local"}
	if diff := cmp.Diff(wantFiles, contents(t, remote)); diff != "" {
		t.Errorf("S3 after the push (-want +got):\n%s", diff)
	}
	if after, _ := remote.Stat(ctx, "AGENTS.md"); after.Version != sameBefore.Version {
		t.Error("an unchanged file was written again")
	}
	if got, err := filestore.Sync(ctx, remote, local, limits); err != nil || len(got) != 1 || got[0].Kind != filestore.Skipped {
		t.Errorf("a second push = %v, %v; want only the link skipped", got, err)
	}

	// Pull into another directory, which holds a file S3 has not.
	other := osroot.New(t.TempDir())
	put(t, other, map[string]string{"mine.md": "local only", "MEMORY.md": "diff!"})
	got, err = filestore.Sync(ctx, other, remote, limits)
	if err != nil {
		t.Fatal(err)
	}
	want = []filestore.Change{
		{Kind: filestore.Added, Name: "AGENTS.md", Size: 4},
		{Kind: filestore.Updated, Name: "MEMORY.md", Size: 5},
		{Kind: filestore.Added, Name: "empty.md"},
		{Kind: filestore.Added, Name: "memory/2025-01-02.md", Size: 4},
		{Kind: filestore.Deleted, Name: "mine.md", Size: 10},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pull (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantFiles, contents(t, other)); diff != "" {
		t.Errorf("the directory after the pull (-want +got):\n%s", diff)
	}
}

// A source over a limit changes nothing.
func TestSyncLimits(t *testing.T) {
	ctx := context.Background()
	for name, files := range map[string]map[string]string{
		"file": {"a.md": "x", "big.md": string(make([]byte, 2<<10))},
		"total": {"1.md": string(make([]byte, 1<<10)), "2.md": string(make([]byte, 1<<10)), "3.md": string(make([]byte, 1<<10)),
			"4.md": string(make([]byte, 1<<10)), "5.md": "x"},
	} {
		t.Run(name, func(t *testing.T) {
			src := osroot.New(t.TempDir())
			put(t, src, files)
			dst := cloudtest.S3FS(t, "agents/main")
			put(t, dst, map[string]string{"keep.md": "kept"})
			if _, err := filestore.Sync(ctx, dst, src, limits); err == nil {
				t.Error("no error")
			}
			if diff := cmp.Diff(map[string]string{"keep.md": "kept"}, contents(t, dst)); diff != "" {
				t.Errorf("the destination changed (-want +got):\n%s", diff)
			}
		})
	}
}

// writer writes to another FS when a file is first read, as a Lambda
// function writing MEMORY.md during a push would.
type writer struct {
	filestore.FS
	then func()
}

func (w *writer) ReadFile(ctx context.Context, name string, limit int64) ([]byte, filestore.Entry, error) {
	if w.then != nil {
		w.then()
		w.then = nil
	}
	return w.FS.ReadFile(ctx, name, limit)
}

// A destination file changed after Sync compared it is not overwritten.
func TestSyncConflict(t *testing.T) {
	ctx := context.Background()
	dst := cloudtest.S3FS(t, "agents/main")
	put(t, dst, map[string]string{"MEMORY.md": "remote"})
	src := osroot.New(t.TempDir())
	put(t, src, map[string]string{"MEMORY.md": "local, longer"})
	w := &writer{FS: src, then: func() { put(t, dst, map[string]string{"MEMORY.md": "written meanwhile"}) }}
	if _, err := filestore.Sync(ctx, dst, w, limits); !errors.Is(err, filestore.ErrConflict) {
		t.Errorf("Sync: %v, want ErrConflict", err)
	}
	if diff := cmp.Diff(map[string]string{"MEMORY.md": "written meanwhile"}, contents(t, dst)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
