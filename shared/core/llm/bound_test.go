package llm

import (
	"testing"
	"time"
)

// timed is a provider whose calls take at most d.
type timed struct {
	*fakeProvider
	d time.Duration
}

func (t timed) Bound() (time.Duration, bool) { return t.d, true }

func TestBound(t *testing.T) {
	a, b := timed{newFake("a"), 2 * time.Minute}, timed{newFake("b"), time.Minute}
	unknown := newFake("unknown")
	for _, tc := range []struct {
		name string
		p    Provider
		want time.Duration
		ok   bool
	}{
		{"a provider's own", a, 2 * time.Minute, true},
		{"a provider that says nothing", unknown, 0, false},
		{"three attempts and two waits of at most 10 s", WithRetry(a, 3, time.Second, 10*time.Second), 6*time.Minute + 20*time.Second, true},
		{"a breaker adds nothing", WithBreaker(WithRetry(a, 2, time.Second, 5*time.Second), 5, 30*time.Second), 4*time.Minute + 5*time.Second, true},
		{"a chain tries each in turn", NewChain(WithRetry(a, 2, time.Second, 10*time.Second), b), 5*time.Minute + 10*time.Second, true},
		{"a chain with one unknown is unknown", NewChain(a, unknown), 0, false},
		{"a retry of an unknown is unknown", WithRetry(unknown, 3, time.Second, time.Second), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Bound(tc.p)
			if got != tc.want || ok != tc.ok {
				t.Errorf("Bound = %s, %v; want %s, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
