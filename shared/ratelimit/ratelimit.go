// Package ratelimit is a sliding-window rate limiter (seed 000 ADR-007),
// kept per key in memory: at most N requests in any window.
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
	logs map[string]*ring
	ops  int
}

// ring holds the times of the last n allowed requests of one key.
type ring struct {
	times []time.Time
	next  int
	full  bool
}

// New returns a limiter with the given window (one minute in production).
func New(window time.Duration) *Limiter {
	return &Limiter{window: window, now: time.Now, logs: map[string]*ring{}}
}

// Allow records a request for key with limit per window. When the limit is
// reached it returns false and how long until a request would be allowed.
// A limit of zero or less allows everything.
func (l *Limiter) Allow(key string, limit int) (bool, time.Duration) {
	if limit <= 0 {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ops++
	if l.ops%4096 == 0 {
		l.prune(now)
	}
	r := l.logs[key]
	if r == nil || len(r.times) != limit {
		r = &ring{times: make([]time.Time, limit)}
		l.logs[key] = r
	}
	// The slot to overwrite holds the oldest of the last `limit` requests.
	if r.full {
		oldest := r.times[r.next]
		if wait := oldest.Add(l.window).Sub(now); wait > 0 {
			return false, wait
		}
	}
	r.times[r.next] = now
	r.next = (r.next + 1) % limit
	if r.next == 0 {
		r.full = true
	}
	return true, 0
}

// prune forgets keys with no request in the last window.
func (l *Limiter) prune(now time.Time) {
	for k, r := range l.logs {
		last := r.times[(r.next-1+len(r.times))%len(r.times)]
		if now.Sub(last) > l.window {
			delete(l.logs, k)
		}
	}
}
