package channel

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

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
