package main

import (
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/checkin"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

func setup(t *testing.T) (*cloudtest.Env, *checkin.Handler, checkin.Event) {
	env := cloudtest.Setup(t)
	h, err := handler(t.Context())
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	var ev checkin.Event
	cloudtest.LoadEvent(t, "scheduler/check-in.json", &ev)
	return env, h, ev
}

// TestCheckIn runs the sample check-in through the state machine (played
// by the fake with the step handler): the answer goes to the channel, and
// a repeated delivery of the same schedule run does nothing.
func TestCheckIn(t *testing.T) {
	env, h, ev := setup(t)
	env.PlayStep(t)

	res, err := h.Handle(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, want := (agent.Identity{}).Session(ev.Agent, ev.Channel, ev.Key, ev.User); res.SessionID != want {
		t.Errorf("session %s, want %s (the user's)", res.SessionID, want)
	}
	if e := env.SFN.Wait(res.RunID, 5*time.Second); e.Err != nil {
		t.Fatalf("execution: %v", e.Err)
	}
	frames := env.APIGW.WaitFrame(ev.To, "final", 5*time.Second)
	if final := frames[len(frames)-1]; final["run_id"] != res.RunID || final["text"] != "echo: "+ev.Text {
		t.Errorf("final frame = %v", final)
	}

	again, err := h.Handle(t.Context(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if again != res || len(env.SFN.Started()) != 1 {
		t.Errorf("repeated delivery: %+v, executions %v; want the same run, started once", again, env.SFN.Started())
	}
}

// TestCheckInWaitsForApproval queues a check-in behind a run parked for
// approval, without answering the approval.
func TestCheckInWaitsForApproval(t *testing.T) {
	env, h, ev := setup(t)
	ctx := t.Context()
	sender := env.Root(t, "ws")
	owner, sid := agent.Identity{}.Session(ev.Agent, ev.Channel, ev.Key, ev.User)
	first, err := sender.Driver.Deliver(ctx, agent.Input{SessionID: sid, Agent: ev.Agent, Owner: owner, Autonomy: tool.Supervised, Interactive: true,
		Messages: []chat.Message{{Role: chat.User, Content: "write the report"}}, Reply: agent.Reply{Channel: "ws", To: ev.To}}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	ap := store.Approval{ID: first.RunID + "-0", SessionID: sid, RunID: first.RunID, Calls: []string{"call_1"}, Tools: []string{"web_fetch"},
		Prompt: "Approval needed.", Status: store.ApprovalPending, CreatedAt: time.Now().UTC()}
	if err := env.Store.CreateApproval(ctx, ap); err != nil {
		t.Fatal(err)
	}

	res, err := h.Handle(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := env.Store.GetApproval(ctx, ap.ID); got.Status != store.ApprovalPending {
		t.Errorf("the check-in answered the approval: %s", got.Status)
	}
	if run, err := env.Store.GetRun(ctx, res.RunID); err != nil || run.Status != store.RunQueued {
		t.Errorf("check-in run = %+v, %v; want queued", run, err)
	}
	if started := env.SFN.Started(); len(started) != 1 || started[0] != first.RunID {
		t.Errorf("executions %v; want only the parked run's", started)
	}
}
