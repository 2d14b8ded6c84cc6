package wsproto

import (
	"context"
	"slices"
	"sync"
)

// Recent remembers which run recent client message ids delivered to, in
// memory, so that a repeated id delivers nothing new: not even an approval
// answer, which starts no run of its own, nor a message resent while its
// run is parked, which would otherwise deny the approval. A process that
// serves many connections keeps one; runs that outlive its memory (or the
// process) are found through Server.Runs.
type Recent struct {
	size  int
	mu    sync.Mutex
	byID  map[string]*recentEntry
	order []recentKey // oldest first
}

type recentKey struct {
	id string
	e  *recentEntry
}

// recentEntry is one remembered id; done is closed when its delivery has
// settled.
type recentEntry struct {
	done             chan struct{}
	ok               bool
	runID, sessionID string
}

// NewRecent returns a memory of the last size client ids.
func NewRecent(size int) *Recent {
	return &Recent{size: max(size, 1), byID: map[string]*recentEntry{}}
}

// claim returns the entry for id and whether the caller is the first to
// deliver it. A later caller waits until the first delivery settles; if it
// failed, the id may be delivered again. claim returns nil when ctx ends
// first.
func (r *Recent) claim(ctx context.Context, id string) (*recentEntry, bool) {
	for {
		r.mu.Lock()
		e, seen := r.byID[id]
		if !seen {
			e = &recentEntry{done: make(chan struct{})}
			r.byID[id] = e
			r.order = append(r.order, recentKey{id, e})
			if len(r.order) > r.size {
				old := r.order[0]
				r.order = slices.Delete(r.order, 0, 1)
				if r.byID[old.id] == old.e {
					delete(r.byID, old.id)
				}
			}
			r.mu.Unlock()
			return e, true
		}
		r.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, false
		}
		if e.ok {
			return e, false
		}
	}
}

// settle records the outcome of the first delivery of id, which holds e
// (nil: nothing is held, and settle does nothing). A failed delivery
// forgets the id so that it can be retried.
func (r *Recent) settle(id string, e *recentEntry, runID, sessionID string, ok bool) {
	if e == nil {
		return
	}
	r.mu.Lock()
	e.ok, e.runID, e.sessionID = ok, runID, sessionID
	if !ok && r.byID[id] == e {
		delete(r.byID, id)
	}
	r.mu.Unlock()
	close(e.done)
}
