package memorytool

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory/memorytest"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// countingEmbedder is memorytest.Embedder counting the texts it embeds.
type countingEmbedder struct {
	mu sync.Mutex
	n  int
}

func (c *countingEmbedder) Model() string { return memorytest.Embedder{}.Model() }

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	c.n += len(texts)
	c.mu.Unlock()
	return memorytest.Embedder{}.Embed(ctx, texts)
}

func (c *countingEmbedder) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// workspaceFixture is an agent workspace and a Files indexing it.
type workspaceFixture struct {
	dir, state string
	mem        *memory.Memory
	emb        *countingEmbedder
	files      *Files
}

func newWorkspaceFixture(t *testing.T) *workspaceFixture {
	t.Helper()
	tmp := t.TempDir()
	w := &workspaceFixture{dir: filepath.Join(tmp, "agents", "a"), state: filepath.Join(tmp, "state"), emb: &countingEmbedder{}}
	if err := os.MkdirAll(filepath.Join(w.dir, "memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.mem = newMemory(t, w.emb)
	w.restart(t)
	return w
}

// restart replaces the Files, as a server restart does.
func (w *workspaceFixture) restart(t *testing.T) {
	t.Helper()
	f, err := NewFiles(w.mem, w.state)
	if err != nil {
		t.Fatal(err)
	}
	w.files = f
}

// write writes a workspace file with the given modification time.
func (w *workspaceFixture) write(t *testing.T, name, text string, mtime time.Time) {
	t.Helper()
	p := filepath.Join(w.dir, filepath.FromSlash(name))
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func (w *workspaceFixture) remove(t *testing.T, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(w.dir, filepath.FromSlash(name))); err != nil {
		t.Fatal(err)
	}
}

func (w *workspaceFixture) sync(t *testing.T, want SyncReport) {
	t.Helper()
	got, err := w.files.Sync(context.Background(), "a", osroot.New(w.dir))
	if err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if got != want {
		t.Errorf("Sync = %+v, want %+v", got, want)
	}
}

// search runs memory_search as agent a in the workspace, in a session
// without an owner, and returns the keys of the hits that mention a word
// of the query.
func (w *workspaceFixture) search(t *testing.T, query string) []string {
	t.Helper()
	return w.searchAs(t, "", query)
}

// searchAs is search in a session of owner.
func (w *workspaceFixture) searchAs(t *testing.T, owner, query string) []string {
	t.Helper()
	ts := tools(t, Config{Memory: w.mem, Files: w.files})
	out, err := ts["memory_search"].Call(context.Background(), tool.Env{Agent: "a", Owner: owner, Workspace: osroot.New(w.dir)}, json.RawMessage(`{"query":`+quote(query)+`}`))
	if err != nil {
		t.Fatal(err)
	}
	var res searchOutput
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	keys := []string{}
	for _, h := range res.Hits {
		if mentions(h, query) {
			keys = append(keys, h.Key)
		}
	}
	return keys
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// mentions reports whether the hit's snippet contains a word of the
// query. search keeps only those: with the fake embedder every memory is a
// vector candidate, and the tests are about which files are indexed, not
// about ranking.
func mentions(h searchHit, query string) bool {
	for _, w := range strings.Fields(strings.ToLower(query)) {
		if strings.Contains(strings.ToLower(h.Snippet), w) {
			return true
		}
	}
	return false
}

var (
	may1 = time.Date(2026, 5, 1, 18, 30, 0, 0, time.UTC)
	may2 = time.Date(2026, 5, 2, 9, 0, 0, 0, time.UTC)
)

func TestFilesIndexed(t *testing.T) {
	w := newWorkspaceFixture(t)
	w.write(t, "MEMORY.md", "# Memory\n\nThe user is allergic to peanuts.\n", may1)
	w.write(t, "memory/2026-05-01.md", "# 2026-05-01\n\n- 18:30 Booked the dentist for Friday.\n", may1)
	w.write(t, "memory/notes.md", "not a daily log: dentist", may1)
	w.write(t, "USER.md", "not a memory file: dentist", may1)
	w.sync(t, SyncReport{Stored: 2})

	got := map[string]memory.Entry{}
	for _, k := range []string{"file:MEMORY.md", "file:memory/2026-05-01.md"} {
		e, err := w.mem.Get(context.Background(), "a", "", k)
		if err != nil {
			t.Fatal(err)
		}
		e.Text = ""
		got[k] = e
	}
	want := map[string]memory.Entry{
		"file:MEMORY.md": {Agent: "a", Key: "file:MEMORY.md", Category: memory.Core, Source: "MEMORY.md", CreatedAt: may1, UpdatedAt: may1},
		"file:memory/2026-05-01.md": {Agent: "a", Key: "file:memory/2026-05-01.md", Category: memory.Daily, Source: "memory/2026-05-01.md",
			CreatedAt: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), UpdatedAt: may1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"file:memory/2026-05-01.md"}, w.search(t, "dentist")); diff != "" {
		t.Errorf("search dentist (-want +got):\n%s", diff)
	}

	// Nothing changed: nothing is read or embedded.
	embedded := w.emb.count()
	w.sync(t, SyncReport{})
	if w.emb.count() != embedded {
		t.Errorf("an unchanged workspace was embedded again")
	}
}

// The test of issue 4: a file edited is found by search, a file deleted is
// gone, each at the next memory_search.
func TestFilesFollowEdits(t *testing.T) {
	w := newWorkspaceFixture(t)
	w.write(t, "MEMORY.md", "The user's cat is called Miso.\n", may1)
	w.write(t, "memory/2026-05-01.md", "- Planned a hiking trip to Sintra.\n", may1)
	if diff := cmp.Diff([]string{"file:MEMORY.md"}, w.search(t, "cat")); diff != "" {
		t.Errorf("before the edit (-want +got):\n%s", diff)
	}

	w.write(t, "MEMORY.md", "The user's dog is called Pico.\n", may2)
	if diff := cmp.Diff([]string{}, w.search(t, "cat")); diff != "" {
		t.Errorf("old text still found (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"file:MEMORY.md"}, w.search(t, "dog")); diff != "" {
		t.Errorf("new text not found (-want +got):\n%s", diff)
	}

	w.write(t, "memory/2026-05-02.md", "- Bought new hiking boots.\n", may2)
	if diff := cmp.Diff([]string{"file:memory/2026-05-02.md", "file:memory/2026-05-01.md"}, w.search(t, "hiking")); diff != "" {
		t.Errorf("new daily log (-want +got):\n%s", diff)
	}
	w.remove(t, "memory/2026-05-01.md")
	if diff := cmp.Diff([]string{"file:memory/2026-05-02.md"}, w.search(t, "hiking")); diff != "" {
		t.Errorf("deleted daily log (-want +got):\n%s", diff)
	}
	if _, err := w.mem.Get(context.Background(), "a", "", "file:memory/2026-05-01.md"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("deleted file's memory: %v, want not found", err)
	}

	// Emptied: forgotten too.
	w.write(t, "MEMORY.md", "  \n", may2.Add(time.Hour))
	w.sync(t, SyncReport{Forgotten: 1})
	if _, err := w.mem.Get(context.Background(), "a", "", "file:MEMORY.md"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("emptied file's memory: %v, want not found", err)
	}
}

func TestFilesTouchedNotReembedded(t *testing.T) {
	w := newWorkspaceFixture(t)
	w.write(t, "MEMORY.md", "Stable text.\n", may1)
	w.sync(t, SyncReport{Stored: 1})
	embedded := w.emb.count()
	w.write(t, "MEMORY.md", "Stable text.\n", may2) // same text, new time
	w.sync(t, SyncReport{})
	if w.emb.count() != embedded {
		t.Errorf("a touched but unchanged file was embedded again")
	}
}

// After a restart, unchanged files are not embedded again, and files
// deleted while the server was down are forgotten.
func TestFilesAcrossRestart(t *testing.T) {
	w := newWorkspaceFixture(t)
	w.write(t, "MEMORY.md", "Long-term facts.\n", may1)
	w.write(t, "memory/2026-05-01.md", "- A day.\n", may1)
	w.write(t, "memory/2026-05-02.md", "- Another day.\n", may2)
	w.sync(t, SyncReport{Stored: 3})
	embedded := w.emb.count()

	w.restart(t)
	w.remove(t, "memory/2026-05-01.md")
	w.write(t, "memory/2026-05-02.md", "- Another day, edited.\n", may2.Add(time.Minute))
	w.sync(t, SyncReport{Stored: 1, Forgotten: 1})
	if got := w.emb.count() - embedded; got != 1 {
		t.Errorf("%d texts embedded after the restart, want 1 (the edited log)", got)
	}
	if _, err := w.mem.Get(context.Background(), "a", "", "file:memory/2026-05-01.md"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("file deleted while down: %v, want not found", err)
	}

	// Without its state (a new machine), a restart still re-reads every
	// file, and re-stores none that is unchanged.
	if err := os.RemoveAll(w.state); err != nil {
		t.Fatal(err)
	}
	w.restart(t)
	w.sync(t, SyncReport{})
}

func TestFilesStayInWorkspace(t *testing.T) {
	w := newWorkspaceFixture(t)
	outside := filepath.Join(filepath.Dir(w.dir), "outside.md")
	if err := os.WriteFile(outside, []byte("secret outside the workspace"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(w.dir, "MEMORY.md")); err != nil {
		t.Skipf("symbolic links unavailable: %v", err)
	}
	if err := os.Symlink(outside, filepath.Join(w.dir, "memory", "2026-05-01.md")); err != nil {
		t.Fatal(err)
	}
	w.write(t, "memory/2026-05-03.md", "- inside.\n", may2)
	if err := os.Symlink("2026-05-03.md", filepath.Join(w.dir, "memory", "2026-05-04.md")); err != nil {
		t.Fatal(err)
	}
	w.sync(t, SyncReport{Stored: 2})
	if diff := cmp.Diff([]string{}, w.search(t, "secret")); diff != "" {
		t.Errorf("file outside the workspace indexed (-want +got):\n%s", diff)
	}
}

func TestFilesMissingWorkspace(t *testing.T) {
	w := newWorkspaceFixture(t)
	w.write(t, "MEMORY.md", "Facts.\n", may1)
	w.sync(t, SyncReport{Stored: 1})
	if err := os.RemoveAll(w.dir); err != nil {
		t.Fatal(err)
	}
	w.sync(t, SyncReport{Forgotten: 1})
	if _, err := w.files.Sync(context.Background(), "../a", osroot.New(w.dir)); err == nil {
		t.Error("Sync accepted an invalid agent name")
	}
}
