package media_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/media"
)

func TestStore(t *testing.T) {
	s := &media.Store{FS: osroot.New(t.TempDir()), MaxBytes: 100}
	ctx := t.Context()
	ref, err := s.Put(ctx, "key:a", "s1", []byte("chart"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Put(ctx, "key:a", "s1", []byte("chart"))
	if err != nil || again != ref {
		t.Fatalf("the same bytes again: %q, %v; want %q", again, err, ref)
	}
	if got, err := s.Get(ctx, "key:a", ref); err != nil || !bytes.Equal(got, []byte("chart")) {
		t.Fatalf("Get = %q, %v", got, err)
	}
	for _, tc := range []struct{ owner, ref string }{
		{"key:b", ref},         // another owner
		{"key:a", "../" + ref}, // not a reference
		{"key:a", strings.Repeat("0", 32) + ref[32:]}, // another session
	} {
		if _, err := s.Get(ctx, tc.owner, tc.ref); !errors.Is(err, media.ErrNotFound) {
			t.Errorf("Get(%q, %q) = %v, want not found", tc.owner, tc.ref, err)
		}
	}
	if _, err := s.Put(ctx, "key:a", "s1", make([]byte, 101)); err == nil || !strings.Contains(err.Error(), "at most 100") {
		t.Fatalf("a file too large: %v", err)
	}
	if err := s.DeleteSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "key:a", ref); !errors.Is(err, media.ErrNotFound) {
		t.Fatalf("after the session's deletion: %v", err)
	}
}
