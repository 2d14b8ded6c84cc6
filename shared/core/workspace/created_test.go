package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCreated(t *testing.T) {
	home := t.TempDir()
	// File systems stamp times with a coarse clock: allow a second.
	before := time.Now().Add(-time.Second)
	dir, _, err := create(home, "helper")
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().Add(time.Second)
	created, err := Created(home, "helper")
	if err != nil {
		t.Fatalf("Created: %v", err)
	}
	if created.Before(before) || created.After(after) {
		t.Errorf("Created = %v, want between %v and %v", created, before, after)
	}

	// Changing what the workspace holds leaves its creation alone where
	// the file system records birth times.
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := birthTime(dir, fi); !ok {
		t.Skipf("the file system of %s records no birth times", home)
	}
	if err := os.Remove(filepath.Join(dir, BootstrapFile)); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(dir, time.Time{}, created.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	again, err := Created(home, "helper")
	if err != nil || !again.Equal(created) {
		t.Errorf("Created after changes = %v, %v; want %v", again, err, created)
	}
}

func TestCreatedMissing(t *testing.T) {
	if _, err := Created(t.TempDir(), "ghost"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Created of a missing workspace: %v, want fs.ErrNotExist", err)
	}
}
