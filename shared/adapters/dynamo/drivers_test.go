package dynamo

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// TestClaimRun: the first claim of a run takes it; a second holder finds
// it held while the lease is live, and takes it over, as not the first and
// with the next version, once it lapsed; the old holder can renew no more.
// A run that does not exist is never taken.
func TestClaimRun(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	if _, _, err := s.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s1", Agent: "main"}, Run: store.Run{ID: "r1"}}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UTC()
	lease := 20 * time.Second
	type claim struct {
		Lease int64
		First bool
	}
	steps := []struct {
		name   string
		holder string
		at     time.Time
		want   claim
	}{
		{"first claim", "a", t0, claim{Lease: 1, First: true}},
		{"duplicate while a's lease is live", "b", t0.Add(lease / 2), claim{}},
		{"a again while live", "a", t0.Add(lease / 2), claim{}},
		{"retry after the lease lapsed", "c", t0.Add(lease + time.Minute), claim{Lease: 2}},
	}
	for _, st := range steps {
		v, first, err := s.ClaimRun(ctx, "r1", st.holder, st.at, st.at.Add(lease))
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if diff := cmp.Diff(st.want, claim{v, first}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", st.name, diff)
		}
	}
	if ok, err := s.RenewRun(ctx, "r1", "a", t0.Add(time.Hour)); err != nil || ok {
		t.Errorf("renewal by the holder who lost the run = %v, %v; want false", ok, err)
	}
	if ok, err := s.RenewRun(ctx, "r1", "c", t0.Add(time.Hour)); err != nil || !ok {
		t.Errorf("renewal by the holder = %v, %v; want true", ok, err)
	}
	// Renewed: still held an hour on.
	if v, _, err := s.ClaimRun(ctx, "r1", "d", t0.Add(30*time.Minute), t0.Add(31*time.Minute)); err != nil || v != 0 {
		t.Errorf("claim during the renewed lease: lease %d, %v; want held", v, err)
	}
	if _, _, err := s.ClaimRun(ctx, "r1", "a", t0, t0); err == nil {
		t.Error("a claim ending when it starts was taken")
	}
	if v, _, err := s.ClaimRun(ctx, "never-queued", "a", t0, t0.Add(lease)); err != nil || v != 0 {
		t.Errorf("claim of a run that does not exist = %d, %v; want none", v, err)
	}
	if ok, err := s.RenewRun(ctx, "never-queued", "a", t0.Add(lease)); err != nil || ok {
		t.Errorf("renewal of a run never claimed = %v, %v; want false", ok, err)
	}
	// Claims leave the run as it was queued.
	if r, err := s.GetRun(ctx, "r1"); err != nil || r.Status != store.RunQueued {
		t.Errorf("run after claims = %+v, %v; want queued", r, err)
	}
}

// TestTakeRun: a take succeeds even while another holder's lease is
// live, with the next version; the holder it took the run from can
// neither renew nor commit, the taker commits with its version; a run
// that does not exist is never taken.
func TestTakeRun(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	if _, _, err := s.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s1", Agent: "main"}, Run: store.Run{ID: "r1"}}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().UTC()
	held, _, err := s.ClaimRun(ctx, "r1", "a", t0, t0.Add(time.Hour))
	if err != nil || held != 1 {
		t.Fatalf("claim = %d, %v", held, err)
	}
	took, err := s.TakeRun(ctx, "r1", "stop", t0.Add(time.Minute))
	if err != nil || took != 2 {
		t.Fatalf("take during a live lease = %d, %v; want version 2", took, err)
	}
	if ok, err := s.RenewRun(ctx, "r1", "a", t0.Add(time.Hour)); err != nil || ok {
		t.Errorf("renewal by the holder the run was taken from = %v, %v; want false", ok, err)
	}
	running := store.Run{ID: "r1", SessionID: "s1", Status: store.RunRunning, State: []byte(`{"step":"think"}`)}
	if err := s.CommitRun(ctx, store.Commit{Run: running, Lease: held}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("commit of the holder the run was taken from = %v; want ErrLeaseLost", err)
	}
	done := store.Run{ID: "r1", SessionID: "s1", Status: store.RunFailed, State: []byte(`{"step":"done"}`)}
	if err := s.CommitRun(ctx, store.Commit{Run: done, Lease: took}); err != nil {
		t.Errorf("commit of the taker: %v", err)
	}
	if v, err := s.TakeRun(ctx, "never-queued", "stop", t0.Add(time.Minute)); err != nil || v != 0 {
		t.Errorf("take of a run that does not exist = %d, %v; want none", v, err)
	}
}
