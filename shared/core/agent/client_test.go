package agent

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

var weather = chat.ToolDef{Name: "get_weather", Description: "weather of a city", Parameters: json.RawMessage(`{"type":"object"}`)}

// The secret in the arguments is scrubbed from history, never from what
// the client gets to run.
const weatherArgs = `{"city":"Oslo","key":"sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcd"}`

// callBoth is a model reply calling the agent's echo and the client's
// get_weather in one message.
func callBoth(req llm.Request) (llm.Response, error) {
	return llm.Response{Message: chat.Message{Role: chat.Assistant, Content: "Checking.", ToolCalls: []chat.ToolCall{
		{ID: "c1", Name: "echo", Arguments: `{"text":"pong"}`},
		{ID: "c2", Name: "get_weather", Arguments: weatherArgs},
	}}, Usage: chat.Usage{PromptTokens: 20, CompletionTokens: 5, TotalTokens: 25}}, nil
}

func clientInput(session string, text string) Input {
	return Input{SessionID: session, Agent: "a", Owner: "key:k1", Messages: []chat.Message{user(text)}, Autonomy: tool.Supervised, Interactive: true,
		Options: Options{Tools: []chat.ToolDef{weather}, Params: llm.Params{Temperature: new(0.3)}}}
}

// A stateless run runs the agent's calls and ends with the client's.
func TestClientToolsStateless(t *testing.T) {
	f := newFixture(t, 5)
	f.llm.script = append(f.llm.script, callBoth)
	in := clientInput("", "weather?")
	in.Ephemeral = true
	sub := f.hub.Subscribe("all")
	in.Reply.To = "all"
	st, err := f.loop.Enqueue(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	st = f.runToEnd(t, st)
	if f.echo.n != 1 {
		t.Errorf("echo ran %d times, want 1", f.echo.n)
	}
	ev := next(t, sub)
	want := Result{Content: "Checking.", ToolCalls: []chat.ToolCall{{ID: "c2", Name: "get_weather", Arguments: weatherArgs}},
		Usage: chat.Usage{PromptTokens: 20, CompletionTokens: 5, TotalTokens: 25}, FinishReason: "tool_calls"}
	if diff := cmp.Diff(&want, ev.Result); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	req := f.llm.seen[0]
	if names := toolNames(req.Tools); !cmp.Equal(names, []string{"echo", "get_weather"}) {
		t.Errorf("tools offered = %v, want the agent's and the client's", names)
	}
	if req.Temperature == nil || *req.Temperature != 0.3 {
		t.Errorf("temperature = %v, want 0.3", req.Temperature)
	}
	if _, err := f.store.GetSession(t.Context(), st.SessionID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ephemeral session left behind: %v", err)
	}
}

func toolNames(defs []chat.ToolDef) []string {
	var out []string
	for _, d := range defs {
		out = append(out, d.Name)
	}
	return out
}

// clientDriver starts a driver over f's loop and delivers in, returning
// the first result the run tells.
func clientDriver(t *testing.T, f *fixture) (*Driver, func(in Input) (RunState, Result, error)) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d := NewDriver(ctx, f.loop, slog.New(slog.DiscardHandler))
	deliver := func(in Input) (RunState, Result, error) {
		var sub *Subscription
		st, err := d.Deliver(ctx, in, func(id string) { sub = f.hub.Subscribe(RunKey(id)) })
		if err != nil {
			return st, Result{}, err
		}
		for {
			if ev := next(t, sub); ev.Result != nil {
				return st, *ev.Result, nil
			}
		}
	}
	return d, deliver
}

func TestClientToolsStateful(t *testing.T) {
	f := newFixture(t, 5)
	f.llm.script = append(f.llm.script, callBoth, say("Rain in Oslo."))
	d, deliver := clientDriver(t, f)
	first, res, err := deliver(clientInput("s", "weather?"))
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != "tool_calls" || len(res.ToolCalls) != 1 || res.ToolCalls[0].Arguments != weatherArgs {
		t.Fatalf("first result = %+v, want the client's call with its raw arguments", res)
	}
	ap, err := f.loop.PendingApproval(t.Context(), "s")
	if err != nil || ap.Kind != store.ApprovalClientTools || !cmp.Equal(ap.Calls, []string{"c2"}) {
		t.Fatalf("pending = %+v, %v; want a client wait for c2", ap, err)
	}

	results := Input{SessionID: "s", Agent: "a", Owner: "key:k1", Autonomy: tool.Supervised, Interactive: true,
		Messages: []chat.Message{{Role: chat.Tool, ToolCallID: "c2", Content: "rain"}}}
	again, res, err := deliver(results)
	if err != nil {
		t.Fatal(err)
	}
	if again.RunID != first.RunID {
		t.Errorf("results went to run %s, want the waiting run %s", again.RunID, first.RunID)
	}
	want := Result{Content: "Rain in Oslo.", Usage: chat.Usage{PromptTokens: 10, CompletionTokens: 2}, FinishReason: "stop"}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("final result (-want +got):\n%s (usage counts only what came after the calls)", diff)
	}
	d.Wait() // the lane is done
	hist := f.history(t, "s")
	wantHist := []chat.Message{
		user("weather?"),
		{Role: chat.Assistant, Content: "Checking.", ToolCalls: []chat.ToolCall{{ID: "c1", Name: "echo", Arguments: `{"text":"pong"}`},
			{ID: "c2", Name: "get_weather", Arguments: `{"city":"Oslo","key":"[REDACTED]"}`}}},
		{Role: chat.Tool, Content: "pong", ToolCallID: "c1", Name: "echo"},
		{Role: chat.Tool, Content: "rain", ToolCallID: "c2", Name: "get_weather"},
		{Role: chat.Assistant, Content: "Rain in Oslo."},
	}
	if diff := cmp.Diff(wantHist, hist); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	if calls, _ := f.store.PendingCalls(t.Context(), first.RunID); len(calls) != 0 {
		t.Errorf("pending calls left after the run: %+v", calls)
	}
	// The second model call got the client's tools and parameters too.
	if req := f.llm.seen[1]; len(req.Tools) != 2 || req.Temperature == nil {
		t.Errorf("second request: tools %v, temperature %v", toolNames(req.Tools), req.Temperature)
	}
	// A repeated delivery of the same results is refused: nothing waits.
	if _, _, err := deliver(results); !isInputError(err) {
		t.Errorf("repeated results: %v, want an InputError", err)
	}
}

func isInputError(err error) bool {
	var ie *InputError
	return errors.As(err, &ie)
}

// Tool results that do not answer exactly the pending calls are refused
// and change nothing.
func TestClientResultsMustMatch(t *testing.T) {
	f := newFixture(t, 5)
	f.llm.script = append(f.llm.script, callBoth)
	_, deliver := clientDriver(t, f)
	if _, _, err := deliver(clientInput("s", "weather?")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		msgs []chat.Message
	}{
		{"unknown id", []chat.Message{{Role: chat.Tool, ToolCallID: "c9", Content: "x"}}},
		{"the agent's own call", []chat.Message{{Role: chat.Tool, ToolCallID: "c1", Content: "x"}}},
		{"twice", []chat.Message{{Role: chat.Tool, ToolCallID: "c2", Content: "x"}, {Role: chat.Tool, ToolCallID: "c2", Content: "y"}}},
		{"extra", []chat.Message{{Role: chat.Tool, ToolCallID: "c2", Content: "x"}, {Role: chat.Tool, ToolCallID: "c3", Content: "y"}}},
		{"user after results", []chat.Message{{Role: chat.Tool, ToolCallID: "c2", Content: "x"}, user("and?")}},
	}
	before := f.history(t, "s")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := Input{SessionID: "s", Agent: "a", Owner: "key:k1", Autonomy: tool.Supervised, Interactive: true, Messages: tt.msgs}
			if _, _, err := deliver(in); !isInputError(err) {
				t.Errorf("deliver: %v, want an InputError", err)
			}
			if diff := cmp.Diff(before, f.history(t, "s")); diff != "" {
				t.Errorf("history changed (-before +after):\n%s", diff)
			}
			if ap, err := f.loop.PendingApproval(t.Context(), "s"); err != nil || ap.Status != store.ApprovalPending {
				t.Errorf("the wait was resolved: %+v, %v", ap, err)
			}
		})
	}
	// Another owner's results for this session are refused.
	in := Input{SessionID: "s", Agent: "a", Owner: "key:k2", Messages: []chat.Message{{Role: chat.Tool, ToolCallID: "c2", Content: "x"}}}
	if _, _, err := deliver(in); !errors.Is(err, store.ErrForbidden) {
		t.Errorf("results from another owner: %v, want ErrForbidden", err)
	}
	// So are results where nothing waits.
	in = Input{SessionID: "other", Agent: "a", Owner: "key:k1", Messages: []chat.Message{{Role: chat.Tool, ToolCallID: "c2", Content: "x"}}}
	if _, _, err := deliver(in); !isInputError(err) {
		t.Errorf("results to a session without a wait: %v, want an InputError", err)
	}
}

// A new user message instead of the results ends the wait: the calls are
// answered as not run and the message gets its own run.
func TestClientWaitAbandoned(t *testing.T) {
	f := newFixture(t, 5)
	f.llm.script = append(f.llm.script, callBoth, say("Never mind then."))
	d, deliver := clientDriver(t, f)
	first, _, err := deliver(clientInput("s", "weather?"))
	if err != nil {
		t.Fatal(err)
	}
	second, res, err := deliver(clientInput("s", "forget it"))
	if err != nil {
		t.Fatal(err)
	}
	if second.RunID == first.RunID || res.Content != "Never mind then." {
		t.Errorf("new message: run %s (first %s), result %+v", second.RunID, first.RunID, res)
	}
	d.Wait() // the lane is done
	hist := f.history(t, "s")
	if got := hist[3]; got.ToolCallID != "c2" || !strings.Contains(got.Content, "did not run") {
		t.Errorf("abandoned call's result = %+v", got)
	}
	if f.llm.calls() != 2 {
		t.Errorf("model called %d times, want 2 (the abandoned run does not think again)", f.llm.calls())
	}
	if calls, _ := f.store.PendingCalls(t.Context(), first.RunID); len(calls) != 0 {
		t.Errorf("pending calls left: %+v", calls)
	}
}

// A person's /yes does not answer a client wait.
func TestAnswerRefusesClientWait(t *testing.T) {
	f := newFixture(t, 5)
	err := f.loop.Answer(t.Context(), store.Approval{ID: "x", Kind: store.ApprovalClientTools}, Yes)
	if !errors.Is(err, ErrNoPendingApproval) {
		t.Errorf("Answer: %v, want ErrNoPendingApproval", err)
	}
}

func TestOptionsRefused(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{"name of the agent's tool", Options{Tools: []chat.ToolDef{{Name: "echo"}}}},
		{"same name twice", Options{Tools: []chat.ToolDef{weather, weather}}},
		{"no name", Options{Tools: []chat.ToolDef{{}}}},
		{"forced unknown tool", Options{Params: llm.Params{ToolChoice: &llm.ToolChoice{Mode: llm.ToolsFunction, Name: "nope"}}}},
		{"unsupported parameter", Options{Params: llm.Params{Seed: new(int64(1))}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 5)
			f.loop.Agents.(Registry)["a"].Provider = noSeed{f.llm}
			in := clientInput("s", "hi")
			in.Options = tt.opts
			if _, err := f.loop.Enqueue(t.Context(), in); !isInputError(err) {
				t.Errorf("Enqueue: %v, want an InputError", err)
			}
			if _, err := f.store.GetSession(t.Context(), "s"); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("a refused run created its session: %v", err)
			}
		})
	}
}

// noSeed is a provider that cannot honour a seed.
type noSeed struct{ *provider }

func (noSeed) CheckParams(p llm.Params) error {
	if p.Seed != nil {
		return &llm.UnsupportedError{Provider: "fake", Param: "seed", Reason: "no seeds here"}
	}
	return nil
}

// A forced tool choice applies to the run's first model call; tool_choice
// none leaves calls in the reply unparsed; client system messages follow
// the agent's prompt.
func TestToolChoiceAndSystem(t *testing.T) {
	f := newFixture(t, 5)
	f.llm.script = append(f.llm.script, callTool("echo", `{"text":"x"}`), say("done"))
	f.loop.Prompter = fixedPrompt{{Role: chat.System, Content: "You are a."}}
	in := clientInput("s", "hi")
	in.Options.Params.ToolChoice = &llm.ToolChoice{Mode: llm.ToolsRequired}
	in.Options.System = []chat.Message{{Role: chat.System, Content: "be brief"}}
	st, err := f.loop.Enqueue(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	f.runToEnd(t, st)
	var choices []*llm.ToolChoice
	for _, r := range f.llm.seen {
		choices = append(choices, r.ToolChoice)
	}
	if diff := cmp.Diff([]*llm.ToolChoice{{Mode: llm.ToolsRequired}, nil}, choices); diff != "" {
		t.Errorf("tool choices (-want +got):\n%s", diff)
	}
	msgs := f.llm.seen[0].Messages
	if diff := cmp.Diff([]chat.Message{{Role: chat.System, Content: "You are a."}, {Role: chat.System, Content: "be brief"}, user("hi")}, msgs); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}

	f.llm.script = append(f.llm.script, callTool("echo", `{"text":"y"}`))
	in = clientInput("s2", "hi")
	in.Options.Params.ToolChoice = &llm.ToolChoice{Mode: llm.ToolsNone}
	st, err = f.loop.Enqueue(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	if st = f.runToEnd(t, st); st.Iteration != 0 || f.echo.n != 1 {
		t.Errorf("with tool_choice none a call ran: iteration %d, echo ran %d times", st.Iteration, f.echo.n)
	}
}

// An agent that lets clients replace its prompt sends their system
// messages alone, stateful or stateless; without them, its own.
func TestReplaceSystem(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want []chat.Message
	}{
		{"stateful, client system", Input{SessionID: "s1", Options: Options{System: []chat.Message{{Role: chat.System, Content: "be brief"}}}},
			[]chat.Message{{Role: chat.System, Content: "be brief"}, user("hi")}},
		{"stateless, client system", Input{Ephemeral: true, Messages: []chat.Message{{Role: chat.System, Content: "be brief"}, user("hi")}},
			[]chat.Message{{Role: chat.System, Content: "be brief"}, user("hi")}},
		{"no client system", Input{SessionID: "s2"},
			[]chat.Message{{Role: chat.System, Content: "You are a. (stateful)"}, user("hi")}},
		{"stateless, no client system", Input{Ephemeral: true},
			[]chat.Message{{Role: chat.System, Content: "You are a. (stateless)"}, user("hi")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 5)
			f.loop.Agents.(Registry)["a"].ReplaceSystem = true
			f.loop.Prompter = modePrompt{}
			f.llm.script = append(f.llm.script, say("ok"))
			in := tt.in
			in.Agent = "a"
			if in.Messages == nil {
				in.Messages = []chat.Message{user("hi")}
			}
			st, err := f.loop.Enqueue(t.Context(), in)
			if err != nil {
				t.Fatal(err)
			}
			f.runToEnd(t, st)
			if diff := cmp.Diff(tt.want, f.llm.seen[0].Messages); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}

// modePrompt says whether it was asked for a stateless prompt.
type modePrompt struct{}

func (modePrompt) SystemPrompt(_ context.Context, _ *Agent, stateless bool) ([]chat.Message, error) {
	mode := "stateful"
	if stateless {
		mode = "stateless"
	}
	return []chat.Message{{Role: chat.System, Content: "You are a. (" + mode + ")"}}, nil
}

type fixedPrompt []chat.Message

func (p fixedPrompt) SystemPrompt(context.Context, *Agent, bool) ([]chat.Message, error) {
	return p, nil
}

// Each step of a client round trip can be repeated after a crash without
// running or telling anything twice.
func TestClientStepsAreIdempotent(t *testing.T) {
	f := newFixture(t, 5)
	f.llm.script = append(f.llm.script, callBoth)
	st, err := f.loop.Enqueue(t.Context(), clientInput("s", "weather?"))
	if err != nil {
		t.Fatal(err)
	}
	sub := f.hub.Subscribe(RunKey(st.RunID))
	for !st.Parked() {
		prev := st
		if st, err = f.loop.Step(t.Context(), st); err != nil {
			t.Fatal(err)
		}
		// The step is repeated, as after a crash before its commit.
		again, err := f.loop.Step(t.Context(), prev)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(st, again); diff != "" {
			t.Fatalf("step %s repeated (-first +again):\n%s", prev.Step, diff)
		}
	}
	if f.echo.n != 1 || f.llm.calls() != 1 {
		t.Errorf("echo ran %d times, model called %d times; want 1 and 1", f.echo.n, f.llm.calls())
	}
	// Next returns what was told before it looks at its context.
	done, cancel := context.WithCancel(t.Context())
	cancel()
	var results int
	for {
		ev, err := sub.Next(done)
		if err != nil {
			break
		}
		if ev.Result != nil {
			results++
		}
	}
	// act told its result each time it ran; the gateway answers the first.
	if results != 2 {
		t.Errorf("%d results told, want 2 (one per act, as finish does)", results)
	}
}

// A run that ends with its client calls (the Responses API) finishes, and
// its outcome, read later, is those calls; the session's next run starts
// with their results, which must answer exactly the open calls.
func TestEndWithClientCalls(t *testing.T) {
	f := newFixture(t, 5)
	f.llm.script = append(f.llm.script, callBoth, say("Rain in Oslo."))
	d, deliver := clientDriver(t, f)
	in := clientInput("s", "weather?")
	in.Options.EndWithClientCalls = true
	first, res, err := deliver(in)
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != "tool_calls" || len(res.ToolCalls) != 1 {
		t.Fatalf("result = %+v, want the client's call", res)
	}
	d.Wait()
	st, out, err := f.loop.Outcome(t.Context(), first.RunID)
	if err != nil || st.Step != StepDone || out == nil || len(out.ToolCalls) != 1 || out.ToolCalls[0].ID != "c2" {
		t.Fatalf("outcome = %+v, %+v, %v; want the done run's client call", st, out, err)
	}
	if _, err := f.loop.PendingApproval(t.Context(), "s"); !errors.Is(err, ErrNoPendingApproval) {
		t.Errorf("the run waits: %v", err)
	}
	results := func(msgs ...chat.Message) Input {
		return Input{SessionID: "s", Agent: "a", Owner: "key:k1", Autonomy: tool.Supervised, Interactive: true, Messages: msgs}
	}
	if _, _, err := deliver(results(chat.Message{Role: chat.Tool, ToolCallID: "c9", Content: "x"})); !isInputError(err) {
		t.Errorf("a result for another call: %v, want an InputError", err)
	}
	next, res, err := deliver(results(chat.Message{Role: chat.Tool, ToolCallID: "c2", Content: "rain"}, user("and tomorrow?")))
	if err != nil {
		t.Fatal(err)
	}
	if next.RunID == first.RunID || res.Content != "Rain in Oslo." {
		t.Errorf("next run %s (first %s), result %+v", next.RunID, first.RunID, res)
	}
	d.Wait()
	hist := f.history(t, "s")
	if got := hist[3]; got.Role != chat.Tool || got.ToolCallID != "c2" || got.Content != "rain" {
		t.Errorf("history[3] = %+v, want the client's result", got)
	}
}

func TestCloseOpenCalls(t *testing.T) {
	call := func(ids ...string) chat.Message {
		m := chat.Message{Role: chat.Assistant}
		for _, id := range ids {
			m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: id, Name: "f"})
		}
		return m
	}
	result := func(id string) chat.Message { return chat.Message{Role: chat.Tool, ToolCallID: id, Content: "ok"} }
	none := func(id string) chat.Message {
		return chat.Message{Role: chat.Tool, ToolCallID: id, Name: "f", Content: "error: no result was given for this call; it did not run"}
	}
	sys := chat.Message{Role: chat.System, Content: "be brief"}
	tests := []struct {
		name string
		msgs []chat.Message
		want []chat.Message
	}{
		{"no calls", []chat.Message{user("a"), say0("b")}, []chat.Message{user("a"), say0("b")}},
		{"answered", []chat.Message{user("a"), call("1", "2"), result("2"), result("1"), user("b")}, nil},
		{"open before a user message", []chat.Message{user("a"), call("1", "2"), result("1"), user("b")},
			[]chat.Message{user("a"), call("1", "2"), result("1"), none("2"), user("b")}},
		{"open at the end", []chat.Message{user("a"), call("1")}, []chat.Message{user("a"), call("1"), none("1")}},
		{"a system message between", []chat.Message{call("1"), sys, result("1")}, nil},
		{"open before the next call", []chat.Message{call("1"), call("2"), result("2")}, []chat.Message{call("1"), none("1"), call("2"), result("2")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := tt.want
			if want == nil {
				want = tt.msgs
			}
			if diff := cmp.Diff(want, closeOpenCalls(slices.Clone(tt.msgs))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func say0(text string) chat.Message { return chat.Message{Role: chat.Assistant, Content: text} }

// A run's token budget caps each reply at what is left, and ends the run
// with an error once it is spent, instead of calling the model again.
func TestTokenBudget(t *testing.T) {
	callEcho := func(llm.Request) (llm.Response, error) {
		return llm.Response{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "echo", Arguments: `{"text":"pong"}`}}},
			Usage: chat.Usage{PromptTokens: 20, CompletionTokens: 5, TotalTokens: 25}}, nil
	}
	f := newFixture(t, 5)
	f.llm.script = append(f.llm.script, callEcho, callEcho, say("never asked"))
	in := Input{SessionID: "s", Agent: "a", Owner: "key:k1", Messages: []chat.Message{user("loop")}, Autonomy: tool.Supervised,
		Options: Options{TokenBudget: 40, Params: llm.Params{MaxTokens: 30}}}
	sub := f.hub.Subscribe("all")
	in.Reply.To = "all"
	st, err := f.loop.Enqueue(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	f.runToEnd(t, st)
	var caps []int
	for _, r := range f.llm.seen {
		caps = append(caps, r.MaxTokens)
	}
	if diff := cmp.Diff([]int{30, 15}, caps); diff != "" {
		t.Errorf("max_tokens of the model calls (-want +got):\n%s", diff)
	}
	ev := next(t, sub)
	if ev.Result == nil || ev.Result.Error != "this run has spent its budget of 40 tokens (50 used)" || ev.Result.ErrorCode != CodeBudget {
		t.Errorf("result = %+v; want the budget error", ev.Result)
	}

	bad := in
	bad.Options.TokenBudget = -1
	var inputErr *InputError
	if _, err := f.loop.Enqueue(t.Context(), bad); !errors.As(err, &inputErr) {
		t.Errorf("a negative budget: %v; want an input error", err)
	}
}

// imagesOnly is a provider whose model takes images and nothing else
// beside text.
type imagesOnly struct{ *provider }

func (imagesOnly) CheckPart(p chat.Part) error {
	return llm.Accepts{chat.PartImage}.Check("fake", p)
}

// A part the agent's model cannot take is refused before the run is
// queued, naming the part and the agent; one it takes reaches it.
func TestPartsChecked(t *testing.T) {
	f := newFixture(t, 5)
	f.llm.script = append(f.llm.script, say("a cat"))
	f.loop.Agents.(Registry)["a"].Provider = imagesOnly{f.llm}
	image := chat.Part{Type: chat.PartImage, MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n")}
	in := clientInput("s", "what is this?")
	in.Messages[0].Parts = []chat.Part{image, {Type: chat.PartAudio, MediaType: "audio/wav", Data: []byte("RIFF")}}
	_, err := f.loop.Enqueue(t.Context(), in)
	if !isInputError(err) || !strings.Contains(err.Error(), `agent "a"`) || !strings.Contains(err.Error(), "messages[0].parts[1] (audio)") {
		t.Fatalf("Enqueue: %v, want an InputError naming the agent and the audio part", err)
	}
	if _, err := f.store.GetSession(t.Context(), "s"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused run created its session: %v", err)
	}
	in.Messages[0].Parts = in.Messages[0].Parts[:1]
	st, err := f.loop.Enqueue(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	f.runToEnd(t, st)
	if got := f.llm.seen[0].Messages; len(got) == 0 || !cmp.Equal(got[len(got)-1].Parts, []chat.Part{image}) {
		t.Errorf("the model received %+v, want the image", got)
	}
}
