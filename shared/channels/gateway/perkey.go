package gateway

import "sync"

// perKey counts what each API key holds open (requests in flight or
// WebSocket connections) against a limit. Only keys holding something have
// an entry, so its memory is bounded by what is open.
type perKey struct {
	max int // zero or less: no limit
	// code and full (a format taking max) make the 429 answer.
	code, full string

	mu   sync.Mutex
	open map[string]int
}

func newPerKey(max int, code, full string) *perKey {
	return &perKey{max: max, code: code, full: full, open: map[string]int{}}
}

// acquire takes one slot for key; it reports false when key holds max
// already. Each true must be matched by one release.
func (p *perKey) acquire(key string) bool {
	if p.max <= 0 {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open[key] >= p.max {
		return false
	}
	p.open[key]++
	return true
}

// release gives back a slot taken by acquire; a key left with none is
// forgotten.
func (p *perKey) release(key string) {
	if p.max <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open[key] <= 1 {
		delete(p.open, key)
		return
	}
	p.open[key]--
}
