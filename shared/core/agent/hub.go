package agent

import (
	"context"
	"slices"
	"sync"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// Hub routes what runs report to in-process subscribers. It implements
// Replier. A subscriber listens either to one run, by RunKey, or to a reply
// address (Reply.To), such as a WebSocket connection that starts many runs;
// a key may have several subscribers. Events nobody listens to are dropped.
type Hub struct {
	mu   sync.Mutex
	subs map[string][]*Subscription
}

// NewHub returns an empty hub.
func NewHub() *Hub { return &Hub{subs: map[string][]*Subscription{}} }

// RunKey is the subscription key for the events of one run.
func RunKey(runID string) string { return "run:" + runID }

// Event is one thing a run reports: a content delta, an approval request,
// or its result.
type Event struct {
	RunID     string
	SessionID string
	Delta     string
	Approval  *store.Approval
	Result    *Result
}

// Subscription buffers events without limit, so a slow reader never
// blocks a run.
type Subscription struct {
	mu     sync.Mutex
	events []Event
	notify chan struct{}
}

// Subscribe starts buffering the events for key, a RunKey or a reply
// address. Subscribe before the run can report anything.
func (h *Hub) Subscribe(key string) *Subscription {
	s := &Subscription{notify: make(chan struct{}, 1)}
	h.Attach(key, s)
	return s
}

// Attach delivers the events for key to an existing subscription too, so
// that one reader can follow a reply address and single runs. An event
// reaches a subscription once even when several of its keys match.
func (h *Hub) Attach(key string, s *Subscription) {
	h.mu.Lock()
	if !slices.Contains(h.subs[key], s) {
		h.subs[key] = append(h.subs[key], s)
	}
	h.mu.Unlock()
}

// Unsubscribe stops delivering the events for key to s; other
// subscribers of key keep theirs.
func (h *Hub) Unsubscribe(key string, s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	list := slices.DeleteFunc(h.subs[key], func(x *Subscription) bool { return x == s })
	if len(list) == 0 {
		delete(h.subs, key)
	} else {
		h.subs[key] = list
	}
}

func (h *Hub) publish(r RunState, ev Event) {
	ev.RunID, ev.SessionID = r.RunID, r.SessionID
	h.mu.Lock()
	targets := slices.Clone(h.subs[RunKey(r.RunID)])
	if r.Reply.To != "" {
		for _, s := range h.subs[r.Reply.To] {
			if !slices.Contains(targets, s) {
				targets = append(targets, s)
			}
		}
	}
	h.mu.Unlock()
	for _, s := range targets {
		s.push(ev)
	}
}

func (s *Subscription) push(ev Event) {
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
func (h *Hub) Delta(r RunState, text string) { h.publish(r, Event{Delta: text}) }

// Approval implements Replier.
func (h *Hub) Approval(r RunState, a store.Approval) { h.publish(r, Event{Approval: &a}) }

// Finish implements Replier.
func (h *Hub) Finish(r RunState, res Result) { h.publish(r, Event{Result: &res}) }

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

// Follower follows the events of the run that answers a message handed
// to a driver: its Follow is Deliver's subscribe, which names the run
// before it can tell anything (again when an answer resumes another).
type Follower struct {
	Events interface {
		Subscribe(key string) *Subscription
		Unsubscribe(key string, s *Subscription)
	}
	key string
	// Sub is the subscription to the run named last.
	Sub *Subscription
}

// Follow subscribes to the events of run runID, leaving the run followed
// before.
func (f *Follower) Follow(runID string) {
	key := RunKey(runID)
	if key == f.key {
		return
	}
	f.Close()
	f.key, f.Sub = key, f.Events.Subscribe(key)
}

// Close ends the subscription.
func (f *Follower) Close() {
	if f.key != "" {
		f.Events.Unsubscribe(f.key, f.Sub)
	}
}
