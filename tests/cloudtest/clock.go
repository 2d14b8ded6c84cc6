package cloudtest

import (
	"sync"
	"time"
)

// Clock is a clock a test moves on (the inline leases' clock, which
// Lambda's delay before a retry moves on by minutes).
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock at now.
func NewClock() *Clock { return &Clock{t: time.Now()} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
