package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/memstore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// provider answers from a script, one response per call, and records the
// requests it saw.
type provider struct {
	mu      sync.Mutex
	script  []func(llm.Request) (llm.Response, error)
	seen    []llm.Request
	onEmpty func(llm.Request) (llm.Response, error)
}

func (p *provider) Name() string { return "fake" }

func (p *provider) Generate(ctx context.Context, req llm.Request, onDelta llm.OnDelta) (llm.Response, error) {
	p.mu.Lock()
	p.seen = append(p.seen, req)
	var f func(llm.Request) (llm.Response, error)
	if len(p.script) > 0 {
		f, p.script = p.script[0], p.script[1:]
	} else {
		f = p.onEmpty
	}
	p.mu.Unlock()
	if f == nil {
		return llm.Response{}, errors.New("script exhausted")
	}
	resp, err := f(req)
	if err == nil && onDelta != nil && resp.Message.Content != "" {
		onDelta(resp.Message.Content)
	}
	return resp, err
}

func (p *provider) calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.seen)
}

func say(text string) func(llm.Request) (llm.Response, error) {
	return func(llm.Request) (llm.Response, error) {
		return llm.Response{Message: chat.Message{Role: chat.Assistant, Content: text}, Usage: chat.Usage{PromptTokens: 10, CompletionTokens: 2}}, nil
	}
}

func callTool(name, args string) func(llm.Request) (llm.Response, error) {
	return func(llm.Request) (llm.Response, error) {
		return llm.Response{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: name, Arguments: args}}}}, nil
	}
}

func fail(err error) func(llm.Request) (llm.Response, error) {
	return func(llm.Request) (llm.Response, error) { return llm.Response{}, err }
}

// echoTool returns its "text" argument, counts its calls and keeps the
// arguments and environment it got. The fixture's is a read, which runs
// at every autonomy.
type echoTool struct {
	policy tool.Policy
	mu     sync.Mutex
	n      int
	args   []string
	envs   []tool.Env
	// during, when set, is called as the tool runs.
	during func()
}

func (e *echoTool) Definition() chat.ToolDef {
	return chat.ToolDef{Name: "echo", Description: "echo text", Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (e *echoTool) Policy() tool.Policy { return e.policy }
func (e *echoTool) Call(_ context.Context, env tool.Env, args json.RawMessage) (string, error) {
	e.mu.Lock()
	e.n++
	e.args = append(e.args, string(args))
	e.envs = append(e.envs, env)
	during := e.during
	e.mu.Unlock()
	if during != nil {
		during()
	}
	var a struct{ Text string }
	if err := json.Unmarshal(args, &a); err != nil {
		return "", err
	}
	return a.Text, nil
}

type fixture struct {
	loop  *Loop
	store *memstore.Store
	llm   *provider
	echo  *echoTool
	hub   *Hub
}

func newFixture(t *testing.T, maxIter int) *fixture {
	t.Helper()
	f := &fixture{store: memstore.New(), llm: &provider{}, echo: &echoTool{policy: tool.Policy{Effect: tool.Read}}, hub: NewHub()}
	reg, err := tool.NewRegistry(f.echo)
	if err != nil {
		t.Fatal(err)
	}
	f.loop = &Loop{
		Store:   f.store,
		Agents:  Registry{"a": {Name: "a", Provider: f.llm, Tools: reg, MaxToolIterations: maxIter}},
		Replier: f.hub,
	}
	return f
}

// runToEnd steps a run until it is done, as the driver does.
func (f *fixture) runToEnd(t *testing.T, st RunState) RunState {
	t.Helper()
	for i := 0; st.Step != StepDone; i++ {
		if i > 50 {
			t.Fatalf("run did not end; at step %s", st.Step)
		}
		var err error
		if st, err = f.loop.Step(context.Background(), st); err != nil {
			t.Fatalf("step: %v", err)
		}
	}
	return st
}

func (f *fixture) history(t *testing.T, session string) []chat.Message {
	t.Helper()
	ms, err := f.store.Messages(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	var out []chat.Message
	for _, m := range ms {
		out = append(out, m.Message)
	}
	return out
}

func user(text string) chat.Message { return chat.Message{Role: chat.User, Content: text} }

func TestToolTurn(t *testing.T) {
	f := newFixture(t, 5)
	f.llm.script = append(f.llm.script, callTool("echo", `{"text":"pong"}`), say("the tool said pong"))
	st, err := f.loop.Enqueue(context.Background(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("ping")}, Autonomy: tool.Supervised})
	if err != nil {
		t.Fatal(err)
	}
	sub := f.hub.Subscribe(RunKey(st.RunID))
	st = f.runToEnd(t, st)

	want := []chat.Message{
		user("ping"),
		{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "echo", Arguments: `{"text":"pong"}`}}},
		{Role: chat.Tool, Content: "pong", ToolCallID: "c1", Name: "echo"},
		{Role: chat.Assistant, Content: "the tool said pong"},
	}
	if diff := cmp.Diff(want, f.history(t, "s")); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	// The second model call saw the tool result.
	if diff := cmp.Diff(want[:3], f.llm.seen[1].Messages); diff != "" {
		t.Errorf("second request (-want +got):\n%s", diff)
	}
	ev, _ := sub.Next(context.Background()) // the streamed-off run reports only its result
	if ev.Result == nil || ev.Result.Content != "the tool said pong" {
		t.Errorf("result = %+v", ev)
	}
	if st.Usage.PromptTokens != 10 {
		t.Errorf("usage = %+v", st.Usage)
	}
}

// A step repeated after a crash finds its work in the store: no second
// model call, no second tool call, no duplicated message.
func TestStepsAreIdempotent(t *testing.T) {
	f := newFixture(t, 5)
	f.llm.script = append(f.llm.script, callTool("echo", `{"text":"pong"}`), say("done"))
	st, err := f.loop.Enqueue(context.Background(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("ping")}, Autonomy: tool.Full})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, _ = f.loop.Step(ctx, st) // begin
	thinkState := st
	st, _ = f.loop.Step(ctx, st) // think: model asks for the tool
	again, err := f.loop.Step(ctx, thinkState)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(st, again); diff != "" {
		t.Errorf("retried think differs (-first +retry):\n%s", diff)
	}
	actState := st
	st, _ = f.loop.Step(ctx, st) // act
	if _, err := f.loop.Step(ctx, actState); err != nil {
		t.Fatal(err)
	}
	f.runToEnd(t, st)
	if f.llm.calls() != 2 || f.echo.n != 1 {
		t.Errorf("model calls = %d, tool calls = %d; want 2 and 1", f.llm.calls(), f.echo.n)
	}
	if n := len(f.history(t, "s")); n != 4 {
		t.Errorf("history has %d messages, want 4", n)
	}
}

func TestToolIterationLimit(t *testing.T) {
	f := newFixture(t, 2)
	f.llm.onEmpty = callTool("echo", `{"text":"again"}`)
	f.llm.script = append(f.llm.script, callTool("echo", `{"text":"1"}`), callTool("echo", `{"text":"2"}`), say("giving up"))
	st, _ := f.loop.Enqueue(context.Background(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("loop")}, Autonomy: tool.Full})
	f.runToEnd(t, st)
	if f.echo.n != 2 {
		t.Errorf("tool ran %d times, want the limit 2", f.echo.n)
	}
	last := f.llm.seen[len(f.llm.seen)-1]
	if len(last.Tools) != 0 {
		t.Errorf("the call after the limit offered %d tools, want none", len(last.Tools))
	}
}

func TestPolicy(t *testing.T) {
	tests := []struct {
		name     string
		policy   tool.Policy
		autonomy tool.Autonomy
		want     string
	}{
		{"allowed", tool.Policy{Effect: tool.Read}, tool.ReadOnly, "hi"},
		{"approval needed", tool.Policy{Effect: tool.External}, tool.Supervised, "refused: echo needs a person's approval"},
		{"full allows all", tool.Policy{Effect: tool.External}, tool.Full, "hi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 5)
			f.echo.policy = tt.policy
			f.llm.script = append(f.llm.script, callTool("echo", `{"text":"hi"}`), say("ok"))
			st, _ := f.loop.Enqueue(context.Background(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("x")}, Autonomy: tt.autonomy})
			f.runToEnd(t, st)
			got := f.history(t, "s")[2].Content
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("tool result = %q, want prefix %q", got, tt.want)
			}
		})
	}
}

// A tool needing more autonomy than the run's is not offered to the model,
// and a call of it anyway is not taken.
func TestNotOfferedWhenDenied(t *testing.T) {
	f := newFixture(t, 5)
	f.echo.policy = tool.Policy{Effect: tool.WriteOwn}
	f.llm.script = append(f.llm.script, callTool("echo", `{"text":"hi"}`), say("ok"))
	st, _ := f.loop.Enqueue(context.Background(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("x")}, Autonomy: tool.ReadOnly})
	f.runToEnd(t, st)
	if n := len(f.llm.seen[0].Tools); n != 0 {
		t.Errorf("a read-only run was offered %d tools, want none", n)
	}
	if h := f.history(t, "s"); len(h) != 2 || len(h[1].ToolCalls) != 0 {
		t.Errorf("history %+v, want the question and an answer without calls", h)
	}
}

// unavailableTool is the echo tool reporting that it cannot run.
type unavailableTool struct {
	*echoTool
	why error
}

func (u unavailableTool) Unavailable() error { return u.why }

// A tool that reports itself unavailable (a sandbox whose probe failed)
// is not offered; one that reports nil is.
func TestNotOfferedWhenUnavailable(t *testing.T) {
	tests := []struct {
		name string
		why  error
		want int
	}{
		{"available", nil, 1},
		{"unavailable", errors.New("bubblewrap cannot make a sandbox"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 5)
			reg, err := tool.NewRegistry(unavailableTool{f.echo, tt.why})
			if err != nil {
				t.Fatal(err)
			}
			a := f.loop.Agents.(Registry)["a"]
			a.Tools = reg
			f.llm.script = append(f.llm.script, say("ok"))
			st, _ := f.loop.Enqueue(context.Background(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("x")}, Autonomy: tool.Full})
			f.runToEnd(t, st)
			if n := len(f.llm.seen[0].Tools); n != tt.want {
				t.Errorf("offered %d tools, want %d", n, tt.want)
			}
		})
	}
}

func TestHostileToolCalls(t *testing.T) {
	tests := []struct{ name, tool, args, want string }{
		{"unknown tool", "rm_rf", `{}`, `error: there is no tool named "rm_rf"`},
		{"invalid JSON", "echo", `{"text": "unterminated`, "error: the arguments are not valid JSON"},
		{"wrong type", "echo", `{"text": 5}`, "error: json: cannot unmarshal number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 5)
			f.llm.script = append(f.llm.script, callTool(tt.tool, tt.args), say("ok"))
			st, _ := f.loop.Enqueue(context.Background(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("x")}, Autonomy: tool.Full})
			st = f.runToEnd(t, st)
			if got := f.history(t, "s")[2].Content; !strings.HasPrefix(got, tt.want) {
				t.Errorf("tool result = %q, want prefix %q", got, tt.want)
			}
			if st.Failed() {
				t.Errorf("run failed: %s", st.Error)
			}
		})
	}
}

func TestProviderFailureRollsBackInput(t *testing.T) {
	f := newFixture(t, 5)
	f.llm.script = append(f.llm.script, say("first answer"), fail(&llm.Error{Provider: "fake", Status: 500, Retryable: true, Err: errors.New("boom")}))
	for _, text := range []string{"one", "two"} {
		st, err := f.loop.Enqueue(context.Background(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user(text)}})
		if err != nil {
			t.Fatal(err)
		}
		st = f.runToEnd(t, st)
		if text == "two" && st.ErrorCode != CodeUpstream {
			t.Errorf("error code = %q, want %q", st.ErrorCode, CodeUpstream)
		}
	}
	want := []chat.Message{user("one"), {Role: chat.Assistant, Content: "first answer"}}
	if diff := cmp.Diff(want, f.history(t, "s")); diff != "" {
		t.Errorf("history after a failed run (-want +got):\n%s", diff)
	}
}

func TestNoProvider(t *testing.T) {
	f := newFixture(t, 5)
	f.loop.Agents.(Registry)["a"].Provider = llm.NewChain()
	st, _ := f.loop.Enqueue(context.Background(), Input{Agent: "a", Ephemeral: true, Messages: []chat.Message{user("x")}})
	st = f.runToEnd(t, st)
	if st.ErrorCode != CodeNoProvider || !strings.Contains(st.Error, "OPENAI_API_KEY") {
		t.Errorf("got %q %q", st.ErrorCode, st.Error)
	}
	if _, err := f.store.GetSession(context.Background(), st.SessionID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ephemeral session kept after its run: %v", err)
	}
}

func TestSecretsScrubbed(t *testing.T) {
	f := newFixture(t, 5)
	secret := "sk-proj-" + strings.Repeat("Ab3", 16)
	f.llm.script = append(f.llm.script, callTool("echo", fmt.Sprintf(`{"text":"key is %s"}`, secret)), say("it was "+secret))
	st, _ := f.loop.Enqueue(context.Background(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("x")}, Autonomy: tool.Full})
	f.runToEnd(t, st)
	for _, m := range f.history(t, "s")[1:] {
		b, _ := json.Marshal(m)
		if strings.Contains(string(b), secret) {
			t.Errorf("secret stored in history: %s", b)
		}
	}
}

// Runs of one session go one at a time in order; the driver resumes the
// next queued run when one finishes.
func TestDriverLaneOrder(t *testing.T) {
	f := newFixture(t, 5)
	var mu sync.Mutex
	var order []string
	f.llm.onEmpty = func(req llm.Request) (llm.Response, error) {
		last := req.Messages[len(req.Messages)-1].Content
		mu.Lock()
		order = append(order, last)
		mu.Unlock()
		time.Sleep(time.Millisecond)
		return llm.Response{Message: chat.Message{Role: chat.Assistant, Content: "re " + last}}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := NewDriver(ctx, f.loop, slog.New(slog.DiscardHandler))
	var subs []*Subscription
	var want []string
	for i := range 10 {
		in := Input{RunID: NewID(), SessionID: "s", Agent: "a", Messages: []chat.Message{user(fmt.Sprint(i))}}
		subs = append(subs, f.hub.Subscribe(RunKey(in.RunID)))
		if _, err := d.Start(ctx, in); err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprint(i))
	}
	for _, s := range subs {
		wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
		if _, err := s.Next(wctx); err != nil {
			t.Fatal(err)
		}
		wcancel()
	}
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("order of runs (-want +got):\n%s", diff)
	}
	// Every run saw the whole conversation before it.
	if n := len(f.llm.seen[9].Messages); n != 19 {
		t.Errorf("last run saw %d messages, want 19", n)
	}
}

// Idle returns once the lanes stopped, the runs' last events emitted
// (the api function flushes them then), and gives up when its context is
// done before.
func TestDriverIdle(t *testing.T) {
	f := newFixture(t, 5)
	ev := &events{}
	f.loop.Events = ev
	gate := make(chan struct{})
	f.llm.onEmpty = func(llm.Request) (llm.Response, error) {
		<-gate
		return llm.Response{Message: chat.Message{Role: chat.Assistant, Content: "hi"}}, nil
	}
	d := NewDriver(t.Context(), f.loop, slog.New(slog.DiscardHandler))
	if err := d.Idle(t.Context()); err != nil {
		t.Fatalf("Idle without lanes: %v", err)
	}
	if _, err := d.Start(t.Context(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("x")}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := d.Idle(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Idle while the model answers = %v, want context.Canceled", err)
	}
	close(gate)
	if err := d.Idle(t.Context()); err != nil {
		t.Fatalf("Idle: %v", err)
	}
	if n := len(ev.got); n == 0 || ev.got[n-1].Type != obs.TurnComplete {
		t.Errorf("events when Idle returned end with %v, want %s", ev.got, obs.TurnComplete)
	}
}

// A run that fails between a tool call and its result leaves a history the
// next run can send: every call gets a result.
func TestFailedRunClosesToolCalls(t *testing.T) {
	f := newFixture(t, 5)
	f.llm.script = append(f.llm.script, callTool("echo", `{"text":"hi"}`))
	ctx := context.Background()
	st, _ := f.loop.Enqueue(ctx, Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("x")}, Autonomy: tool.Full})
	for st.Step != StepAct {
		st, _ = f.loop.Step(ctx, st)
	}
	st = f.loop.Fail(st, errors.New("the tool crashed the process"))
	st = f.runToEnd(t, st)
	h := f.history(t, "s")
	if len(h) != 3 || h[2].Role != chat.Tool || h[2].ToolCallID != "c1" || f.echo.n != 0 {
		t.Errorf("history after a failed act = %+v (tool ran %d times)", h, f.echo.n)
	}
}

// countingStore counts the commits of runs and the reads of history.
type countingStore struct {
	store.Store
	commits, reads int
}

func (s *countingStore) CommitRun(ctx context.Context, c store.Commit) error {
	s.commits++
	return s.Store.CommitRun(ctx, c)
}

func (s *countingStore) Messages(ctx context.Context, sessionID string) ([]store.Message, error) {
	s.reads++
	return s.Store.Messages(ctx, sessionID)
}

func (s *countingStore) RunMessages(ctx context.Context, sessionID string, seq int64) ([]store.Message, error) {
	s.reads++
	return s.Store.RunMessages(ctx, sessionID, seq)
}

// A turn costs one durable commit per step at most: an answer without
// tool calls is thought and finished in one commit, after one read of
// the history; a tool call adds the commits of think, approve and act.
func TestCommitsPerTurn(t *testing.T) {
	for _, tt := range []struct {
		name           string
		script         []func(llm.Request) (llm.Response, error)
		commits, reads int
	}{
		{name: "an answer", script: []func(llm.Request) (llm.Response, error){say("hello")}, commits: 1, reads: 1},
		{name: "one tool call", script: []func(llm.Request) (llm.Response, error){callTool("echo", `{"text":"x"}`), say("done")}, commits: 4, reads: 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 5)
			s := &countingStore{Store: f.store}
			f.loop.Store = s
			f.llm.script = tt.script
			st, err := f.loop.Enqueue(t.Context(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("hi")}, Autonomy: tool.Full})
			if err != nil {
				t.Fatal(err)
			}
			if st = f.runToEnd(t, st); st.Failed() {
				t.Fatalf("run failed: %s", st.Error)
			}
			if s.commits != tt.commits || s.reads != tt.reads {
				t.Errorf("%d commits and %d reads of history, want %d and %d", s.commits, s.reads, tt.commits, tt.reads)
			}
		})
	}
}
