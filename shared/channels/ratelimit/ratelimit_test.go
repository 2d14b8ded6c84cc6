package ratelimit

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAllowSlidingWindow(t *testing.T) {
	base := time.Unix(960, 0) // a minute boundary
	now := base
	l := New(time.Minute)
	l.now = func() time.Time { return now }

	type step struct {
		At      time.Duration
		Key     string
		Allowed bool
		Wait    time.Duration
	}
	ms := time.Millisecond
	steps := []step{
		{0, "a", true, 0},
		{10 * time.Second, "a", true, 0},
		{20 * time.Second, "a", false, 40*time.Second + ms}, // two in this window: wait for the next
		{20 * time.Second, "b", true, 0},                    // keys are independent
		{60 * time.Second, "a", false, ms},                  // the previous window still weighs fully
		{65 * time.Second, "a", true, 0},                    // 2*55/60 < 2
		{70 * time.Second, "a", false, 20*time.Second + ms}, // 2*50/60 + 1 >= 2 until 90 s
		{90*time.Second + 2*ms, "a", true, 0},
		{5 * time.Minute, "a", true, 0}, // idle for a window: fresh start
	}
	var got []step
	for _, s := range steps {
		now = base.Add(s.At)
		ok, wait := l.Allow(s.Key, 2)
		got = append(got, step{s.At, s.Key, ok, wait})
	}
	if diff := cmp.Diff(steps, got); diff != "" {
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

// A huge limit costs no memory: the limiter keeps two counters per key.
func TestHugeLimit(t *testing.T) {
	l := New(time.Minute)
	for range 1000 {
		if ok, _ := l.Allow("k", 1<<40); !ok {
			t.Fatal("refused under a huge limit")
		}
	}
}

func TestBurstThenRecover(t *testing.T) {
	base := time.Unix(960, 0)
	now := base
	l := New(time.Minute)
	l.now = func() time.Time { return now }
	allowed := 0
	for range 100 {
		if ok, _ := l.Allow("k", 10); ok {
			allowed++
		}
	}
	if allowed != 10 {
		t.Errorf("burst allowed %d, want 10", allowed)
	}
	_, wait := l.Allow("k", 10)
	now = now.Add(wait)
	if ok, _ := l.Allow("k", 10); !ok {
		t.Errorf("refused after waiting the Retry-After of %s", wait)
	}
}
