package agent

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

func TestParseDecision(t *testing.T) {
	tests := []struct {
		in   string
		want Decision
		ok   bool
	}{
		{"/yes", Yes, true}, {"YES", Yes, true}, {" y ", Yes, true},
		{"/no", No, true}, {"n", No, true},
		{"/always", Always, true}, {"Always", Always, true},
		{"yes please", "", false}, {"/yesterday", "", false}, {"", "", false},
	}
	for _, tt := range tests {
		got, ok := ParseDecision(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseDecision(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// parkedRun runs a supervised, interactive turn in which the model asks
// for a tool that needs approval, and returns the parked state.
func parkedRun(t *testing.T, f *fixture) RunState {
	t.Helper()
	f.echo.policy = tool.Policy{Effect: tool.External}
	f.llm.script = append(f.llm.script, callTool("echo", `{"text":"hi"}`), say("done"))
	st, err := f.loop.Enqueue(context.Background(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("x")}, Autonomy: tool.Supervised, Interactive: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if st.Parked() {
			return st
		}
		if st, err = f.loop.Step(context.Background(), st); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("run did not park; at step %s", st.Step)
	return st
}

func TestApprovalParksAndResumes(t *testing.T) {
	tests := []struct {
		decision  Decision
		ran       int
		result    string
		allowlist []string
	}{
		{Yes, 1, "hi", nil},
		{Always, 1, "hi", []string{"echo"}},
		{No, 0, "denied: the user did not approve this echo call", nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.decision), func(t *testing.T) {
			f := newFixture(t, 5)
			st := parkedRun(t, f)
			sub := f.hub.Subscribe(RunKey(st.RunID))
			ctx := context.Background()

			// Stepping a parked run changes nothing until it is answered.
			again, err := f.loop.Step(ctx, st)
			if err != nil || !again.Parked() {
				t.Fatalf("parked run moved on without an answer: %+v, %v", again, err)
			}
			ap, err := f.loop.PendingApproval(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(ap.Prompt, "echo") || !strings.Contains(ap.Prompt, "/always") {
				t.Errorf("prompt = %q", ap.Prompt)
			}
			if err := f.loop.Answer(ctx, ap, tt.decision); err != nil {
				t.Fatal(err)
			}
			if err := f.loop.Answer(ctx, ap, Yes); !errors.Is(err, store.ErrConflict) {
				t.Errorf("second answer: %v, want ErrConflict", err)
			}
			st = f.runToEnd(t, st)
			if f.echo.n != tt.ran {
				t.Errorf("tool ran %d times, want %d", f.echo.n, tt.ran)
			}
			if got := f.history(t, "s")[2].Content; !strings.HasPrefix(got, tt.result) {
				t.Errorf("tool result = %q, want prefix %q", got, tt.result)
			}
			sess, _ := f.store.GetSession(ctx, "s")
			if diff := cmp.Diff(tt.allowlist, sess.Allowlist); diff != "" {
				t.Errorf("allowlist (-want +got):\n%s", diff)
			}
			ev, _ := sub.Next(ctx)
			if ev.Result == nil || ev.Result.Content != "done" {
				t.Errorf("resumed run's result = %+v", ev)
			}
		})
	}
}

func TestAllowlistSkipsApproval(t *testing.T) {
	f := newFixture(t, 5)
	ctx := context.Background()
	st := parkedRun(t, f)
	ap, _ := f.loop.PendingApproval(ctx, "s")
	if err := f.loop.Answer(ctx, ap, Always); err != nil {
		t.Fatal(err)
	}
	f.runToEnd(t, st)
	f.llm.script = append(f.llm.script, callTool("echo", `{"text":"again"}`), say("done again"))
	st, err := f.loop.Enqueue(ctx, Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("y")}, Autonomy: tool.Supervised, Interactive: true})
	if err != nil {
		t.Fatal(err)
	}
	if st = f.runToEnd(t, st); st.Failed() {
		t.Errorf("second run failed: %s %s", st.ErrorCode, st.Error)
	}
	if h := f.history(t, "s"); h[len(h)-1].Content != "done again" {
		t.Errorf("last message %+v, want the reply after the tool ran", h[len(h)-1])
	}
	if f.echo.n != 2 {
		t.Errorf("tool ran %d times, want 2 without a second approval", f.echo.n)
	}
	if _, err := f.loop.PendingApproval(ctx, "s"); !errors.Is(err, ErrNoPendingApproval) {
		t.Errorf("pending approval after /always: %v", err)
	}
}

// The driver leaves a parked run alone, and Deliver resumes it with an
// answer or denies it when the user moves on.
func TestDeliverAnswers(t *testing.T) {
	tests := []struct {
		text     string
		ran      int
		newRun   bool
		wantLast string
	}{
		{"/yes", 1, false, "done"},
		{"something else", 0, true, "echo: something else"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			f := newFixture(t, 5)
			f.echo.policy = tool.Policy{Effect: tool.External}
			f.llm.script = append(f.llm.script, callTool("echo", `{"text":"hi"}`), say("done"))
			f.llm.onEmpty = func(req llm.Request) (llm.Response, error) {
				return say("echo: " + req.Messages[len(req.Messages)-1].Content)(req)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			d := NewDriver(ctx, f.loop, slog.New(slog.DiscardHandler))
			in := Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("x")}, Autonomy: tool.Supervised, Interactive: true}
			var sub *Subscription
			first, err := d.Deliver(ctx, in, func(id string) { sub = f.hub.Subscribe(RunKey(id)) })
			if err != nil {
				t.Fatal(err)
			}
			if ev := next(t, sub); ev.Approval == nil {
				t.Fatalf("first event = %+v, want the approval", ev)
			}
			in.Messages = []chat.Message{user(tt.text)}
			got, err := d.Deliver(ctx, in, func(id string) { sub = f.hub.Subscribe(RunKey(id)) })
			if err != nil {
				t.Fatal(err)
			}
			if (got.RunID != first.RunID) != tt.newRun {
				t.Errorf("answered run %s, first run %s; want a new run: %v", got.RunID, first.RunID, tt.newRun)
			}
			ev := next(t, sub)
			for ev.Result == nil {
				ev = next(t, sub)
			}
			if ev.Result.Content != tt.wantLast {
				t.Errorf("result = %q, want %q", ev.Result.Content, tt.wantLast)
			}
			if f.echo.n != tt.ran {
				t.Errorf("tool ran %d times, want %d", f.echo.n, tt.ran)
			}
		})
	}
}

func TestIdentity(t *testing.T) {
	shared := Identity{Links: map[string]string{"tg:42": "ada", "ws:key_a/ada": "ada"}}
	perChannel := Identity{PerChannel: true, Links: shared.Links}
	type principal struct{ channel, authority, user string }
	session := func(id Identity, agent string, p principal) string {
		_, s := id.Session(agent, p.channel, p.authority, p.user)
		return s
	}
	ada, adaWS := principal{"tg", "", "42"}, principal{"ws", "key_a", "ada"}
	sameSessions := []struct {
		name string
		a, b string
		same bool
	}{
		{"linked ids share a session", session(shared, "x", ada), session(shared, "x", adaWS), true},
		{"agents have their own sessions", session(shared, "x", ada), session(shared, "y", ada), false},
		{"unlinked ids on two channels differ", session(shared, "x", principal{"tg", "", "7"}), session(shared, "x", principal{"ws", "", "7"}), false},
		{"per_channel splits linked ids", session(perChannel, "x", ada), session(perChannel, "x", adaWS), false},
		{"the same session key under two keys differs", session(shared, "x", principal{"api", "key_a", "s1"}), session(shared, "x", principal{"api", "key_b", "s1"}), false},
		{"the same user under two keys differs", session(shared, "x", principal{"ws", "key_b", "ada"}), session(shared, "x", adaWS), false},
		{"a link names its key", session(shared, "x", principal{"ws", "key_b", "ada"}), session(shared, "x", ada), false},
		{"stable", session(shared, "x", principal{"api", "key_a", "k"}), SessionID("x", "api:key_a/k"), true},
		{"telegram ids are kept", session(shared, "x", principal{"tg", "", "7"}), SessionID("x", "tg:7"), true},
	}
	for _, tt := range sameSessions {
		if (tt.a == tt.b) != tt.same {
			t.Errorf("%s: %s vs %s", tt.name, tt.a, tt.b)
		}
	}
	owners := []struct {
		p    principal
		want string
	}{
		{principal{"api", "key_a", "s1"}, "key:key_a"},
		{principal{"ws", "key_b", "bob"}, "key:key_b"},
		{principal{"tg", "", "7"}, "tg:7"},
		{ada, "user:ada"},
		{adaWS, "user:ada"},
	}
	for _, tt := range owners {
		if got, _ := shared.Session("x", tt.p.channel, tt.p.authority, tt.p.user); got != tt.want {
			t.Errorf("owner of %v = %q, want %q", tt.p, got, tt.want)
		}
	}
}

// next waits a little for the next event of sub.
func next(t *testing.T, sub *Subscription) Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ev, err := sub.Next(ctx)
	if err != nil {
		t.Fatalf("no event: %v", err)
	}
	return ev
}
