package sfn

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// tells records everything a replier is told.
type tells struct{ told []string }

func (*tells) Delta(agent.RunState, string) {}
func (r *tells) Approval(st agent.RunState, ap store.Approval) {
	r.told = append(r.told, "approval "+st.RunID)
}
func (r *tells) Finish(st agent.RunState, res agent.Result) {
	r.told = append(r.told, "finish "+st.RunID+" "+res.Content+res.Error)
}

// stopped checks that the run runID ended cancelled, silently.
func (f *fixture) stopped(t *testing.T, runID string) {
	t.Helper()
	r, err := f.d.Loop.Store.GetRun(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	st, err := agent.DecodeState(r)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != store.RunFailed || st.Step != agent.StepDone || st.ErrorCode != agent.CodeCancelled || !st.Silent {
		t.Errorf("run %s is %s at %s (%s, silent %v); want failed at done, cancelled, silent", runID, r.Status, st.Step, st.ErrorCode, st.Silent)
	}
}

// TestStopNothingRunning: a session without a run has nothing to stop,
// and stopping one session reaches no other session's run.
func TestStopNothingRunning(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if ok, err := f.d.Stop(ctx, "s"); err != nil || ok {
		t.Errorf("Stop of an empty session = %v, %v; want false", ok, err)
	}
	run, err := f.d.Deliver(ctx, input("one"), func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := f.d.Stop(ctx, "someone-else"); err != nil || ok {
		t.Errorf("Stop of another session = %v, %v; want false", ok, err)
	}
	if r, _ := f.d.Loop.Store.GetRun(ctx, run.RunID); r.Status != store.RunQueued {
		t.Errorf("run of the session not stopped is %s, want queued", r.Status)
	}
	if st, done := f.execute(t, run.RunID, ""); !done || st.Failed() {
		t.Errorf("run after a stop of another session: %+v", st)
	}
}

// TestStopInFlight: the user stops a run while its state machine task
// waits for the model. The task's commit is refused (the run is done):
// its answer is neither kept nor told, the execution ends at done, and
// the lane is free.
func TestStopInFlight(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	rec := &tells{}
	f.d.Loop.Replier = rec
	run, err := f.d.Deliver(ctx, input("one"), func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	f.llm.during = func() {
		if ok, err := f.d.Stop(ctx, "s"); err != nil || !ok {
			t.Errorf("Stop = %v, %v; want stopped", ok, err)
		}
	}
	st, done := f.execute(t, run.RunID, "")
	if !done || st.ErrorCode != agent.CodeCancelled {
		t.Errorf("execution ended at %+v, want done and cancelled", st)
	}
	f.stopped(t, run.RunID)
	if len(rec.told) != 0 {
		t.Errorf("told %q after the stop, want nothing", rec.told)
	}
	msgs, _ := f.d.Loop.Store.Messages(ctx, "s")
	for _, m := range msgs {
		if m.Role == chat.Assistant {
			t.Errorf("history keeps %q, answered after the stop", m.Content)
		}
	}
	if _, held := f.lanes.owners["s"]; held {
		t.Error("lane still held after the stop")
	}
}

// TestStopParked: a run parked at its approval is stopped; its execution
// is sent on with the ended state, the approval is dropped, and the
// approval's later answer or time-out does nothing: no tool runs, nothing
// is told, the run stays as the stop ended it.
func TestStopParked(t *testing.T) {
	for _, later := range []string{"answer", "timeout"} {
		t.Run(later, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			f.llm.replies = []llm.Response{
				{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "write", Arguments: `{}`}}}},
				{Message: chat.Message{Role: chat.Assistant, Content: "written"}},
			}
			run, err := f.d.Deliver(ctx, input("write it"), func(string) {})
			if err != nil {
				t.Fatal(err)
			}
			parked, done := f.execute(t, run.RunID, "tok")
			if done {
				t.Fatal("the run did not park")
			}
			rec := &tells{}
			f.d.Loop.Replier = rec
			if ok, err := f.d.Stop(ctx, "s"); err != nil || !ok {
				t.Fatalf("Stop = %v, %v; want stopped", ok, err)
			}
			f.stopped(t, run.RunID)
			// The execution was sent on, and ends at done.
			if st, done := f.execute(t, run.RunID, "tok"); !done || st.ErrorCode != agent.CodeCancelled {
				t.Errorf("execution after the stop at %+v, want done and cancelled", st)
			}
			ap, err := f.d.Loop.Store.GetApproval(ctx, parked.Approval)
			if err != nil || ap.Status != store.ApprovalDenied || ap.Decision != "abandoned" {
				t.Errorf("approval %+v, %v; want denied as abandoned", ap, err)
			}
			switch later {
			case "answer":
				in := input("/yes")
				in.Approval = parked.Approval
				if _, err := f.d.Deliver(ctx, in, func(string) {}); !errors.Is(err, agent.ErrStaleApproval) {
					t.Errorf("answer after the stop: %v, want ErrStaleApproval", err)
				}
			case "timeout":
				// The approval task times out all the same (its token
				// had not been sent on): the execution goes on from the
				// parked state and must find the run done.
				out, err := f.d.Handle(ctx, Event{Action: "expire", State: withError(t, parked, "error_info", map[string]string{"Error": "States.Timeout"})})
				if err != nil {
					t.Fatal(err)
				}
				f.sfn.inputs[run.RunID], _ = marshal(out)
				if st, done := f.execute(t, run.RunID, "tok2"); !done || st.ErrorCode != agent.CodeCancelled {
					t.Errorf("execution after the time-out at %+v, want done and cancelled", st)
				}
			}
			f.stopped(t, run.RunID)
			if f.tool.n != 0 {
				t.Errorf("the tool ran %d times after the stop", f.tool.n)
			}
			if len(rec.told) != 0 {
				t.Errorf("told %q after the stop, want nothing", rec.told)
			}
			if _, held := f.lanes.owners["s"]; held {
				t.Error("lane still held after the stop")
			}
		})
	}
}

// TestStopStartsTheQueuedRun: stopping the running run passes the lane
// to the one queued behind it, which starts and answers; the stopped
// run's execution, stepping on, ends at done telling nothing.
func TestStopStartsTheQueuedRun(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	rec := &tells{}
	f.d.Loop.Replier = rec
	first, err := f.d.Deliver(ctx, input("one"), func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	second, err := f.d.Deliver(ctx, input("two"), func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := f.d.Stop(ctx, "s"); err != nil || !ok {
		t.Fatalf("Stop = %v, %v; want stopped", ok, err)
	}
	if diff := cmp.Diff([]string{first.RunID, second.RunID}, f.sfn.started); diff != "" {
		t.Fatalf("executions after the stop (-want +got):\n%s", diff)
	}
	if st, done := f.execute(t, first.RunID, ""); !done || st.ErrorCode != agent.CodeCancelled {
		t.Errorf("stopped run's execution ended at %+v, want done and cancelled", st)
	}
	f.stopped(t, first.RunID)
	if st, done := f.execute(t, second.RunID, ""); !done || st.Failed() {
		t.Fatalf("queued run after the stop: %+v", st)
	}
	if diff := cmp.Diff([]string{"finish " + second.RunID + " echo: two"}, rec.told); diff != "" {
		t.Errorf("told (-want +got):\n%s", diff)
	}
	if _, held := f.lanes.owners["s"]; held {
		t.Error("lane still held after the last run")
	}
}

func marshal(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// TestStopBeforeCalls: a run stopped after its think asked for a call
// that needs no approval, before the state machine's call task runs it:
// even with the call left without a result (the stop could not close
// it), the call task starts nothing, and the act step ends at done
// telling nothing.
func TestStopBeforeCalls(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.llm.replies = []llm.Response{
		{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "write", Arguments: `{}`}}}},
	}
	in := input("write it")
	in.Autonomy = tool.Full
	run, err := f.d.Deliver(ctx, in, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	state, _ := json.Marshal(run)
	for step := ""; step != agent.StepAct; {
		out, err := f.d.Handle(ctx, Event{Action: "step", State: state})
		if err != nil {
			t.Fatal(err)
		}
		if step = out.(agent.RunState).Step; step == agent.StepDone {
			t.Fatal("the run ended before act")
		}
		state, _ = json.Marshal(out)
	}
	f.sfn.inputs[run.RunID] = string(state) // the execution goes on at act
	rec := &tells{}
	f.d.Loop.Replier = rec
	if ok, err := f.d.Stop(ctx, "s"); err != nil || !ok {
		t.Fatalf("Stop = %v, %v; want stopped", ok, err)
	}
	msgs, _ := f.d.Loop.Store.Messages(ctx, "s")
	for _, m := range msgs {
		if m.Role == chat.Tool {
			if err := f.d.Loop.Store.DeleteMessages(ctx, "s", []string{m.Key}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if st, done := f.execute(t, run.RunID, ""); !done || st.ErrorCode != agent.CodeCancelled {
		t.Errorf("execution after the stop at %+v, want done and cancelled", st)
	}
	if f.tool.n != 0 {
		t.Errorf("the tool ran %d times after the stop", f.tool.n)
	}
	f.stopped(t, run.RunID)
	if len(rec.told) != 0 {
		t.Errorf("told %q after the stop, want nothing", rec.told)
	}
}
