package ratelimit

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAllowSlidingWindow(t *testing.T) {
	base := time.Unix(1000, 0)
	now := base
	l := New(time.Minute)
	l.now = func() time.Time { return now }

	type step struct {
		at      time.Duration
		key     string
		allowed bool
		wait    time.Duration
	}
	steps := []step{
		{0, "a", true, 0},
		{10 * time.Second, "a", true, 0},
		{20 * time.Second, "a", false, 40 * time.Second}, // two in the last minute
		{20 * time.Second, "b", true, 0},                 // keys are independent
		{59 * time.Second, "a", false, time.Second},
		{60 * time.Second, "a", true, 0}, // the first request left the window
		{65 * time.Second, "a", false, 5 * time.Second},
		{70 * time.Second, "a", true, 0},
	}
	var got, want []step
	for _, s := range steps {
		now = base.Add(s.at)
		ok, wait := l.Allow(s.key, 2)
		got = append(got, step{s.at, s.key, ok, wait})
		want = append(want, s)
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(step{})); diff != "" {
		t.Errorf("Allow (-want +got):\n%s", diff)
	}
}

func TestZeroLimitAllowsAll(t *testing.T) {
	l := New(time.Minute)
	for range 100 {
		if ok, _ := l.Allow("k", 0); !ok {
			t.Fatal("limit 0 refused a request")
		}
	}
}

func TestChangedLimitResets(t *testing.T) {
	l := New(time.Minute)
	l.Allow("k", 1)
	if ok, _ := l.Allow("k", 1); ok {
		t.Fatal("second request within limit 1 allowed")
	}
	if ok, _ := l.Allow("k", 5); !ok {
		t.Fatal("raised limit not applied")
	}
}
