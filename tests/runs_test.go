package tests

// The operator's way out of stuck runs (issue 24 §2): `lambdaclaw runs
// list|retry|abandon`, on a deployed stack (its RunFailures queue, state
// machine and step function) and on the local server.

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// stepFunctionARN is the step function as the stack's output names it.
const stepFunctionARN = "arn:aws:lambda:us-east-1:123456789012:function:" + cloudtest.RunFunction

// TestStackRuns: Step Functions refuses new executions for a while
// (ExecutionLimitExceeded), so the inline runs that hand over (here every
// run: its invocation has less time than a step needs) fail their three
// attempts and land in RunFailures, holding their sessions. `runs list
// --stack` shows them with Lambda's error; `runs retry` hands one to the
// state machine, which finishes it, and `runs abandon` ends the other
// through the step function, which tells its user and runs the message
// queued behind it. Both drop the runs' messages, and repeating them
// changes nothing. A user's /reset ends the stuck run of their session,
// and `runs retry --all` drops the message it leaves.
func TestStackRuns(t *testing.T) {
	env := cloudtest.Setup(t)
	queue := cloudtest.NewSQS(t)
	env.Lambda.OnFailure(queue)
	c := cloudtest.NewClock()
	retry := func() { c.Advance(2 * time.Minute) } // Lambda retries a minute and more later
	step := env.PlayInline(t, c.Now, retry)
	env.Lambda.Play(func(ctx context.Context, ev sfn.Event) (any, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute) // less than the 5 minutes a step is given
		defer cancel()
		return step.Driver.Handle(ctx, ev)
	}, retry)
	env.Lambda.Serve(stepFunctionARN, func(ctx context.Context, payload json.RawMessage) (any, error) {
		var ev sfn.Event
		if err := json.Unmarshal(payload, &ev); err != nil {
			return nil, err
		}
		return step.Driver.Handle(ctx, ev)
	})
	cfn := cloudtest.NewCloudFormation(t)
	cfn.Put("test", cloudtest.Stack{Outputs: map[string]string{"TableName": env.TableName, "Agents": "default",
		"StateMachineArn": cloudtest.StateMachineARN, "StepFunctionArn": stepFunctionARN, "RunFailuresUrl": cloudtest.RunFailuresURL}})
	lambdaclaw, must := stackCLI(t, "CLOUDFORMATION_ENDPOINT="+cfn.URL, "SQS_ENDPOINT="+queue.URL)

	sender := env.Root(t, "ws")
	deliver := func(sid, text string) agent.RunState {
		t.Helper()
		st, err := sender.Driver.Deliver(t.Context(), agent.Input{
			SessionID: sid, Agent: "default", Owner: "key:" + sid, Messages: []chat.Message{{Role: chat.User, Content: text}},
			Autonomy: tool.Supervised, Interactive: true, Reply: agent.Reply{Channel: "ws", To: "conn-" + sid},
		}, func(string) {})
		if err != nil {
			t.Fatalf("deliver %q: %v", text, err)
		}
		return st
	}
	status := func(id string) store.RunStatus {
		t.Helper()
		run, err := env.Store.GetRun(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return run.Status
	}
	finals := func(sid string) []string {
		var out []string
		for _, f := range env.APIGW.Frames("conn-" + sid) {
			if f["type"] == "final" || f["type"] == "error" {
				text, _ := f["text"].(string)
				if text == "" {
					text, _ = f["message"].(string)
				}
				out = append(out, f["type"].(string)+": "+text)
			}
		}
		return out
	}

	env.SFN.Refuse("ExecutionLimitExceeded")
	retried := deliver("s-retried", "hello")
	abandoned := deliver("s-abandoned", "hello")
	queued := deliver("s-abandoned", "are you there?")
	reset := deliver("s-reset", "hello")
	env.Lambda.Wait()
	if n := len(queue.Bodies()); n != 3 {
		t.Fatalf("RunFailures holds %d messages, want the three runs'", n)
	}

	// The user's /reset ends the stuck run of their own session, and no
	// other; a run that is not stuck yet keeps the session busy.
	if err := sender.Driver.Reset(t.Context(), "s-reset"); !errors.Is(err, agent.ErrBusy) {
		t.Errorf("reset of a session whose run stopped just now: %v, want ErrBusy", err)
	}
	sender.Driver.Loop.Now = func() time.Time { return time.Now().Add(agent.StuckAfter) }
	if err := sender.Driver.Reset(t.Context(), "s-reset"); err != nil {
		t.Fatalf("reset of a session with a stuck run: %v", err)
	}
	sender.Driver.Loop.Now = nil
	if msgs, err := env.Store.Messages(t.Context(), "s-reset"); err != nil || len(msgs) != 0 {
		t.Errorf("history after the reset: %v, %v", msgs, err)
	}
	for _, id := range []string{retried.RunID, abandoned.RunID} {
		if s := status(id); s.Finished() {
			t.Errorf("run %s of another session is %s after the reset", id, s)
		}
	}

	if out := must("runs", "list"); !strings.Contains(out, retried.RunID) || !strings.Contains(out, abandoned.RunID) || !strings.Contains(out, reset.RunID) ||
		strings.Contains(out, queued.RunID) || !strings.Contains(out, "Lambda gave up after 3 attempts") || !strings.Contains(out, "ExecutionLimitExceeded") {
		t.Fatalf("runs list --stack =\n%s\nwant the two runs of RunFailures (not the one queued behind) with Lambda's error", out)
	}
	var rows []struct {
		RunID, Owner, Step string
		SessionID          string `json:"session_id"`
		Messages           int    `json:"failure_messages"`
	}
	if err := json.Unmarshal([]byte(must("runs", "list", "--json", "--limit", "1")), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("runs list --json --limit 1: %+v, %v; want one row", rows, err)
	}
	if _, stderr, err := lambdaclaw("runs", "retry", "no-such-run"); err == nil || !strings.Contains(stderr, "no run no-such-run") {
		t.Errorf("retry of an unknown run: %v, %q", err, stderr)
	}

	env.SFN.Refuse("")
	env.LLM.Enqueue(fakellm.Reply{Content: "Retried."})
	if out := must("runs", "retry", retried.RunID); !strings.Contains(out, "handed to the state machine at its begin step") ||
		!strings.Contains(out, "dropped its 1 RunFailures messages") {
		t.Errorf("runs retry = %q", out)
	}
	if x := env.SFN.Wait(retried.RunID, 10*time.Second); x.Err != nil {
		t.Fatal(x.Err)
	}
	if s := status(retried.RunID); s != store.RunDone {
		t.Errorf("retried run %s, want done", s)
	}
	if got := finals("s-retried"); !slices.Equal(got, []string{"final: Retried."}) {
		t.Errorf("the retried run's user got %q", got)
	}
	if out := must("runs", "retry", retried.RunID); !strings.Contains(out, "has ended (done): nothing to do") {
		t.Errorf("runs retry again = %q", out)
	}

	env.LLM.Enqueue(fakellm.Reply{Content: "Yes, here."})
	if out := must("runs", "abandon", abandoned.RunID); !strings.Contains(out, "ended failed") || !strings.Contains(out, "dropped its 1 RunFailures messages") {
		t.Errorf("runs abandon = %q", out)
	}
	if s := status(abandoned.RunID); s != store.RunFailed {
		t.Errorf("abandoned run %s, want failed", s)
	}
	// The run is committed done before its answer is told: wait for both.
	waitFor(t, "the run queued behind the abandoned one, and its answer", 20*time.Second, func() bool {
		return status(queued.RunID) == store.RunDone && len(finals("s-abandoned")) >= 2
	})
	if got := finals("s-abandoned"); len(got) != 2 || !strings.Contains(got[0], "an internal error stopped this reply (run "+abandoned.RunID+")") || got[1] != "final: Yes, here." {
		t.Errorf("the abandoned run's user got %q; want told of the failure, then the next answer", got)
	}
	if out := must("runs", "abandon", abandoned.RunID); !strings.Contains(out, "has ended (failed): nothing to do") {
		t.Errorf("runs abandon again = %q", out)
	}
	// The reset run's message is left; a redrive of the queue drops it.
	if out := must("runs", "retry", "--all"); !strings.Contains(out, "run "+reset.RunID+" ") || !strings.HasSuffix(out, "dropped 1 RunFailures messages\n") {
		t.Errorf("runs retry --all = %q", out)
	}
	if n := len(queue.Bodies()); n != 0 {
		t.Errorf("RunFailures holds %d messages after the runs were handled", n)
	}
	if out := must("runs", "retry", "--all"); out != "RunFailures is empty: nothing to retry\n" {
		t.Errorf("runs retry --all of an empty queue = %q", out)
	}
	if out := must("runs", "list"); out != "no stuck runs\n" {
		t.Errorf("runs list at the end = %q", out)
	}
	if n := len(env.LLM.Requests()); n != 2 {
		t.Errorf("the model was asked %d times, want twice (the retried run, the queued one)", n)
	}
}

// TestLocalRuns: the server is killed while a run waits for the model,
// and another run waits behind a second one; `runs list` shows the
// stuck runs (with --idle 0s: they have just stopped), `runs abandon`
// saves one as failed, `runs retry` says the server resumes the other,
// and the server's next start tells the first one's user, resumes the
// second, and runs the message queued behind. Runs that progress are
// not stuck at the default --idle.
func TestLocalRuns(t *testing.T) {
	fake := newFake(t)
	g := startGateway(t, fake, "")
	key := g.firstKey()
	held, release := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) })
	var once sync.Once
	fake.OnRequest(func(fakellm.Request) {
		once.Do(func() { close(held) })
		<-release
	})
	for _, s := range []string{"abandon", "retry"} {
		go g.client(key).Chat.Completions.New(context.Background(), chatParams(openai.UserMessage("hi "+s)), session(s))
	}
	<-held
	waitFor(t, "both runs to reach the model", 10*time.Second, func() bool { return len(fake.Requests()) == 2 })
	if steps := unfinishedSteps(t, g); !slices.Equal(steps, []string{agent.StepBegin, agent.StepBegin}) {
		t.Fatalf("unfinished runs at %q, want two at begin (the step they were in)", steps)
	}
	g.kill()
	fake.OnRequest(nil)

	if out := g.cli(t, "runs", "list"); out != "no stuck runs\n" {
		t.Errorf("runs list at the default --idle = %q; the runs stopped just now", out)
	}
	var rows []struct {
		RunID     string `json:"run_id"`
		SessionID string `json:"session_id"`
		Owner     string
		Step      string
	}
	if err := json.Unmarshal([]byte(g.cli(t, "runs", "list", "--idle", "0s", "--json")), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("runs list --idle 0s: %+v, %v; want the two runs", rows, err)
	}
	for _, r := range rows {
		if r.Step != agent.StepBegin || !strings.HasPrefix(r.Owner, "key:") {
			t.Errorf("row %+v; want a key's run at begin", r)
		}
	}
	if _, stderr, status := g.run(t, "runs", "abandon", rows[0].RunID); status == 0 || !strings.Contains(stderr, "it is not stuck") {
		t.Errorf("abandon at the default --idle: %d, %q; want refused", status, stderr)
	}
	abandon, retry := rows[0].RunID, rows[1].RunID
	if out := g.cli(t, "runs", "abandon", abandon, "--idle", "0s"); !strings.Contains(out, "saved as failed") {
		t.Errorf("runs abandon = %q", out)
	}
	if out := g.cli(t, "runs", "retry", retry, "--idle", "0s"); !strings.Contains(out, "resumes it when it starts") {
		t.Errorf("runs retry = %q", out)
	}

	fake.Enqueue(fakellm.Reply{Content: "Resumed."}, fakellm.Reply{Content: "Again."}, fakellm.Reply{Content: "Again."})
	g.start()
	waitFor(t, "both runs to end", 20*time.Second, func() bool {
		return runStatus(t, g, abandon) == store.RunFailed && runStatus(t, g, retry) == store.RunDone
	})
	for _, s := range []string{"abandon", "retry"} {
		if got := ask(t, g.client(key), "again", session(s)); got != "Again." {
			t.Errorf("session %s answers %q, want the next reply", s, got)
		}
	}
	if out := g.cli(t, "runs", "list", "--idle", "0s"); out != "no stuck runs\n" {
		t.Errorf("runs list at the end = %q", out)
	}
}

// unfinishedSteps lists the steps of the local server's unfinished runs.
func unfinishedSteps(t *testing.T, g *gateway) []string {
	t.Helper()
	db, err := sqlite.Open(g.home + "/lambdaclaw.db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ids, err := db.UnfinishedSessions(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, id := range ids {
		run, err := db.NextRun(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		st, err := agent.DecodeState(run)
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, st.Step)
	}
	return steps
}

// runStatus reads a local run's status.
func runStatus(t *testing.T, g *gateway, id string) store.RunStatus {
	t.Helper()
	db, err := sqlite.Open(g.home + "/lambdaclaw.db")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	run, err := db.GetRun(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return run.Status
}
