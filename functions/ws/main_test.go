package main

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/apigw"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/wsproto"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

type fixture struct {
	env *cloudtest.Env
	ws  *apigw.WebSocket
}

func newFixture(t *testing.T) *fixture {
	env := cloudtest.Setup(t)
	ws, err := handler(t.Context())
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	return &fixture{env: env, ws: ws}
}

func sample(t *testing.T, name string) events.APIGatewayWebsocketProxyRequest {
	var ev events.APIGatewayWebsocketProxyRequest
	cloudtest.LoadEvent(t, "ws/"+name, &ev)
	return ev
}

func (f *fixture) invoke(t *testing.T, ev events.APIGatewayWebsocketProxyRequest) int {
	t.Helper()
	resp, err := f.ws.Handle(t.Context(), ev)
	if err != nil {
		t.Fatalf("%s: %v", ev.RequestContext.RouteKey, err)
	}
	return resp.StatusCode
}

// play lets the fake Step Functions run executions with the step
// function's handler.
func (f *fixture) play(t *testing.T) {
	f.env.PlayStep(t)
}

func (f *fixture) connect(t *testing.T) string {
	t.Helper()
	ev := sample(t, "connect.json")
	if code := f.invoke(t, ev); code != http.StatusOK {
		t.Fatalf("$connect = %d", code)
	}
	return ev.RequestContext.ConnectionID
}

func TestConnect(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	for _, name := range []string{"connect.json", "connect-query-key.json"} {
		ev := sample(t, name)
		if code := f.invoke(t, ev); code != http.StatusOK {
			t.Errorf("%s: %d, want 200", name, code)
		}
		if hash, _, err := f.env.Store.Connection(ctx, ev.RequestContext.ConnectionID); err != nil || hash != f.env.Key.Hash {
			t.Errorf("%s: connection recorded with %q, %v", name, hash, err)
		}
	}
	// A browser offers the key as a subprotocol; the answer selects
	// "lambdaclaw", never the key.
	browser := sample(t, "connect.json")
	delete(browser.Headers, "Authorization")
	delete(browser.MultiValueHeaders, "Authorization")
	browser.Headers["Sec-WebSocket-Protocol"] = "lambdaclaw, lambdaclaw.key." + cloudtest.SampleKey
	browser.RequestContext.ConnectionID = "browser="
	resp, err := f.ws.Handle(ctx, browser)
	if err != nil || resp.StatusCode != http.StatusOK || resp.Headers["Sec-WebSocket-Protocol"] != "lambdaclaw" {
		t.Errorf("subprotocol key: %+v, %v; want 200 selecting lambdaclaw", resp, err)
	}
	if hash, _, err := f.env.Store.Connection(ctx, "browser="); err != nil || hash != f.env.Key.Hash {
		t.Errorf("subprotocol key: connection recorded with %q, %v", hash, err)
	}
	noKey := sample(t, "connect.json")
	delete(noKey.Headers, "Authorization")
	delete(noKey.MultiValueHeaders, "Authorization")
	wrong := sample(t, "connect-query-key.json")
	wrong.QueryStringParameters["key"] = "lc_" + cloudtest.SampleKey[3:10] + "0000000000000000000000000000000000000"
	for name, ev := range map[string]events.APIGatewayWebsocketProxyRequest{"no key": noKey, "unknown key": wrong} {
		ev.RequestContext.ConnectionID = "other="
		if code := f.invoke(t, ev); code != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, code)
		}
		if _, _, err := f.env.Store.Connection(ctx, "other="); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: a refused connection was recorded", name)
		}
	}
}

// TestMessage delivers the message sample: the ack, then the run's frames
// posted by the step function; the same client id again is a duplicate.
func TestMessage(t *testing.T) {
	f := newFixture(t)
	f.play(t)
	conn := f.connect(t)
	ev := sample(t, "message.json")
	f.invoke(t, ev)

	frames := f.env.APIGW.WaitFrame(conn, "final", 5*time.Second)
	runID := wsproto.RunID(f.env.Key.ID, "alice", "default", "c1")
	_, sid := agent.Identity{}.Session("default", "ws", f.env.Key.ID, "alice")
	ack := cloudtest.Frame{"type": "ack", "id": "c1", "run_id": runID, "session_id": sid, "duplicate": false}
	if diff := cmp.Diff(ack, frames[0]); diff != "" {
		t.Errorf("first frame (-want +got):\n%s", diff)
	}
	final := frames[len(frames)-1]
	if final["run_id"] != runID || final["text"] != "echo: hi" {
		t.Errorf("final frame = %v", final)
	}
	if e := f.env.SFN.Wait(runID, 5*time.Second); e.Err != nil {
		t.Fatalf("execution: %v", e.Err)
	}

	f.invoke(t, ev)
	frames = f.env.APIGW.Frames(conn)
	dup := cloudtest.Frame{"type": "ack", "id": "c1", "run_id": runID, "session_id": sid, "duplicate": true}
	if diff := cmp.Diff(dup, frames[len(frames)-1]); diff != "" {
		t.Errorf("ack of the repeated id (-want +got):\n%s", diff)
	}
	if n := len(f.env.SFN.Started()); n != 1 {
		t.Errorf("%d executions, want 1", n)
	}
	// The first message indexed the connection under alice's session,
	// for check-ins to ws:alice; the key's owner is the index's.
	if _, sessions, err := f.env.Store.Connection(t.Context(), conn); err != nil || !cmp.Equal(sessions, []string{sid}) {
		t.Errorf("the connection is indexed under %v, %v; want %s", sessions, err, sid)
	}
	if ids, err := f.env.Store.SessionConnections(t.Context(), "key:"+f.env.Key.ID, sid, 10); err != nil || !cmp.Equal(ids, []string{conn}) {
		t.Errorf("the index of alice's session holds %v, %v; want %s", ids, err, conn)
	}
	// $disconnect takes the connection's index entries with it.
	f.invoke(t, sample(t, "disconnect.json"))
	if ids, err := f.env.Store.SessionConnections(t.Context(), "key:"+f.env.Key.ID, sid, 10); err != nil || len(ids) != 0 {
		t.Errorf("the index of alice's session holds %v, %v after $disconnect; want nothing", ids, err)
	}
}

// TestReset answers busy while the session has a run, and resets it once
// the run is done.
func TestReset(t *testing.T) {
	f := newFixture(t)
	conn := f.connect(t)
	f.invoke(t, sample(t, "message.json")) // not played: the run stays queued
	f.invoke(t, sample(t, "reset.json"))
	frames := f.env.APIGW.Frames(conn)
	if last := frames[len(frames)-1]; last["type"] != "error" || last["code"] != "busy" || last["id"] != "c2" {
		t.Errorf("reset of a busy session: %v", last)
	}
	runID := f.env.SFN.Started()[0]
	step := f.env.Root(t, "step")
	// Step the queued run to its end, as its execution does.
	_, sid := agent.Identity{}.Session("default", "ws", f.env.Key.ID, "alice")
	st, err := step.Loop.Store.GetRun(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	state, _ := agent.DecodeState(st)
	for state.Step != agent.StepDone {
		b, _ := json.Marshal(state)
		out, err := step.Driver.Handle(t.Context(), sfn.Event{Action: "step", State: b})
		if err != nil {
			t.Fatal(err)
		}
		state = out.(agent.RunState)
	}
	f.invoke(t, sample(t, "reset.json"))
	frames = f.env.APIGW.Frames(conn)
	want := cloudtest.Frame{"type": "ack", "id": "c2", "session_id": sid, "duplicate": false}
	if diff := cmp.Diff(want, frames[len(frames)-1]); diff != "" {
		t.Errorf("reset ack (-want +got):\n%s", diff)
	}
	if msgs, err := f.env.Store.Messages(t.Context(), sid); err != nil || len(msgs) != 0 {
		t.Errorf("history after reset: %d messages, %v", len(msgs), err)
	}
}

// TestRevokedAndDisconnected closes the connection of a revoked key, and
// refuses frames on a connection that was closed.
func TestRevokedAndDisconnected(t *testing.T) {
	f := newFixture(t)
	conn := f.connect(t)
	f.invoke(t, sample(t, "disconnect.json"))
	if _, _, err := f.env.Store.Connection(t.Context(), conn); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("connection still recorded after $disconnect: %v", err)
	}

	conn = f.connect(t)
	if err := f.env.Store.RevokeKey(t.Context(), f.env.Key.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	f.invoke(t, sample(t, "message.json"))
	frames := f.env.APIGW.Frames(conn)
	if len(frames) != 1 || frames[0]["code"] != "invalid_api_key" {
		t.Errorf("frames for a revoked key: %v", frames)
	}
	if diff := cmp.Diff([]string{conn}, f.env.APIGW.Closed()); diff != "" {
		t.Errorf("closed connections (-want +got):\n%s", diff)
	}
	if n := len(f.env.SFN.Started()); n != 0 {
		t.Errorf("a revoked key started %d executions", n)
	}
}

func TestBadFrames(t *testing.T) {
	f := newFixture(t)
	conn := f.connect(t)
	for _, tc := range []struct {
		body   string
		binary bool
		code   string
	}{
		{body: "aGk=", binary: true, code: "invalid_frame"},
		{body: "not json", code: "invalid_json"},
		{body: `{"type":"message","id":"c9","text":"  "}`, code: "invalid_message"},
		{body: `{"type":"dance","id":"c9"}`, code: "unknown_type"},
		{body: `{"type":"message","id":"c9","agent":"nobody","text":"hi"}`, code: "model_not_found"},
	} {
		ev := sample(t, "message.json")
		ev.Body, ev.IsBase64Encoded = tc.body, tc.binary
		f.invoke(t, ev)
		frames := f.env.APIGW.Frames(conn)
		if last := frames[len(frames)-1]; last["type"] != "error" || last["code"] != tc.code {
			t.Errorf("%q: answered %v, want %s", tc.body, last, tc.code)
		}
	}
}

// TestApprovalAnswerMovesReplies answers a run parked on one connection
// from another: the rest of the run replies to the answering connection.
func TestApprovalAnswerMovesReplies(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	first := f.connect(t)
	f.invoke(t, sample(t, "message.json"))
	runID := f.env.SFN.Started()[0]
	// Park the run as its approve step does.
	run, err := f.env.Store.GetRun(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := agent.DecodeState(run)
	st.Step, st.Approval = agent.StepWait, runID+"-0"
	run.State, _ = json.Marshal(st)
	run.Status = store.RunRunning
	if err := f.env.Store.CommitRun(ctx, store.Commit{Run: run}); err != nil {
		t.Fatal(err)
	}
	ap := store.Approval{ID: st.Approval, SessionID: st.SessionID, RunID: runID, Calls: []string{"call_1"}, Tools: []string{"web_fetch"},
		Prompt: "Approval needed.", Status: store.ApprovalPending, CreatedAt: time.Now().UTC()}
	if err := f.env.Store.CreateApproval(ctx, ap); err != nil {
		t.Fatal(err)
	}

	second := sample(t, "message.json")
	second.RequestContext.ConnectionID = "Zz9second0000A="
	second.Body = `{"type":"message","id":"c3","user":"alice","text":"/yes"}`
	connect := sample(t, "connect.json")
	connect.RequestContext.ConnectionID = second.RequestContext.ConnectionID
	f.invoke(t, connect)
	f.invoke(t, second)

	frames := f.env.APIGW.Frames(second.RequestContext.ConnectionID)
	if len(frames) != 1 || frames[0]["type"] != "ack" || frames[0]["run_id"] != runID {
		t.Fatalf("frames on the answering connection: %v", frames)
	}
	run, _ = f.env.Store.GetRun(ctx, runID)
	st, _ = agent.DecodeState(run)
	if want := (agent.Reply{Channel: "ws", To: second.RequestContext.ConnectionID}); st.Reply != want {
		t.Errorf("the parked run replies to %+v, want %+v (first connection %s)", st.Reply, want, first)
	}
	if got, _ := f.env.Store.GetApproval(ctx, ap.ID); got.Status != store.ApprovalApproved {
		t.Errorf("approval status %s, want approved", got.Status)
	}
}
