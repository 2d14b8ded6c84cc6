package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/checkin"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/webhook"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentenv"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// inlineFixture runs durable runs inline: the ws function's driver
// invokes the step function (the fake Lambda runs it with the step
// handler), which hands runs over to the fake Step Functions.
type inlineFixture struct {
	env    *cloudtest.Env
	step   *cloud.Root
	sender *cloud.Root
	clock  *cloudtest.Clock
}

func newInlineFixture(t *testing.T) *inlineFixture {
	return inlineFixtureOn(t, cloudtest.Setup(t))
}

// inlineFixtureOn is newInlineFixture on env, whose settings the test
// may have changed since cloudtest.Setup.
func inlineFixtureOn(t *testing.T, env *cloudtest.Env) *inlineFixture {
	c := cloudtest.NewClock()
	// Lambda retries a failed invocation a minute and more later.
	step := env.PlayInline(t, c.Now, func() { c.Advance(2 * time.Minute) })
	sender := env.Root(t, "ws")
	if sender.Driver.Inline == nil {
		t.Fatal("the ws function's driver does not run runs inline")
	}
	return &inlineFixture{env: env, step: step, sender: sender, clock: c}
}

// deliver sends text to the session sid as the ws function does, replying
// to the connection "conn-<sid>".
func (f *inlineFixture) deliver(t *testing.T, sid, text string) agent.RunState {
	t.Helper()
	return f.deliverAt(t, sid, text, tool.Supervised)
}

// deliverAt is deliver at autonomy.
func (f *inlineFixture) deliverAt(t *testing.T, sid, text string, autonomy tool.Autonomy) agent.RunState {
	t.Helper()
	st, err := f.sender.Driver.Deliver(t.Context(), agent.Input{
		SessionID: sid, Agent: "default", Messages: []chat.Message{{Role: chat.User, Content: text}},
		Autonomy: autonomy, Interactive: true, Reply: agent.Reply{Channel: "ws", To: "conn-" + sid},
	}, func(string) {})
	if err != nil {
		t.Fatalf("deliver %q: %v", text, err)
	}
	return st
}

// history summarizes the session's history: "role: content", or the tool
// names of an assistant's calls.
func (f *inlineFixture) history(t *testing.T, sid string) []string {
	t.Helper()
	msgs, err := f.env.Store.Messages(t.Context(), sid)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		line := string(m.Role) + ": " + m.Content
		for _, c := range m.ToolCalls {
			line += " [" + c.Name + "]"
		}
		if m.Role == chat.Tool {
			line = "tool " + m.ToolCallID
		}
		out = append(out, line)
	}
	return out
}

func (f *inlineFixture) runDone(t *testing.T, runID string) {
	t.Helper()
	run, err := f.env.Store.GetRun(t.Context(), runID)
	if err != nil || run.Status != store.RunDone {
		t.Fatalf("run %s = %+v, %v; want done", runID, run.Status, err)
	}
}

func (f *inlineFixture) finals(sid string) []string {
	var out []string
	for _, fr := range f.env.APIGW.Frames("conn-" + sid) {
		if fr["type"] == "final" {
			out = append(out, fr["text"].(string))
		}
	}
	return out
}

// TestInlineTurns: a plain turn and a turn with a tool call run in one
// invocation each, with no state machine execution.
func TestInlineTurns(t *testing.T) {
	f := newInlineFixture(t)
	f.env.LLM.Enqueue(
		fakellm.Reply{Content: "Hello."},
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_1", Name: "load_skill", Arguments: `{"name":"web-research"}`}}},
		fakellm.Reply{Content: "Loaded."},
	)
	a := f.deliver(t, "s-inline", "hi")
	f.env.Lambda.Wait()
	b := f.deliver(t, "s-inline", "load a skill")
	f.env.Lambda.Wait()
	f.runDone(t, a.RunID)
	f.runDone(t, b.RunID)
	want := []string{"user: hi", "assistant: Hello.", "user: load a skill", "assistant:  [load_skill]", "tool call_1", "assistant: Loaded."}
	if got := f.history(t, "s-inline"); !slices.Equal(got, want) {
		t.Errorf("history %q, want %q", got, want)
	}
	if got := f.finals("s-inline"); !slices.Equal(got, []string{"Hello.", "Loaded."}) {
		t.Errorf("final frames %q", got)
	}
	if s := f.env.SFN.Started(); len(s) != 0 {
		t.Errorf("executions started %q, want none", s)
	}
	ds := f.env.Lambda.Deliveries()
	if len(ds) != 2 || !slices.Equal(ds[0].Errors, []string{""}) || !slices.Equal(ds[1].Errors, []string{""}) {
		t.Errorf("deliveries %+v, want two, each run once without error", ds)
	}
}

// TestInlineDuplicate: a delivery of a run's event again, while the run
// steps and after it is done, runs nothing twice.
func TestInlineDuplicate(t *testing.T) {
	f := newInlineFixture(t)
	arrived, release := f.holdFirstModelCall()
	f.env.LLM.Enqueue(fakellm.Reply{Content: "Once."})
	st := f.deliver(t, "s-dup", "hi")
	<-arrived
	first := f.env.Lambda.Deliveries()[0]
	// While the first invocation waits for the model.
	dup := f.env.Lambda.Deliver(first.Payload)
	dup.Wait()
	close(release)
	f.env.Lambda.Wait()
	// After the run is done.
	late := f.env.Lambda.Deliver(first.Payload)
	late.Wait()

	if n := len(f.env.LLM.Requests()); n != 1 {
		t.Errorf("the model was asked %d times, want once", n)
	}
	if got, want := f.history(t, "s-dup"), []string{"user: hi", "assistant: Once."}; !slices.Equal(got, want) {
		t.Errorf("history %q, want %q", got, want)
	}
	if got := f.finals("s-dup"); !slices.Equal(got, []string{"Once."}) {
		t.Errorf("final frames %q, want one", got)
	}
	for _, d := range []*cloudtest.Delivery{first, dup, late} {
		if !slices.Equal(d.Errors, []string{""}) {
			t.Errorf("delivery attempts %q, want one without error", d.Errors)
		}
	}
	if s := f.env.SFN.Started(); len(s) != 0 {
		t.Errorf("executions started %q, want none", s)
	}
	f.runDone(t, st.RunID)
}

// TestInlineCrash: the invocation dies while the model answers (Lambda
// ends it, as a timeout or a crash does); Lambda invokes it again, and
// that invocation, finding the first one's lease lapsed, hands the run
// to the state machine at its last committed step, which finishes it.
// Nothing is written twice.
func TestInlineCrash(t *testing.T) {
	f := newInlineFixture(t)
	arrived, release := f.holdFirstModelCall()
	f.env.LLM.Enqueue(fakellm.Reply{Content: "ignored: the caller is gone"}, fakellm.Reply{Content: "After the crash."})
	st := f.deliver(t, "s-crash", "hi")
	<-arrived
	f.env.Lambda.Kill()
	close(release)
	f.env.Lambda.Wait()

	d := f.env.Lambda.Deliveries()
	if len(d) != 1 || len(d[0].Errors) != 2 || d[0].Errors[0] == "" || d[0].Errors[1] != "" {
		t.Fatalf("deliveries %+v, want one, failing, then retried without error", d)
	}
	if s := f.env.SFN.Started(); !slices.Equal(s, []string{st.RunID}) {
		t.Fatalf("executions %q, want the run handed over", s)
	}
	f.handedOverAtBegin(t, st.RunID)
	f.runDone(t, st.RunID)
	if got, want := f.history(t, "s-crash"), []string{"user: hi", "assistant: After the crash."}; !slices.Equal(got, want) {
		t.Errorf("history %q, want %q", got, want)
	}
	if got := f.finals("s-crash"); !slices.Equal(got, []string{"After the crash."}) {
		t.Errorf("final frames %q, want one", got)
	}
	if !f.laneFree(t, "s-crash") {
		t.Error("the lane is still held")
	}
}

// TestInlineFenced: the invocation stalls in the model call past its
// lease (renewals lost, or a pause of its process); Lambda's repeated
// delivery finds the lease lapsed and takes the run over, handing it to
// the state machine, which finishes it. The stalled invocation then gets
// its answer, but its commit is refused (the lease it claimed no longer
// holds the run): it writes nothing, sends nothing and ends without an
// error, which Lambda would retry.
func TestInlineFenced(t *testing.T) {
	f := newInlineFixture(t)
	arrived, release := f.holdFirstModelCall()
	f.env.LLM.Enqueue(fakellm.Reply{Content: "Too late."}, fakellm.Reply{Content: "After the take-over."})
	st := f.deliver(t, "s-fenced", "hi")
	<-arrived
	first := f.env.Lambda.Deliveries()[0]
	f.clock.Advance(2 * time.Minute) // past the lease: no renewal came
	again := f.env.Lambda.Deliver(first.Payload)
	again.Wait()
	f.handedOverAtBegin(t, st.RunID)
	f.runDone(t, st.RunID)
	close(release)
	f.env.Lambda.Wait()

	for _, d := range []*cloudtest.Delivery{first, again} {
		if !slices.Equal(d.Errors, []string{""}) {
			t.Errorf("delivery attempts %q, want one without error", d.Errors)
		}
	}
	f.runDone(t, st.RunID)
	if got, want := f.history(t, "s-fenced"), []string{"user: hi", "assistant: After the take-over."}; !slices.Equal(got, want) {
		t.Errorf("history %q, want %q", got, want)
	}
	if got := f.finals("s-fenced"); !slices.Equal(got, []string{"After the take-over."}) {
		t.Errorf("final frames %q, want only the take-over's", got)
	}
	if s := f.env.SFN.Started(); !slices.Equal(s, []string{st.RunID}) {
		t.Errorf("executions %q, want the run handed over once", s)
	}
	if !f.laneFree(t, "s-fenced") {
		t.Error("the lane is still held")
	}
}

// failingRenewals is the step function's Claims with every renewal
// failing; failed is closed at the first.
type failingRenewals struct {
	sfn.Claims
	once   sync.Once
	failed chan struct{}
}

func (c *failingRenewals) RenewRun(context.Context, string, string, time.Time) (bool, error) {
	c.once.Do(func() { close(c.failed) })
	return false, errors.New("ProvisionedThroughputExceededException")
}

// TestInlineRenewalFails: a renewal of the lease fails while the model
// asks for a tool; the invocation commits the step it is in (its lease
// still holds), steps no further and fails, and Lambda's retry hands the
// run to the state machine, which finishes it.
func TestInlineRenewalFails(t *testing.T) {
	f := newInlineFixture(t)
	claims := &failingRenewals{Claims: f.step.Driver.Inline.Claims, failed: make(chan struct{})}
	f.step.Driver.Inline.Claims = claims
	f.step.Driver.Inline.Lease = 30 * time.Millisecond // renewed every 10 ms
	arrived, release := f.holdFirstModelCall()
	f.env.LLM.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_1", Name: "load_skill", Arguments: `{"name":"web-research"}`}}},
		fakellm.Reply{Content: "Once."})
	st := f.deliver(t, "s-renew", "hi")
	<-arrived
	<-claims.failed
	close(release)
	f.env.Lambda.Wait()

	d := f.env.Lambda.Deliveries()
	if len(d) != 1 || len(d[0].Errors) != 2 || !strings.Contains(d[0].Errors[0], "renew the lease") || d[0].Errors[1] != "" {
		t.Fatalf("deliveries %+v, want one, failing for the renewal, then retried without error", d)
	}
	if s := f.env.SFN.Started(); !slices.Equal(s, []string{st.RunID}) {
		t.Fatalf("executions %q, want the run handed over", s)
	}
	if x := f.env.SFN.Wait(st.RunID, 10*time.Second); x.Err != nil {
		t.Fatal(x.Err)
	}
	f.runDone(t, st.RunID)
	if n := len(f.env.LLM.Requests()); n != 2 {
		t.Errorf("the model was asked %d times, want twice: once for the call, once for the answer", n)
	}
	if got, want := f.history(t, "s-renew"), []string{"user: hi", "assistant:  [load_skill]", "tool call_1", "assistant: Once."}; !slices.Equal(got, want) {
		t.Errorf("history %q, want %q", got, want)
	}
	if got := f.finals("s-renew"); !slices.Equal(got, []string{"Once."}) {
		t.Errorf("final frames %q, want one", got)
	}
}

// laneFree reports whether the session's lane can be taken.
func (f *inlineFixture) laneFree(t *testing.T, sid string) bool {
	ok, err := f.env.Store.AcquireLane(t.Context(), sid, "probe", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		f.env.Store.ReleaseLane(t.Context(), sid, "probe")
	}
	return ok
}

// TestInlineHandOver: a run that hands a call to its client's tool is
// handed to the state machine parked at wait; the client's result resumes
// the execution with its task token, and the session's next message runs
// inline again.
func TestInlineHandOver(t *testing.T) {
	f := newInlineFixture(t)
	f.env.LLM.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_weather", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}},
		fakellm.Reply{Content: "Rain in Oslo."},
		fakellm.Reply{Content: "Next."},
	)
	in := agent.Input{
		SessionID: "s-client", Agent: "default", Messages: []chat.Message{{Role: chat.User, Content: "weather?"}},
		Autonomy: tool.Supervised, Interactive: true, Reply: agent.Reply{Channel: "ws", To: "conn-s-client"},
		Options: agent.Options{Tools: []chat.ToolDef{{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object"}`)}}},
	}
	st, err := f.sender.Driver.Deliver(t.Context(), in, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	f.env.Lambda.Wait()
	if s := f.env.SFN.Started(); !slices.Equal(s, []string{st.RunID}) {
		t.Fatalf("executions %q, want the parked run handed over", s)
	}
	var started agent.RunState
	json.Unmarshal([]byte(f.env.SFN.Execution(st.RunID).Input), &started)
	if started.Step != agent.StepWait || started.Approval == "" {
		t.Fatalf("handed over at %+v, want wait with its approval", started)
	}
	cloudtest.Wait(t, 5*time.Second, "the park task to store its token", func() bool {
		ap, err := f.env.Store.GetApproval(t.Context(), started.Approval)
		return err == nil && ap.Token != ""
	})
	in.Messages = []chat.Message{{Role: chat.Tool, ToolCallID: "call_weather", Content: "rain"}}
	if _, err := f.sender.Driver.Deliver(t.Context(), in, func(string) {}); err != nil {
		t.Fatal(err)
	}
	if x := f.env.SFN.Wait(st.RunID, 10*time.Second); x.Err != nil {
		t.Fatal(x.Err)
	}
	f.runDone(t, st.RunID)
	next := f.deliver(t, "s-client", "and now?")
	f.env.Lambda.Wait()
	f.runDone(t, next.RunID)
	if s := f.env.SFN.Started(); len(s) != 1 {
		t.Errorf("executions %q, want only the parked run's", s)
	}
	want := []string{"user: weather?", "assistant:  [get_weather]", "tool call_weather", "assistant: Rain in Oslo.", "user: and now?", "assistant: Next."}
	if got := f.history(t, "s-client"); !slices.Equal(got, want) {
		t.Errorf("history %q, want %q", got, want)
	}
}

// invocationsLast makes the step function's inline invocations end after
// d (their context's deadline, as Lambda's), as if d were left of them
// when the run starts.
func (f *inlineFixture) invocationsLast(d time.Duration) {
	f.env.Lambda.Play(func(ctx context.Context, ev sfn.Event) (any, error) {
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		return f.step.Driver.Handle(ctx, ev)
	}, nil)
}

// handedOverAt checks that the run runID was handed to the state machine
// at step, after the invocations ended.
func (f *inlineFixture) handedOverAt(t *testing.T, runID, step string) {
	t.Helper()
	x := f.env.SFN.Execution(runID)
	if x == nil {
		t.Fatalf("executions %q, want the run handed over", f.env.SFN.Started())
	}
	var in agent.RunState
	if err := json.Unmarshal([]byte(x.Input), &in); err != nil {
		t.Fatalf("execution input %q: %v", x.Input, err)
	}
	if in.Step != step {
		t.Errorf("handed over at %q, want %q", in.Step, step)
	}
}

// TestInlineLongThink: an invocation with less left than the model call
// may take (the provider's timeout, three attempts and the waits between
// them: 6m20s) and the margin hands the run over before begin (which
// thinks), and the
// state machine asks the model.
func TestInlineLongThink(t *testing.T) {
	f := newInlineFixture(t)
	f.env.LLM.Enqueue(fakellm.Reply{Content: "From the state machine."})
	f.invocationsLast(6 * time.Minute)
	st := f.deliver(t, "s-think", "hi")
	f.env.Lambda.Wait()
	f.handedOverAt(t, st.RunID, agent.StepBegin) // begin thinks
	if x := f.env.SFN.Wait(st.RunID, 10*time.Second); x.Err != nil {
		t.Fatal(x.Err)
	}
	f.runDone(t, st.RunID)
	if n := len(f.env.LLM.Requests()); n != 1 {
		t.Errorf("the model was asked %d times, want once, by the state machine", n)
	}
	if got := f.finals("s-think"); !slices.Equal(got, []string{"From the state machine."}) {
		t.Errorf("final frames %q, want one", got)
	}
}

// TestInlineLongExec: the model's call of exec on Fargate may take the
// command's wall time and the sandbox's syncs twice and a task's start
// (6m40s), more than is left of the invocation after think: the run is
// handed to the state machine at act before the call starts. No task is
// started and the call is not marked started inline.
func TestInlineLongExec(t *testing.T) {
	env := cloudtest.Setup(t)
	for k, v := range map[string]string{
		"SANDBOX_BACKEND": "fargate", "SANDBOX_CLUSTER": cloudtest.ECSCluster, "SANDBOX_TASK_DEFINITION": cloudtest.ECSTaskDefinition,
		"SANDBOX_CONTAINER": cloudtest.ECSContainer, "SANDBOX_SUBNETS": "subnet-1", "SANDBOX_SECURITY_GROUPS": "sg-1",
	} {
		t.Setenv(k, v)
	}
	ecsFake := cloudtest.NewECS(t)
	t.Setenv("ECS_ENDPOINT", ecsFake.URL)
	agents, err := agentenv.Encode(map[string]config.AgentConfig{"default": {Sandbox: &config.AgentSandbox{
		Limits: config.SandboxLimits{WallTime: config.Duration(50 * time.Second)}}}}, []string{agentenv.ProviderOpenAI})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(agentenv.Var, agents)
	f := inlineFixtureOn(t, env)
	f.env.SFN.Play(nil) // the execution is only started
	f.env.LLM.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_exec", Name: "exec", Arguments: `{"command":"make"}`}}})
	// think (6m20s and the margin) fits; act does not.
	f.invocationsLast(7 * time.Minute)
	st := f.deliverAt(t, "s-exec", "build it", tool.Full)
	f.env.Lambda.Wait()
	f.handedOverAt(t, st.RunID, agent.StepAct)
	if tasks := ecsFake.Tasks(); len(tasks) != 0 {
		t.Errorf("%d sandbox tasks started inline, want none", len(tasks))
	}
	if err := f.env.Store.StartCall(t.Context(), st.RunID, "call_exec"); err != nil {
		t.Errorf("the exec call was marked started inline: %v", err)
	}
}

// handedOverAtBegin waits for the execution of the run runID and checks
// that the state machine took it over at begin, its last committed step.
func (f *inlineFixture) handedOverAtBegin(t *testing.T, runID string) {
	t.Helper()
	x := f.env.SFN.Wait(runID, 10*time.Second)
	if x.Err != nil {
		t.Fatal(x.Err)
	}
	var in agent.RunState
	if err := json.Unmarshal([]byte(x.Input), &in); err != nil {
		t.Fatalf("execution input %q: %v", x.Input, err)
	}
	if in.Step != agent.StepBegin {
		t.Errorf("handed over at %q, want begin (the last committed step)", in.Step)
	}
}

// holdFirstModelCall holds the first request to the model until release
// is closed; arrived is closed when it comes.
func (f *inlineFixture) holdFirstModelCall() (arrived, release chan struct{}) {
	arrived, release = make(chan struct{}), make(chan struct{})
	var held atomic.Bool
	f.env.LLM.OnRequest(func(fakellm.Request) {
		// Only the first waits: the requests after it pass (a sync.Once
		// would hold them too).
		if held.CompareAndSwap(false, true) {
			close(arrived)
			<-release
		}
	})
	return arrived, release
}

// remoteSend serves the MCP server "remote" to the roots built from now
// on (cloud.MCPVar), with a tool send, an effect outside lambdaclaw,
// whose calls run call.
func remoteSend(t *testing.T, call func(ctx context.Context)) {
	s := sdk.NewServer(&sdk.Implementation{Name: "remote", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "send", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			call(ctx)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "sent"}}}, nil
		})
	srv := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	t.Setenv(cloud.MCPVar, `{"servers":{"remote":{"url":"`+srv.URL+`"}}}`)
}

// TestInlineCrashDuringCall: the invocation dies while a tool call with
// an external side effect (an MCP server's tool) runs; Lambda invokes it
// again, which hands the run to the state machine at act. The call, marked
// started before it ran, is not made again: the model is told it was
// interrupted, and the run finishes.
func TestInlineCrashDuringCall(t *testing.T) {
	env := cloudtest.Setup(t)
	var calls atomic.Int64
	arrived, release := make(chan struct{}), make(chan struct{})
	remoteSend(t, func(ctx context.Context) {
		if calls.Add(1) == 1 {
			close(arrived)
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
	})
	f := inlineFixtureOn(t, env)
	f.env.LLM.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_send", Name: "remote__send", Arguments: `{"to":"bob"}`}}},
		fakellm.Reply{Content: "After the crash."},
	)
	st := f.deliverAt(t, "s-call", "send it", tool.Full)
	<-arrived
	f.env.Lambda.Kill()
	close(release)
	f.env.Lambda.Wait()
	if s := f.env.SFN.Started(); !slices.Equal(s, []string{st.RunID}) {
		t.Fatalf("executions %q, want the run handed over", s)
	}
	if x := f.env.SFN.Wait(st.RunID, 10*time.Second); x.Err != nil {
		t.Fatal(x.Err)
	}
	f.runDone(t, st.RunID)
	if n := calls.Load(); n != 1 {
		t.Errorf("the tool was called %d times, want once", n)
	}
	reqs := f.env.LLM.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model was asked %d times, want twice", len(reqs))
	}
	var result string
	for _, m := range reqs[1].Messages {
		if m.ToolCallID == "call_send" {
			result = m.Content
		}
	}
	if result != agent.Interrupted {
		t.Errorf("the model got %q for the call, want %q", result, agent.Interrupted)
	}
	if got := f.finals("s-call"); !slices.Equal(got, []string{"After the crash."}) {
		t.Errorf("final frames %q, want one", got)
	}
}

// crash is what a process that dies in a test panics with.
type crash struct{}

// dying is a channel's replier whose process dies at the first outcome
// or approval it is told: after the commit that ended or parked the run,
// before anything of it is sent.
type dying struct {
	agent.Replier
	died atomic.Bool
}

func (d *dying) Finish(st agent.RunState, res agent.Result) {
	d.die()
	d.Replier.Finish(st, res)
}

func (d *dying) Approval(st agent.RunState, a store.Approval) {
	d.die()
	d.Replier.Approval(st, a)
}

func (d *dying) die() {
	if d.died.CompareAndSwap(false, true) {
		panic(crash{})
	}
}

// dieAtFirstTelling makes the step function's process die as the
// replier of channel is first told an outcome or an approval; Lambda
// retries the invocation, with a fresh process, a minute and more later.
func (f *inlineFixture) dieAtFirstTelling(channel string) {
	router := f.step.Driver.Loop.Replier.(agent.Router)
	router[channel] = &dying{Replier: router[channel]}
	f.env.Lambda.Play(func(ctx context.Context, ev sfn.Event) (out any, err error) {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(crash); !ok {
					panic(r)
				}
				out, err = nil, errors.New("Runtime.ExitError: the process died")
			}
		}()
		return f.step.Driver.Handle(ctx, ev)
	}, func() { f.clock.Advance(2 * time.Minute) })
}

// TestInlineCrashAfterCommit: the invocation dies right after the commit
// that ends the run, before it tells the reply channel or passes the
// lane on; Lambda's retry finds the run done, still holding its lane,
// tells its answer (once: the model is not asked again) and passes the
// lane on, so the session's next message runs.
func TestInlineCrashAfterCommit(t *testing.T) {
	f := newInlineFixture(t)
	f.dieAtFirstTelling("ws")
	f.env.LLM.Enqueue(fakellm.Reply{Content: "Hello."}, fakellm.Reply{Content: "Next."})
	st := f.deliver(t, "s-told", "hi")
	f.env.Lambda.Wait()
	d := f.env.Lambda.Deliveries()
	if len(d) != 1 || len(d[0].Errors) != 2 || d[0].Errors[0] == "" || d[0].Errors[1] != "" {
		t.Fatalf("deliveries %+v, want one, dying, then retried without error", d)
	}
	f.runDone(t, st.RunID)
	if got := f.finals("s-told"); !slices.Equal(got, []string{"Hello."}) {
		t.Errorf("final frames %q, want the answer once", got)
	}
	if !f.laneFree(t, "s-told") {
		t.Fatal("the lane is still held")
	}
	late := f.env.Lambda.Deliver(d[0].Payload) // a repeat after the hand-off tells nothing
	late.Wait()
	next := f.deliver(t, "s-told", "again")
	f.env.Lambda.Wait()
	f.runDone(t, next.RunID)
	if got := f.finals("s-told"); !slices.Equal(got, []string{"Hello.", "Next."}) {
		t.Errorf("final frames %q, want each answer once", got)
	}
	if n := len(f.env.LLM.Requests()); n != 2 {
		t.Errorf("the model was asked %d times, want once per run", n)
	}
	if s := f.env.SFN.Started(); len(s) != 0 {
		t.Errorf("executions started %q, want none", s)
	}
}

// TestInlineCheckInCrashAfterCommit: a check-in to a webhook whose
// invocation dies right after the commit that ends its run; Lambda's
// retry delivers the answer to the webhook and records the firing, as
// the first invocation would have.
func TestInlineCheckInCrashAfterCommit(t *testing.T) {
	f := newInlineFixture(t)
	hooks := make(chan webhook.Payload, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p webhook.Payload
		if err := json.NewDecoder(r.Body).Decode(&p); err != nil {
			t.Errorf("webhook body: %v", err)
		}
		hooks <- p
	}))
	t.Cleanup(hook.Close)
	// The webhook is on this machine, which web_fetch's rules refuse.
	cron := f.step.Driver.Loop.Replier.(agent.Router)[schedule.Channel].(*schedule.Replier)
	cron.Deliver[schedule.DeliverWebhook] = webhook.Delivery(hook.Client())
	f.dieAtFirstTelling(schedule.Channel)
	f.env.LLM.Enqueue(fakellm.Reply{Content: "Ding."})
	ctx := t.Context()
	j, err := f.step.Schedule.Create(ctx, schedule.Job{Owner: "user:alice", Agent: "default", Message: "ring the bell",
		Schedule: schedule.Schedule{Cron: "0 9 * * *"}, Deliver: schedule.Target{Kind: schedule.DeliverWebhook, To: hook.URL + "/hook"}})
	if err != nil {
		t.Fatal(err)
	}
	// The scheduler function claims the firing and starts its run inline.
	fired, err := f.env.Root(t, "scheduler").Jobs().Trigger(ctx, checkin.RunNow{Owner: j.Owner, Job: j.ID})
	if err != nil || fired.Outcome != "started" {
		t.Fatalf("trigger = %+v, %v", fired, err)
	}
	f.env.Lambda.Wait()
	d := f.env.Lambda.Deliveries()
	if len(d) != 1 || len(d[0].Errors) != 2 || d[0].Errors[0] == "" || d[0].Errors[1] != "" {
		t.Fatalf("deliveries %+v, want one, dying, then retried without error", d)
	}
	f.runDone(t, fired.RunID)
	close(hooks)
	var got []string
	for p := range hooks {
		got = append(got, p.RunID+" "+p.Content)
	}
	if want := []string{fired.RunID + " Ding."}; !slices.Equal(got, want) {
		t.Errorf("webhook deliveries %q, want %q", got, want)
	}
	runs, err := f.step.Schedule.Runs(ctx, j.Owner, j.ID, 10)
	if err != nil || len(runs) != 1 || runs[0].Status != schedule.RunDone || runs[0].Delivered != "webhook:"+hook.URL+"/hook" {
		t.Errorf("firings %+v, %v; want one, done and delivered", runs, err)
	}
}

// TestInlineApprovalCrashAfterCommit: the invocation dies right after
// the commit that parks the run for a person's approval, before it tells
// the prompt; Lambda's retry tells it, then hands the parked run to the
// state machine.
func TestInlineApprovalCrashAfterCommit(t *testing.T) {
	env := cloudtest.Setup(t)
	remoteSend(t, func(context.Context) { t.Error("the call ran before its approval") })
	f := inlineFixtureOn(t, env)
	f.dieAtFirstTelling("ws")
	f.env.SFN.Play(nil) // the execution is only started
	f.env.LLM.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_send", Name: "remote__send", Arguments: `{"to":"bob"}`}}})
	st := f.deliver(t, "s-ask", "send it")
	f.env.Lambda.Wait()
	d := f.env.Lambda.Deliveries()
	if len(d) != 1 || len(d[0].Errors) != 2 || d[0].Errors[0] == "" || d[0].Errors[1] != "" {
		t.Fatalf("deliveries %+v, want one, dying, then retried without error", d)
	}
	f.handedOverAt(t, st.RunID, agent.StepWait)
	var prompts []string
	for _, fr := range f.env.APIGW.Frames("conn-s-ask") {
		if fr["type"] == "approval" {
			prompts = append(prompts, fr["tools"].([]any)[0].(string))
		}
	}
	if !slices.Equal(prompts, []string{"remote__send"}) {
		t.Errorf("approval frames for %q, want one for remote__send", prompts)
	}
}
