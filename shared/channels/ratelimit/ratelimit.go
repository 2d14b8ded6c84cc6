// Package ratelimit is a sliding-window rate limiter (seed 000 ADR-007),
// kept per key in memory. It uses the sliding-window counter: the count of
// the current fixed window plus the previous window's count weighted by how
// much of it still overlaps the sliding window. Memory is constant per key
// whatever the limit.
package ratelimit

import (
	"sync"
	"time"
)

// Limiter counts requests per key over a sliding window.
type Limiter struct {
	window time.Duration
	now    func() time.Time

	mu   sync.Mutex
	keys map[string]*counter
	ops  int
}

type counter struct {
	start     time.Time // start of the current fixed window
	prev, cur int
}

// New returns a limiter with the given window (one minute in production).
func New(window time.Duration) *Limiter {
	return &Limiter{window: window, now: time.Now, keys: map[string]*counter{}}
}

// Allow records a request for key with limit per window. When the limit is
// reached it returns false and how long until a request would be allowed.
// A limit of zero or less allows everything.
func (l *Limiter) Allow(key string, limit int) (bool, time.Duration) {
	if limit <= 0 {
		return true, 0
	}
	now := l.now()
	w := l.window
	start := now.Truncate(w)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ops++; l.ops%4096 == 0 {
		l.prune(start)
	}
	c := l.keys[key]
	if c == nil {
		c = &counter{start: start}
		l.keys[key] = c
	}
	switch {
	case c.start.Equal(start):
	case c.start.Add(w).Equal(start):
		c.prev, c.cur, c.start = c.cur, 0, start
	default:
		c.prev, c.cur, c.start = 0, 0, start
	}
	left := w - now.Sub(start) // of the current window
	if float64(c.prev)*float64(left)/float64(w)+float64(c.cur) < float64(limit) {
		c.cur++
		return true, 0
	}
	var wait time.Duration
	if c.cur < limit && c.prev > 0 {
		// The previous window's weight falls until the estimate drops
		// below the limit: prev*(left-t)/w + cur < limit.
		wait = left - time.Duration(float64(limit-c.cur)*float64(w)/float64(c.prev))
	} else {
		// Only the next window helps: cur*(w-t')/w < limit.
		wait = left + time.Duration(float64(w)*(1-float64(limit)/float64(c.cur)))
	}
	return false, wait + time.Millisecond
}

// prune forgets keys idle for more than a window.
func (l *Limiter) prune(start time.Time) {
	for k, c := range l.keys {
		if c.start.Add(l.window).Before(start) {
			delete(l.keys, k)
		}
	}
}
