package dynamo

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

func TestConnections(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	c := &clock{t: time.Now()}
	s.now = c.now

	if _, _, err := s.Connection(ctx, "abc="); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Connection of an unknown connection: %v, want ErrNotFound", err)
	}
	if err := s.PutConnection(ctx, "abc=", "hash1", time.Hour); err != nil {
		t.Fatal(err)
	}
	if h, sessions, err := s.Connection(ctx, "abc="); err != nil || h != "hash1" || sessions != nil {
		t.Fatalf("Connection = %q, %v, %v; want hash1 in no session", h, sessions, err)
	}
	c.add(time.Hour + time.Second)
	if _, _, err := s.Connection(ctx, "abc="); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Connection after expiry: %v, want ErrNotFound", err)
	}
	if err := s.PutConnection(ctx, "abc=", "hash2", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteConnection(ctx, "abc="); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Connection(ctx, "abc="); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Connection after delete: %v, want ErrNotFound", err)
	}
	if err := s.DeleteConnection(ctx, "never"); err != nil {
		t.Errorf("DeleteConnection of an unknown connection: %v", err)
	}
	if err := s.PutConnection(ctx, "", "h", time.Hour); err == nil {
		t.Error("PutConnection without an id succeeded")
	}
}

// TestConnectionIndex: the index of connections by owner and session,
// which check-ins to WebSocket users read.
func TestConnectionIndex(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	c := &clock{t: time.Now()}
	s.now = c.now
	conns := func(owner, sid string) []string {
		t.Helper()
		ids, err := s.SessionConnections(ctx, owner, sid, 32)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	joined := func(id string) []string {
		t.Helper()
		_, sessions, err := s.Connection(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return sessions
	}
	for _, id := range []string{"c1=", "c2=", "c3="} {
		if err := s.PutConnection(ctx, id, "hash", 2*time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	for _, j := range []struct{ id, owner, sid string }{
		{"c1=", "key:k1", "s-a"}, {"c2=", "key:k1", "s-a"}, {"c1=", "key:k1", "s-b"},
		{"c1=", "key:k1", "s-a"}, // again: nothing changes
		{"c3=", "key:k2", "s-a"}, // another owner's session of the same id
		{"gone=", "key:k1", "s-a"},
	} {
		if err := s.JoinSession(ctx, j.id, j.owner, j.sid, 16, 2*time.Hour); err != nil {
			t.Fatalf("JoinSession(%s, %s, %s): %v", j.id, j.owner, j.sid, err)
		}
	}
	if diff := cmp.Diff([]string{"c1=", "c2="}, conns("key:k1", "s-a")); diff != "" {
		t.Errorf("connections of key:k1's s-a (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"c3="}, conns("key:k2", "s-a")); diff != "" {
		t.Errorf("connections of key:k2's s-a (-want +got):\n%s", diff)
	}
	if got := conns("key:k3", "s-a"); len(got) != 0 {
		t.Errorf("connections of an owner who has none: %v", got)
	}
	if diff := cmp.Diff([]string{"s-a", "s-b"}, joined("c1=")); diff != "" {
		t.Errorf("sessions of c1 (-want +got):\n%s", diff)
	}
	if ids, err := s.SessionConnections(ctx, "key:k1", "s-a", 1); err != nil || len(ids) != 1 {
		t.Errorf("SessionConnections with limit 1 = %v, %v; want one", ids, err)
	}

	// A gone connection pruned; a disconnect takes its index items.
	if err := s.LeaveSession(ctx, "c2=", "key:k1", "s-a"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c1="}, conns("key:k1", "s-a")); diff != "" {
		t.Errorf("after c2 left (-want +got):\n%s", diff)
	}
	if err := s.DeleteConnection(ctx, "c1="); err != nil {
		t.Fatal(err)
	}
	if got := append(conns("key:k1", "s-a"), conns("key:k1", "s-b")...); len(got) != 0 {
		t.Errorf("after c1's disconnect the index holds %v", got)
	}

	// A connection is indexed under at most limit sessions.
	const limit = 4
	for i := range limit + 2 {
		if err := s.JoinSession(ctx, "c3=", "key:k2", fmt.Sprintf("s-%02d", i), limit, 2*time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if got := joined("c3="); len(got) != limit {
		t.Errorf("c3 is indexed under %d sessions, want %d", len(got), limit)
	}
	if got := conns("key:k2", fmt.Sprintf("s-%02d", limit)); len(got) != 0 {
		t.Errorf("a session beyond the bound indexed %v", got)
	}

	// The index items expire with the connection, should $disconnect
	// never come.
	c.add(2*time.Hour + time.Second)
	if got := conns("key:k2", "s-a"); len(got) != 0 {
		t.Errorf("after the TTL the index holds %v", got)
	}

	for _, bad := range [][3]string{{"", "key:k1", "s-a"}, {"c1=", "", "s-a"}, {"c1=", "key:k1", ""}, {"c1=", "key:k1", "s#a"}} {
		if err := s.JoinSession(ctx, bad[0], bad[1], bad[2], 16, time.Hour); err == nil {
			t.Errorf("JoinSession%q succeeded", bad)
		}
	}
}
