package telegram

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
}

func (f *fakeOutbox) AddOutbox(_ context.Context, msgs []store.OutboxMessage) error {
	f.msgs = append(f.msgs, msgs...)
	return nil
}

func (f *fakeOutbox) UnsentOutbox(context.Context, int) ([]store.OutboxMessage, error) {
	return f.msgs, nil
}

// MarkSent fails on a cancelled context, as a real store would.
func (f *fakeOutbox) MarkSent(ctx context.Context, id string, _ int64, _ time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.sent = append(f.sent, id)
	return nil
}

func (f *fakeOutbox) MarkRetry(_ context.Context, id string, attempts int, next time.Time, _ string, failed bool) error {
	f.retries[id] = retry{Attempts: attempts, Next: next, Failed: failed}
	return nil
}

// fakeSender fails the messages of the chats in fail and sends the others.
type fakeSender struct {
	fail map[int64]error
	// cancel, when set, is called during each send.
	cancel context.CancelFunc
	sent   []string
}

func (s *fakeSender) SendMessage(ctx context.Context, chatID int64, text string) (int64, error) {
	if s.cancel != nil {
		s.cancel()
	}
	if err := s.fail[chatID]; err != nil {
		return 0, err
	}
	s.sent = append(s.sent, text)
	// Telegram has the message; a client whose request context ended
	// meanwhile never reads the answer.
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return int64(len(s.sent)), nil
}

func TestOutboxPass(t *testing.T) {
	tooMany := &APIError{Method: "sendMessage", Code: 429, Description: "Too Many Requests", RetryAfter: 7 * time.Second}
	serverError := &APIError{Method: "sendMessage", Code: 500, Description: "Internal Server Error"}
	forbidden := &APIError{Method: "sendMessage", Code: 403, Description: "Forbidden: bot was blocked by the user"}
	// msg is a message of chat with id as its text, tried attempts times
	// and due after due.
	type msg struct {
		id       string
		chat     int64
		attempts int
		due      time.Duration
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
		fail        map[int64]error
		cancel      bool
		wantSent    []string
		wantRetries map[string]want
		wantPending int
		// wantNext is when the next message is due, from now.
		wantNext time.Duration
	}{
		{name: "every chat in order", msgs: []msg{{id: "a#0", chat: 1}, {id: "a#1", chat: 1}, {id: "b#0", chat: 2}},
			wantSent: []string{"a#0", "a#1", "b#0"}, wantNext: 24 * time.Hour},
		{name: "a failure holds its chat's later messages", msgs: []msg{{id: "a#0", chat: 1}, {id: "a#1", chat: 1}, {id: "b#0", chat: 2}},
			fail: map[int64]error{1: serverError}, wantSent: []string{"b#0"},
			wantRetries: map[string]want{"a#0": {attempts: 1, delay: 500 * time.Millisecond}}, wantPending: 2, wantNext: 500 * time.Millisecond},
		{name: "429 waits retry_after", msgs: []msg{{id: "a#0", chat: 1}}, fail: map[int64]error{1: tooMany},
			wantRetries: map[string]want{"a#0": {attempts: 1, delay: 7 * time.Second}}, wantPending: 1, wantNext: 7 * time.Second},
		{name: "the backoff doubles per attempt", msgs: []msg{{id: "a#0", chat: 1, attempts: 3}}, fail: map[int64]error{1: serverError},
			wantRetries: map[string]want{"a#0": {attempts: 4, delay: 4 * time.Second}}, wantPending: 1, wantNext: 4 * time.Second},
		{name: "a permanent error gives up at the third attempt", msgs: []msg{{id: "a#0", chat: 1, attempts: 2}}, fail: map[int64]error{1: forbidden},
			wantRetries: map[string]want{"a#0": {attempts: 3, delay: 2 * time.Second, failed: true}}, wantNext: 24 * time.Hour},
		{name: "any error gives up at the last attempt", msgs: []msg{{id: "a#0", chat: 1, attempts: maxAttempts - 1}}, fail: map[int64]error{1: serverError},
			wantRetries: map[string]want{"a#0": {attempts: maxAttempts, delay: 5 * time.Minute, failed: true}}, wantNext: 24 * time.Hour},
		{name: "a message not due holds its chat", msgs: []msg{{id: "a#0", chat: 1, due: time.Hour}, {id: "a#1", chat: 1}, {id: "b#0", chat: 2}},
			wantSent: []string{"b#0"}, wantPending: 2, wantNext: time.Hour},
		{name: "a sent message is marked while shutting down", msgs: []msg{{id: "a#0", chat: 1}, {id: "a#1", chat: 1}}, cancel: true,
			wantSent: []string{"a#0"}, wantPending: 2, wantNext: 24 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			st := &fakeOutbox{retries: map[string]retry{}}
			sender := &fakeSender{fail: tt.fail}
			if tt.cancel {
				sender.cancel = cancel
			}
			now := time.Now()
			for _, m := range tt.msgs {
				st.msgs = append(st.msgs, store.OutboxMessage{ID: m.id, ChatID: m.chat, Text: m.id, Status: store.OutboxPending,
					Attempts: m.attempts, NextAt: now.Add(m.due), CreatedAt: now})
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
	st := &fakeOutbox{retries: map[string]retry{}}
	sender := &fakeSender{fail: map[int64]error{1: &APIError{Method: "sendMessage", Code: 429, RetryAfter: time.Hour}}}
	o := newOutbox(st, sender, slog.New(slog.DiscardHandler))
	if err := o.add(t.Context(), []store.OutboxMessage{{ID: "a#0", ChatID: 1, Text: "hi", NextAt: time.Now()}}); err != nil {
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
