package channel

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// runner records what reaches the agent.
type runner struct {
	mu     sync.Mutex
	inputs []agent.Input
	resets []string
	stops  []string
	// err, when set, is what Deliver answers.
	err error
}

func (r *runner) Deliver(_ context.Context, in agent.Input, _ func(string)) (agent.RunState, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return agent.RunState{}, r.err
	}
	r.inputs = append(r.inputs, in)
	return agent.RunState{RunID: in.RunID, Step: agent.StepDone}, nil
}

func (r *runner) Reset(_ context.Context, session string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resets = append(r.resets, session)
	return nil
}

// stopper is a runner that can stop runs.
type stopper struct{ *runner }

func (r stopper) Stop(_ context.Context, session string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stops = append(r.stops, session)
	return len(r.inputs) > 0, nil
}

// newTestChannel is a channel "test" on sqlite with the users "u1" and
// (in workspace "W") "W:u2" allowed.
func newTestChannel(t *testing.T, run Runner, groups Groups) (*Channel, store.Channel) {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "ch.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	st := db.Channel("test")
	c, err := New(Config{Platform: nowhere{}, Store: st, Runner: run, Agent: "main", Autonomy: tool.Supervised,
		AllowedUsers: []string{"u1", "W:u2"}, Groups: groups})
	if err != nil {
		t.Fatal(err)
	}
	return c, st
}

// replies returns the texts in the outbox, by conversation.
func replies(t *testing.T, st store.Channel) map[string][]string {
	t.Helper()
	msgs, err := st.UnsentOutbox(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, m := range msgs {
		out[m.To] = append(out[m.To], m.Text)
	}
	return out
}

func handle(t *testing.T, c *Channel, ins ...Inbound) {
	t.Helper()
	for _, in := range ins {
		if err := c.Handle(t.Context(), in); err != nil {
			t.Fatalf("Handle(%+v): %v", in, err)
		}
	}
}

// TestOwnersAndSessions: the owner is <name>:<workspace>:<principal>, or
// <name>:<principal> without a workspace (Telegram's tg:<chat id>), and a
// thread is a session of its own of the same owner.
func TestOwnersAndSessions(t *testing.T) {
	r := &runner{}
	c, _ := newTestChannel(t, r, Groups{})
	handle(t, c,
		Inbound{ID: "1", User: "u1", Principal: "u1", To: "c1", Addressed: true, Text: "hi"},
		Inbound{ID: "2", Workspace: "W", User: "u2", Principal: "u2", To: "c2", Addressed: true, Text: "hi"},
		Inbound{ID: "3", Workspace: "W", User: "u2", Principal: "u2", To: "c2/t", Thread: "t", Addressed: true, Text: "hi"},
	)
	_, plain := agent.Identity{}.Session("main", "test", "", "u1")
	_, ws := agent.Identity{}.Session("main", "test", "", "W:u2")
	type got struct{ RunID, Owner, Session, To string }
	want := []got{{"test-1", "test:u1", plain, "c1"}, {"test-2", "test:W:u2", ws, "c2"}, {"test-3", "test:W:u2", "", "c2/t"}}
	var gots []got
	for _, in := range r.inputs {
		gots = append(gots, got{in.RunID, in.Owner, in.SessionID, in.Reply.To})
	}
	if len(gots) == 3 {
		if gots[2].Session == ws || gots[2].Session == "" {
			t.Errorf("the thread's session %q is not its own", gots[2].Session)
		}
		gots[2].Session = ""
	}
	if d := cmp.Diff(want, gots); d != "" {
		t.Errorf("runs (-want +got):\n%s", d)
	}
}

// TestDuplicateDelivery: a delivery handled is dropped when it comes
// again; one that failed is handled when it comes again.
func TestDuplicateDelivery(t *testing.T) {
	r := &runner{err: errors.New("store down")}
	c, _ := newTestChannel(t, r, Groups{})
	in := Inbound{ID: "1", User: "u1", Principal: "u1", To: "c1", Addressed: true, Text: "hi"}
	if err := c.Handle(t.Context(), in); err == nil {
		t.Fatal("a failed delivery was not reported")
	}
	r.err = nil
	handle(t, c, in, in)
	if len(r.inputs) != 1 {
		t.Errorf("%d runs for one delivery delivered twice after a failure, want 1", len(r.inputs))
	}
}

// TestCommands: the commands are answered by the channel; /stop asks a
// runner that can stop, and says when it cannot.
func TestCommands(t *testing.T) {
	r := &runner{}
	c, st := newTestChannel(t, stopper{r}, Groups{})
	dm := func(id, text string) Inbound {
		return Inbound{ID: id, User: "u1", Principal: "u1", To: "c1", Addressed: true, Text: text}
	}
	handle(t, c, dm("1", "/help"), dm("2", "/reset"), dm("3", "/stop"), dm("4", "/status@bot"))
	got := replies(t, st)["c1"]
	if len(got) != 4 || got[0] != HelpText || got[1] != "Started a new conversation." || got[2] != "Nothing to stop." ||
		!strings.Contains(got[3], "Your user id: test:u1") {
		t.Errorf("replies %q", got)
	}
	_, session := agent.Identity{}.Session("main", "test", "", "u1")
	if d := cmp.Diff([]string{session}, r.resets); d != "" {
		t.Errorf("resets (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{session}, r.stops); d != "" {
		t.Errorf("stops (-want +got):\n%s", d)
	}
	if len(r.inputs) != 0 {
		t.Errorf("a command reached the agent: %+v", r.inputs)
	}

	handle(t, c, dm("6", strings.Repeat("x", MaxText+1)))
	if got := replies(t, st)["c1"]; len(got) != 5 || !strings.Contains(got[4], "too long") || len(r.inputs) != 0 {
		t.Errorf("a message over MaxText: replies %q, %d runs", got, len(r.inputs))
	}

	plain, st2 := newTestChannel(t, &runner{}, Groups{})
	handle(t, plain, dm("1", "/stop"))
	if got := replies(t, st2)["c1"]; len(got) != 1 || !strings.Contains(got[0], "not possible") {
		t.Errorf("/stop without a Stopper: %q", got)
	}
}

// TestAnswer: a reply the channel makes by itself goes into the
// adapter's answer when the delivery takes one (Inbound.Answer), and is
// not queued; one the adapter refuses, or too long for one message, is
// queued; a message that starts a run, or a repeated delivery, asks for
// no answer.
func TestAnswer(t *testing.T) {
	c, st := newTestChannel(t, &runner{}, Groups{})
	var answered []string
	take := func(ok bool) func(string) bool {
		return func(text string) bool {
			answered = append(answered, text)
			return ok
		}
	}
	in := func(id, user, text string, answer func(string) bool) Inbound {
		return Inbound{ID: id, User: user, Principal: user, To: "c-" + user, Addressed: true, Text: text, Answer: answer}
	}
	long := "/ask " + strings.Repeat("x", MaxText)
	handle(t, c,
		in("1", "u1", "/help", take(true)),
		in("1", "u1", "/help", take(true)),
		in("2", "x", "hi", take(true)),
		in("3", "u1", "/reset", take(false)),
		in("4", "u1", "hello", take(true)),
		in("5", "u1", long, take(true)),
	)
	wantAnswered := []string{HelpText, DeniedText, "Started a new conversation.", fmt.Sprintf("Your message is too long: %d bytes, of at most %d. Nothing of it was kept.", len(long), MaxText)}
	if d := cmp.Diff(wantAnswered, answered); d != "" {
		t.Errorf("answers (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string][]string{"c-u1": {"Started a new conversation."}}, replies(t, st)); d != "" {
		t.Errorf("outbox (-want +got):\n%s", d)
	}

	// A reply longer than one message goes to the outbox, in parts.
	tiny, st2 := newTestChannel(t, &runner{}, Groups{})
	tiny.cfg.Platform = short{}
	answered = nil
	handle(t, tiny, in("1", "u1", "/help", take(true)))
	if len(answered) != 0 || len(replies(t, st2)["c-u1"]) < 2 {
		t.Errorf("a reply over MaxLen: answered %q, outbox %q", answered, replies(t, st2))
	}
}

// short is a platform whose messages hold 16 characters.
type short struct{ nowhere }

func (short) MaxLen() int { return 16 }

// TestAccessDenied: a user neither allowed nor let in by a code gets the
// generic reply, in a direct message and when addressing the bot in a
// group, and reaches no run; a user allowed in another workspace is not
// allowed in this one.
func TestAccessDenied(t *testing.T) {
	r := &runner{}
	c, st := newTestChannel(t, r, Groups{})
	handle(t, c,
		Inbound{ID: "1", User: "x", Principal: "x", To: "cx", Addressed: true, Text: "hi"},
		Inbound{ID: "2", Workspace: "V", User: "u2", Principal: "u2", To: "cv", Addressed: true, Text: "hi"},
		Inbound{ID: "3", User: "x", Principal: "#g", To: "g", Group: true, Addressed: true, Text: "@bot hi"},
		Inbound{ID: "4", User: "x", Principal: "x", To: "cx", Action: "ap:r-1:yes"},
	)
	want := map[string][]string{"cx": {DeniedText, DeniedText}, "cv": {DeniedText}, "g": {DeniedText}}
	if d := cmp.Diff(want, replies(t, st)); d != "" {
		t.Errorf("replies (-want +got):\n%s", d)
	}
	if len(r.inputs) != 0 {
		t.Errorf("%d runs for users not allowed", len(r.inputs))
	}
}

// TestGroups: in a group the bot answers only what is addressed to it;
// the messages before are given with it, marked, and then forgotten; the
// latest Context are kept, each cut to MaxContextBytes, and none of a
// person not let in. With Respond "all", every message is answered.
func TestGroups(t *testing.T) {
	r := &runner{}
	c, _ := newTestChannel(t, r, Groups{Context: 2})
	g := func(id, name, text string, addressed bool) Inbound {
		return Inbound{ID: id, User: "u1", Name: name, Principal: "#g", To: "g", Group: true, Addressed: addressed, Text: text}
	}
	long := strings.Repeat("é", MaxContextBytes)
	stranger := g("2x", "Eve", "not allowed", false)
	stranger.User = "x"
	handle(t, c, g("1", "Ada", "first", false), g("2", "Bob", "second", false), stranger, g("3", "Cy", long, false),
		g("4", "Ada", "what do you think?", true), g("5", "Ada", "and now?", true))
	if len(r.inputs) != 2 {
		t.Fatalf("%d runs, want 2 (the addressed messages)", len(r.inputs))
	}
	want := "[Earlier messages in this group, not addressed to you:]\nBob: second\nCy: " + long[:MaxContextBytes] +
		"\n[The message to you:]\nwhat do you think?"
	if d := cmp.Diff(want, r.inputs[0].Messages[0].Content); d != "" {
		t.Errorf("input with context (-want +got):\n%s", d)
	}
	if got := r.inputs[1].Messages[0].Content; got != "and now?" {
		t.Errorf("the next input kept the context: %q", got)
	}
	if r.inputs[0].Owner != "test:#g" {
		t.Errorf("group owner %q, want test:#g", r.inputs[0].Owner)
	}

	all := &runner{}
	c, _ = newTestChannel(t, all, Groups{Respond: "all"})
	handle(t, c, g("1", "Ada", "hello all", false))
	if len(all.inputs) != 1 {
		t.Errorf("respond all: %d runs, want 1", len(all.inputs))
	}
}

// TestGroupThreads: a message posted in the main conversation that
// starts a thread (a Slack channel message) has the main conversation's
// earlier messages as context, and is context of the main conversation
// and of its own thread; a message in a thread has its thread's.
func TestGroupThreads(t *testing.T) {
	r := &runner{}
	c, _ := newTestChannel(t, r, Groups{})
	top := func(id, text string, addressed bool) Inbound {
		return Inbound{ID: id, User: "u1", Name: "Ada", Principal: "#c", To: "c/" + id, Thread: id, StartsThread: true,
			Group: true, Addressed: addressed, Text: text}
	}
	in := func(id, thread, text string, addressed bool) Inbound {
		return Inbound{ID: id, User: "u1", Name: "Bob", Principal: "#c", To: "c/" + thread, Thread: thread, Group: true, Addressed: addressed, Text: text}
	}
	handle(t, c, top("1", "the build is red", false), top("2", "since noon", false),
		in("3", "2", "I looked at it", false),
		top("4", "what broke?", true),
		in("5", "2", "any idea?", true))
	if len(r.inputs) != 2 {
		t.Fatalf("%d runs, want 2 (the addressed messages)", len(r.inputs))
	}
	mainWant := "[Earlier messages in this group, not addressed to you:]\nAda: the build is red\nAda: since noon\n[The message to you:]\nwhat broke?"
	if d := cmp.Diff(mainWant, r.inputs[0].Messages[0].Content); d != "" {
		t.Errorf("the channel's mention (-want +got):\n%s", d)
	}
	threadWant := "[Earlier messages in this group, not addressed to you:]\nAda: since noon\nBob: I looked at it\n[The message to you:]\nany idea?"
	if d := cmp.Diff(threadWant, r.inputs[1].Messages[0].Content); d != "" {
		t.Errorf("the thread's mention (-want +got):\n%s", d)
	}
	_, mainSession := agent.Identity{}.Session("main", "test", "", "#c/4")
	if r.inputs[0].SessionID != mainSession {
		t.Errorf("the channel's mention is in session %q, want its thread's %q", r.inputs[0].SessionID, mainSession)
	}
}

// TestApprovalButtons: an approval's prompt carries Yes, No and Always;
// a pressed one answers that approval, as /yes does, and a stale one is
// told so.
func TestApprovalButtons(t *testing.T) {
	r := &runner{}
	c, st := newTestChannel(t, r, Groups{})
	run := agent.RunState{RunID: "test-1", Reply: agent.Reply{Channel: "test", To: "c1"}}
	msgs := c.ApprovalOutbox(run, store.Approval{ID: "test-1-0", Prompt: "May I?"})
	want := []Button{{Label: "Yes", Value: "ap:test-1-0:yes"}, {Label: "No", Value: "ap:test-1-0:no"}, {Label: "Always", Value: "ap:test-1-0:always"}}
	if len(msgs) != 1 || msgs[0].Channel != "test" || msgs[0].To != "c1" {
		t.Fatalf("approval outbox %+v", msgs)
	}
	if d := cmp.Diff(want, msgs[0].Buttons); d != "" {
		t.Errorf("buttons (-want +got):\n%s", d)
	}
	if got := c.ApprovalOutbox(agent.RunState{Reply: agent.Reply{Channel: "other", To: "c1"}}, store.Approval{ID: "x"}); got != nil {
		t.Errorf("another channel's approval: %+v", got)
	}

	handle(t, c, Inbound{ID: "p1", User: "u1", Principal: "u1", To: "c1", Action: "ap:test-1-0:always"},
		Inbound{ID: "p2", User: "u1", Principal: "u1", To: "c1", Action: "nonsense"})
	if len(r.inputs) != 1 || r.inputs[0].Approval != "test-1-0" || r.inputs[0].Messages[0].Content != "/always" {
		t.Fatalf("the button's input: %+v", r.inputs)
	}
	r.err = agent.ErrStaleApproval
	handle(t, c, Inbound{ID: "p3", User: "u1", Principal: "u1", To: "c1", Action: "ap:test-1-0:yes"})
	got := replies(t, st)["c1"]
	if len(got) != 2 || !strings.Contains(got[0], "does nothing") || !strings.Contains(got[1], "no longer waiting") {
		t.Errorf("replies %q", got)
	}
}

// TestReplySplit: a reply is split at the platform's MaxLen into at most
// MaxParts messages, the last saying it was cut.
func TestReplySplit(t *testing.T) {
	c, _ := newTestChannel(t, &runner{}, Groups{})
	run := agent.RunState{RunID: "r", Reply: agent.Reply{Channel: "test", To: "c1"}}
	words := strings.Repeat("word ", 4096*(MaxParts+2)/5)
	msgs := c.Outbox(run, agent.Result{Content: words})
	if len(msgs) != MaxParts || !strings.HasSuffix(msgs[MaxParts-1].Text, "[the reply was cut: too long for one message]") {
		t.Fatalf("%d parts", len(msgs))
	}
	for _, m := range msgs {
		if n := utf16Len(m.Text); n > 4096 {
			t.Fatalf("part %s of %d units", m.ID, n)
		}
	}
	if msgs[0].ID != "run-r#0" || msgs[1].ID != "run-r#1" {
		t.Errorf("ids %s, %s", msgs[0].ID, msgs[1].ID)
	}
}

func TestParseAction(t *testing.T) {
	for _, tt := range []struct {
		in, id string
		d      agent.Decision
		ok     bool
	}{
		{"ap:tg-1-2-0:yes", "tg-1-2-0", agent.Yes, true},
		{"ap:a:b:no", "a:b", agent.No, true},
		{"ap:x:always", "x", agent.Always, true},
		{"ap:x:maybe", "", "", false},
		{"ap::yes", "", "", false},
		{"yes", "", "", false},
	} {
		id, d, ok := parseAction(tt.in)
		if id != tt.id || d != tt.d || ok != tt.ok {
			t.Errorf("parseAction(%q) = %q, %q, %v", tt.in, id, d, ok)
		}
	}
}
