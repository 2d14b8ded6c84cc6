package agent

import (
	"context"
	"sync"
)

// Hub routes a run's deltas and result to an in-process subscriber, such
// as the HTTP request that started the run. It implements Replier. Events
// of runs nobody subscribed to are dropped.
type Hub struct {
	mu   sync.Mutex
	subs map[string]*Subscription
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{subs: map[string]*Subscription{}} }

// Event is one thing a run reports: a content delta, or its result.
type Event struct {
	Delta  string
	Result *Result
}

// Subscription buffers a run's events without limit, so a slow reader
// never blocks the run.
type Subscription struct {
	mu     sync.Mutex
	events []Event
	notify chan struct{}
}

// Subscribe starts buffering the events of runID. Call it before the run
// is started.
func (h *Hub) Subscribe(runID string) *Subscription {
	s := &Subscription{notify: make(chan struct{}, 1)}
	h.mu.Lock()
	h.subs[runID] = s
	h.mu.Unlock()
	return s
}

// Unsubscribe stops delivering runID's events.
func (h *Hub) Unsubscribe(runID string) {
	h.mu.Lock()
	delete(h.subs, runID)
	h.mu.Unlock()
}

func (h *Hub) publish(runID string, ev Event) {
	h.mu.Lock()
	s := h.subs[runID]
	h.mu.Unlock()
	if s == nil {
		return
	}
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// Delta implements Replier.
func (h *Hub) Delta(r RunState, text string) { h.publish(r.RunID, Event{Delta: text}) }

// Finish implements Replier.
func (h *Hub) Finish(r RunState, res Result) { h.publish(r.RunID, Event{Result: &res}) }

// Next returns the next event, waiting for one until ctx ends.
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	for {
		s.mu.Lock()
		if len(s.events) > 0 {
			ev := s.events[0]
			s.events = s.events[1:]
			s.mu.Unlock()
			return ev, nil
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return Event{}, ctx.Err()
		case <-s.notify:
		}
	}
}
