package storetest

import (
	"testing"

	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// OwnerStore is a store that lists owners' sessions.
type OwnerStore interface {
	store.Store
	store.OwnerSessions
}

// RunOwnerSessions runs the suite of store.OwnerSessions: sessions made
// by CreateSession and by EnqueueRun are listed for their owner only,
// newest first, within the limit, without ephemeral or deleted ones, with
// the channel they were started on; and a messaging channel's sessions
// for the channel's identities only.
func RunOwnerSessions(t *testing.T, newStore func(t *testing.T) OwnerStore) {
	s := newStore(t)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ctx := t.Context()
	mk := func(id, owner string, n int, ephemeral bool) store.Session {
		sess := store.Session{ID: id, Agent: "main", Owner: owner, Channel: []string{"", "http", "tg"}[n%3], Ephemeral: ephemeral, CreatedAt: at(n), UpdatedAt: at(n)}
		must(t, "CreateSession "+id, s.CreateSession(ctx, sess))
		return sess
	}
	a1 := mk("a1", "key:a", 1, false)
	a3 := mk("a3", "key:a", 3, false)
	mk("b2", "key:b", 2, false)
	mk("a4", "key:a", 4, true)
	a5 := mk("a5", "key:a", 5, false)
	mk("gone", "key:a", 6, false)
	must(t, "DeleteSession gone", s.DeleteSession(ctx, "gone"))
	n := store.NewRun{Session: store.Session{ID: "a7", Agent: "helper", Owner: "key:a", Channel: "ws", CreatedAt: at(7)},
		Run: store.Run{ID: "r7", SessionID: "a7", State: []byte(`{}`), CreatedAt: at(7)}}
	if _, _, err := s.EnqueueRun(ctx, n); err != nil {
		t.Fatalf("EnqueueRun: %v", err)
	}
	a7, err := s.GetSession(ctx, "a7")
	must(t, "GetSession a7", err)
	if a7.Channel != "ws" {
		t.Errorf("GetSession a7: channel %q, want ws, the channel EnqueueRun started it on", a7.Channel)
	}
	if got, err := s.GetSession(ctx, "a5"); err != nil || got.Channel != "tg" {
		t.Errorf("GetSession a5 = %+v, %v; want channel tg, as created", got, err)
	}

	// Sessions of channel identities, and of owners that are not one.
	on := func(id, owner, channel string, n int, ephemeral bool) store.Session {
		sess := store.Session{ID: id, Agent: "main", Owner: owner, Channel: channel, Ephemeral: ephemeral, CreatedAt: at(n), UpdatedAt: at(n)}
		must(t, "CreateSession "+id, s.CreateSession(ctx, sess))
		return sess
	}
	s8 := on("s8", "slack:T1:U1", "slack", 8, false)
	s9 := on("s9", "slack:T1:#C1", "slack", 9, false)
	on("s10", "slack:T1:U1", "slack", 10, true)
	t11 := on("t11", "tg:42", "tg", 11, false)
	on("u12", "user:ann", "slack", 12, false)
	on("x13", "slackx:U1", "slack", 13, false)
	on("k14", "key:c", "slack", 14, false)
	on("gone15", "slack:T1:U1", "slack", 15, false)
	must(t, "DeleteSession gone15", s.DeleteSession(ctx, "gone15"))
	n16 := store.NewRun{Session: store.Session{ID: "s16", Agent: "main", Owner: "slack:T1:U2", Channel: "slack", CreatedAt: at(16)},
		Run: store.Run{ID: "r16", SessionID: "s16", State: []byte(`{}`), CreatedAt: at(16)}}
	if _, _, err := s.EnqueueRun(ctx, n16); err != nil {
		t.Fatalf("EnqueueRun: %v", err)
	}
	s16 := n16.Session

	ignoreUpdated := cmpopts.IgnoreFields(store.Session{}, "UpdatedAt")
	tests := []struct {
		owner string
		limit int
		want  []store.Session
	}{
		{"key:a", 10, []store.Session{a7, a5, a3, a1}},
		{"key:a", 2, []store.Session{a7, a5}},
		{"key:b", 10, []store.Session{{ID: "b2", Agent: "main", Owner: "key:b", Channel: "tg", CreatedAt: at(2)}}},
		{"key:nobody", 10, nil},
		{"slack:T1:U1", 10, []store.Session{s8}},
	}
	for _, tt := range tests {
		got, err := s.SessionsOf(ctx, tt.owner, tt.limit)
		must(t, "SessionsOf "+tt.owner, err)
		diff(t, "SessionsOf "+tt.owner, tt.want, got, ignoreUpdated)
	}
	for _, tt := range []struct {
		channel string
		limit   int
		want    []store.Session
	}{
		{"slack", 10, []store.Session{s16, s9, s8}},
		{"slack", 2, []store.Session{s16, s9}},
		{"tg", 10, []store.Session{t11}},
		{"discord", 10, nil},
	} {
		got, err := s.ChannelSessions(ctx, tt.channel, tt.limit)
		must(t, "ChannelSessions "+tt.channel, err)
		diff(t, "ChannelSessions "+tt.channel, tt.want, got, ignoreUpdated)
	}
}
