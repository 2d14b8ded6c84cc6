package dynamo

import (
	"errors"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

func TestConnections(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	c := &clock{t: time.Now()}
	s.now = c.now

	if _, err := s.ConnectionKey(ctx, "abc="); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("ConnectionKey of an unknown connection: %v, want ErrNotFound", err)
	}
	if err := s.PutConnection(ctx, "abc=", "hash1", time.Hour); err != nil {
		t.Fatal(err)
	}
	if h, err := s.ConnectionKey(ctx, "abc="); err != nil || h != "hash1" {
		t.Fatalf("ConnectionKey = %q, %v; want hash1", h, err)
	}
	c.add(time.Hour + time.Second)
	if _, err := s.ConnectionKey(ctx, "abc="); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ConnectionKey after expiry: %v, want ErrNotFound", err)
	}
	if err := s.PutConnection(ctx, "abc=", "hash2", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteConnection(ctx, "abc="); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ConnectionKey(ctx, "abc="); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ConnectionKey after delete: %v, want ErrNotFound", err)
	}
	if err := s.DeleteConnection(ctx, "never"); err != nil {
		t.Errorf("DeleteConnection of an unknown connection: %v", err)
	}
	if err := s.PutConnection(ctx, "", "h", time.Hour); err == nil {
		t.Error("PutConnection without an id succeeded")
	}
}
