package agent

import (
	"slices"
	"sync"
	"time"
)

// Clock is the time a Replier that holds streamed text back goes by: the
// wall clock in production, a virtual one where a test must count what
// is sent exactly (tests/cost).
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed; stop
	// cancels it, reporting whether it did so before f was called.
	AfterFunc(d time.Duration, f func()) (stop func() bool)
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

func (wallClock) AfterFunc(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }

// ManualClock is a Clock that moves only when told (Advance), calling the
// functions that fall due on the way, in the order of their times: what
// a test needs to count batched posts exactly, whatever the machine's
// load.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	seq     int
	pending []manualTimer
}

type manualTimer struct {
	at  time.Time
	seq int
	f   func()
}

// NewManualClock returns a clock that reads start.
func NewManualClock(start time.Time) *ManualClock { return &ManualClock{now: start} }

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc calls f when Advance passes d from now.
func (c *ManualClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	seq := c.seq
	c.pending = append(c.pending, manualTimer{at: c.now.Add(d), seq: seq, f: f})
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		n := len(c.pending)
		c.pending = slices.DeleteFunc(c.pending, func(t manualTimer) bool { return t.seq == seq })
		return len(c.pending) < n
	}
}

// Advance moves the clock on by d, calling each function due by then in
// the caller's goroutine, at its time.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	end := c.now.Add(d)
	for {
		i := -1
		for j, t := range c.pending {
			if !t.at.After(end) && (i < 0 || t.at.Before(c.pending[i].at) || (t.at.Equal(c.pending[i].at) && t.seq < c.pending[i].seq)) {
				i = j
			}
		}
		if i < 0 {
			break
		}
		t := c.pending[i]
		c.pending = slices.Delete(c.pending, i, i+1)
		c.now = t.at
		c.mu.Unlock()
		t.f()
		c.mu.Lock()
	}
	c.now = end
	c.mu.Unlock()
}
