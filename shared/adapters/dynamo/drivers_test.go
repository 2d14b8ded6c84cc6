package dynamo

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestClaimRun: the first claim of a run takes it; a second holder finds
// it held while the lease is live, and takes it over, as not the first,
// once it lapsed; the old holder can renew no more.
func TestClaimRun(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	t0 := time.Now().UTC()
	lease := 20 * time.Second
	type claim struct{ First, Taken bool }
	steps := []struct {
		name   string
		holder string
		at     time.Time
		want   claim
	}{
		{"first claim", "a", t0, claim{First: true, Taken: true}},
		{"duplicate while a's lease is live", "b", t0.Add(lease / 2), claim{}},
		{"a again while live", "a", t0.Add(lease / 2), claim{}},
		{"retry after the lease lapsed", "c", t0.Add(lease + time.Minute), claim{Taken: true}},
	}
	for _, st := range steps {
		first, taken, err := s.ClaimRun(ctx, "r1", st.holder, st.at, st.at.Add(lease))
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if diff := cmp.Diff(st.want, claim{first, taken}); diff != "" {
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
	if _, taken, err := s.ClaimRun(ctx, "r1", "d", t0.Add(30*time.Minute), t0.Add(31*time.Minute)); err != nil || taken {
		t.Errorf("claim during the renewed lease: taken %v, %v; want held", taken, err)
	}
	if _, _, err := s.ClaimRun(ctx, "r2", "a", t0, t0); err == nil {
		t.Error("a claim ending when it starts was taken")
	}
	if ok, err := s.RenewRun(ctx, "never-claimed", "a", t0.Add(lease)); err != nil || ok {
		t.Errorf("renewal of a run never claimed = %v, %v; want false", ok, err)
	}
}
