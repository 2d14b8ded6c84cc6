package channel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// codeStore keeps in memory what the access codes' path of Handle uses
// of store.Channel; other methods are not called.
type codeStore struct {
	store.Channel
	mu      sync.Mutex
	seen    map[string]bool
	users   map[string]string
	codes   map[string]bool
	tries   map[string]store.CodeTries
	replies map[string]string
}

func newCodeStore() *codeStore {
	return &codeStore{seen: map[string]bool{}, users: map[string]string{}, codes: map[string]bool{},
		tries: map[string]store.CodeTries{}, replies: map[string]string{}}
}

func (s *codeStore) Seen(_ context.Context, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[id], nil
}

func (s *codeStore) MarkSeen(_ context.Context, id string, _ time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen[id] = true
	return nil
}

func (s *codeStore) AllowedUser(_ context.Context, id string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.users[id]
	return ok, nil
}

func (s *codeStore) RedeemCode(_ context.Context, hash string, id string, _ time.Time) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.users[id]; ok || s.codes[hash] {
		return false, nil
	}
	s.codes[hash], s.users[id] = true, hash
	return true, nil
}

func (s *codeStore) CodeTries(_ context.Context, chat string) (store.CodeTries, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tries[chat], nil
}

func (s *codeStore) SetCodeTries(_ context.Context, chat string, prev int64, next store.CodeTries) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tries[chat].Version != prev {
		return false, nil
	}
	next.Version = prev + 1
	s.tries[chat] = next
	return true, nil
}

func (s *codeStore) AddOutbox(_ context.Context, msgs []store.OutboxMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		if _, ok := s.replies[m.ID]; !ok {
			s.replies[m.ID] = m.Text
		}
	}
	return nil
}

// noRuns is a Runner no test message may reach.
type noRuns struct{ t *testing.T }

func (r noRuns) Deliver(context.Context, agent.Input, func(string)) (agent.RunState, error) {
	r.t.Error("a message reached the agent")
	return agent.RunState{}, nil
}

func (r noRuns) Reset(context.Context, string) error { return nil }

// nowhere is a Platform no test message is sent to.
type nowhere struct{}

func (nowhere) Name() string { return "test" }
func (nowhere) MaxLen() int  { return 4096 }
func (nowhere) Send(context.Context, Outgoing) (string, error) {
	return "", errors.New("nowhere sends nothing")
}

// codeBot is a channel whose one access code is rightCode, on s, at the
// clock *now.
type codeBot struct {
	t    *testing.T
	s    *codeStore
	c    *Channel
	now  *time.Time
	next int64
}

const rightCode = "code-5ecret-42"

func newCodeBot(t *testing.T, s *codeStore, now *time.Time) *codeBot {
	t.Helper()
	c, err := New(Config{Platform: nowhere{}, Store: s, Runner: noRuns{t}, Agent: "main",
		AccessCodes: []string{rightCode}, Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	return &codeBot{t: t, s: s, c: c, now: now, next: 1}
}

// dm is a direct message from user id with text, delivered as delivery.
func dm(delivery string, id int64, text string) Inbound {
	u := fmt.Sprint(id)
	return Inbound{ID: delivery, User: u, Principal: u, To: u, Addressed: true, Text: text}
}

// send hands the bot a direct message of chat and returns its reply.
func (b *codeBot) send(chat int64, text string) string {
	b.t.Helper()
	id := fmt.Sprintf("%d-%d", chat, b.next)
	b.next++
	if err := b.c.Handle(b.t.Context(), dm(id, chat, text)); err != nil {
		b.t.Fatalf("Handle(%q): %v", text, err)
	}
	b.s.mu.Lock()
	defer b.s.mu.Unlock()
	return b.s.replies["m"+id+"#0"]
}

// A chat that sends MaxCodeTries wrong codes is locked out for
// CodeLockout, told until when, and no code it sends meanwhile is
// checked, not even the right one; then it may try again, and the next
// lockout lasts twice as long. The lockout is the store's: a new channel
// on the same store (a restart, another instance) keeps it.
func TestAccessCodeLockout(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	s := newCodeStore()
	b := newCodeBot(t, s, &now)
	const chat = 222
	locked := func(at, in string) string {
		return "Too many wrong access codes: this chat is locked out. Try again after 2026-12-07 " + at +
			" UTC (in " + in + "); until then no code is checked."
	}
	var got, want []string
	step := func(text, reply string) {
		t.Helper()
		got, want = append(got, text+" → "+b.send(chat, text)), append(want, text+" → "+reply)
	}
	// /start, sent by the client when a chat opens, is no try.
	step("/start", DeniedText)
	for i := range MaxCodeTries - 1 {
		step(fmt.Sprintf("wrong-%d", i), DeniedText)
	}
	step("wrong-last", locked("12:15", "15 minutes"))
	now = now.Add(5 * time.Minute)
	step(rightCode, locked("12:15", "10 minutes"))

	// A restart: the lockout holds.
	b = newCodeBot(t, s, &now)
	b.next = 100
	now = now.Add(10*time.Minute - time.Second)
	step(rightCode, locked("12:15", "1 minute"))
	if ok, _ := s.AllowedUser(t.Context(), fmt.Sprint(chat)); ok {
		t.Fatal("the right code let a locked-out chat in")
	}

	// Another chat is not locked out by this one.
	if r := b.send(333, "wrong-elsewhere"); r != DeniedText {
		t.Errorf("another chat's wrong code: %q, want %q", r, DeniedText)
	}

	// At the end of the lockout, tries are counted afresh; the second
	// lockout lasts 30 minutes.
	now = time.Date(2026, 12, 7, 12, 15, 0, 0, time.UTC)
	for i := range MaxCodeTries - 1 {
		step(fmt.Sprintf("again-%d", i), DeniedText)
	}
	step("again-last", locked("12:45", "30 minutes"))
	now = now.Add(30 * time.Minute)
	step(rightCode, "Access granted. "+HelpText)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("replies (-want +got):\n%s", d)
	}
	if ok, _ := s.AllowedUser(t.Context(), fmt.Sprint(chat)); !ok {
		t.Error("the right code after the lockout did not let the chat in")
	}
}

// Lockouts double up to MaxCodeLockout.
func TestCodeLockoutDoubles(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	var got []time.Duration
	cur := store.CodeTries{}
	for range 10 * MaxCodeTries {
		prev := cur
		cur = nextTry(cur, now)
		if cur.Lockouts > prev.Lockouts {
			got = append(got, cur.LockedUntil.Sub(now))
		}
	}
	want := []time.Duration{15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour, 8 * time.Hour,
		16 * time.Hour, 24 * time.Hour, 24 * time.Hour, 24 * time.Hour}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("lockouts (-want +got):\n%s", d)
	}
}

// Messages handled at once (the webhook's concurrent deliveries, several
// function instances) compare at most MaxCodeTries codes: every try is
// counted before its code is compared.
func TestAccessCodeTriesAtOnce(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	s := newCodeStore()
	b := newCodeBot(t, s, &now)
	const n = 40
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := b.c.Handle(t.Context(), dm(fmt.Sprint(i+1), 444, fmt.Sprintf("guess-%d", i))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	denied, lockedOut := 0, 0
	for _, r := range s.replies {
		switch {
		case r == DeniedText:
			denied++
		case strings.HasPrefix(r, "Too many wrong access codes"):
			lockedOut++
		default:
			t.Errorf("reply %q", r)
		}
	}
	if denied != MaxCodeTries-1 || lockedOut != n-denied {
		t.Errorf("%d replies denied, %d locked out; want %d compared and denied, the rest locked out", denied, lockedOut, MaxCodeTries-1)
	}
}

// Without access codes there is nothing to try: every message gets the
// generic reply, however many, and no try is counted.
func TestNoAccessCodesNoLockout(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	s := newCodeStore()
	b := newCodeBot(t, s, &now)
	b.c.cfg.AccessCodes = nil
	for i := range 3 * MaxCodeTries {
		if r := b.send(888, fmt.Sprintf("hello %d", i)); r != DeniedText {
			t.Fatalf("message %d: %q, want %q", i, r, DeniedText)
		}
	}
	if got, _ := s.CodeTries(t.Context(), "888"); got != (store.CodeTries{}) {
		t.Errorf("tries counted without codes: %+v", got)
	}
}
