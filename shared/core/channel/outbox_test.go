package channel

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// retry is one MarkRetry call.
type retry struct {
	Attempts int
	Next     time.Time
	Failed   bool
}

// fakeOutbox keeps an outbox in memory.
type fakeOutbox struct {
	msgs    []store.OutboxMessage
	sent    []string
	retries map[string]retry
	taken   map[string]bool
	claims  []string
}

func (f *fakeOutbox) AddOutbox(_ context.Context, msgs []store.OutboxMessage) error {
	f.msgs = append(f.msgs, msgs...)
	return nil
}

func (f *fakeOutbox) UnsentOutbox(context.Context, int) ([]store.OutboxMessage, error) {
	return f.msgs, nil
}

// MarkSent fails on a cancelled context, as a real store would.
func (f *fakeOutbox) MarkSent(ctx context.Context, id, _ string, _ time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.sent = append(f.sent, id)
	return nil
}

// ClaimOutbox claims a message as a store does, but for a message in
// taken, which another sender claimed since the pass read it.
func (f *fakeOutbox) ClaimOutbox(_ context.Context, id, claim string, now, until time.Time) (store.OutboxMessage, bool, error) {
	for i, m := range f.msgs {
		if m.ID == id && !f.taken[id] && !m.NextAt.After(now) && !m.ClaimedUntil.After(now) {
			f.msgs[i].ClaimedUntil = until
			f.claims = append(f.claims, claim)
			return f.msgs[i], true, nil
		}
	}
	return store.OutboxMessage{}, false, nil
}

func (f *fakeOutbox) MarkRetry(_ context.Context, id, claim string, attempts int, next time.Time, _ string, failed bool) error {
	if !slices.Contains(f.claims, claim) {
		return fmt.Errorf("mark retry of %s under claim %q, which was not made", id, claim)
	}
	f.retries[id] = retry{Attempts: attempts, Next: next, Failed: failed}
	return nil
}

// fakeSender fails the messages to the conversations in fail and sends
// the others.
type fakeSender struct {
	fail map[string]error
	// cancel, when set, is called during each send.
	cancel context.CancelFunc
	sent   []string
}

func (s *fakeSender) Send(ctx context.Context, m Outgoing) (string, error) {
	if s.cancel != nil {
		s.cancel()
	}
	if err := s.fail[m.To]; err != nil {
		return "", err
	}
	s.sent = append(s.sent, m.Text)
	// The platform has the message; a client whose request context
	// ended meanwhile never reads the answer.
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return fmt.Sprint(len(s.sent)), nil
}

func TestOutboxPass(t *testing.T) {
	tooMany := &Error{Platform: "test", Method: "send", Status: 429, Message: "Too Many Requests", RetryAfter: 7 * time.Second}
	serverError := &Error{Platform: "test", Method: "send", Status: 500, Message: "Internal Server Error"}
	forbidden := &Error{Platform: "test", Method: "send", Status: 403, Message: "Forbidden: bot was blocked by the user", Permanent: true}
	// msg is a message of chat with id as its text, tried attempts times
	// and due after due, claimed by another sender until claimed (if
	// set), or meanwhile (if taken).
	type msg struct {
		id       string
		chat     string
		attempts int
		due      time.Duration
		claimed  time.Duration
		taken    bool
	}
	// want is a MarkRetry call, with the delay the retry is due after.
	type want struct {
		attempts int
		delay    time.Duration
		failed   bool
	}
	tests := []struct {
		name        string
		msgs        []msg
		fail        map[string]error
		cancel      bool
		wantSent    []string
		wantRetries map[string]want
		wantPending int
		// wantNext is when the next message is due, from now.
		wantNext time.Duration
	}{
		{name: "every chat in order", msgs: []msg{{id: "a#0", chat: "1"}, {id: "a#1", chat: "1"}, {id: "b#0", chat: "2"}},
			wantSent: []string{"a#0", "a#1", "b#0"}, wantNext: 24 * time.Hour},
		{name: "a failure holds its chat's later messages", msgs: []msg{{id: "a#0", chat: "1"}, {id: "a#1", chat: "1"}, {id: "b#0", chat: "2"}},
			fail: map[string]error{"1": serverError}, wantSent: []string{"b#0"},
			wantRetries: map[string]want{"a#0": {attempts: 1, delay: 500 * time.Millisecond}}, wantPending: 2, wantNext: 500 * time.Millisecond},
		{name: "429 waits retry_after", msgs: []msg{{id: "a#0", chat: "1"}}, fail: map[string]error{"1": tooMany},
			wantRetries: map[string]want{"a#0": {attempts: 1, delay: 7 * time.Second}}, wantPending: 1, wantNext: 7 * time.Second},
		{name: "the backoff doubles per attempt", msgs: []msg{{id: "a#0", chat: "1", attempts: 3}}, fail: map[string]error{"1": serverError},
			wantRetries: map[string]want{"a#0": {attempts: 4, delay: 4 * time.Second}}, wantPending: 1, wantNext: 4 * time.Second},
		{name: "a permanent error gives up at the third attempt", msgs: []msg{{id: "a#0", chat: "1", attempts: 2}}, fail: map[string]error{"1": forbidden},
			wantRetries: map[string]want{"a#0": {attempts: 3, delay: 2 * time.Second, failed: true}}, wantNext: 24 * time.Hour},
		{name: "any error gives up at the last attempt", msgs: []msg{{id: "a#0", chat: "1", attempts: maxAttempts - 1}}, fail: map[string]error{"1": serverError},
			wantRetries: map[string]want{"a#0": {attempts: maxAttempts, delay: 5 * time.Minute, failed: true}}, wantNext: 24 * time.Hour},
		{name: "a message not due holds its chat", msgs: []msg{{id: "a#0", chat: "1", due: time.Hour}, {id: "a#1", chat: "1"}, {id: "b#0", chat: "2"}},
			wantSent: []string{"b#0"}, wantPending: 2, wantNext: time.Hour},
		{name: "a message another sender holds holds its chat, looked at again within a second",
			msgs:     []msg{{id: "a#0", chat: "1", claimed: claimLease}, {id: "a#1", chat: "1"}, {id: "b#0", chat: "2"}},
			wantSent: []string{"b#0"}, wantPending: 2, wantNext: claimPoll},
		{name: "a claim that lapses sooner is looked at when it lapses", msgs: []msg{{id: "a#0", chat: "1", claimed: 300 * time.Millisecond}},
			wantPending: 1, wantNext: 300 * time.Millisecond},
		{name: "a claimed message due for a retry later is looked at then", msgs: []msg{{id: "a#0", chat: "1", due: time.Minute, claimed: claimLease}},
			wantPending: 1, wantNext: time.Minute},
		{name: "a lapsed claim is claimed again", msgs: []msg{{id: "a#0", chat: "1", claimed: -time.Second}},
			wantSent: []string{"a#0"}, wantNext: 24 * time.Hour},
		{name: "a message claimed since it was read holds its chat", msgs: []msg{{id: "a#0", chat: "1", taken: true}, {id: "a#1", chat: "1"}, {id: "b#0", chat: "2"}},
			wantSent: []string{"b#0"}, wantPending: 2, wantNext: claimPoll},
		{name: "a sent message is marked while shutting down", msgs: []msg{{id: "a#0", chat: "1"}, {id: "a#1", chat: "1"}}, cancel: true,
			wantSent: []string{"a#0"}, wantPending: 2, wantNext: 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			st := &fakeOutbox{retries: map[string]retry{}, taken: map[string]bool{}}
			sender := &fakeSender{fail: tt.fail}
			if tt.cancel {
				sender.cancel = cancel
			}
			now := time.Now()
			for _, m := range tt.msgs {
				st.msgs = append(st.msgs, store.OutboxMessage{ID: m.id, To: m.chat, Text: m.id, Status: store.OutboxPending,
					Attempts: m.attempts, NextAt: now.Add(m.due), CreatedAt: now})
				if m.claimed != 0 {
					st.msgs[len(st.msgs)-1].ClaimedUntil = now.Add(m.claimed)
				}
				st.taken[m.id] = m.taken
			}
			o := newOutbox(st, sender, slog.New(slog.DiscardHandler))
			o.now = func() time.Time { return now }
			next, pending := o.pass(ctx)

			if d := cmp.Diff(tt.wantSent, sender.sent); d != "" {
				t.Errorf("sent (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantSent, st.sent); d != "" {
				t.Errorf("marked sent (-want +got):\n%s", d)
			}
			wantRetries := map[string]retry{}
			for id, w := range tt.wantRetries {
				wantRetries[id] = retry{Attempts: w.attempts, Next: now.Add(w.delay), Failed: w.failed}
			}
			if d := cmp.Diff(wantRetries, st.retries); d != "" {
				t.Errorf("retries (-want +got):\n%s", d)
			}
			if pending != tt.wantPending {
				t.Errorf("pending = %d, want %d", pending, tt.wantPending)
			}
			if d := cmp.Diff(now.Add(tt.wantNext), next); d != "" {
				t.Errorf("next (-want +got):\n%s", d)
			}
		})
	}
}

func TestOutboxFlushGivesUpOnLaterRetries(t *testing.T) {
	st := &fakeOutbox{retries: map[string]retry{}, taken: map[string]bool{}}
	sender := &fakeSender{fail: map[string]error{"1": &Error{Platform: "test", Method: "send", Status: 429, RetryAfter: time.Hour}}}
	o := newOutbox(st, sender, slog.New(slog.DiscardHandler))
	if err := o.add(t.Context(), []store.OutboxMessage{{ID: "a#0", To: "1", Text: "hi", NextAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-o.kick:
	default:
		t.Error("add did not wake the loop")
	}
	pending, err := o.flush(t.Context(), time.Minute)
	if pending != 1 || err != nil {
		t.Errorf("flush = %d, %v; want 1 pending, no error", pending, err)
	}
	if got := st.retries["a#0"].Attempts; got != 1 {
		t.Errorf("attempts = %d, want 1: flush must not wait for a retry due after wait", got)
	}
}

// TestOutboxFlushWaitsForAnotherSendersClaim: a message another sender
// holds (its claim's lease far beyond the wait) is sent once that sender
// marks its retry, within the wait: flush looks again about once a
// second rather than giving up. The clock is the test's: each wait of
// flush advances it, and the other sender marks its retry during the
// second.
func TestOutboxFlushWaitsForAnotherSendersClaim(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	st := &fakeOutbox{retries: map[string]retry{}, taken: map[string]bool{}, msgs: []store.OutboxMessage{
		{ID: "a#0", To: "1", Text: "a#0", Status: store.OutboxPending, NextAt: now, ClaimedUntil: now.Add(claimLease)},
		{ID: "a#1", To: "1", Text: "a#1", Status: store.OutboxPending, NextAt: now}}}
	sender := &fakeSender{}
	o := newOutbox(st, sender, slog.New(slog.DiscardHandler))
	o.now = func() time.Time { return now }
	var waits []time.Duration
	o.sleep = func(_ context.Context, d time.Duration) bool {
		waits = append(waits, d)
		now = now.Add(d)
		if len(waits) == 2 {
			// The other sender's send failed: it marks a retry due
			// in half a second, which ends its claim.
			st.msgs[0].ClaimedUntil, st.msgs[0].NextAt = time.Time{}, now.Add(500*time.Millisecond)
		}
		return true
	}
	pending, err := o.flush(t.Context(), 10*time.Second)
	if pending != 0 || err != nil {
		t.Fatalf("flush = %d pending, %v; want all sent within the wait", pending, err)
	}
	if d := cmp.Diff([]string{"a#0", "a#1"}, sender.sent); d != "" {
		t.Errorf("sent (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]time.Duration{claimPoll, claimPoll, 500 * time.Millisecond}, waits); d != "" {
		t.Errorf("waits (-want +got):\n%s", d)
	}
}

// gatedSender records what it sends, to the chat and text of each
// message; the first send waits, once started, until gate is closed.
type gatedSender struct {
	mu      sync.Mutex
	sent    map[string][]string
	started chan struct{}
	gate    chan struct{}
	calls   int
}

func (s *gatedSender) Send(_ context.Context, m Outgoing) (string, error) {
	s.mu.Lock()
	s.calls++
	if s.calls == 1 {
		s.mu.Unlock()
		close(s.started)
		<-s.gate
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	s.sent[m.To] = append(s.sent[m.To], m.Text)
	return fmt.Sprint(len(s.sent[m.To])), nil
}

// TestOutboxesSendOnce runs two outboxes over one store, as the webhook
// and the step function do on AWS: while one is sending a message, the
// other passes over the outbox; each message is sent once, in order per
// chat.
func TestOutboxesSendOnce(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "outbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := db.Channel("test")
	want := map[string][]string{}
	var msgs []store.OutboxMessage
	for i := range 9 {
		chat := fmt.Sprint(i%3 + 1)
		text := fmt.Sprintf("chat %s part %d", chat, i/3)
		msgs = append(msgs, store.OutboxMessage{ID: fmt.Sprintf("r%s#%d", chat, i/3), Channel: "test", To: chat, Text: text})
		want[chat] = append(want[chat], text)
	}
	if err := st.AddOutbox(t.Context(), msgs); err != nil {
		t.Fatal(err)
	}
	sender := &gatedSender{sent: map[string][]string{}, started: make(chan struct{}), gate: make(chan struct{})}
	log := slog.New(slog.DiscardHandler)
	a, b := newOutbox(st, sender, log), newOutbox(st, sender, log)

	done := make(chan struct{})
	go func() {
		defer close(done)
		a.pass(t.Context())
	}()
	<-sender.started // a is sending chat 1's first message
	_, pending := b.pass(t.Context())
	close(sender.gate)
	<-done
	if pending != 3 {
		t.Errorf("pending after the pass beside a send = %d; want chat 1's 3", pending)
	}
	for _, o := range []*outbox{a, b} {
		if _, pending := o.pass(t.Context()); pending != 0 {
			t.Errorf("pending after the last passes = %d", pending)
		}
	}
	if d := cmp.Diff(want, sender.sent); d != "" {
		t.Errorf("sent (-want +got):\n%s", d)
	}
}
