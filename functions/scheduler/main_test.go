package main

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/dynamo"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/ebscheduler"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/checkin"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

func setup(t *testing.T) (*cloudtest.Env, *cloud.Root, checkin.Event) {
	env := cloudtest.Setup(t)
	if _, err := handler(t.Context()); err != nil {
		t.Fatalf("handler: %v", err)
	}
	h, err := cloud.New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ev checkin.Event
	cloudtest.LoadEvent(t, "scheduler/check-in.json", &ev)
	return env, h, ev
}

// handle sends v to the function's handler, as h builds it, as its event.
func handle(t *testing.T, h *cloud.Root, v any) (any, error) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return h.Scheduler()(t.Context(), b)
}

// TestCheckIn runs the sample check-in through the state machine (played
// by the fake with the step handler): the answer goes to the channel, and
// a repeated delivery of the same schedule run does nothing.
func TestCheckIn(t *testing.T) {
	env, h, ev := setup(t)
	env.PlayStep(t)

	out, err := handle(t, h, ev)
	if err != nil {
		t.Fatal(err)
	}
	res := out.(checkin.Result)
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

	again, err := handle(t, h, ev)
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

	out, err := handle(t, h, ev)
	if err != nil {
		t.Fatal(err)
	}
	res := out.(checkin.Result)
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

// fire delivers the firing of j at j.Next, in, and waits for the run it
// must start to end.
func fire(t *testing.T, env *cloudtest.Env, h *cloud.Root, in any, j schedule.Job) schedule.Firing {
	t.Helper()
	out, err := handle(t, h, in)
	if err != nil {
		t.Fatal(err)
	}
	f := schedule.Firing{JobID: j.ID, At: j.Next}
	if got := out.(checkin.Fired); got.Outcome != "started" || got.RunID != f.RunID() {
		t.Fatalf("delivery = %+v; want the firing's run started", got)
	}
	if e := env.SFN.Wait(f.RunID(), 5*time.Second); e.Err != nil {
		t.Fatalf("execution: %v", e.Err)
	}
	return f
}

// TestJobFiring delivers a job's firing as its schedule sends it
// (events/scheduler/job-firing.json, the scheduled time filled in): the
// function claims it and starts its run through the state machine, whose
// end records the answer on the job's run; the same firing delivered
// again starts nothing.
func TestJobFiring(t *testing.T) {
	env, h, _ := setup(t)
	env.PlayStep(t)
	ctx := t.Context()
	// The job was made five minutes ago (by the CLI or the schedule
	// tool), with its schedule in the group.
	made := time.Now().UTC().Add(-5 * time.Minute)
	jobs := env.Store.Schedule(&ebscheduler.Schedules{API: env.Scheduler.Client(), Group: cloudtest.SchedulerGroup,
		Role: cloudtest.SchedulerRoleARN, Target: cloudtest.SchedulerTargetARN}, func() time.Time { return made })
	j, err := jobs.Create(ctx, schedule.Job{ID: "job_sample", Owner: "user:alice", Agent: "default", Message: "Daily check-in: how are the parser benchmarks?",
		Schedule: schedule.Schedule{Cron: "* * * * *"}})
	if err != nil {
		t.Fatal(err)
	}
	sample, err := os.ReadFile(cloudtest.EventPath(t, "scheduler/job-firing.json"))
	if err != nil {
		t.Fatal(err)
	}
	var in ebscheduler.Delivery
	if err := json.Unmarshal(sample, &in); err != nil || in.Job != j.ID {
		t.Fatalf("the sample delivery %s names job %q, want %q (%v)", sample, in.Job, j.ID, err)
	}
	if want := env.Scheduler.Input(j.ID, j.Next, 0); string(want) == "" {
		t.Fatal("no schedule for the job")
	}
	// The sample's scheduled time is the job's first firing.
	in.ScheduledTime = j.Next.Format(time.RFC3339)

	fire(t, env, h, in, j)
	cloudtest.Wait(t, 5*time.Second, "the run recorded on the job", func() bool {
		runs, err := jobs.Runs(ctx, j.Owner, j.ID, 10)
		return err == nil && len(runs) == 1 && runs[0].Status == schedule.RunDone
	})
	runs, _ := jobs.Runs(ctx, j.Owner, j.ID, 10)
	if runs[0].Reply != "echo: "+j.Message || runs[0].Tokens == 0 {
		t.Errorf("run = %+v; want the echoed answer and its tokens", runs[0])
	}

	again, err := handle(t, h, in)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.(checkin.Fired); got.Outcome != "duplicate" || len(env.SFN.Started()) != 1 {
		t.Errorf("second delivery = %+v, executions %v; want a duplicate, started once", got, env.SFN.Started())
	}
}

// TestJobGone delivers the firing of a job that was deleted while its
// schedule was left behind: nothing runs, and the schedule is deleted.
func TestJobGone(t *testing.T) {
	env, h, _ := setup(t)
	timers := &ebscheduler.Schedules{API: env.Scheduler.Client(), Group: cloudtest.SchedulerGroup, Role: cloudtest.SchedulerRoleARN, Target: cloudtest.SchedulerTargetARN}
	left := schedule.Job{ID: "job_left", Owner: "user:alice", Agent: "default", Message: "hi", Schedule: schedule.Schedule{Cron: "0 9 * * *"}}
	if err := timers.Set(t.Context(), left, true); err != nil {
		t.Fatal(err)
	}
	out, err := handle(t, h, json.RawMessage(env.Scheduler.Input(left.ID, time.Now().UTC().Truncate(time.Minute), 0)))
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(checkin.Fired); got.Outcome != "gone" {
		t.Errorf("delivery = %+v, want gone", got)
	}
	if _, ok := env.Scheduler.Schedules()[left.ID]; ok {
		t.Error("the left schedule is still there")
	}
	if started := env.SFN.Started(); len(started) != 0 {
		t.Errorf("executions %v, want none", started)
	}
}

// TestBadDelivery refuses a delivery whose scheduled time was not filled
// in (a schedule whose input escaped the context attribute).
func TestBadDelivery(t *testing.T) {
	_, h, _ := setup(t)
	if _, err := handle(t, h, ebscheduler.Delivery{Job: "job_x", ScheduledTime: "\u003caws.scheduler.scheduled-time\u003e"}); err == nil {
		t.Error("a delivery without a scheduled time was taken")
	}
}

// TestReminderMadeInChat runs the schedule tool where tools run, in the
// step function: the agent of a stateful session makes a reminder (a
// tool call of the fake model), which becomes a schedule in the group;
// that schedule's delivery to this function runs the reminder's turn in
// the same session, through the state machine.
func TestReminderMadeInChat(t *testing.T) {
	env, h, ev := setup(t)
	env.PlayStep(t)
	ctx := t.Context()
	sender := env.Root(t, "ws")
	owner, sid := agent.Identity{}.Session(ev.Agent, ev.Channel, ev.Key, ev.User)
	env.LLM.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_remind", Name: "schedule",
			Arguments: `{"action":"create","in":"2h","message":"Time to stretch your legs."}`}}},
		fakellm.Reply{Content: "I will remind you in two hours."},
	)
	first, err := sender.Driver.Deliver(ctx, agent.Input{SessionID: sid, Agent: ev.Agent, Owner: owner, Autonomy: tool.Supervised, Interactive: true,
		Messages: []chat.Message{{Role: chat.User, Content: "remind me to stretch in two hours"}}, Reply: agent.Reply{Channel: "ws", To: ev.To}}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	if e := env.SFN.Wait(first.RunID, 5*time.Second); e.Err != nil {
		t.Fatalf("execution: %v", e.Err)
	}
	jobs := env.Store.Schedule(nil, nil)
	made, err := jobs.List(ctx, owner)
	if err != nil || len(made) != 1 {
		t.Fatalf("the owner's jobs = %+v, %v; want the reminder", made, err)
	}
	j := made[0]
	if j.SessionID != sid || j.Agent != ev.Agent || j.Message != "Time to stretch your legs." || j.Schedule.At.IsZero() {
		t.Errorf("job = %+v; want a one-shot in session %s", j, sid)
	}
	sched, ok := env.Scheduler.Schedules()[j.ID]
	if !ok {
		t.Fatalf("no schedule %s in the fake Scheduler: %v", j.ID, env.Scheduler.Schedules())
	}
	if want := "at(" + j.Next.UTC().Format("2006-01-02T15:04:05") + ")"; sched.Expression != want {
		t.Errorf("schedule expression %q, want %q", sched.Expression, want)
	}

	// The function at the reminder's time, two hours on: its engine's
	// clock moved there (the step function, where the run ends, needs
	// none).
	db, err := dynamo.New(ctx, dynamo.Config{Table: env.TableName, Endpoint: env.Policed(t, "scheduler")})
	if err != nil {
		t.Fatal(err)
	}
	later := db.Schedule(&ebscheduler.Schedules{API: env.Scheduler.Client(), Group: cloudtest.SchedulerGroup},
		func() time.Time { return j.Next.Add(time.Second) })
	h.Schedule = later
	f := fire(t, env, h, json.RawMessage(env.Scheduler.Input(j.ID, j.Next, 0)), j)
	run, err := env.Store.GetRun(ctx, f.RunID())
	if err != nil || run.SessionID != sid {
		t.Errorf("reminder run = %+v, %v; want it in session %s", run, err, sid)
	}
	msgs, err := env.Store.Messages(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Content)
	}
	if !slices.ContainsFunc(texts, func(s string) bool {
		return strings.Contains(s, "Time to stretch your legs.") && strings.HasPrefix(s, "echo: ")
	}) {
		t.Errorf("the session's messages %q lack the reminder's answer", texts)
	}
}
