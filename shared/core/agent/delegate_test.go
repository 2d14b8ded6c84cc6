package agent

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/pii"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/memstore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// team is a loop with three agents: boss, which may delegate to a and b,
// and a and b, each with its own scripted model and an echo tool.
type team struct {
	loop       *Loop
	store      *memstore.Store
	hub        *Hub
	boss, a, b *provider
	echo       *echoTool
	driver     *Driver
}

func newTeam(t *testing.T) *team {
	t.Helper()
	tm := &team{store: memstore.New(), hub: NewHub(), boss: &provider{}, a: &provider{}, b: &provider{},
		echo: &echoTool{policy: tool.Policy{Effect: tool.Read}}}
	bossTools, err := tool.NewRegistry(NewDelegateTool([]string{"a", "b"}), tm.echo)
	if err != nil {
		t.Fatal(err)
	}
	// a may delegate to b in turn, to nest.
	aTools, err := tool.NewRegistry(tm.echo, NewDelegateTool([]string{"b"}))
	if err != nil {
		t.Fatal(err)
	}
	bTools, err := tool.NewRegistry(tm.echo)
	if err != nil {
		t.Fatal(err)
	}
	tm.loop = &Loop{Store: tm.store, Replier: tm.hub, Agents: Registry{
		"boss": {Name: "boss", Provider: tm.boss, Tools: bossTools, MaxToolIterations: 5},
		"a":    {Name: "a", Provider: tm.a, Tools: aTools, MaxToolIterations: 5},
		"b":    {Name: "b", Provider: tm.b, Tools: bTools, MaxToolIterations: 5},
	}}
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	tm.driver = NewDriver(ctx, tm.loop, slog.New(slog.DiscardHandler))
	tm.loop.Lanes = tm.driver
	return tm
}

// calls answers with the tool calls given as name and arguments, ids
// d1, d2, ….
func calls(nameArgs ...string) func(llm.Request) (llm.Response, error) {
	return func(llm.Request) (llm.Response, error) {
		m := chat.Message{Role: chat.Assistant}
		for i := 0; i < len(nameArgs); i += 2 {
			m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: "d" + string(rune('1'+i/2)), Name: nameArgs[i], Arguments: nameArgs[i+1]})
		}
		return llm.Response{Message: m, Usage: chat.Usage{PromptTokens: 5, CompletionTokens: 1, TotalTokens: 6}}, nil
	}
}

// toolResults returns the tool results in the session's history, by the
// call they answer.
func toolResults(t *testing.T, s *memstore.Store, session string) map[string]string {
	t.Helper()
	ms, err := s.Messages(t.Context(), session)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range ms {
		if m.Role == chat.Tool {
			out[m.ToolCallID] = m.Content
		}
	}
	return out
}

// TestDelegateParallel: two delegate calls of one reply start two child
// runs that run at the same time (each child's model waits until the
// other's was called), each once, with the parent's owner and autonomy;
// their answers are the calls' results, the parent answers after them,
// and Children shows the tree with each run's tokens.
func TestDelegateParallel(t *testing.T) {
	tm := newTeam(t)
	both := sync.WaitGroup{}
	both.Add(2)
	meet := func(text string) func(llm.Request) (llm.Response, error) {
		return func(req llm.Request) (llm.Response, error) {
			both.Done()
			done := make(chan struct{})
			go func() { both.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				return llm.Response{}, errors.New("the other child never ran: children ran one after the other")
			}
			return say(text)(req)
		}
	}
	tm.boss.script = append(tm.boss.script,
		calls("delegate", `{"agent":"a","message":"task for a"}`, "delegate", `{"agent":"b","message":"task for b"}`),
		say("both answered"))
	tm.a.script = append(tm.a.script, meet("a's answer"))
	tm.b.script = append(tm.b.script, meet("b's answer"))
	tm.loop.Prompter = modePrompt{}
	ctx := t.Context()
	root, err := tm.driver.Start(ctx, Input{SessionID: "s", Agent: "boss", Owner: "key:1", Messages: []chat.Message{user("go")}, Autonomy: tool.Supervised, Interactive: true})
	if err != nil {
		t.Fatal(err)
	}
	idle(t, tm.driver)
	st := finishedIn(t, tm.store, root.RunID)
	if st.Failed() {
		t.Fatalf("root run failed: %s", st.Error)
	}
	got := toolResults(t, tm.store, "s")
	if diff := cmp.Diff(map[string]string{"d1": "a's answer", "d2": "b's answer"}, got); diff != "" {
		t.Errorf("the delegate calls' results (-want +got):\n%s", diff)
	}
	if tm.a.calls() != 1 || tm.b.calls() != 1 || tm.boss.calls() != 2 {
		t.Fatalf("model calls: boss %d, a %d, b %d; want 2, 1, 1", tm.boss.calls(), tm.a.calls(), tm.b.calls())
	}
	// A child talks to no person: no first-run ritual in its prompt.
	if boss, a := tm.boss.seen[0].Messages[0].Content, tm.a.seen[0].Messages[0].Content; !strings.Contains(boss, "(stateful)") || !strings.Contains(a, "(stateless)") {
		t.Errorf("system prompts: boss %q, child %q; want the child's without the ritual", boss, a)
	}
	for _, call := range []string{"d1", "d2"} {
		child := finishedIn(t, tm.store, childRunID(root.RunID, call))
		sess, err := tm.store.GetSession(ctx, child.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		if sess.Owner != "key:1" || child.Owner != "key:1" || child.Autonomy != tool.Supervised || !child.Interactive {
			t.Errorf("child %s: owner %q/%q, autonomy %s, interactive %v; want the parent's", call, sess.Owner, child.Owner, child.Autonomy, child.Interactive)
		}
		if d := child.Delegation; d == nil || d.Parent != root.RunID || d.Depth != 1 {
			t.Errorf("child %s: delegation %+v; want parent %s at depth 1", call, d, root.RunID)
		}
	}
	kids, err := Children(ctx, tm.store, root.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var agents []string
	for _, k := range kids {
		agents = append(agents, k.Agent)
		if k.Status != store.RunDone || k.Usage.CompletionTokens != 2 {
			t.Errorf("child %s: status %s, usage %+v; want done with its tokens", k.Agent, k.Status, k.Usage)
		}
	}
	if diff := cmp.Diff([]string{"a", "b"}, agents); diff != "" {
		t.Errorf("children (-want +got):\n%s", diff)
	}
}

// TestDelegateNested: a child delegates in turn; the grandchild's answer
// reaches the root through its parent, and Children shows both levels.
func TestDelegateNested(t *testing.T) {
	tm := newTeam(t)
	tm.boss.script = append(tm.boss.script, calls("delegate", `{"agent":"a","message":"ask b"}`), say("root done"))
	tm.a.script = append(tm.a.script, calls("delegate", `{"agent":"b","message":"deep"}`), say("a relayed"))
	tm.b.script = append(tm.b.script, say("from b"))
	root, err := tm.driver.Start(t.Context(), Input{SessionID: "s", Agent: "boss", Owner: "key:1", Messages: []chat.Message{user("go")}, Autonomy: tool.Full})
	if err != nil {
		t.Fatal(err)
	}
	idle(t, tm.driver)
	if st := finishedIn(t, tm.store, root.RunID); st.Failed() {
		t.Fatalf("root failed: %s", st.Error)
	}
	aRun := childRunID(root.RunID, "d1")
	a := finishedIn(t, tm.store, aRun)
	if got := toolResults(t, tm.store, a.SessionID)["d1"]; got != "from b" {
		t.Errorf("a's delegate result = %q, want b's answer", got)
	}
	kids, err := Children(t.Context(), tm.store, root.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(kids) != 1 || len(kids[0].Children) != 1 || kids[0].Children[0].Agent != "b" {
		t.Errorf("tree = %+v; want boss → a → b", kids)
	}
}

// TestDelegateRefused: a delegate call that may not start a child is
// answered with why, and no child runs.
func TestDelegateRefused(t *testing.T) {
	tests := []struct {
		name    string
		args    string
		setup   func(*team, *Input)
		want    string
		offered bool // whether delegate is offered at all
	}{
		{"agent not offered", `{"agent":"boss","message":"x"}`, nil, `"boss" is not an agent you may delegate to`, true},
		{"bad arguments", `{"agent":"a","msg":"x"}`, nil, "the arguments must be", true},
		{"empty message", `{"agent":"a","message":" "}`, nil, "the message is empty", true},
		{"stateless", `{"agent":"a","message":"x"}`, func(_ *team, in *Input) { in.Ephemeral = true }, "needs a stateful conversation", false},
		{"too deep", `{"agent":"a","message":"x"}`, func(tm *team, _ *Input) { tm.loop.Delegation.MaxDepth = -1 }, "nest at most", false},
		{"no driver", `{"agent":"a","message":"x"}`, func(tm *team, _ *Input) { tm.loop.Lanes = nil }, "not available", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tm := newTeam(t)
			var results []string
			tm.boss.script = append(tm.boss.script, calls("delegate", tt.args), func(req llm.Request) (llm.Response, error) {
				for _, m := range req.Messages {
					if m.Role == chat.Tool {
						results = append(results, m.Content)
					}
				}
				return say("ok")(req)
			})
			in := Input{SessionID: "s", Agent: "boss", Owner: "key:1", Messages: []chat.Message{user("go")}, Autonomy: tool.Supervised}
			if tt.setup != nil {
				tt.setup(tm, &in)
			}
			if _, err := tm.driver.Start(t.Context(), in); err != nil {
				t.Fatal(err)
			}
			idle(t, tm.driver)
			if len(results) != 1 || !strings.Contains(results[0], tt.want) {
				t.Errorf("result = %q, want one containing %q", results, tt.want)
			}
			if tm.a.calls() != 0 {
				t.Errorf("the child's model was called %d times", tm.a.calls())
			}
			offered := slices.ContainsFunc(tm.boss.seen[0].Tools, func(d chat.ToolDef) bool { return d.Name == DelegateToolName })
			if offered != tt.offered {
				t.Errorf("delegate offered: %v, want %v", offered, tt.offered)
			}
		})
	}
}

// TestDelegateNotOfferedReadOnly: a read-only run is not offered
// delegate (it writes the owner's records: a child's session).
func TestDelegateNotOfferedReadOnly(t *testing.T) {
	reg, err := tool.NewRegistry(NewDelegateTool([]string{"a"}))
	if err != nil {
		t.Fatal(err)
	}
	if got := offered(reg, tool.ReadOnly); len(got) != 0 {
		t.Errorf("offered at read_only: %v", got)
	}
	if got := offered(reg, tool.Supervised); len(got) != 1 {
		t.Errorf("offered at supervised: %v; want delegate", got)
	}
}

// TestDelegateFanOut: delegate calls of one reply beyond the limit are
// refused; the first ones run.
func TestDelegateFanOut(t *testing.T) {
	tm := newTeam(t)
	tm.loop.Delegation.MaxFanOut = 1
	tm.boss.script = append(tm.boss.script,
		calls("delegate", `{"agent":"a","message":"one"}`, "delegate", `{"agent":"b","message":"two"}`), say("ok"))
	tm.a.script = append(tm.a.script, say("a did it"))
	root, err := tm.driver.Start(t.Context(), Input{SessionID: "s", Agent: "boss", Owner: "key:1", Messages: []chat.Message{user("go")}, Autonomy: tool.Supervised})
	if err != nil {
		t.Fatal(err)
	}
	idle(t, tm.driver)
	finishedIn(t, tm.store, root.RunID)
	got := toolResults(t, tm.store, "s")
	if got["d1"] != "a did it" || !strings.Contains(got["d2"], "at most 1 tasks") {
		t.Errorf("results = %q; want a's answer and a refusal", got)
	}
	if tm.b.calls() != 0 {
		t.Errorf("b ran")
	}
}

// TestDelegateApproval: a child's call that needs approval is asked of
// the person the root run answers, as the root run's (its subscribers
// get it), and answered in the root's session; the answer resumes the
// child, whose answer resumes the root.
func TestDelegateApproval(t *testing.T) {
	tm := newTeam(t)
	tm.echo.policy = tool.Policy{Effect: tool.External}
	tm.boss.script = append(tm.boss.script, calls("delegate", `{"agent":"b","message":"echo it"}`), say("root done"))
	tm.b.script = append(tm.b.script, callTool("echo", `{"text":"approved echo"}`), say("b echoed"))
	ctx := t.Context()
	in := Input{RunID: "root", SessionID: "s", Agent: "boss", Owner: "key:1", Messages: []chat.Message{user("go")}, Autonomy: tool.Supervised, Interactive: true}
	sub := tm.hub.Subscribe(RunKey("root"))
	if _, err := tm.driver.Start(ctx, in); err != nil {
		t.Fatal(err)
	}
	ev := next(t, sub)
	if ev.Approval == nil || ev.Approval.SessionID != childSessionID("root", "d1") || !strings.Contains(ev.Approval.Prompt, "echo") {
		t.Fatalf("first event of the root run = %+v; want the child's approval", ev)
	}
	ap, err := tm.loop.PendingApproval(ctx, "s")
	if err != nil || ap.ID != ev.Approval.ID {
		t.Fatalf("the root session's pending approval = %+v, %v; want the child's", ap, err)
	}
	answer := Input{SessionID: "s", Agent: "boss", Owner: "key:1", Messages: []chat.Message{user("/yes")}, Autonomy: tool.Supervised, Interactive: true, Approval: ap.ID}
	var subscribed string
	st, err := tm.driver.Deliver(ctx, answer, func(id string) { subscribed = id })
	if err != nil || st.RunID != "root" || subscribed != "root" {
		t.Fatalf("Deliver /yes = run %s (subscribed %s), %v; want the root run", st.RunID, subscribed, err)
	}
	ev = next(t, sub)
	if ev.Result == nil || ev.Result.Content != "root done" {
		t.Fatalf("root's next event = %+v; want its answer", ev)
	}
	idle(t, tm.driver)
	if got := toolResults(t, tm.store, "s")["d1"]; got != "b echoed" {
		t.Errorf("root's delegate result = %q", got)
	}
	if tm.echo.n != 1 {
		t.Errorf("the approved tool ran %d times, want 1", tm.echo.n)
	}
}

// TestDelegateStop: stopping a parent that waits for its children stops
// them: each ends cancelled, and nothing of them runs after.
func TestDelegateStop(t *testing.T) {
	tm := newTeam(t)
	hang := &hangingProvider{started: make(chan struct{})}
	tm.loop.Agents.(Registry)["a"].Provider = hang
	tm.boss.script = append(tm.boss.script, calls("delegate", `{"agent":"a","message":"forever"}`))
	ctx := t.Context()
	root, err := tm.driver.Start(ctx, Input{SessionID: "s", Agent: "boss", Owner: "key:1", Messages: []chat.Message{user("go")}, Autonomy: tool.Supervised})
	if err != nil {
		t.Fatal(err)
	}
	<-hang.started
	waitParked(t, tm.store, root.RunID)
	if stopped, err := tm.driver.Stop(ctx, "s"); !stopped || err != nil {
		t.Fatalf("Stop = %v, %v", stopped, err)
	}
	idle(t, tm.driver)
	if st := finishedIn(t, tm.store, root.RunID); st.ErrorCode != CodeCancelled {
		t.Errorf("root: code %q, want cancelled", st.ErrorCode)
	}
	if st := finishedIn(t, tm.store, childRunID(root.RunID, "d1")); st.ErrorCode != CodeCancelled {
		t.Errorf("child: code %q, want cancelled", st.ErrorCode)
	}
	if hang.calls != 1 {
		t.Errorf("the child's model was called %d times after the stop", hang.calls-1)
	}
}

// TestDelegateTimeout: a child past its delegation's time limit fails at
// its next step, and the parent gets that as the call's result.
func TestDelegateTimeout(t *testing.T) {
	tm := newTeam(t)
	var mu sync.Mutex
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	tm.loop.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	tm.loop.Delegation.Timeout = time.Minute
	tm.echo.during = func() { mu.Lock(); now = now.Add(2 * time.Minute); mu.Unlock() }
	tm.boss.script = append(tm.boss.script, calls("delegate", `{"agent":"b","message":"slow"}`), say("root done"))
	tm.b.script = append(tm.b.script, callTool("echo", `{"text":"x"}`), say("too late"))
	root, err := tm.driver.Start(t.Context(), Input{SessionID: "s", Agent: "boss", Owner: "key:1", Messages: []chat.Message{user("go")}, Autonomy: tool.Supervised})
	if err != nil {
		t.Fatal(err)
	}
	idle(t, tm.driver)
	finishedIn(t, tm.store, root.RunID)
	if st := finishedIn(t, tm.store, childRunID(root.RunID, "d1")); st.ErrorCode != CodeDelegationTimeout {
		t.Errorf("child: code %q, want %q", st.ErrorCode, CodeDelegationTimeout)
	}
	if got := toolResults(t, tm.store, "s")["d1"]; !strings.Contains(got, "time limit of 1m0s passed") {
		t.Errorf("root's delegate result = %q", got)
	}
	if tm.b.calls() != 1 {
		t.Errorf("the child's model was called %d times; want once, before the limit", tm.b.calls())
	}
}

// TestDelegateActRepeated: an act repeated after its commit failed (a
// crash between queuing the children and parking) starts no second
// child: each child runs once.
func TestDelegateActRepeated(t *testing.T) {
	tm := newTeam(t)
	failing := &failCommits{Store: tm.store, left: 1, step: StepWait}
	tm.loop.Store = failing
	tm.boss.script = append(tm.boss.script, calls("delegate", `{"agent":"a","message":"once"}`), say("root done"))
	tm.a.onEmpty = say("a's answer")
	root, err := tm.driver.Start(t.Context(), Input{SessionID: "s", Agent: "boss", Owner: "key:1", Messages: []chat.Message{user("go")}, Autonomy: tool.Supervised})
	if err != nil {
		t.Fatal(err)
	}
	idle(t, tm.driver)
	if failing.left != 0 {
		t.Fatal("the park was never refused")
	}
	if st := finishedIn(t, tm.store, root.RunID); st.Failed() {
		t.Fatalf("root failed: %s", st.Error)
	}
	if tm.a.calls() != 1 {
		t.Errorf("the child's model was called %d times, want once", tm.a.calls())
	}
}

// failCommits refuses the first left commits that park a run at step.
type failCommits struct {
	*memstore.Store
	mu   sync.Mutex
	left int
	step string
}

func (s *failCommits) CommitRun(ctx context.Context, c store.Commit) error {
	s.mu.Lock()
	if s.left > 0 && strings.Contains(string(c.Run.State), `"step":"`+s.step+`"`) {
		s.left--
		s.mu.Unlock()
		return errors.New("injected commit failure")
	}
	s.mu.Unlock()
	return s.Store.CommitRun(ctx, c)
}

// waitParked waits until the run id is parked in the store.
func waitParked(t *testing.T, s store.Store, id string) {
	t.Helper()
	for range 1000 {
		if run, err := s.GetRun(t.Context(), id); err == nil {
			if st, err := DecodeState(run); err == nil && st.Parked() {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("run %s never parked", id)
}

// finishedIn returns the state of the finished run id.
func finishedIn(t *testing.T, s store.Store, id string) RunState {
	t.Helper()
	run, err := s.GetRun(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	st, err := DecodeState(run)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Status.Finished() {
		t.Fatalf("run %s: status %s, step %s; want it finished", id, run.Status, st.Step)
	}
	return st
}

// syncLanes runs a child to its end as soon as it is kicked, before the
// parent's act goes on, and records the parents it resumes.
type syncLanes struct {
	t       *testing.T
	loop    *Loop
	resumed []string
}

func (s *syncLanes) Kick(ctx context.Context, sessionID string) error {
	run, err := s.loop.Store.NextRun(ctx, sessionID)
	if err != nil {
		return err
	}
	st, err := DecodeState(run)
	if err != nil {
		return err
	}
	for st.Step != StepDone && !st.Parked() {
		if st, err = s.loop.Step(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

func (s *syncLanes) Resume(_ context.Context, ap store.Approval) error {
	s.resumed = append(s.resumed, ap.RunID)
	return nil
}

func (s *syncLanes) Stop(context.Context, string) (bool, error) { return false, nil }

// TestDelegateChildEndsAtOnce: a child that ends before its parent's act
// has started its sibling does not take the sibling for ended: the
// parent is resumed once, by the last child, with both answers.
func TestDelegateChildEndsAtOnce(t *testing.T) {
	tm := newTeam(t)
	lanes := &syncLanes{t: t, loop: tm.loop}
	tm.loop.Lanes = lanes
	tm.boss.script = append(tm.boss.script,
		calls("delegate", `{"agent":"a","message":"one"}`, "delegate", `{"agent":"b","message":"two"}`), say("both"))
	tm.a.script = append(tm.a.script, say("a answered"))
	tm.b.script = append(tm.b.script, say("b answered"))
	st, err := tm.loop.Enqueue(t.Context(), Input{SessionID: "s", Agent: "boss", Owner: "key:1", Messages: []chat.Message{user("go")}, Autonomy: tool.Supervised})
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if st.Step == StepDone {
			break
		}
		if st, err = tm.loop.Step(t.Context(), st); err != nil {
			t.Fatal(err)
		}
	}
	if st.Step != StepDone || st.Failed() {
		t.Fatalf("root at %s (%s); want it done", st.Step, st.Error)
	}
	if diff := cmp.Diff(map[string]string{"d1": "a answered", "d2": "b answered"}, toolResults(t, tm.store, "s")); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{st.RunID}, lanes.resumed); diff != "" {
		t.Errorf("parents resumed (-want +got):\n%s", diff)
	}
}

// TestDelegatePII: a parent that keeps personal data from its model
// hands the child the values its model passed as tokens, and the child's
// answer enters the parent's history, and its model's next request, as
// tokens again.
func TestDelegatePII(t *testing.T) {
	tm := newTeam(t)
	agents := tm.loop.Agents.(Registry)
	boss := agents["boss"]
	boss.PII = &pii.Scanner{}
	agents["boss"] = boss
	tm.boss.script = append(tm.boss.script,
		calls("delegate", `{"agent":"a","message":"write to <EMAIL_1>"}`),
		say("done"))
	tm.a.script = append(tm.a.script, say("wrote to ana@example.com"))
	root, err := tm.driver.Start(t.Context(), Input{SessionID: "s", Agent: "boss", Owner: "key:1", Messages: []chat.Message{user("mail ana@example.com")}, Autonomy: tool.Supervised})
	if err != nil {
		t.Fatal(err)
	}
	idle(t, tm.driver)
	if st := finishedIn(t, tm.store, root.RunID); st.Failed() {
		t.Fatalf("root run failed: %s", st.Error)
	}
	if got := tm.a.seen[0].Messages[len(tm.a.seen[0].Messages)-1].Content; got != "write to ana@example.com" {
		t.Errorf("the child was asked %q; want the value of the token", got)
	}
	if got := toolResults(t, tm.store, "s")["d1"]; got != "wrote to <EMAIL_1>" {
		t.Errorf("the child's answer in the parent's history = %q; want the token", got)
	}
	for i, req := range tm.boss.seen {
		b, _ := json.Marshal(req.Messages)
		if strings.Contains(string(b), "ana@example.com") {
			t.Errorf("the parent's model request %d holds the address: %s", i, b)
		}
	}
}
