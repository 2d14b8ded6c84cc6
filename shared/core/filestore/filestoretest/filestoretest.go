// Package filestoretest is the conformance suite of filestore.FS: every
// adapter passes Run.
package filestoretest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
)

// Run holds the FS that newFS makes to the port's contract. newFS returns
// an empty tree, a new one per call.
func Run(t *testing.T, newFS func(t *testing.T) filestore.FS) {
	ctx := context.Background()
	t.Run("RoundTrip", func(t *testing.T) {
		f := newFS(t)
		data := []byte("# Memory\n\nThe user likes tea.\n")
		w := mustWrite(t, f, "a/b/MEMORY.md", data, filestore.Any)
		if w.Name != "MEMORY.md" || w.Size != int64(len(data)) || w.Mode.Type() != 0 || w.Version == "" {
			t.Errorf("WriteFile entry = %+v, want a regular MEMORY.md of %d bytes with a version", w, len(data))
		}
		got, e, err := f.ReadFile(ctx, "a/b/MEMORY.md", 1<<20)
		if err != nil {
			t.Fatalf("ReadFile: %v", err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("ReadFile = %q, want %q", got, data)
		}
		s, err := f.Stat(ctx, "a/b/MEMORY.md")
		if err != nil {
			t.Fatalf("Stat: %v", err)
		}
		for _, x := range []filestore.Entry{e, s} {
			if x.Name != w.Name || x.Size != w.Size || x.Version != w.Version || x.Mode.Type() != 0 {
				t.Errorf("entry %+v, want the written one %+v", x, w)
			}
		}
		d, err := f.Stat(ctx, "a/b")
		if err != nil || !d.IsDir() || d.Name != "b" {
			t.Errorf("Stat of the parent = %+v, %v; want the directory b", d, err)
		}
		empty := mustWrite(t, f, "empty.txt", nil, filestore.Any)
		if got, _, err := f.ReadFile(ctx, "empty.txt", 10); err != nil || len(got) != 0 || empty.Size != 0 {
			t.Errorf("an empty file reads %q, %v (size %d)", got, err, empty.Size)
		}
	})

	t.Run("ReadLimit", func(t *testing.T) {
		f := newFS(t)
		mustWrite(t, f, "big.txt", []byte("0123456789"), filestore.Any)
		got, e, err := f.ReadFile(ctx, "big.txt", 4)
		if err != nil || string(got) != "0123" || e.Size != 10 {
			t.Errorf("ReadFile limit 4 = %q, size %d, %v; want \"0123\", size 10", got, e.Size, err)
		}
	})

	t.Run("Missing", func(t *testing.T) {
		f := newFS(t)
		mustWrite(t, f, "dir/here.txt", []byte("x"), filestore.Any)
		for name, err := range map[string]error{
			"Stat":          second(f.Stat(ctx, "nope.txt")),
			"Stat in a dir": second(f.Stat(ctx, "dir/nope.txt")),
			"ReadFile":      third(f.ReadFile(ctx, "nope.txt", 10)),
			"ReadDir":       second(f.ReadDir(ctx, "nope", 10)),
			"Remove":        f.Remove(ctx, "dir/nope.txt"),
		} {
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s: %v, want fs.ErrNotExist", name, err)
			}
		}
		if _, _, err := f.ReadFile(ctx, "dir", 10); !errors.Is(err, filestore.ErrNotFile) {
			t.Errorf("ReadFile of a directory: %v, want ErrNotFile", err)
		}
		if err := f.RemoveAll(ctx, "nope"); err != nil {
			t.Errorf("RemoveAll of a missing dir: %v", err)
		}
		if got := walk(t, f, "nope"); len(got) != 0 {
			t.Errorf("Walk of a missing dir visited %v", got)
		}
		if got, err := f.ReadDir(ctx, ".", 10); err != nil || len(got) != 1 {
			t.Errorf("ReadDir of the root = %v, %v; want dir", got, err)
		}
	})

	t.Run("ReadDir", func(t *testing.T) {
		f := newFS(t)
		for _, n := range []string{"b.txt", "a/one.md", "a/two.md", "c/d/deep.md", "a.txt"} {
			mustWrite(t, f, n, []byte(n), filestore.Any)
		}
		got := names(t, f, ".", 100)
		want := []string{"a/", "a.txt", "b.txt", "c/"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("ReadDir(.) (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"a/", "a.txt"}, names(t, f, ".", 2)); diff != "" {
			t.Errorf("ReadDir(., 2) (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"one.md", "two.md"}, names(t, f, "a", 100)); diff != "" {
			t.Errorf("ReadDir(a) (-want +got):\n%s", diff)
		}
		es, err := f.ReadDir(ctx, "a", 100)
		if err != nil || len(es) != 2 || es[0].Size != int64(len("a/one.md")) || es[0].Version == "" {
			t.Errorf("ReadDir(a) entries = %+v, %v; want sizes and versions", es, err)
		}
	})

	t.Run("Walk", func(t *testing.T) {
		f := newFS(t)
		for _, n := range []string{"z.txt", "a/one.md", "a/b/two.md", "ab.txt", "c/three.md"} {
			mustWrite(t, f, n, []byte(n), filestore.Any)
		}
		want := map[string]int64{"a/b/two.md": 10, "a/one.md": 8, "ab.txt": 6, "c/three.md": 10, "z.txt": 5}
		got := walk(t, f, ".")
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Walk(.) (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]int64{"a/b/two.md": 10, "a/one.md": 8}, walk(t, f, "a")); diff != "" {
			t.Errorf("Walk(a) (-want +got):\n%s", diff)
		}
		var order []string
		if err := f.Walk(ctx, ".", func(name string, _ filestore.Entry) error {
			order = append(order, name)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"a/b/two.md", "a/one.md", "ab.txt", "c/three.md", "z.txt"}, order); diff != "" {
			t.Errorf("Walk order (-want +got):\n%s", diff)
		}
		// Lexical order of whole names: "a-b" < "a.txt" < "a/…", as S3
		// lists keys, not directory by directory.
		g := newFS(t)
		for _, n := range []string{"a/b.txt", "a.txt", "a-b.txt"} {
			mustWrite(t, g, n, []byte(n), filestore.Any)
		}
		order = nil
		if err := g.Walk(ctx, ".", func(name string, _ filestore.Entry) error {
			order = append(order, name)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"a-b.txt", "a.txt", "a/b.txt"}, order); diff != "" {
			t.Errorf("Walk order across a directory (-want +got):\n%s", diff)
		}
		stop := errors.New("stop")
		n := 0
		err := f.Walk(ctx, ".", func(string, filestore.Entry) error { n++; return stop })
		if !errors.Is(err, stop) || n != 1 {
			t.Errorf("Walk with fn failing: %v after %d calls, want stop after 1", err, n)
		}
	})

	t.Run("InvalidNames", func(t *testing.T) {
		f := newFS(t)
		mustWrite(t, f, "keep.txt", []byte("keep"), filestore.Any)
		for _, name := range []string{"../escape.txt", "/etc/passwd", "a/../../b", "a//b", "./x", "x/", ""} {
			checks := map[string]error{
				"Stat":      second(f.Stat(ctx, name)),
				"ReadFile":  third(f.ReadFile(ctx, name, 10)),
				"WriteFile": second(f.WriteFile(ctx, name, []byte("x"), filestore.Any)),
				"Remove":    f.Remove(ctx, name),
				"RemoveAll": f.RemoveAll(ctx, name),
				"ReadDir":   second(f.ReadDir(ctx, name, 10)),
				"Walk":      f.Walk(ctx, name, func(string, filestore.Entry) error { return nil }),
			}
			if _, err := f.Sub(name); name != "" {
				checks["Sub"] = err
			}
			for op, err := range checks {
				if !errors.Is(err, fs.ErrInvalid) {
					t.Errorf("%s(%q): %v, want fs.ErrInvalid", op, name, err)
				}
			}
		}
		if err := f.RemoveAll(ctx, "."); err == nil {
			t.Error("RemoveAll(.) succeeded, want a refusal")
		}
		if diff := cmp.Diff(map[string]int64{"keep.txt": 4}, walk(t, f, ".")); diff != "" {
			t.Errorf("the tree changed (-want +got):\n%s", diff)
		}
	})

	t.Run("ConditionalWrites", func(t *testing.T) {
		f := newFS(t)
		v1 := mustWrite(t, f, "f.txt", []byte("aaaa"), filestore.Absent).Version
		if _, err := f.WriteFile(ctx, "f.txt", []byte("zzzz"), filestore.Absent); !errors.Is(err, filestore.ErrConflict) {
			t.Errorf("Absent over a file: %v, want ErrConflict", err)
		}
		// Same size, written at once: the version must still change.
		v2 := mustWrite(t, f, "f.txt", []byte("bbbb"), v1).Version
		if v2 == v1 {
			t.Fatalf("rewriting with other content kept version %q", v1)
		}
		if _, err := f.WriteFile(ctx, "f.txt", []byte("cccc"), v1); !errors.Is(err, filestore.ErrConflict) {
			t.Errorf("a stale version: %v, want ErrConflict", err)
		}
		if _, err := f.WriteFile(ctx, "missing.txt", []byte("x"), v2); !errors.Is(err, filestore.ErrConflict) {
			t.Errorf("a version of a missing file: %v, want ErrConflict", err)
		}
		if got, _, _ := f.ReadFile(ctx, "f.txt", 10); string(got) != "bbbb" {
			t.Errorf("after refused writes the file holds %q, want bbbb", got)
		}
		if _, err := f.Stat(ctx, "missing.txt"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a refused write created the file: %v", err)
		}
	})

	t.Run("ConcurrentUpdates", func(t *testing.T) {
		f := newFS(t)
		const writers = 6
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := filestore.Update(ctx, f, "MEMORY.md", 1<<10, func(old []byte, _ bool) ([]byte, error) {
					return fmt.Appendf(old, "line %d\n", i), nil
				})
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			// A write conflicts only when another landed, so no writer
			// exhausts Update's tries among six.
			if err != nil {
				t.Errorf("Update: %v", err)
			}
		}
		got, _, err := f.ReadFile(ctx, "MEMORY.md", 1<<10)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
		slices.Sort(lines)
		var want []string
		for i := range writers {
			want = append(want, fmt.Sprintf("line %d", i))
		}
		if diff := cmp.Diff(want, lines); diff != "" {
			t.Errorf("each writer's line once (-want +got):\n%s", diff)
		}
	})

	t.Run("UpdateLimit", func(t *testing.T) {
		f := newFS(t)
		mustWrite(t, f, "m.md", []byte("0123456789"), filestore.Any)
		_, err := filestore.Update(ctx, f, "m.md", 5, func(old []byte, _ bool) ([]byte, error) { return append(old, 'x'), nil })
		if err == nil {
			t.Error("Update of a file over its limit succeeded")
		}
		created, err := filestore.Update(ctx, f, "new/n.md", 5, func(old []byte, exists bool) ([]byte, error) {
			if exists || old != nil {
				t.Errorf("a new file came as %q, exists=%v", old, exists)
			}
			return []byte("hi"), nil
		})
		if err != nil || created.Size != 2 {
			t.Errorf("Update creating a file = %+v, %v", created, err)
		}
	})

	t.Run("Remove", func(t *testing.T) {
		f := newFS(t)
		for _, n := range []string{"a/x.md", "a/b/y.md", "ab.md", "keep/z.md"} {
			mustWrite(t, f, n, []byte("1"), filestore.Any)
		}
		if err := f.Remove(ctx, "a/x.md"); err != nil {
			t.Fatalf("Remove: %v", err)
		}
		if _, err := f.Stat(ctx, "a/x.md"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Stat after Remove: %v", err)
		}
		if err := f.Remove(ctx, "a/b"); err == nil {
			t.Error("Remove of a directory succeeded")
		}
		if err := f.RemoveAll(ctx, "a"); err != nil {
			t.Fatalf("RemoveAll: %v", err)
		}
		if diff := cmp.Diff(map[string]int64{"ab.md": 1, "keep/z.md": 1}, walk(t, f, ".")); diff != "" {
			t.Errorf("after RemoveAll(a) (-want +got):\n%s", diff)
		}
		if _, err := f.ReadDir(ctx, "a", 10); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("ReadDir of a removed dir: %v", err)
		}
	})

	t.Run("Sub", func(t *testing.T) {
		f := newFS(t)
		mustWrite(t, f, "agents/other/secret.md", []byte("other's"), filestore.Any)
		mustWrite(t, f, "agents/ab/not-mine.md", []byte("ab's"), filestore.Any)
		sub, err := f.Sub("agents/a")
		if err != nil {
			t.Fatalf("Sub of a missing dir: %v", err)
		}
		if got := walk(t, sub, "."); len(got) != 0 {
			t.Errorf("a new sub-tree holds %v", got)
		}
		mustWrite(t, sub, "notes/today.md", []byte("note"), filestore.Any)
		if got, _, err := f.ReadFile(ctx, "agents/a/notes/today.md", 10); err != nil || string(got) != "note" {
			t.Errorf("the parent reads %q, %v", got, err)
		}
		if diff := cmp.Diff(map[string]int64{"notes/today.md": 4}, walk(t, sub, ".")); diff != "" {
			t.Errorf("Walk of the sub-tree (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"notes/"}, names(t, sub, ".", 10)); diff != "" {
			t.Errorf("ReadDir of the sub-tree (-want +got):\n%s", diff)
		}
		for _, name := range []string{"../other/secret.md", "../ab/not-mine.md"} {
			if _, _, err := sub.ReadFile(ctx, name, 10); !errors.Is(err, fs.ErrInvalid) {
				t.Errorf("the sub-tree reads %s: %v, want fs.ErrInvalid", name, err)
			}
		}
		deeper, err := sub.Sub("notes")
		if err != nil {
			t.Fatal(err)
		}
		if got, _, err := deeper.ReadFile(ctx, "today.md", 10); err != nil || string(got) != "note" {
			t.Errorf("a sub-tree of a sub-tree reads %q, %v", got, err)
		}
		if err := sub.RemoveAll(ctx, "notes"); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]int64{"agents/ab/not-mine.md": 4, "agents/other/secret.md": 7}, walk(t, f, ".")); diff != "" {
			t.Errorf("after the sub-tree's RemoveAll (-want +got):\n%s", diff)
		}
	})
}

func mustWrite(t *testing.T, f filestore.FS, name string, data []byte, v filestore.Version) filestore.Entry {
	t.Helper()
	e, err := f.WriteFile(context.Background(), name, data, v)
	if err != nil {
		t.Fatalf("WriteFile(%s): %v", name, err)
	}
	return e
}

// names lists ReadDir(dir, limit), directories with a trailing slash.
func names(t *testing.T, f filestore.FS, dir string, limit int) []string {
	t.Helper()
	es, err := f.ReadDir(context.Background(), dir, limit)
	if err != nil {
		t.Fatalf("ReadDir(%s): %v", dir, err)
	}
	var out []string
	for _, e := range es {
		n := e.Name
		if e.IsDir() {
			n += "/"
		}
		out = append(out, n)
	}
	return out
}

// walk maps the files under dir to their sizes.
func walk(t *testing.T, f filestore.FS, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	if err := f.Walk(context.Background(), dir, func(name string, e filestore.Entry) error {
		out[name] = e.Size
		return nil
	}); err != nil {
		t.Fatalf("Walk(%s): %v", dir, err)
	}
	return out
}

func second[T any](_ T, err error) error        { return err }
func third[T, U any](_ T, _ U, err error) error { return err }
