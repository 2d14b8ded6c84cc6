// Package channeltest is the conformance suite every channel adapter
// passes (Run): a Harness plays the platform against the adapter's real
// receiver (signed deliveries of messages, group messages and button
// presses, and forged ones) and reports what the platform received, while
// the suite runs the channel engine (shared/core/channel) on the store the
// adapter's test gives (the embedded one, sqlite) with the agent loop and
// a scripted fake model, as a server does.
package channeltest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// Harness is an adapter under test and its platform's fake. The suite's
// people are named ("alice", "bob", "mallory"); the harness gives each
// an id on the platform, a direct conversation with the bot, and one group
// they are all in.
type Harness interface {
	// Platform is the adapter's Platform, sending to the fake.
	Platform() channel.Platform
	// Serve starts the adapter's receiver, which verifies what the fake
	// delivers and hands it to handle (the engine's Handle), keeping
	// its own state, if any, in st. A later call replaces the receiver
	// (a restart).
	Serve(t *testing.T, st store.Channel, handle func(context.Context, channel.Inbound) error)
	// User is the id the engine sees (Inbound.User) for a person.
	User(name string) string
	// Deliver delivers d through the receiver as the platform does,
	// signed (or with a forged signature), and returns the HTTP status
	// the receiver answered.
	Deliver(t *testing.T, d Delivery) int
	// Received returns the messages the platform holds, as it shows them,
	// in the direct conversation with a person, or in the group.
	Received(t *testing.T, c Conversation) []Message
	// RateLimit makes the platform refuse the next message the bot sends
	// with its rate limit, and returns how long it asks to wait.
	RateLimit(t *testing.T) time.Duration
}

// Delivery is what the platform delivers.
type Delivery struct {
	// Seq numbers the delivery: the same Seq again is the platform's
	// redelivery of it (the same delivery id).
	Seq int
	// From is the person who sent it.
	From string
	// Group is a message in the group rather than to the bot directly;
	// Addressed says it mentions the bot.
	Group, Addressed bool
	Text             string
	// Press is the Value of a button pressed (Text is then empty), on
	// the last message with buttons in the conversation.
	Press string
	// Forged is signed with a wrong key or secret.
	Forged bool
}

// Conversation is a direct conversation with a person, or the group.
type Conversation struct {
	User  string
	Group bool
}

// Message is a message the platform holds: its text and buttons.
type Message struct {
	Text    string
	Buttons []channel.Button
}

// The suite's people: alice and bob may use the bot, mallory may not.
const (
	Alice   = "alice"
	Bob     = "bob"
	Mallory = "mallory"
)

// Store is what the suite runs the engine and the agent loop on: a
// store.Store that keeps channels' state (sqlite's DB).
type Store interface {
	store.Store
	Channel(name string) store.Channel
}

// Run runs the suite against the adapter newHarness returns, a new one for
// each scenario, on a fresh store of newStore each (closed by the test).
func Run(t *testing.T, newHarness func(t *testing.T) Harness, newStore func(t *testing.T) Store) {
	for _, sc := range []struct {
		name string
		run  func(t *testing.T, e *env)
	}{
		{"DirectMessage", directMessage},
		{"Stateful", stateful},
		{"LongReplySplit", longReply},
		{"RateLimitHonoured", rateLimit},
		{"DuplicateDelivery", duplicate},
		{"ApprovalByButton", approvalByButton},
		{"GroupContext", groupContext},
		{"Commands", commands},
		{"Stop", stop},
		{"AccessDenied", accessDenied},
		{"ForgedSignature", forged},
	} {
		t.Run(sc.name, func(t *testing.T) {
			e := start(t, newHarness(t), newStore(t), true)
			sc.run(t, e)
		})
	}
	t.Run("RestartBetweenCommitAndSend", func(t *testing.T) {
		restart(t, start(t, newHarness(t), newStore(t), false))
	})
	t.Run("Serverless", func(t *testing.T) {
		e := &env{serverless: true}
		serverless(t, e.start(t, newHarness(t), newStore(t), false))
	})
}

// env is the engine on a store with the agent loop, a fake model and the
// harness's receiver in front: a server.
type env struct {
	h     Harness
	llm   *model
	db    Store
	st    store.Channel
	tools atomic.Int32
	// stop ends the server; driver runs its turns.
	stop   func()
	driver *agent.Driver
	ch     *channel.Channel
	// serverless runs the engine as a Lambda function does: no outbox
	// sender, each delivery's replies flushed before the receiver answers
	// the platform, each run's by the run.
	serverless bool
}

// sendTool has an effect outside lambdaclaw: a supervised run asks a
// person to approve each call.
type sendTool struct{ calls *atomic.Int32 }

func (sendTool) Definition() chat.ToolDef {
	return chat.ToolDef{Name: "send", Description: "send a message", Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (sendTool) Policy() tool.Policy { return tool.Policy{Effect: tool.External} }
func (s sendTool) Call(context.Context, tool.Env, json.RawMessage) (string, error) {
	s.calls.Add(1)
	return "sent", nil
}

func start(t *testing.T, h Harness, db Store, deliver bool) *env {
	t.Helper()
	return (&env{}).start(t, h, db, deliver)
}

// start starts e, a server (see boot).
func (e *env) start(t *testing.T, h Harness, db Store, deliver bool) *env {
	t.Helper()
	t.Cleanup(func() { db.Close() })
	e.h, e.llm, e.db, e.st = h, newModel(), db, db.Channel(h.Platform().Name())
	e.boot(t, deliver)
	t.Cleanup(func() { e.stop() })
	return e
}

// boot starts a server on e's store: the engine, its outbox sender when
// deliver is set, the driver and the receiver.
func (e *env) boot(t *testing.T, deliver bool) {
	t.Helper()
	tools, err := tool.NewRegistry(sendTool{&e.tools})
	if err != nil {
		t.Fatal(err)
	}
	p := e.h.Platform()
	r, err := channel.NewReplier(channel.Config{Platform: p, Store: e.st, Agent: "main", Autonomy: tool.Supervised,
		AllowedUsers: []string{e.h.User(Alice), e.h.User(Bob)}, DraftInterval: time.Hour,
		Serverless: e.serverless, Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	loop := &agent.Loop{Store: e.db, Agents: agent.Registry{"main": {Name: "main", Provider: e.llm, Tools: tools, MaxToolIterations: 5}},
		Replier: agent.Router{p.Name(): r}}
	ctx, cancel := context.WithCancel(context.Background())
	e.driver = agent.NewDriver(ctx, loop, slog.New(slog.DiscardHandler))
	if e.ch, err = channel.NewChannel(r, e.driver); err != nil {
		t.Fatal(err)
	}
	if deliver {
		e.ch.Run(ctx)
	}
	e.stop = func() {
		cancel()
		e.driver.Wait()
		e.ch.Wait()
	}
	handle := e.ch.Handle
	if e.serverless {
		handle = func(ctx context.Context, in channel.Inbound) error {
			if err := e.ch.Handle(ctx, in); err != nil {
				return err
			}
			_, err := e.ch.Flush(ctx, 0)
			return err
		}
	}
	e.h.Serve(t, e.st, handle)
}

// deliver delivers d and checks the receiver took it (200).
func (e *env) deliver(t *testing.T, d Delivery) {
	t.Helper()
	if code := e.h.Deliver(t, d); code != http.StatusOK {
		t.Fatalf("delivery %+v: status %d, want 200", d, code)
	}
}

// settled waits until the engine is done with what it was given: no run
// works, and the outbox is delivered.
func (e *env) settled(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for {
		if err := e.driver.Idle(ctx); err != nil {
			t.Fatal(err)
		}
		stats, err := e.st.OutboxStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if stats.Pending == 0 {
			if err := e.driver.Idle(ctx); err == nil {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the outbox keeps %d messages pending", stats.Pending)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// texts returns the texts the platform holds in c once the engine
// settled.
func (e *env) texts(t *testing.T, c Conversation) []string {
	t.Helper()
	e.settled(t)
	var out []string
	for _, m := range e.h.Received(t, c) {
		out = append(out, m.Text)
	}
	return out
}

func want(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: %q, want %q", what, got, want)
	}
}

var dmAlice = Conversation{User: Alice}

func directMessage(t *testing.T, e *env) {
	e.deliver(t, Delivery{Seq: 1, From: Alice, Text: "hello bot"})
	want(t, "received", e.texts(t, dmAlice), []string{"echo: hello bot"})
}

func stateful(t *testing.T, e *env) {
	e.deliver(t, Delivery{Seq: 1, From: Alice, Text: "my name is Alice"})
	e.settled(t)
	e.deliver(t, Delivery{Seq: 2, From: Alice, Text: "what is my name?"})
	want(t, "received", e.texts(t, dmAlice), []string{"echo: my name is Alice", "echo: what is my name?"})
	reqs := e.llm.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	var saw []string
	for _, m := range reqs[1].Messages {
		saw = append(saw, string(m.Role)+": "+m.Content)
	}
	if !slices.Contains(saw, "user: my name is Alice") || !slices.Contains(saw, "assistant: echo: my name is Alice") {
		t.Errorf("the second request did not see the first exchange: %q", saw)
	}
	// Another person's conversation is another session.
	e.deliver(t, Delivery{Seq: 3, From: Bob, Text: "hi"})
	e.settled(t)
	if n := len(e.llm.requests()[2].Messages); n != 1 {
		t.Errorf("bob's first request holds %d messages, want his own 1", n)
	}
}

func longReply(t *testing.T, e *env) {
	limit := e.h.Platform().MaxLen()
	e.llm.enqueue(reply{long: limit*5/2 + 10})
	e.deliver(t, Delivery{Seq: 1, From: Alice, Text: "write a lot"})
	got := e.texts(t, dmAlice)
	if len(got) != 3 {
		t.Fatalf("a reply of %d characters came as %d messages, want 3 of at most %d", limit*5/2+10, len(got), limit)
	}
	for i, m := range got {
		if n := len([]rune(m)); n > limit || n == 0 {
			t.Errorf("part %d has %d characters, limit %d", i, n, limit)
		}
	}
	// The reply repeats a sentence, its last word cut.
	whole := strings.Fields(strings.Join(got, " "))
	whole = whole[:len(whole)-1]
	if w := strings.Fields(strings.Repeat(sentence, limit)); !slices.Equal(whole, w[:len(whole)]) {
		t.Error("the parts joined are not the reply")
	}
}

func rateLimit(t *testing.T, e *env) {
	wait := e.h.RateLimit(t)
	begin := time.Now()
	e.deliver(t, Delivery{Seq: 1, From: Alice, Text: "hello"})
	want(t, "received", e.texts(t, dmAlice), []string{"echo: hello"})
	if took := time.Since(begin); took < wait {
		t.Errorf("the reply came %v after the message: the platform asked to wait %v", took, wait)
	}
}

func duplicate(t *testing.T, e *env) {
	d := Delivery{Seq: 1, From: Alice, Text: "once"}
	e.deliver(t, d)
	e.deliver(t, d)
	e.settled(t)
	e.deliver(t, d)
	want(t, "received", e.texts(t, dmAlice), []string{"echo: once"})
	if n := len(e.llm.requests()); n != 1 {
		t.Errorf("%d model requests for one delivery delivered three times, want 1", n)
	}
}

// approvalByButton: the prompt comes with Yes, No and Always buttons;
// pressing Yes runs the tool and the run answers; pressing again, the
// approval answered, is told so and runs nothing; a button of another
// conversation's approval answers nothing either.
func approvalByButton(t *testing.T, e *env) {
	e.llm.enqueue(reply{call: "send"})
	e.deliver(t, Delivery{Seq: 1, From: Alice, Text: "send it"})
	e.settled(t)
	got := e.h.Received(t, dmAlice)
	if len(got) != 1 || len(got[0].Buttons) != 3 {
		t.Fatalf("received %+v, want the approval prompt with 3 buttons", got)
	}
	var labels []string
	for _, b := range got[0].Buttons {
		labels = append(labels, b.Label)
	}
	want(t, "buttons", labels, []string{"Yes", "No", "Always"})
	yes := got[0].Buttons[0].Value

	// Bob presses alice's button (a forged press in his own chat).
	e.deliver(t, Delivery{Seq: 2, From: Bob, Press: yes})
	e.settled(t)
	if n := e.tools.Load(); n != 0 {
		t.Fatalf("another conversation's press ran the tool (%d calls)", n)
	}
	e.deliver(t, Delivery{Seq: 3, From: Alice, Press: yes})
	e.settled(t)
	if n := e.tools.Load(); n != 1 {
		t.Fatalf("the tool ran %d times after Yes, want 1", n)
	}
	e.deliver(t, Delivery{Seq: 4, From: Alice, Press: yes})
	texts := e.texts(t, dmAlice)
	if len(texts) != 3 || texts[1] != "echo: send it" || !strings.Contains(texts[2], "no longer waiting") {
		t.Fatalf("received %q, want the prompt, the answer, and the stale press told", texts)
	}
	if n := e.tools.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
	if bob := e.texts(t, Conversation{User: Bob}); len(bob) != 1 || !strings.Contains(bob[0], "no longer waiting") {
		t.Errorf("bob received %q", bob)
	}
}

// groupContext: a group message not addressed to the bot is not
// answered, and goes as context with the next that is.
func groupContext(t *testing.T, e *env) {
	group := Conversation{Group: true}
	e.deliver(t, Delivery{Seq: 1, From: Bob, Group: true, Text: "the meeting is at noon"})
	e.settled(t)
	if n := len(e.llm.requests()); n != 0 || len(e.h.Received(t, group)) != 0 {
		t.Fatalf("a message not addressed to the bot: %d model requests, received %+v", n, e.h.Received(t, group))
	}
	e.deliver(t, Delivery{Seq: 2, From: Alice, Group: true, Addressed: true, Text: "when is the meeting?"})
	got := e.texts(t, group)
	if len(got) != 1 || !strings.Contains(got[0], "when is the meeting?") {
		t.Fatalf("received %q, want the answer", got)
	}
	in := lastUser(e.llm.requests()[0].Messages)
	if !strings.Contains(in, "the meeting is at noon") || !strings.Contains(in, "when is the meeting?") {
		t.Errorf("the model got %q: want the earlier message as context", in)
	}
}

func commands(t *testing.T, e *env) {
	e.deliver(t, Delivery{Seq: 1, From: Alice, Text: "remember this"})
	e.settled(t)
	e.deliver(t, Delivery{Seq: 2, From: Alice, Text: "/help"})
	e.settled(t)
	e.deliver(t, Delivery{Seq: 3, From: Alice, Text: "/reset"})
	e.settled(t)
	e.deliver(t, Delivery{Seq: 4, From: Alice, Text: "/stop"})
	e.settled(t)
	e.deliver(t, Delivery{Seq: 5, From: Alice, Text: "after the reset"})
	want(t, "received", e.texts(t, dmAlice), []string{"echo: remember this", channel.HelpText, "Started a new conversation.",
		"Nothing to stop.", "echo: after the reset"})
	if reqs := e.llm.requests(); len(reqs) != 2 || len(reqs[1].Messages) != 1 {
		t.Errorf("after /reset the model got %d messages, want only the new one", len(reqs[len(reqs)-1].Messages))
	}
}

// stop: /stop while the model works ends the run; nothing of it is sent.
func stop(t *testing.T, e *env) {
	e.llm.enqueue(reply{hang: true})
	e.deliver(t, Delivery{Seq: 1, From: Alice, Text: "think long"})
	select {
	case <-e.llm.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the model was not asked")
	}
	e.deliver(t, Delivery{Seq: 2, From: Alice, Text: "/stop"})
	want(t, "received", e.texts(t, dmAlice), []string{"Stopped."})
	e.deliver(t, Delivery{Seq: 3, From: Alice, Text: "next"})
	want(t, "received", e.texts(t, dmAlice), []string{"Stopped.", "echo: next"})
}

func accessDenied(t *testing.T, e *env) {
	e.deliver(t, Delivery{Seq: 1, From: Mallory, Text: "let me in"})
	e.deliver(t, Delivery{Seq: 2, From: Mallory, Group: true, Addressed: true, Text: "answer me"})
	want(t, "received", e.texts(t, Conversation{User: Mallory}), []string{channel.DeniedText})
	want(t, "group", e.texts(t, Conversation{Group: true}), []string{channel.DeniedText})
	if n := len(e.llm.requests()); n != 0 {
		t.Errorf("%d model requests from a person not let in", n)
	}
}

func forged(t *testing.T, e *env) {
	d := Delivery{Seq: 1, From: Alice, Text: "forged", Forged: true}
	if code := e.h.Deliver(t, d); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Fatalf("a forged delivery: status %d, want 401 or 403", code)
	}
	e.settled(t)
	if n := len(e.llm.requests()); n != 0 || len(e.h.Received(t, dmAlice)) != 0 {
		t.Fatalf("a forged delivery started something: %d model requests", n)
	}
	// The platform's genuine delivery of the same id is still handled.
	d.Forged = false
	e.deliver(t, d)
	want(t, "received", e.texts(t, dmAlice), []string{"echo: forged"})
}

// restart: the server stops after the commit of the reply, before its
// outbox sent it (e started without delivering); the restarted server
// sends it once, and a redelivery of the message starts nothing.
func restart(t *testing.T, e *env) {
	d := Delivery{Seq: 1, From: Alice, Text: "survive"}
	e.deliver(t, d)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := e.driver.Idle(ctx); err != nil {
		t.Fatal(err)
	}
	if stats, err := e.st.OutboxStats(ctx); err != nil || stats.Pending != 1 {
		t.Fatalf("outbox before the restart: %+v, %v; want the reply pending", stats, err)
	}
	if got := e.h.Received(t, dmAlice); len(got) != 0 {
		t.Fatalf("received %+v before the restart", got)
	}
	e.stop()
	e.boot(t, true)
	e.deliver(t, d)
	want(t, "received", e.texts(t, dmAlice), []string{"echo: survive"})
	if n := len(e.llm.requests()); n != 1 {
		t.Errorf("%d model requests, want 1", n)
	}
	stats, err := e.st.OutboxStats(ctx)
	if err != nil || stats != (store.OutboxStats{Sent: 1}) {
		t.Errorf("outbox: %+v, %v; want 1 sent", stats, err)
	}
}

// serverless: as in a Lambda function, nothing delivers the outbox but
// the flush of each delivery, before the receiver answers the platform
// (its webhook's function), and of each run (the step function). The
// channel's own replies reach the person as a run's reply does,
// including on a platform that takes no message before it has the
// answer to the delivery (a Discord interaction's follow-up).
func serverless(t *testing.T, e *env) {
	e.deliver(t, Delivery{Seq: 1, From: Alice, Text: "hello"})
	want(t, "received", e.texts(t, dmAlice), []string{"echo: hello"})
	e.deliver(t, Delivery{Seq: 2, From: Alice, Text: "/help"})
	e.deliver(t, Delivery{Seq: 3, From: Alice, Text: "/reset"})
	e.deliver(t, Delivery{Seq: 4, From: Alice, Text: "/stop"})
	want(t, "received", e.texts(t, dmAlice), []string{"echo: hello", channel.HelpText, "Started a new conversation.", "Nothing to stop."})
	e.deliver(t, Delivery{Seq: 5, From: Mallory, Text: "let me in"})
	want(t, "mallory received", e.texts(t, Conversation{User: Mallory}), []string{channel.DeniedText})
}

// String names a delivery in failures.
func (d Delivery) String() string {
	return fmt.Sprintf("#%d from %s", d.Seq, d.From)
}
