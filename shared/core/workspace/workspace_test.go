package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
)

func TestValidName(t *testing.T) {
	cases := map[string]bool{
		"default":               true,
		"a":                     true,
		"7":                     true,
		"my-agent_2":            true,
		strings.Repeat("a", 64): true,
		"":                      false,
		strings.Repeat("a", 65): false,
		"-agent":                false,
		"_agent":                false,
		"Agent":                 false,
		"my agent":              false,
		"a/b":                   false,
		"..":                    false,
		".hidden":               false,
		"a.b":                   false,
		"é":                     false,
		"a\x00":                 false,
	}
	got := make(map[string]bool, len(cases))
	for name := range cases {
		got[name] = ValidName(name) == nil
	}
	if diff := cmp.Diff(cases, got); diff != "" {
		t.Errorf("ValidName mismatch (-want +got):\n%s", diff)
	}
}

func TestDir(t *testing.T) {
	if got, want := Dir("/home/x", "bot"), filepath.Join("/home/x", "agents", "bot"); got != want {
		t.Errorf("Dir = %q, want %q", got, want)
	}
}

// tree lists the files and directories under dir, with file contents.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCreate(t *testing.T) {
	home := t.TempDir()
	dir, created, err := create(home, "helper")
	if err != nil {
		t.Fatal(err)
	}
	if dir != Dir(home, "helper") || !created {
		t.Fatalf("Create = %q, %v; want %q, true", dir, created, Dir(home, "helper"))
	}
	want := map[string]string{"memory/": "", "skills/": ""}
	for _, f := range []string{"IDENTITY.md", "SOUL.md", "USER.md", "TOOLS.md", "AGENTS.md", "BOOTSTRAP.md", "MEMORY.md"} {
		b, err := templates.ReadFile("templates/" + f)
		if err != nil {
			t.Fatal(err)
		}
		want[f] = strings.ReplaceAll(string(b), "{{name}}", "helper")
	}
	if diff := cmp.Diff(want, tree(t, dir)); diff != "" {
		t.Errorf("new workspace mismatch (-want +got):\n%s", diff)
	}
	if !strings.Contains(want["IDENTITY.md"], "- Name: helper\n") || !strings.Contains(want["SOUL.md"], "You are helper") {
		t.Errorf("templates do not carry the agent name:\n%s\n%s", want["IDENTITY.md"], want["SOUL.md"])
	}
	for _, s := range []string{"first conversation", "update_bootstrap", "USER.md", "IDENTITY.md", "MEMORY.md", "complete_bootstrap"} {
		if !strings.Contains(want["BOOTSTRAP.md"], s) {
			t.Errorf("BOOTSTRAP.md template does not mention %q", s)
		}
	}

	// A second Create keeps what is there and only fills gaps, but never
	// brings back a completed BOOTSTRAP.md.
	if err := os.WriteFile(filepath.Join(dir, "SOUL.md"), []byte("custom soul"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "USER.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "skills")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "BOOTSTRAP.md")); err != nil {
		t.Fatal(err)
	}
	_, created, err = create(home, "helper")
	if err != nil || created {
		t.Fatalf("second Create = created %v, %v; want false, nil", created, err)
	}
	want["SOUL.md"] = "custom soul"
	delete(want, "BOOTSTRAP.md")
	if diff := cmp.Diff(want, tree(t, dir)); diff != "" {
		t.Errorf("re-created workspace mismatch (-want +got):\n%s", diff)
	}

	for _, tc := range []struct{ home, name, wantErr string }{
		{home, "Bad Name", "invalid"},
		{home, "../escape", "invalid"},
		{"", "ok", "home directory is not set"},
	} {
		if _, _, err := create(tc.home, tc.name); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Create(%q, %q) error = %v, want %q", tc.home, tc.name, err, tc.wantErr)
		}
	}
	if err := os.WriteFile(filepath.Join(home, "agents", "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := create(home, "file"); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Create over a file error = %v, want not a directory", err)
	}
}

func TestList(t *testing.T) {
	home := t.TempDir()
	got, err := list(home)
	if err != nil || len(got) != 0 {
		t.Fatalf("List(empty home) = %v, %v; want none", got, err)
	}
	for _, name := range []string{"zeta", "alpha", "mid-1"} {
		if _, _, err := create(home, name); err != nil {
			t.Fatal(err)
		}
	}
	agents := filepath.Join(home, "agents")
	for _, d := range []string{"Not-Valid", ".hidden"} {
		if err := os.Mkdir(filepath.Join(agents, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(agents, "stray"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = list(home)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"alpha", "mid-1", "zeta"}, got); diff != "" {
		t.Errorf("List mismatch (-want +got):\n%s", diff)
	}
}

func TestFilesAndTemplate(t *testing.T) {
	want := []string{"IDENTITY.md", "SOUL.md", "USER.md", "TOOLS.md", "AGENTS.md", "BOOTSTRAP.md", "MEMORY.md"}
	got := Files()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Files mismatch (-want +got):\n%s", diff)
	}
	got[0] = "changed"
	if Files()[0] != "IDENTITY.md" {
		t.Error("Files returns a slice callers can change")
	}
	for _, f := range want {
		if _, err := Template(f, "x"); err != nil {
			t.Errorf("Template(%s): %v", f, err)
		}
	}
	if _, err := Template("../workspace.go", "x"); err == nil {
		t.Error("Template read outside the templates")
	}
}

func TestCreateEmptyExistingDir(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(Dir(home, "pre"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, created, err := create(home, "pre")
	if err != nil || created {
		t.Fatalf("Create over an existing directory = created %v, %v; want false, nil", created, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "BOOTSTRAP.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("BOOTSTRAP.md written into an existing directory: %v", err)
	}
}

func TestDelete(t *testing.T) {
	home := t.TempDir()
	dir, _, err := create(home, "gone")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := create(home, "kept"); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, dir, map[string]string{"memory/2026-01-01.md": "log", "skills/s/SKILL.md": "skill"})
	if err := del(home, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("workspace still there after Delete: %v", err)
	}
	got, err := list(home)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"kept"}, got); diff != "" {
		t.Errorf("List after Delete mismatch (-want +got):\n%s", diff)
	}

	// A symbolic link as workspace loses the link, not its target.
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"keep.md": "keep"})
	if err := os.Symlink(outside, Dir(home, "linked")); err != nil {
		t.Skipf("symbolic links unavailable: %v", err)
	}
	if err := del(home, "linked"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(Dir(home, "linked")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("link still there after Delete: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(outside, "keep.md")); err != nil || string(b) != "keep" {
		t.Errorf("link target changed: %q, %v", b, err)
	}

	if err := os.WriteFile(Dir(home, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		home, name, wantErr string
		notExist            bool
	}{
		{home: home, name: "gone", wantErr: `agent "gone" does not exist`, notExist: true},
		{home: home, name: "../kept", wantErr: "invalid"},
		{home: home, name: "", wantErr: "empty"},
		{home: "", name: "kept", wantErr: "home directory is not set"},
		{home: home, name: "file", wantErr: "is a file"},
	} {
		err := del(tc.home, tc.name)
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.Is(err, fs.ErrNotExist) != tc.notExist {
			t.Errorf("Delete(%q, %q) = %v; want error containing %q (not exist: %v)", tc.home, tc.name, err, tc.wantErr, tc.notExist)
		}
	}
	if _, err := os.Stat(Dir(home, "kept")); err != nil {
		t.Errorf("other workspace harmed: %v", err)
	}
}

func TestDailyLogs(t *testing.T) {
	dir := t.TempDir()
	logs, err := dailyLogs(dir)
	if err != nil || len(logs) != 0 {
		t.Fatalf("DailyLogs without memory/ = %v, %v; want none", logs, err)
	}
	writeFiles(t, dir, map[string]string{
		"memory/2026-03-02.md":  "two",
		"memory/2026-03-01.md":  "one!",
		"memory/2026-02-30.md":  "not a day",
		"memory/notes.md":       "not a log",
		"memory/2026-03-03.txt": "wrong suffix",
	})
	if err := os.Mkdir(filepath.Join(dir, "memory", "2026-03-04.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	logs, err = dailyLogs(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []DailyLog{{Date: "2026-03-01", Size: 4}, {Date: "2026-03-02", Size: 3}}
	if diff := cmp.Diff(want, logs); diff != "" {
		t.Errorf("DailyLogs mismatch (-want +got):\n%s", diff)
	}
	if _, err := dailyLogs(filepath.Join(dir, "missing")); err == nil {
		t.Error("DailyLogs of a missing workspace succeeded")
	}
}

// TestCreateWritesAtOnce holds that a new workspace's files are written at
// once, so that their syncs (an object store's requests) overlap: here
// each write waits until every file's write has begun.
func TestCreateWritesAtOnce(t *testing.T) {
	files := len(templated) + 1 // and BOOTSTRAP.md
	b := &barrierFS{FS: osroot.New(t.TempDir()), want: files, all: make(chan struct{})}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := Create(ctx, b, "helper"); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if b.begun != files {
		t.Errorf("Create began %d writes, want %d", b.begun, files)
	}
}

// barrierFS is a file store whose writes wait until want of them have
// begun (or the context ends).
type barrierFS struct {
	filestore.FS
	mu    sync.Mutex
	begun int
	want  int
	all   chan struct{}
}

func (b *barrierFS) Sub(dir string) (filestore.FS, error) {
	sub, err := b.FS.Sub(dir)
	if err != nil {
		return nil, err
	}
	return &barrierSub{FS: sub, b: b}, nil
}

type barrierSub struct {
	filestore.FS
	b *barrierFS
}

func (s *barrierSub) WriteFile(ctx context.Context, name string, data []byte, v filestore.Version) (filestore.Entry, error) {
	s.b.mu.Lock()
	if s.b.begun++; s.b.begun == s.b.want {
		close(s.b.all)
	}
	s.b.mu.Unlock()
	select {
	case <-s.b.all:
	case <-ctx.Done():
		return filestore.Entry{}, fmt.Errorf("write %s waited for the other writes: %w", name, ctx.Err())
	}
	return s.FS.WriteFile(ctx, name, data, v)
}
