package sfn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/memstore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// fakeSFN behaves like the Step Functions API for what the driver uses:
// execution names are unique, and a task token resumes once.
type fakeSFN struct {
	mu      sync.Mutex
	started []string
	inputs  map[string]string
	tokens  map[string]bool // live tokens
	outputs map[string]string
}

func newFakeSFN() *fakeSFN {
	return &fakeSFN{inputs: map[string]string{}, tokens: map[string]bool{}, outputs: map[string]string{}}
}

func (f *fakeSFN) StartExecution(_ context.Context, machine, name, input string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, dup := f.inputs[name]; dup {
		return "", &awsapi.Error{Service: "SFN", Operation: "StartExecution", Status: 400, Code: "ExecutionAlreadyExists", Message: "Execution Already Exists: " + name}
	}
	f.inputs[name] = input
	f.started = append(f.started, name)
	return "arn:exec:" + name, nil
}

func (f *fakeSFN) SendTaskSuccess(_ context.Context, tok, output string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.tokens[tok] {
		return &awsapi.Error{Service: "SFN", Operation: "SendTaskSuccess", Status: 400, Code: "InvalidToken", Message: "Invalid token"}
	}
	delete(f.tokens, tok)
	f.outputs[tok] = output
	return nil
}

// fakeLanes is a lease table with the semantics of the DynamoDB lease.
type fakeLanes struct {
	mu     sync.Mutex
	owners map[string]string
}

func (l *fakeLanes) AcquireLane(_ context.Context, session, owner string, _ time.Duration) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur, ok := l.owners[session]; ok && cur != owner {
		return false, nil
	}
	l.owners[session] = owner
	return true, nil
}

func (l *fakeLanes) ReleaseLane(_ context.Context, session, owner string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.owners[session] == owner {
		delete(l.owners, session)
	}
	return nil
}

func (l *fakeLanes) HoldsLane(_ context.Context, session, owner string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.owners[session] == owner, nil
}

// provider answers with replies, then echoes; during, if set, runs
// once while the next call is in flight.
type provider struct {
	replies []llm.Response
	during  func()
}

func (p *provider) Name() string { return "fake" }
func (p *provider) Generate(_ context.Context, req llm.Request, _ llm.OnDelta) (llm.Response, error) {
	if during := p.during; during != nil {
		p.during = nil
		during()
	}
	if len(p.replies) == 0 {
		return llm.Response{Message: chat.Message{Role: chat.Assistant, Content: "echo: " + req.Messages[len(req.Messages)-1].Content}}, nil
	}
	r := p.replies[0]
	p.replies = p.replies[1:]
	return r, nil
}

type writeTool struct{ n int }

func (w *writeTool) Definition() chat.ToolDef {
	return chat.ToolDef{Name: "write", Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (w *writeTool) Policy() tool.Policy {
	return tool.Policy{Effect: tool.External}
}
func (w *writeTool) Call(context.Context, tool.Env, json.RawMessage) (string, error) {
	w.n++
	return "written", nil
}

type fixture struct {
	d     *Driver
	sfn   *fakeSFN
	lanes *fakeLanes
	llm   *provider
	tool  *writeTool
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{sfn: newFakeSFN(), lanes: &fakeLanes{owners: map[string]string{}}, llm: &provider{}, tool: &writeTool{}}
	reg, err := tool.NewRegistry(f.tool)
	if err != nil {
		t.Fatal(err)
	}
	loop := &agent.Loop{Store: memstore.New(), Agents: agent.Registry{"a": {Name: "a", Provider: f.llm, Tools: reg}}}
	f.d = &Driver{Loop: loop, Lanes: f.lanes, Client: f.sfn, StateMachine: "arn:sm"}
	return f
}

// execute plays the state machine for one execution, as its definition
// does: Step until done, park on wait (returning the token), the Map of
// calls on act.
func (f *fixture) execute(t *testing.T, name string, token string) (agent.RunState, bool) {
	t.Helper()
	state := json.RawMessage(f.sfn.inputs[name])
	if out, ok := f.sfn.outputs[token]; ok {
		state = json.RawMessage(out)
	}
	for range 30 {
		var st agent.RunState
		if err := json.Unmarshal(state, &st); err != nil {
			t.Fatal(err)
		}
		switch st.Step {
		case agent.StepDone:
			return st, true
		case agent.StepWait:
			f.sfn.mu.Lock()
			f.sfn.tokens[token] = true
			f.sfn.mu.Unlock()
			if _, err := f.d.Handle(context.Background(), Event{Action: "park", State: state, TaskToken: token}); err != nil {
				t.Fatal(err)
			}
			if out, ok := f.sfn.outputs[token]; ok {
				state = json.RawMessage(out)
				continue
			}
			return st, false
		case agent.StepAct:
			for _, id := range st.Calls {
				if _, err := f.d.Handle(context.Background(), Event{Action: "call", State: state, CallID: id}); err != nil {
					t.Fatal(err)
				}
			}
		}
		out, err := f.d.Handle(context.Background(), Event{Action: "step", State: state})
		if err != nil {
			t.Fatal(err)
		}
		state, _ = json.Marshal(out)
	}
	t.Fatal("execution did not end")
	return agent.RunState{}, false
}

func input(text string) agent.Input {
	return agent.Input{SessionID: "s", Agent: "a", Messages: []chat.Message{{Role: chat.User, Content: text}}, Autonomy: tool.Supervised, Interactive: true}
}

func TestLaneRunsOneExecutionAtATime(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	first, err := f.d.Deliver(ctx, input("one"), func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	second, err := f.d.Deliver(ctx, input("two"), func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{first.RunID}, f.sfn.started); diff != "" {
		t.Fatalf("executions while the first holds the lane (-want +got):\n%s", diff)
	}
	if _, done := f.execute(t, first.RunID, ""); !done {
		t.Fatal("first run did not finish")
	}
	// Finishing hands the lane to the queued run, which starts.
	if diff := cmp.Diff([]string{first.RunID, second.RunID}, f.sfn.started); diff != "" {
		t.Fatalf("executions after the first ended (-want +got):\n%s", diff)
	}
	st, _ := f.execute(t, second.RunID, "")
	if st.Failed() {
		t.Fatalf("second run failed: %s", st.Error)
	}
	if owner, held := f.lanes.owners["s"]; held {
		t.Errorf("lane still held by %s after the last run", owner)
	}
	msgs, _ := f.d.Loop.Store.Messages(ctx, "s")
	if len(msgs) != 4 || msgs[3].Content != "echo: two" {
		t.Errorf("history = %+v", msgs)
	}
}

func TestApprovalResumesWithTaskToken(t *testing.T) {
	for _, beforeToken := range []bool{false, true} {
		name := "answer after park"
		if beforeToken {
			name = "answer before the token is stored"
		}
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.llm.replies = []llm.Response{
				{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "write", Arguments: `{}`}}}},
				{Message: chat.Message{Role: chat.Assistant, Content: "done"}},
			}
			ctx := context.Background()
			run, err := f.d.Deliver(ctx, input("write it"), func(string) {})
			if err != nil {
				t.Fatal(err)
			}
			if beforeToken {
				// Step until the run parks, answer, and only then let the
				// park task store its token.
				state, _ := json.Marshal(run)
				for {
					out, err := f.d.Handle(ctx, Event{Action: "step", State: state})
					if err != nil {
						t.Fatal(err)
					}
					state, _ = json.Marshal(out)
					if out.(agent.RunState).Parked() {
						break
					}
				}
				f.sfn.inputs[run.RunID] = string(state)
				if _, err := f.d.Deliver(ctx, input("/yes"), func(string) {}); err != nil {
					t.Fatal(err)
				}
				if st, done := f.execute(t, run.RunID, "tok"); !done || st.Failed() {
					t.Fatalf("run did not finish after the late park: %+v", st)
				}
			} else {
				if _, done := f.execute(t, run.RunID, "tok"); done {
					t.Fatal("run finished without approval")
				}
				got, err := f.d.Deliver(ctx, input("/yes"), func(string) {})
				if err != nil {
					t.Fatal(err)
				}
				if got.RunID != run.RunID {
					t.Errorf("answer delivered to run %s, want the parked %s", got.RunID, run.RunID)
				}
				if st, done := f.execute(t, run.RunID, "tok"); !done || st.Failed() {
					t.Fatalf("run did not finish after /yes: %+v", st)
				}
			}
			if f.tool.n != 1 {
				t.Errorf("tool ran %d times, want 1", f.tool.n)
			}
		})
	}
}

func TestFailActionTellsAndReleases(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	run, err := f.d.Deliver(ctx, input("hi"), func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	state, _ := json.Marshal(run)
	var withErr map[string]any
	json.Unmarshal(state, &withErr)
	withErr["error_info"] = map[string]string{"Error": "Lambda.ServiceException", "Cause": "boom"}
	state, _ = json.Marshal(withErr)
	out, err := f.d.Handle(ctx, Event{Action: "fail", State: state})
	if err != nil {
		t.Fatal(err)
	}
	st := out.(agent.RunState)
	if st.Step != agent.StepDone || st.ErrorCode != agent.CodeInternal {
		t.Errorf("state after fail = %+v", st)
	}
	if _, held := f.lanes.owners["s"]; held {
		t.Error("lane still held after a failed run")
	}
	r, _ := f.d.Loop.Store.GetRun(ctx, run.RunID)
	if r.Status != "failed" {
		t.Errorf("run status = %s, want failed", r.Status)
	}
}

// withError returns st as the state machine's Catch passes it on: with
// the caught error under key.
func withError(t *testing.T, st any, key string, info map[string]string) json.RawMessage {
	t.Helper()
	b, _ := json.Marshal(st)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m[key] = info
	b, _ = json.Marshal(m)
	return b
}

// park steps a run until it waits for approval and returns its state.
func (f *fixture) park(t *testing.T, run agent.RunState) agent.RunState {
	t.Helper()
	state, _ := json.Marshal(run)
	for range 10 {
		out, err := f.d.Handle(context.Background(), Event{Action: "step", State: state})
		if err != nil {
			t.Fatal(err)
		}
		if st := out.(agent.RunState); st.Parked() {
			return st
		}
		state, _ = json.Marshal(out)
	}
	t.Fatal("the run did not park")
	return agent.RunState{}
}

// A failed run passes its lane on: the run queued behind it starts, also
// when the run had already finished and only its hand-off failed.
func TestFailActionStartsTheQueuedRun(t *testing.T) {
	for _, finished := range []bool{false, true} {
		t.Run(fmt.Sprintf("finished=%v", finished), func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			first, err := f.d.Deliver(ctx, input("one"), func(string) {})
			if err != nil {
				t.Fatal(err)
			}
			second, err := f.d.Deliver(ctx, input("two"), func(string) {})
			if err != nil {
				t.Fatal(err)
			}
			if finished {
				// The run finished (saved done: one step thought and
				// finished it), but its hand-off failed: the Fail task
				// gets the state before that step.
				if st, err := f.d.Loop.Step(ctx, first); err != nil || st.Step != agent.StepDone {
					t.Fatalf("step: %v at %s, want done", err, st.Step)
				}
			}
			out, err := f.d.Handle(ctx, Event{Action: "fail", State: withError(t, first, "error_info", map[string]string{"Error": "Transient", "Cause": "release lane: throttled"})})
			if err != nil {
				t.Fatal(err)
			}
			if st := out.(agent.RunState); st.Step != agent.StepDone {
				t.Errorf("state after fail = %+v, want done", st)
			}
			r, _ := f.d.Loop.Store.GetRun(ctx, first.RunID)
			want := store.RunFailed
			if finished {
				want = store.RunDone // recorded once, as it ended
			}
			if r.Status != want {
				t.Errorf("first run is %s, want %s", r.Status, want)
			}
			if diff := cmp.Diff([]string{first.RunID, second.RunID}, f.sfn.started); diff != "" {
				t.Errorf("executions (-want +got):\n%s", diff)
			}
			if owner := f.lanes.owners["s"]; owner != second.RunID {
				t.Errorf("lane held by %q, want the queued run %s", owner, second.RunID)
			}
		})
	}
}

// finishes records the outcomes a replier is told.
type finishes struct{ told []string }

func (*finishes) Delta(agent.RunState, string)            {}
func (*finishes) Approval(agent.RunState, store.Approval) {}
func (r *finishes) Finish(st agent.RunState, res agent.Result) {
	r.told = append(r.told, st.RunID+" "+res.Content)
}

// A Step task that died between the commit that finished its run and
// the telling is caught into Fail, which finds the run done and still
// holding its lane: it tells the answer, and passes the lane on.
func TestFailActionRetellsAFinishedRun(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	run, err := f.d.Deliver(ctx, input("one"), func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := f.d.Loop.Step(ctx, run); err != nil || st.Step != agent.StepDone {
		t.Fatalf("step: %v at %s, want done", err, st.Step) // no replier: nothing told
	}
	rec := &finishes{}
	f.d.Loop.Replier = rec
	if _, err := f.d.Handle(ctx, Event{Action: "fail", State: withError(t, run, "error_info", map[string]string{"Error": "Lambda.Unknown"})}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{run.RunID + " echo: one"}, rec.told); diff != "" {
		t.Errorf("told (-want +got):\n%s", diff)
	}
	if _, held := f.lanes.owners["s"]; held {
		t.Error("lane still held")
	}
	// A repeated Fail, the lane passed on, tells nothing again.
	if _, err := f.d.Handle(ctx, Event{Action: "fail", State: withError(t, run, "error_info", map[string]string{"Error": "Lambda.Unknown"})}); err != nil {
		t.Fatal(err)
	}
	if len(rec.told) != 1 {
		t.Errorf("told %q, want the answer once", rec.told)
	}
}

// A run that fails while it waits for approval (its park task failed)
// drops the approval: the session's next "/yes" answers nothing stale.
func TestFailWhileParkedDropsTheApproval(t *testing.T) {
	f := newFixture(t)
	f.llm.replies = []llm.Response{{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "write", Arguments: `{}`}}}}}
	ctx := context.Background()
	run, err := f.d.Deliver(ctx, input("write it"), func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	parked := f.park(t, run)
	if _, err := f.d.Handle(ctx, Event{Action: "fail", State: withError(t, parked, "error_info", map[string]string{"Error": "Lambda.Unknown"})}); err != nil {
		t.Fatal(err)
	}
	ap, err := f.d.Loop.Store.GetApproval(ctx, parked.Approval)
	if err != nil || ap.Status != store.ApprovalDenied || ap.Decision != "abandoned" {
		t.Errorf("approval after the run failed: %+v, %v; want denied as abandoned", ap, err)
	}
	if _, held := f.lanes.owners["s"]; held {
		t.Error("lane still held")
	}
	if f.tool.n != 0 {
		t.Errorf("the tool ran %d times", f.tool.n)
	}
}

// The release action ends a run whose Fail task failed too: the run is
// failed without the finish step, its open calls get results, its
// approval is dropped and the next run starts.
func TestReleaseAction(t *testing.T) {
	f := newFixture(t)
	f.llm.replies = []llm.Response{{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "write", Arguments: `{}`}}}}}
	ctx := context.Background()
	first, err := f.d.Deliver(ctx, input("write it"), func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	parked := f.park(t, first)
	state := withError(t, parked, "error_info", map[string]string{"Error": "Runtime.ExitError", "Cause": "killed"})
	state = withError(t, json.RawMessage(state), "fail_error_info", map[string]string{"Error": "Runtime.ExitError", "Cause": "killed again"})
	// The approval is pending: a new message would deny it; queue the
	// next run directly.
	second, err := f.d.Loop.Enqueue(ctx, input("two"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.d.Handle(ctx, Event{Action: "release", State: state})
	if err != nil {
		t.Fatal(err)
	}
	st := out.(agent.RunState)
	if st.Step != agent.StepDone || st.ErrorCode != agent.CodeInternal {
		t.Errorf("state after release = %+v", st)
	}
	r, _ := f.d.Loop.Store.GetRun(ctx, first.RunID)
	if r.Status != store.RunFailed {
		t.Errorf("run is %s, want failed", r.Status)
	}
	ap, err := f.d.Loop.Store.GetApproval(ctx, parked.Approval)
	if err != nil || ap.Status != store.ApprovalDenied {
		t.Errorf("approval after release: %+v, %v; want denied", ap, err)
	}
	msgs, _ := f.d.Loop.Store.Messages(ctx, "s")
	var results []string
	for _, m := range msgs {
		if m.Role == chat.Tool {
			results = append(results, m.ToolCallID+": "+m.Content)
		}
	}
	if len(results) != 1 || !strings.HasPrefix(results[0], "c1: error:") {
		t.Errorf("tool results %q, want an error result for c1", results)
	}
	if f.tool.n != 0 {
		t.Errorf("the tool ran %d times", f.tool.n)
	}
	if diff := cmp.Diff([]string{first.RunID, second.RunID}, f.sfn.started); diff != "" {
		t.Errorf("executions (-want +got):\n%s", diff)
	}
	// Released twice (a retried task): nothing changes.
	if _, err := f.d.Handle(ctx, Event{Action: "release", State: state}); err != nil {
		t.Fatal(err)
	}
	if r2, _ := f.d.Loop.Store.GetRun(ctx, first.RunID); r2.Status != store.RunFailed || string(r2.State) != string(r.State) {
		t.Errorf("a second release changed the run: %s %s", r2.Status, r2.State)
	}
}

// The expire action ends a run whose approval task timed out: the approval
// is denied as expired, the calls do not run, the user is told and the
// lane is released. An answer that came first wins.
func TestExpireAction(t *testing.T) {
	for _, answered := range []bool{false, true} {
		t.Run(fmt.Sprintf("answered=%v", answered), func(t *testing.T) {
			f := newFixture(t)
			f.llm.replies = []llm.Response{
				{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "write", Arguments: `{}`}}}},
				{Message: chat.Message{Role: chat.Assistant, Content: "written"}},
			}
			ctx := context.Background()
			run, err := f.d.Deliver(ctx, input("write it"), func(string) {})
			if err != nil {
				t.Fatal(err)
			}
			parked := f.park(t, run)
			if answered {
				ap, err := f.d.Loop.Store.GetApproval(ctx, parked.Approval)
				if err != nil {
					t.Fatal(err)
				}
				if err := f.d.Loop.Answer(ctx, ap, agent.Yes); err != nil {
					t.Fatal(err)
				}
			}
			out, err := f.d.Handle(ctx, Event{Action: "expire", State: withError(t, parked, "error_info", map[string]string{"Error": "States.Timeout"})})
			if err != nil {
				t.Fatal(err)
			}
			st := out.(agent.RunState)
			ap, _ := f.d.Loop.Store.GetApproval(ctx, parked.Approval)
			if answered {
				if st.Step != agent.StepAct || ap.Status != store.ApprovalApproved {
					t.Fatalf("after an answer, expire gave %+v with the approval %s; want the run going on to act", st, ap.Status)
				}
				return
			}
			if st.Step != agent.StepDone || st.ErrorCode != agent.CodeApprovalExpired || !strings.Contains(st.Error, "in time") {
				t.Errorf("state after expire = %+v", st)
			}
			if ap.Status != store.ApprovalDenied || ap.Decision != "expired" {
				t.Errorf("approval %+v, want denied as expired", ap)
			}
			if _, err := f.d.Loop.PendingApproval(ctx, "s"); !errors.Is(err, agent.ErrNoPendingApproval) {
				t.Errorf("pending approval after expiry: %v", err)
			}
			if f.tool.n != 0 {
				t.Errorf("the tool ran %d times", f.tool.n)
			}
			if r, _ := f.d.Loop.Store.GetRun(ctx, run.RunID); r.Status != store.RunFailed {
				t.Errorf("run is %s, want failed", r.Status)
			}
			if _, held := f.lanes.owners["s"]; held {
				t.Error("lane still held after the approval expired")
			}
		})
	}
}

// The state machine retries errors named "Transient": the Lambda runtime
// names an error after its type (the pointed-to type for a pointer).
func TestTransientErrorName(t *testing.T) {
	f := newFixture(t)
	_, err := f.d.Handle(context.Background(), Event{Action: "call", State: json.RawMessage(`{"agent":"a","session_id":"nope","step":"act"}`), CallID: "c1"})
	typ := reflect.TypeOf(err)
	if typ == nil || typ.Kind() != reflect.Pointer || typ.Elem().Name() != "Transient" {
		t.Errorf("a failed tool call returned %T (%v); the state machine retries only Transient", err, err)
	}
}
