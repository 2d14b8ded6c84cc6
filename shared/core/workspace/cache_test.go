package workspace

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
)

func TestPromptCacheSeesChanges(t *testing.T) {
	home := t.TempDir()
	dir, _, err := create(home, "a")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	var c PromptCache
	check := func(what string) {
		t.Helper()
		want, err := systemPrompt(dir, now)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := c.SystemPrompt(context.Background(), "a", osroot.New(dir), now)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: cached prompt differs (-want +got):\n%s", what, diff)
		}
	}
	check("first")
	got, _, _ := c.SystemPrompt(context.Background(), "a", osroot.New(dir), now)
	got[0].Content = "changed by the caller"
	check("caller's change does not leak into the cache")

	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("MEMORY.md", "# Memory\n\nThe user likes tea.")
	check("MEMORY.md changed")
	write("BOOTSTRAP.md", "Ask the user's name.")
	check("BOOTSTRAP.md appeared")
	os.Remove(filepath.Join(dir, "BOOTSTRAP.md"))
	check("BOOTSTRAP.md removed")
	write("memory/2026-05-02.md", "# 2026-05-02\n- tomorrow's note")
	now = now.Add(24 * time.Hour)
	check("day turned")
}
