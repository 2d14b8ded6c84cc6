package sfn

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssfn "github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"
	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
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

func (f *fakeSFN) StartExecution(_ context.Context, in *awssfn.StartExecutionInput, _ ...func(*awssfn.Options)) (*awssfn.StartExecutionOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := aws.ToString(in.Name)
	if _, dup := f.inputs[name]; dup {
		return nil, &sfntypes.ExecutionAlreadyExists{Message: aws.String("Execution Already Exists: " + name)}
	}
	f.inputs[name] = aws.ToString(in.Input)
	f.started = append(f.started, name)
	return &awssfn.StartExecutionOutput{ExecutionArn: aws.String("arn:exec:" + name)}, nil
}

func (f *fakeSFN) SendTaskSuccess(_ context.Context, in *awssfn.SendTaskSuccessInput, _ ...func(*awssfn.Options)) (*awssfn.SendTaskSuccessOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tok := aws.ToString(in.TaskToken)
	if !f.tokens[tok] {
		return nil, &sfntypes.InvalidToken{Message: aws.String("Invalid token")}
	}
	delete(f.tokens, tok)
	f.outputs[tok] = aws.ToString(in.Output)
	return &awssfn.SendTaskSuccessOutput{}, nil
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

type provider struct{ replies []llm.Response }

func (p *provider) Name() string { return "fake" }
func (p *provider) Generate(_ context.Context, req llm.Request, _ llm.OnDelta) (llm.Response, error) {
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
	return tool.Policy{RequiresApproval: true, MinAutonomy: tool.Supervised}
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
