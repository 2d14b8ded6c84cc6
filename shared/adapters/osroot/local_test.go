//go:build unix

package osroot

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
)

// links builds a tree with links inside and out of it:
//
//	out/secret.txt          "secret"
//	ws/in.txt               "inside"
//	ws/sub/deep.txt         "deep"
//	ws/link_in      ->      in.txt
//	ws/link_out     ->      ../out/secret.txt
//	ws/dirlink_in   ->      sub
//	ws/dirlink_out  ->      ../out
func links(t *testing.T) (ws, out string) {
	t.Helper()
	tmp := t.TempDir()
	ws, out = filepath.Join(tmp, "ws"), filepath.Join(tmp, "out")
	for _, d := range []string{filepath.Join(ws, "sub"), out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range map[string]string{filepath.Join(out, "secret.txt"): "secret", filepath.Join(ws, "in.txt"): "inside", filepath.Join(ws, "sub", "deep.txt"): "deep"} {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"link_in": "in.txt", "link_out": "../out/secret.txt", "dirlink_in": "sub", "dirlink_out": "../out"} {
		if err := os.Symlink(target, filepath.Join(ws, link)); err != nil {
			t.Skipf("symbolic links unavailable: %v", err)
		}
	}
	return ws, out
}

func TestLinks(t *testing.T) {
	ctx := context.Background()
	ws, out := links(t)
	f := New(ws)
	for _, tc := range []struct {
		name, want string
		escapes    bool
	}{
		{name: "link_in", want: "inside"},
		{name: "dirlink_in/deep.txt", want: "deep"},
		{name: "link_out", escapes: true},
		{name: "dirlink_out/secret.txt", escapes: true},
	} {
		got, _, err := f.ReadFile(ctx, tc.name, 100)
		if tc.escapes {
			if err == nil || !strings.Contains(err.Error(), "escapes") || strings.Contains(err.Error(), out) {
				t.Errorf("ReadFile(%s) = %q, %v; want an error saying it escapes, without the host path", tc.name, got, err)
			}
			continue
		}
		if err != nil || string(got) != tc.want {
			t.Errorf("ReadFile(%s) = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}

	// A write through a link inside replaces the file it leads to and
	// keeps the link; a write through a link out changes nothing.
	if _, err := f.WriteFile(ctx, "link_in", []byte("new"), filestore.Any); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "in.txt")); string(b) != "new" {
		t.Errorf("in.txt holds %q after a write through link_in", b)
	}
	if fi, err := os.Lstat(filepath.Join(ws, "link_in")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("link_in is no longer a link: %v", err)
	}
	for _, name := range []string{"link_out", "dirlink_out/secret.txt", "dirlink_out/new.txt"} {
		if _, err := f.WriteFile(ctx, name, []byte("pwned"), filestore.Any); err == nil {
			t.Errorf("WriteFile(%s) succeeded", name)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(out, "secret.txt")); string(b) != "secret" {
		t.Errorf("the file outside holds %q", b)
	}
	if _, err := os.Stat(filepath.Join(out, "new.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file was created outside: %v", err)
	}

	// ReadDir shows links as links; Walk does not follow them.
	es, err := f.ReadDir(ctx, ".", 100)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]fs.FileMode{}
	for _, e := range es {
		kinds[e.Name] = e.Mode.Type()
	}
	want := map[string]fs.FileMode{"dirlink_in": fs.ModeSymlink, "dirlink_out": fs.ModeSymlink, "in.txt": 0, "link_in": fs.ModeSymlink, "link_out": fs.ModeSymlink, "sub": fs.ModeDir}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("ReadDir kinds (-want +got):\n%s", diff)
	}
	var walked []string
	if err := f.Walk(ctx, ".", func(name string, _ filestore.Entry) error { walked = append(walked, name); return nil }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"in.txt", "sub/deep.txt"}, walked); diff != "" {
		t.Errorf("Walk (-want +got):\n%s", diff)
	}

	// Remove of a link removes the link only; RemoveAll of a link to a
	// directory keeps the directory.
	if err := f.Remove(ctx, "link_out"); err != nil {
		t.Fatal(err)
	}
	if err := f.RemoveAll(ctx, "dirlink_out"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "secret.txt")); err != nil || string(b) != "secret" {
		t.Errorf("the target outside changed: %q, %v", b, err)
	}
}

func TestSpecialFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Skipf("cannot make a FIFO: %v", err)
	}
	f := New(dir)
	if _, _, err := f.ReadFile(ctx, "pipe", 10); !errors.Is(err, filestore.ErrNotFile) {
		t.Errorf("ReadFile of a FIFO: %v, want ErrNotFile", err)
	}
	if _, err := f.WriteFile(ctx, "pipe", []byte("x"), filestore.Any); !errors.Is(err, filestore.ErrNotFile) {
		t.Errorf("WriteFile over a FIFO: %v, want ErrNotFile", err)
	}
	es, err := f.ReadDir(ctx, ".", 10)
	if err != nil || len(es) != 1 || es[0].Mode.Type() != fs.ModeNamedPipe || es[0].Version != "" {
		t.Errorf("ReadDir = %+v, %v; want the FIFO as a named pipe without a version", es, err)
	}
}

func TestMissingRoot(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	f := New(filepath.Join(tmp, "gone"))
	if _, err := f.Stat(ctx, "."); !errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), tmp) {
		t.Errorf("Stat(.) of a missing root: %v, want fs.ErrNotExist without the host path", err)
	}
	if _, _, err := f.ReadFile(ctx, "x.md", 10); !errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), tmp) {
		t.Errorf("ReadFile in a missing root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "gone")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("reading created the root: %v", err)
	}
	if err := f.Mkdir(ctx, "memory"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(tmp, "gone", "memory")); err != nil || !fi.IsDir() {
		t.Errorf("Mkdir made no directory: %v", err)
	}
	file := New(filepath.Join(tmp, "gone", "memory"))
	if _, err := file.WriteFile(ctx, "a.md", []byte("x"), filestore.Any); err != nil {
		t.Fatal(err)
	}
	notDir := New(filepath.Join(tmp, "gone", "memory", "a.md"))
	if e, err := notDir.Stat(ctx, "."); err != nil || e.IsDir() {
		t.Errorf("Stat(.) of a root that is a file = %+v, %v; want a file", e, err)
	}
	if _, _, err := notDir.ReadFile(ctx, "x", 10); err == nil || strings.Contains(err.Error(), tmp) {
		t.Errorf("ReadFile in a root that is a file: %v", err)
	}
}

// A rewrite keeps the file's permissions.
func TestKeepsPermissions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.sh"), []byte("a"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := New(dir).WriteFile(ctx, "x.sh", []byte("b"), filestore.Any); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "x.sh")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("mode after a rewrite = %v, %v; want 0700", fi.Mode(), err)
	}
}
