package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/ebscheduler"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

// otherKey is a second API key, of another owner than the samples'.
const otherKey = "lc_OtherKeyOfAnotherOwner000000000000000000000"

// TestJobToWebSocket delivers check-ins to WebSocket users (ws:<user>)
// as the stack does: the ws function indexes a connection under its
// user's session at the user's first message; the scheduler function
// starts a job's firing; the step function, where the run ends, posts the
// check_in frame to the user's connections (the fake Management API) and
// records the delivery on the job's run. Only the job owner's users are
// reached; a connection found gone leaves the index; with no connection
// the run records why.
func TestJobToWebSocket(t *testing.T) {
	env, h, _ := setup(t)
	env.PlayStep(t)
	ctx := t.Context()
	other := store.APIKey{ID: "key_other", Name: "other", Hash: apikey.Hash(otherKey), Prefix: otherKey[:9], Autonomy: "supervised", CreatedAt: time.Now().UTC()}
	if err := env.Store.CreateKey(ctx, other); err != nil {
		t.Fatal(err)
	}
	ws, err := env.Root(t, "ws").WebSocket()
	if err != nil {
		t.Fatal(err)
	}
	// talk opens connection id with token and sends one message as user.
	talk := func(id, token, user string) {
		t.Helper()
		var c, m events.APIGatewayWebsocketProxyRequest
		cloudtest.LoadEvent(t, "ws/connect.json", &c)
		cloudtest.LoadEvent(t, "ws/message.json", &m)
		c.RequestContext.ConnectionID, m.RequestContext.ConnectionID = id, id
		c.Headers["Authorization"], c.MultiValueHeaders["Authorization"] = "Bearer "+token, []string{"Bearer " + token}
		m.Body = `{"type":"message","id":"` + id + `","agent":"default","user":"` + user + `","text":"hi"}`
		for _, ev := range []events.APIGatewayWebsocketProxyRequest{c, m} {
			if resp, err := ws.Handle(ctx, ev); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("%s of %s: %+v, %v", ev.RequestContext.RouteKey, id, resp, err)
			}
		}
		env.APIGW.WaitFrame(id, "final", 5*time.Second)
	}
	talk("mine=", cloudtest.SampleKey, "alice")
	talk("gone=", cloudtest.SampleKey, "alice")
	talk("theirs=", otherKey, "alice") // another owner's user of the same name
	mine, theirs := "key:"+env.Key.ID, "key:"+other.ID
	_, sid := agent.Identity{}.Session("default", "ws", env.Key.ID, "alice")
	indexed := func() []string {
		ids, err := env.Store.SessionConnections(ctx, mine, sid, 10)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if diff := cmp.Diff([]string{"gone=", "mine="}, indexed()); diff != "" {
		t.Fatalf("alice's connections before (-want +got):\n%s", diff)
	}
	env.APIGW.Gone("gone=")

	made := time.Now().UTC().Add(-5 * time.Minute)
	jobs := env.Store.Schedule(&ebscheduler.Schedules{API: env.Scheduler.Client(), Group: cloudtest.SchedulerGroup,
		Role: cloudtest.SchedulerRoleARN, Target: cloudtest.SchedulerTargetARN}, func() time.Time { return made })
	// run makes a job of owner delivering to target, fires it and
	// returns its firing and its run as recorded.
	run := func(id, owner, target string) (schedule.Firing, schedule.Run) {
		t.Helper()
		j, err := jobs.Create(ctx, schedule.Job{ID: id, Owner: owner, Agent: "default", Message: "check " + id,
			Schedule: schedule.Schedule{Cron: "* * * * *"}, Deliver: schedule.Target{Kind: schedule.DeliverWS, To: target}})
		if err != nil {
			t.Fatal(err)
		}
		f := fire(t, env, h, json.RawMessage(env.Scheduler.Input(j.ID, j.Next, 0)), j)
		var runs []schedule.Run
		cloudtest.Wait(t, 5*time.Second, "the run of "+id+" recorded", func() bool {
			runs, err = jobs.Runs(ctx, owner, j.ID, 10)
			return err == nil && len(runs) == 1 && runs[0].Status != schedule.RunRunning
		})
		return f, runs[0]
	}
	checkIns := func(conn string) []cloudtest.Frame {
		var out []cloudtest.Frame
		for _, f := range env.APIGW.Frames(conn) {
			if f["type"] == "check_in" {
				out = append(out, f)
			}
		}
		return out
	}

	f, r := run("job_wsmine", mine, "alice")
	if r.Status != schedule.RunDone || r.Delivered != "ws:alice" || r.Reason != "" {
		t.Errorf("run = %+v; want it done and delivered to ws:alice", r)
	}
	jobRun, err := env.Store.GetRun(ctx, f.RunID())
	if err != nil {
		t.Fatal(err)
	}
	want := []cloudtest.Frame{{"type": "check_in", "job_id": "job_wsmine", "run_id": f.RunID(),
		"session_id": jobRun.SessionID, "text": "echo: check job_wsmine"}}
	if diff := cmp.Diff(want, checkIns("mine=")); diff != "" {
		t.Errorf("check-ins on alice's connection (-want +got):\n%s", diff)
	}
	if got := checkIns("theirs="); len(got) != 0 {
		t.Errorf("another owner's alice got %v", got)
	}
	if diff := cmp.Diff([]string{"mine="}, indexed()); diff != "" {
		t.Errorf("alice's connections after the gone one answered 410 (-want +got):\n%s", diff)
	}

	// The other owner's jobs: its own alice is reached, never this
	// owner's, also when named by key id.
	if _, r := run("job_wstheirs", theirs, "alice"); r.Delivered != "ws:alice" {
		t.Errorf("the other owner's run = %+v; want it delivered to its alice", r)
	}
	if got := checkIns("theirs="); len(got) != 1 || got[0]["job_id"] != "job_wstheirs" {
		t.Errorf("check-ins on the other owner's connection: %v", got)
	}
	_, r = run("job_wsreach", theirs, env.Key.ID+"/alice")
	if r.Delivered != "" || !strings.Contains(r.Reason, "is not a WebSocket user of the job's owner") {
		t.Errorf("run naming another owner's user = %+v; want it refused", r)
	}
	if got := checkIns("mine="); len(got) != 1 {
		t.Errorf("alice's connection got %d check-ins, want only her owner's one", len(got))
	}

	// No connection of the user: the run says so, and keeps the answer.
	_, r = run("job_wsbob", mine, "bob")
	if r.Status != schedule.RunDone || r.Delivered != "" || r.Reply != "echo: check job_wsbob" ||
		r.Reason != "not delivered: no WebSocket connection of ws:bob is open" {
		t.Errorf("run for a user with no connection = %+v", r)
	}
}
