package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentenv"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// fixture is the step handler, built from the environment as in Lambda,
// and a second root standing for the function that delivers messages (ws).
type fixture struct {
	env    *cloudtest.Env
	handle func(context.Context, sfn.Event) (any, error)
	sender *cloud.Root
}

func newFixture(t *testing.T) *fixture {
	env := cloudtest.Setup(t)
	h, err := handler(t.Context())
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	sender := env.Root(t, "ws")
	return &fixture{env: env, handle: h, sender: sender}
}

// event loads a sample and its state.
func event(t *testing.T, name string) (sfn.Event, agent.RunState) {
	t.Helper()
	var ev sfn.Event
	cloudtest.LoadEvent(t, "step/"+name, &ev)
	var st agent.RunState
	if err := json.Unmarshal(ev.State, &st); err != nil {
		t.Fatal(err)
	}
	return ev, st
}

// deliver queues the sample's run, as the ws function does for the
// message of events/ws/message.json, and checks that the execution it
// starts gets the state the sample holds.
func (f *fixture) deliver(t *testing.T, sample agent.RunState) {
	t.Helper()
	in := agent.Input{
		RunID: sample.RunID, SessionID: sample.SessionID, Agent: sample.Agent,
		Messages: []chat.Message{{Role: chat.User, Content: "hi"}},
		Autonomy: tool.Supervised, Stream: true, Interactive: true, Reply: sample.Reply,
	}
	if _, err := f.sender.Driver.Deliver(t.Context(), in, func(string) {}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{sample.RunID}, f.env.SFN.Started()); diff != "" {
		t.Fatalf("executions started (-want +got):\n%s", diff)
	}
	var started agent.RunState
	if err := json.Unmarshal([]byte(f.env.SFN.Execution(sample.RunID).Input), &started); err != nil {
		t.Fatal(err)
	}
	begin := sample
	begin.Step, begin.Calls, begin.Approval, begin.Usage = agent.StepBegin, nil, "", chat.Usage{}
	if diff := cmp.Diff(begin, started, cmpopts.IgnoreFields(agent.RunState{}, "StartedAt")); diff != "" {
		t.Fatalf("the execution's input differs from the sample's state (-sample +started):\n%s", diff)
	}
}

func (f *fixture) step(t *testing.T, ev sfn.Event) agent.RunState {
	t.Helper()
	out, err := f.handle(t.Context(), ev)
	if err != nil {
		t.Fatalf("handle %s: %v", ev.Action, err)
	}
	st, ok := out.(agent.RunState)
	if !ok {
		t.Fatalf("handle %s returned %T", ev.Action, out)
	}
	return st
}

func stepEvent(t *testing.T, st agent.RunState) sfn.Event {
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return sfn.Event{Action: "step", State: b}
}

// laneFree reports whether the session's lane can be taken.
func (f *fixture) laneFree(t *testing.T, sessionID string) bool {
	ok, err := f.env.Store.AcquireLane(t.Context(), sessionID, "probe", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if ok {
		f.env.Store.ReleaseLane(t.Context(), sessionID, "probe")
	}
	return ok
}

// TestStepAndCall runs a turn with a tool call through the samples step
// and call: the model asks for load_skill, the call runs, the model
// answers, and the answer streams to the WebSocket connection.
func TestStepAndCall(t *testing.T) {
	f := newFixture(t)
	ev, sample := event(t, "step.json")
	f.deliver(t, sample)
	f.env.LLM.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_1", Name: "load_skill", Arguments: `{"name":"web-research"}`}}},
		fakellm.Reply{Content: "Here is what I found."},
	)

	st := f.step(t, ev)
	if st.Step != agent.StepApprove {
		t.Fatalf("after begin, which thinks: step %q, want approve", st.Step)
	}
	for st.Step != agent.StepAct {
		if st.Step == agent.StepDone {
			t.Fatal("the run ended without calling the tool")
		}
		st = f.step(t, stepEvent(t, st))
	}
	callEv, callSample := event(t, "call.json")
	if diff := cmp.Diff(callSample.Calls, st.Calls); diff != "" {
		t.Fatalf("calls of the act step differ from the call sample (-sample +got):\n%s", diff)
	}
	if out, err := f.handle(t.Context(), callEv); err != nil {
		t.Fatalf("call: %v (%v)", err, out)
	}
	msgs, err := f.env.Store.Messages(t.Context(), sample.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	last := msgs[len(msgs)-1]
	if last.Role != chat.Tool || last.ToolCallID != "call_1" || last.Content == "" {
		t.Fatalf("last message after the call = %+v, want load_skill's result", last.Message)
	}
	for st.Step != agent.StepDone {
		st = f.step(t, stepEvent(t, st))
	}
	if st.Failed() {
		t.Fatalf("run failed: %s", st.Error)
	}
	frames := f.env.APIGW.WaitFrame(sample.Reply.To, "final", 5*time.Second)
	final := frames[len(frames)-1]
	if final["text"] != "Here is what I found." || final["run_id"] != sample.RunID {
		t.Errorf("final frame = %v", final)
	}
	var streamed string
	for _, fr := range frames {
		if fr["type"] == "delta" {
			streamed += fr["text"].(string)
		}
	}
	if streamed != "Here is what I found." {
		t.Errorf("deltas streamed %q", streamed)
	}
	reqs := f.env.LLM.Requests()
	wantTools := []string{"list_dir", "load_skill", "memory_forget", "memory_get", "memory_search", "memory_store", "read_file", "schedule", "web_fetch", "workspace_memory", "write_file"}
	if len(reqs) != 2 || reqs[0].Messages[0].Role != "system" || !cmp.Equal(wantTools, reqs[0].Tools) {
		t.Errorf("model requests: %d, first with tools %v; want 2, the first with %v", len(reqs), reqs[0].Tools, wantTools)
	}
	run, err := f.env.Store.GetRun(t.Context(), sample.RunID)
	if err != nil || run.Status != store.RunDone {
		t.Errorf("run = %+v, %v; want done", run, err)
	}
	if !f.laneFree(t, sample.SessionID) {
		t.Error("the lane is still held after the run")
	}
}

// TestRemembersConversation: the step that ends a run of a session with
// an owner remembers the exchange as a conversation memory of that owner,
// as the local server does, and another instance of the function, which
// searched that owner's memories before, finds it.
func TestRemembersConversation(t *testing.T) {
	f := newFixture(t)
	other := f.env.Root(t, "step")
	if res, err := other.Memory.Search(t.Context(), "default", "key:key_sample", "cat Miso", memory.SearchOptions{}); err != nil || len(res.Hits) != 0 {
		t.Fatalf("search before the run = %+v, %v; want nothing", res, err)
	}
	in := agent.Input{
		RunID: "run-remember", SessionID: "s-remember", Agent: "default", Owner: "key:key_sample",
		Messages: []chat.Message{{Role: chat.User, Content: "My cat is called Miso."}},
		Autonomy: tool.Supervised, Reply: agent.Reply{Channel: "ws", To: "conn-remember"},
	}
	if _, err := f.sender.Driver.Deliver(t.Context(), in, func(string) {}); err != nil {
		t.Fatal(err)
	}
	var st agent.RunState
	if err := json.Unmarshal([]byte(f.env.SFN.Execution(in.RunID).Input), &st); err != nil {
		t.Fatal(err)
	}
	f.env.LLM.Enqueue(fakellm.Reply{Content: "Noted: Miso."})
	for st.Step != agent.StepDone {
		st = f.step(t, stepEvent(t, st))
	}
	if st.Failed() {
		t.Fatalf("run failed: %s", st.Error)
	}
	got, err := other.Memory.Get(t.Context(), "default", in.Owner, "run:"+in.RunID)
	want := "User: My cat is called Miso.\n\nAssistant: Noted: Miso."
	if err != nil || got.Category != memory.Conversation || got.Text != want || got.Source != "session:"+in.SessionID {
		t.Errorf("conversation memory = %+v, %v; want the exchange", got, err)
	}
	res, err := other.Memory.Search(t.Context(), "default", in.Owner, "cat Miso", memory.SearchOptions{})
	if err != nil || len(res.Hits) != 1 || res.Hits[0].Entry.Key != "run:"+in.RunID {
		t.Errorf("search of the owner's memories = %+v, %v; want the exchange", res, err)
	}
	if jobs, err := f.env.Store.Jobs(t.Context(), agent.RecordJob, 10); err != nil || len(jobs) != 0 {
		t.Errorf("queued exchanges after the run = %v, %v; want none", jobs, err)
	}
}

// TestPark stores the task token of the park sample with the approval,
// and an answer then resumes the execution with it.
func TestPark(t *testing.T) {
	f := newFixture(t)
	ev, sample := event(t, "park.json")
	f.deliver(t, sample)
	ctx := t.Context()
	ap := store.Approval{ID: sample.Approval, SessionID: sample.SessionID, RunID: sample.RunID, Calls: []string{"call_1"},
		Tools: []string{"web_fetch"}, Prompt: "Approval needed.", Status: store.ApprovalPending, CreatedAt: time.Now().UTC()}
	if err := f.env.Store.CreateApproval(ctx, ap); err != nil {
		t.Fatal(err)
	}
	// The run is parked, as its approve step leaves it.
	run, err := f.env.Store.GetRun(ctx, sample.RunID)
	if err != nil {
		t.Fatal(err)
	}
	parked := sample
	parked.Step, parked.Approval = agent.StepWait, ap.ID
	run.State, _ = json.Marshal(parked)
	run.Status = store.RunRunning
	if err := f.env.Store.CommitRun(ctx, store.Commit{Run: run}); err != nil {
		t.Fatal(err)
	}
	resumed := f.env.SFN.AddToken(ev.TaskToken)
	if _, err := f.handle(ctx, ev); err != nil {
		t.Fatalf("park: %v", err)
	}
	got, err := f.env.Store.GetApproval(ctx, sample.Approval)
	if err != nil || got.Token != ev.TaskToken {
		t.Fatalf("approval after park = %+v, %v; want the task token stored", got, err)
	}
	if !f.env.SFN.TokenLive(ev.TaskToken) {
		t.Fatal("park resumed an unanswered approval")
	}
	st, err := f.sender.Driver.Deliver(ctx, agent.Input{SessionID: sample.SessionID, Agent: sample.Agent, Autonomy: tool.Supervised,
		Messages: []chat.Message{{Role: chat.User, Content: "/yes"}}, Reply: sample.Reply}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if st.RunID != sample.RunID {
		t.Errorf("the answer went to run %s, want the parked %s", st.RunID, sample.RunID)
	}
	select {
	case out := <-resumed:
		var next agent.RunState
		json.Unmarshal([]byte(out), &next)
		if next.Step != agent.StepAct || next.Approval != "" || next.RunID != sample.RunID {
			t.Errorf("resumed with %s; want the run at act", out)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the answer did not resume the execution")
	}
}

// TestFail records the failure of the fail sample: the user is told, the
// run is failed, its input rolled back and the lane released.
func TestFail(t *testing.T) {
	f := newFixture(t)
	ev, sample := event(t, "fail.json")
	f.deliver(t, sample)
	if f.laneFree(t, sample.SessionID) {
		t.Fatal("the lane is free while the run is started")
	}
	st := f.step(t, ev)
	if st.Step != agent.StepDone || st.ErrorCode != agent.CodeInternal {
		t.Fatalf("state after fail = %+v", st)
	}
	frames := f.env.APIGW.WaitFrame(sample.Reply.To, "error", 5*time.Second)
	if e := frames[len(frames)-1]; e["run_id"] != sample.RunID || e["code"] != agent.CodeInternal {
		t.Errorf("error frame = %v", e)
	}
	ctx := t.Context()
	if run, err := f.env.Store.GetRun(ctx, sample.RunID); err != nil || run.Status != store.RunFailed {
		t.Errorf("run = %+v, %v; want failed", run, err)
	}
	if msgs, err := f.env.Store.Messages(ctx, sample.SessionID); err != nil || len(msgs) != 0 {
		t.Errorf("history after the failed run = %d messages, %v; want the input rolled back", len(msgs), err)
	}
	if !f.laneFree(t, sample.SessionID) {
		t.Error("the lane is still held after the failure")
	}
}

// TestHeartbeatsSynced starts the function with an agent's heartbeat in
// AGENTS_CONFIG: its job and schedule are made at the cold start, once
// however many instances start, and a heartbeat taken out of the
// settings is deleted with its schedule at the next.
func TestHeartbeatsSynced(t *testing.T) {
	env := cloudtest.Setup(t)
	// Encoded as the CDK app does from the agents file.
	agents, err := agentenv.Encode(map[string]config.AgentConfig{"default": {Heartbeat: &config.Heartbeat{
		Every: config.Duration(30 * time.Minute), ActiveHours: "08:00-22:00", TZ: "Europe/Berlin"}}}, []string{agentenv.ProviderOpenAI})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(agentenv.Var, agents)
	id := schedule.HeartbeatID("default")
	for range 2 {
		if _, err := handler(t.Context()); err != nil {
			t.Fatalf("handler: %v", err)
		}
	}
	jobs, err := env.Store.Schedule(nil, nil).List(t.Context(), schedule.HeartbeatOwner)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].ID != id || time.Duration(jobs[0].Schedule.Every) != 30*time.Minute || jobs[0].Heartbeat == nil || jobs[0].Heartbeat.TZ != "Europe/Berlin" {
		t.Fatalf("heartbeat jobs = %+v; want the default agent's, every 30m", jobs)
	}
	if s, ok := env.Scheduler.Schedules()[id]; !ok || s.Expression != "rate(30 minutes)" || s.DeadLetterArn != cloudtest.SchedulerDeadLetterARN {
		t.Fatalf("schedules %v; want %s at rate(30 minutes), with the dead-letter queue of SCHEDULER_DEAD_LETTER_ARN", env.Scheduler.Schedules(), id)
	}

	t.Setenv(agentenv.Var, "")
	if _, err := handler(t.Context()); err != nil {
		t.Fatalf("handler: %v", err)
	}
	if jobs, err := env.Store.Schedule(nil, nil).List(t.Context(), schedule.HeartbeatOwner); err != nil || len(jobs) != 0 {
		t.Errorf("heartbeat jobs = %+v, %v; want none", jobs, err)
	}
	if _, ok := env.Scheduler.Schedules()[id]; ok {
		t.Error("the heartbeat's schedule is left")
	}
}
