package main

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// runStopped checks that the run ended cancelled, silently.
func (f *inlineFixture) runStopped(t *testing.T, runID string) {
	t.Helper()
	run, err := f.env.Store.GetRun(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	st, err := agent.DecodeState(run)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.RunFailed || st.ErrorCode != agent.CodeCancelled || !st.Silent {
		t.Errorf("run %s is %s (%s, silent %v); want failed, cancelled, silent", runID, run.Status, st.ErrorCode, st.Silent)
	}
}

// TestInlineStop: the user stops a run while its inline invocation waits
// for the model, with another message queued behind it. The stop takes
// the run's lease and ends it; the queued run starts and answers. The
// stopped invocation then gets its answer, but its commit is refused: it
// writes nothing, tells nothing, and ends without an error (no retry).
// Nothing is handed to the state machine. A second stop finds nothing.
func TestInlineStop(t *testing.T) {
	f := newInlineFixture(t)
	arrived, release := f.holdFirstModelCall()
	f.env.LLM.Enqueue(fakellm.Reply{Content: "Too late."}, fakellm.Reply{Content: "Next."})
	st := f.deliver(t, "s-stop", "hi")
	<-arrived
	next := f.deliver(t, "s-stop", "and then?")
	ok, err := f.sender.Driver.Stop(t.Context(), "s-stop")
	if err != nil || !ok {
		t.Fatalf("Stop = %v, %v; want stopped", ok, err)
	}
	f.runStopped(t, st.RunID)
	cloudtest.Wait(t, 10*time.Second, "the queued run to finish", func() bool {
		r, err := f.env.Store.GetRun(t.Context(), next.RunID)
		return err == nil && r.Status.Finished()
	})
	close(release)
	f.env.Lambda.Wait()

	f.runStopped(t, st.RunID)
	f.runDone(t, next.RunID)
	for _, d := range f.env.Lambda.Deliveries() {
		if !slices.Equal(d.Errors, []string{""}) {
			t.Errorf("delivery attempts %q, want one without error", d.Errors)
		}
	}
	if got, want := f.history(t, "s-stop"), []string{"user: hi", "user: and then?", "assistant: Next."}; !slices.Equal(got, want) {
		t.Errorf("history %q, want %q", got, want)
	}
	if got := f.finals("s-stop"); !slices.Equal(got, []string{"Next."}) {
		t.Errorf("final frames %q, want only the queued run's", got)
	}
	if s := f.env.SFN.Started(); len(s) != 0 {
		t.Errorf("executions started %q, want none", s)
	}
	if !f.laneFree(t, "s-stop") {
		t.Error("the lane is still held")
	}
	if ok, err := f.sender.Driver.Stop(t.Context(), "s-stop"); err != nil || ok {
		t.Errorf("Stop with nothing running = %v, %v; want false", ok, err)
	}
}

// TestInlineStopParked: a run parked for a person's approval, handed to
// the state machine, is stopped: its execution is sent on and ends, the
// call never runs, and the person's later answer is stale; nothing is
// told after the stop.
func TestInlineStopParked(t *testing.T) {
	env := cloudtest.Setup(t)
	remoteSend(t, func(context.Context) { t.Error("the call of a stopped run ran") })
	f := inlineFixtureOn(t, env)
	f.env.LLM.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_send", Name: "remote__send", Arguments: `{"to":"bob"}`}}})
	st := f.deliver(t, "s-park", "send it")
	f.env.Lambda.Wait()
	f.handedOverAt(t, st.RunID, agent.StepWait)
	var parked agent.RunState
	cloudtest.Wait(t, 5*time.Second, "the park task to store its token", func() bool {
		run, err := f.env.Store.GetRun(t.Context(), st.RunID)
		if err != nil {
			return false
		}
		parked, _ = agent.DecodeState(run)
		ap, err := f.env.Store.GetApproval(t.Context(), parked.Approval)
		return err == nil && ap.Token != ""
	})
	frames := len(f.env.APIGW.Frames("conn-s-park"))

	ok, err := f.sender.Driver.Stop(t.Context(), "s-park")
	if err != nil || !ok {
		t.Fatalf("Stop = %v, %v; want stopped", ok, err)
	}
	if x := f.env.SFN.Wait(st.RunID, 10*time.Second); x.Err != nil {
		t.Fatalf("execution of the stopped run: %v", x.Err)
	}
	_, err = f.sender.Driver.Deliver(t.Context(), agent.Input{
		SessionID: "s-park", Agent: "default", Messages: []chat.Message{{Role: chat.User, Content: "/yes"}},
		Autonomy: tool.Supervised, Interactive: true, Reply: agent.Reply{Channel: "ws", To: "conn-s-park"}, Approval: parked.Approval,
	}, func(string) {})
	if !errors.Is(err, agent.ErrStaleApproval) {
		t.Errorf("the answer after the stop: %v, want ErrStaleApproval", err)
	}
	f.env.Lambda.Wait()
	f.runStopped(t, st.RunID)
	if got := f.env.APIGW.Frames("conn-s-park")[frames:]; len(got) != 0 {
		t.Errorf("frames after the stop %v, want none", got)
	}
	if !f.laneFree(t, "s-park") {
		t.Error("the lane is still held")
	}
}

// TestStateMachineStop: the user stops a run while a state machine task
// (the run was handed over: its think may outlive the invocation) waits
// for the model. That task holds no lease; the store refuses its commit,
// the run being done: its answer is neither kept nor told, and its
// execution ends without an error.
func TestStateMachineStop(t *testing.T) {
	f := newInlineFixture(t)
	arrived, release := f.holdFirstModelCall()
	f.env.LLM.Enqueue(fakellm.Reply{Content: "Too late."})
	f.invocationsLast(6 * time.Minute)
	st := f.deliver(t, "s-sm", "hi")
	f.env.Lambda.Wait()
	f.handedOverAt(t, st.RunID, agent.StepBegin)
	<-arrived
	ok, err := f.sender.Driver.Stop(t.Context(), "s-sm")
	if err != nil || !ok {
		t.Fatalf("Stop = %v, %v; want stopped", ok, err)
	}
	close(release)
	if x := f.env.SFN.Wait(st.RunID, 10*time.Second); x.Err != nil {
		t.Fatalf("execution of the stopped run: %v", x.Err)
	}
	f.runStopped(t, st.RunID)
	if got, want := f.history(t, "s-sm"), []string{"user: hi"}; !slices.Equal(got, want) {
		t.Errorf("history %q, want %q", got, want)
	}
	if got := f.finals("s-sm"); len(got) != 0 {
		t.Errorf("final frames %q after the stop, want none", got)
	}
	if !f.laneFree(t, "s-sm") {
		t.Error("the lane is still held")
	}
}
