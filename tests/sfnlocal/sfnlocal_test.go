// Package sfnlocal executes the synthesized state machine of the AWS
// deployment (infra/testdata/statemachine.asl.json) locally, with the real
// engines that run here: aws-local-stepfunctions runs the definition
// (harness.mjs), every Task state is one process of the real step handler
// (stepcmd, built on shared/wiring/cloud as the Lambda function is), the store is
// DynamoDB Local and the model is the scripted fake LLM. Messages enter as
// they do on AWS, through sfn.Driver.Deliver, which starts executions and
// resumes parked ones through the harness's Step Functions endpoint.
//
// The harness is installed with npm ci into node_modules (git-ignored) on
// first use; DynamoDB Local is started by `make test`
// (tests/dynamodb-local.sh run), which sets DYNAMODB_ENDPOINT.
package sfnlocal

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssfn "github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/dynamo"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

const (
	definitionFile = "../../infra/testdata/statemachine.asl.json"
	// shortApprovalFile is the definition synthesized with
	// -c approval_timeout=2s.
	shortApprovalFile = "../../infra/testdata/statemachine-approval-2s.asl.json"
	stateMachineARN   = "arn:aws:states:us-east-1:123456789012:stateMachine:lambdaclaw-loop"
	// channel is the reply channel stepcmd records (stepcmd.Channel).
	channel = "sfnlocal"
	// waitFor bounds every wait for an execution.
	waitFor = 30 * time.Second
	// crashTellingSession is the session to whose user telling a failure
	// crashes the step command (SFNLOCAL_CRASH_TELLING_FAILURE_TO).
	crashTellingSession = "s-release"
)

func TestStateMachine(t *testing.T) {
	e := setup(t)

	t.Run("asl-validator", func(t *testing.T) {
		var v struct {
			IsValid bool     `json:"isValid"`
			Errors  []string `json:"errors"`
		}
		e.h.get(t, "/control/validate", &v)
		if !v.IsValid {
			t.Fatalf("asl-validator rejects %s:\n%s", definitionFile, strings.Join(v.Errors, "\n"))
		}
	})
	t.Run("tool calls through the Map", e.toolCalls)
	t.Run("approval parked and resumed with its task token", e.approval)
	t.Run("approval answered before its token is stored", e.approvalBeforeToken)
	t.Run("client tools handed over and resumed", e.clientTools)
	t.Run("failing step caught", e.failure)
	t.Run("failed run hands the lane to the message queued behind it", e.failureQueued)
	t.Run("failing Fail task: Release lane frees the session", e.releaseLane)
	t.Run("two messages in order", e.inOrder)
	t.Run("approval expires", e.approvalExpires)
	t.Run("Step Functions API errors", e.apiErrors)
	t.Run("inline run handed over when it parks", e.inlineHandOver)
}

// toolCalls: a turn whose model asks for two tool calls that need no
// approval; the Map runs one Call tool task per call, then Step act finds
// the results and the model answers.
func (e *env) toolCalls(t *testing.T) {
	const sid = "s-toolcalls"
	e.fake.Reset()
	e.writeFile(t, "notes.txt", "the secret word is marmalade")
	e.fake.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{
			{ID: "call_read", Name: "read_file", Arguments: `{"path":"notes.txt"}`},
			{ID: "call_list", Name: "list_dir", Arguments: `{"path":"."}`},
		}},
		fakellm.Reply{Content: "The secret word is marmalade."},
	)
	st := e.deliver(t, sid, "What is the secret word in notes.txt?")
	x := e.h.wait(t, st.RunID, "done")
	e.succeeded(t, x)

	var calls []string
	for _, k := range x.Tasks {
		if k.State == "Call tool" {
			calls = append(calls, k.Action+" "+k.CallID)
		}
	}
	slices.Sort(calls)
	if want := []string{"call call_list", "call call_read"}; !slices.Equal(calls, want) {
		t.Errorf("Call tool tasks %q, want %q (one per tool call, from the Map)", calls, want)
	}
	if n := count(x.Events, "MapIterationSucceeded", "Tools"); n != 2 {
		t.Errorf("%d Map iterations succeeded, want 2", n)
	}
	e.noTaskErrors(t, x)

	hist := e.history(t, sid)
	want := []string{
		"user: What is the secret word in notes.txt?",
		"assistant: [read_file list_dir]",
		"tool read_file call_read: the secret word is marmalade",
		"tool list_dir call_list: . (1 entries)\nnotes.txt",
		"assistant: The secret word is marmalade.",
	}
	if !matchHistory(hist, want) {
		t.Errorf("history:\n%s\nwant (prefixes):\n%s", strings.Join(summary(hist), "\n"), strings.Join(want, "\n"))
	}
	reqs := e.fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the fake LLM got %d requests, want 2", len(reqs))
	}
	results := map[string]string{}
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			results[m.ToolCallID] = m.Content
		}
	}
	if !strings.Contains(results["call_read"], "marmalade") || !strings.Contains(results["call_list"], "notes.txt") {
		t.Errorf("the second request's tool results %q, want read_file's and list_dir's output", results)
	}
	e.runStatus(t, st.RunID, store.RunDone)
	e.laneFree(t, sid)
	e.told(t, st.RunID, "finish", "The secret word is marmalade.", "")
}

// approval: write_file needs approval; the run parks in Await approval
// with a task token stored on the approval; "/yes" delivered through the
// driver resumes it with SendTaskSuccess and that token.
func (e *env) approval(t *testing.T) {
	const sid = "s-approval"
	e.fake.Reset()
	e.fake.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_write", Name: "write_file", Arguments: `{"path":"out.txt","content":"approved!"}`}}},
		fakellm.Reply{Content: "I wrote out.txt."},
	)
	st := e.deliver(t, sid, "Please write out.txt")
	x := e.h.wait(t, st.RunID, "parked")
	if x.Status != "RUNNING" || x.Parked == nil {
		t.Fatalf("execution %s is %s, not parked for approval (tasks %+v)", x.Name, x.Status, x.Tasks)
	}
	token := *x.Parked
	ap, err := e.db.PendingApproval(e.ctx, sid)
	if err != nil {
		t.Fatalf("no pending approval: %v", err)
	}
	if ap.RunID != st.RunID || ap.Token != token || !slices.Equal(ap.Tools, []string{"write_file"}) {
		t.Errorf("pending approval %+v; want run %s, tool write_file and the task token of Await approval %q", ap, st.RunID, token)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "out.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("out.txt exists before the approval (stat: %v)", err)
	}
	e.told(t, st.RunID, "approval", "write_file", "")

	again := e.deliver(t, sid, "/yes")
	if again.RunID != st.RunID {
		t.Errorf("/yes answered run %s, want %s", again.RunID, st.RunID)
	}
	x = e.h.wait(t, st.RunID, "done")
	e.succeeded(t, x)
	if len(x.Resumes) != 1 || x.Resumes[0].Token != token || x.Resumes[0].Step != agent.StepAct {
		t.Errorf("resumes %+v, want one SendTaskSuccess with token %q and the state at act", x.Resumes, token)
	}
	if n := countTasks(x, "Await approval"); n != 1 {
		t.Errorf("%d Await approval tasks, want 1", n)
	}
	e.noTaskErrors(t, x)
	got, err := e.db.GetApproval(e.ctx, ap.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.ApprovalApproved || got.Decision != string(agent.Yes) || got.Token != token {
		t.Errorf("approval after /yes: %+v", got)
	}
	e.answered = got
	if b, err := os.ReadFile(filepath.Join(e.workspace, "out.txt")); err != nil || string(b) != "approved!" {
		t.Errorf("out.txt = %q, %v; want the approved content", b, err)
	}
	want := []string{
		"user: Please write out.txt",
		"assistant: [write_file]",
		"tool write_file call_write: ",
		"assistant: I wrote out.txt.",
	}
	if hist := e.history(t, sid); !matchHistory(hist, want) {
		t.Errorf("history:\n%s\nwant (prefixes):\n%s", strings.Join(summary(hist), "\n"), strings.Join(want, "\n"))
	}
	if n := len(e.fake.Requests()); n != 2 {
		t.Errorf("the fake LLM got %d requests, want 2", n)
	}
	e.runStatus(t, st.RunID, store.RunDone)
	e.laneFree(t, sid)
	e.told(t, st.RunID, "finish", "I wrote out.txt.", "")
}

// approvalBeforeToken: the answer comes between the approve step, which
// created the approval, and the park task, which stores the task token
// (the harness holds the park invocation until the answer is in). The
// answer finds no token to resume with, so the park task itself resumes
// its run with SendTaskSuccess (the step function's grant
// states:SendTaskSuccess, infra/stack.go).
func (e *env) approvalBeforeToken(t *testing.T) {
	const sid = "s-early-answer"
	e.fake.Reset()
	e.fake.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_early", Name: "write_file", Arguments: `{"path":"early.txt","content":"answered early"}`}}},
		fakellm.Reply{Content: "I wrote early.txt."},
	)
	e.h.post(t, "/control/hold?state="+url.QueryEscape("Await approval"))
	st := e.deliver(t, sid, "Please write early.txt")
	x := e.h.wait(t, st.RunID, "held")
	if x.Status != "RUNNING" || x.Parked != nil {
		t.Fatalf("execution %s is %s (parked %v), want its park task held (tasks %+v)", x.Name, x.Status, x.Parked, x.Tasks)
	}
	ap, err := e.db.PendingApproval(e.ctx, sid)
	if err != nil || ap.RunID != st.RunID || ap.Token != "" {
		t.Fatalf("pending approval %+v, %v; want one of run %s without a token yet", ap, err, st.RunID)
	}
	if again := e.deliver(t, sid, "/yes"); again.RunID != st.RunID {
		t.Errorf("/yes answered run %s, want %s", again.RunID, st.RunID)
	}
	e.h.post(t, "/control/release?state="+url.QueryEscape("Await approval"))
	x = e.h.wait(t, st.RunID, "done")
	e.succeeded(t, x)
	park := lastTask(x, "Await approval")
	if n := countTasks(x, "Await approval"); n != 1 {
		t.Fatalf("Await approval ran %d times, want once (tasks %+v)", n, x.Tasks)
	}
	// Resumed once, by the park task's own invocation, with the state at
	// act.
	if len(x.Resumes) != 1 || x.Resumes[0].Step != agent.StepAct || x.Resumes[0].Seq < park.Seq || x.Resumes[0].Seq > park.DoneSeq {
		t.Fatalf("resumes %+v, want one SendTaskSuccess at act during the park task %+v", x.Resumes, park)
	}
	e.noTaskErrors(t, x)
	got, err := e.db.GetApproval(e.ctx, ap.ID)
	if err != nil || got.Status != store.ApprovalApproved || got.Token == "" || x.Resumes[0].Token != got.Token {
		t.Errorf("approval %+v (%v); want approved, with the token the run was resumed with", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(e.workspace, "early.txt")); err != nil || string(b) != "answered early" {
		t.Errorf("early.txt = %q, %v; want the approved content", b, err)
	}
	e.runStatus(t, st.RunID, store.RunDone)
	e.laneFree(t, sid)
	e.told(t, st.RunID, "finish", "I wrote early.txt.", "")
}

// clientTools: the model calls the agent's read_file and the client's
// get_weather in one message; the Map runs only read_file, the run hands
// get_weather to the client and parks in Await approval; the client's
// result resumes it with the state at think, and the model answers.
func (e *env) clientTools(t *testing.T) {
	const sid = "s-client"
	e.fake.Reset()
	e.writeFile(t, "city.txt", "Oslo")
	e.fake.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{
			{ID: "call_read", Name: "read_file", Arguments: `{"path":"city.txt"}`},
			{ID: "call_weather", Name: "get_weather", Arguments: `{"city":"Oslo"}`},
		}},
		fakellm.Reply{Content: "Rain in Oslo."},
	)
	in := agent.Input{
		SessionID: sid, Agent: "default", Owner: "key:k1",
		Messages: []chat.Message{{Role: chat.User, Content: "Weather in my city?"}},
		Autonomy: tool.Supervised, Interactive: true,
		Reply:   agent.Reply{Channel: channel, To: "user-" + sid},
		Options: agent.Options{Tools: []chat.ToolDef{{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object"}`)}}},
	}
	st, err := e.driver.Deliver(e.ctx, in, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	x := e.h.wait(t, st.RunID, "parked")
	if x.Parked == nil {
		t.Fatalf("execution %s is %s, not parked for the client (tasks %+v)", x.Name, x.Status, x.Tasks)
	}
	var calls []string
	for _, k := range x.Tasks {
		if k.State == "Call tool" {
			calls = append(calls, k.CallID)
		}
	}
	if !slices.Equal(calls, []string{"call_read"}) {
		t.Errorf("Call tool tasks for %q, want only the agent's call_read", calls)
	}
	ap, err := e.db.PendingApproval(e.ctx, sid)
	if err != nil || ap.Kind != store.ApprovalClientTools || !slices.Equal(ap.Calls, []string{"call_weather"}) || ap.Token != *x.Parked {
		t.Fatalf("pending = %+v, %v; want the client wait for call_weather with the task token", ap, err)
	}

	in.Messages = []chat.Message{{Role: chat.Tool, ToolCallID: "call_weather", Content: "rain, 4°C"}}
	if _, err := e.driver.Deliver(e.ctx, in, func(string) {}); err != nil {
		t.Fatal(err)
	}
	x = e.h.wait(t, st.RunID, "done")
	e.succeeded(t, x)
	if len(x.Resumes) != 1 || x.Resumes[0].Step != agent.StepThink {
		t.Errorf("resumes %+v, want one SendTaskSuccess with the state at think", x.Resumes)
	}
	e.noTaskErrors(t, x)
	want := []string{
		"user: Weather in my city?",
		"assistant: [read_file get_weather]",
		"tool read_file call_read: Oslo",
		"tool get_weather call_weather: rain, 4°C",
		"assistant: Rain in Oslo.",
	}
	if hist := e.history(t, sid); !matchHistory(hist, want) {
		t.Errorf("history:\n%s\nwant (prefixes):\n%s", strings.Join(summary(hist), "\n"), strings.Join(want, "\n"))
	}
	var finishes []reply
	for _, r := range e.replies(t) {
		if r.RunID == st.RunID && r.Kind == "finish" {
			finishes = append(finishes, r)
		}
	}
	if len(finishes) != 2 || !slices.Equal(finishes[0].Calls, []string{"call_weather"}) || finishes[1].Text != "Rain in Oslo." {
		t.Errorf("finishes told %+v; want the client's call, then the answer", finishes)
	}
	e.runStatus(t, st.RunID, store.RunDone)
	e.laneFree(t, sid)
}

// failure: a tool call kills the step function's process (the crash tool
// panics in a tool goroutine), which Lambda reports as Runtime.ExitError,
// an error no Retry matches; the Map fails, its Catch sends the run to the
// Fail task, which records the failure, tells the user and releases the
// lane, and the execution ends as succeeded.
func (e *env) failure(t *testing.T) {
	const sid = "s-failure"
	e.fake.Reset()
	e.fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_crash", Name: "crash", Arguments: `{}`}}})
	st := e.deliver(t, sid, "Crash, please")
	x := e.h.wait(t, st.RunID, "done")
	e.succeeded(t, x)

	var crashed, failTask *task
	for i, k := range x.Tasks {
		switch {
		case k.State == "Call tool" && k.CallID == "call_crash":
			crashed = &x.Tasks[i]
		case k.State == "Fail":
			failTask = &x.Tasks[i]
		}
	}
	if crashed == nil || crashed.Error != "Runtime.ExitError" {
		t.Fatalf("the crash tool's Call tool task: %+v; want one that failed with Runtime.ExitError (tasks %+v)", crashed, x.Tasks)
	}
	if n := count(x.Events, "StateRetried", ""); n != 0 {
		t.Errorf("%d retries of a non-transient error, want 0", n)
	}
	if count(x.Events, "StateCaught", "Tools") != 1 {
		t.Errorf("the Tools Map did not catch the error; events %+v", x.Events)
	}
	if n := countTasks(x, "Fail"); n != 1 {
		t.Errorf("%d Fail tasks, want 1", n)
	}
	if failTask == nil || failTask.ErrorInfo == nil || failTask.ErrorInfo.Error != "Runtime.ExitError" || failTask.Error != "" {
		t.Fatalf("the Fail task %+v; want it run once with error_info Runtime.ExitError, and succeed", failTask)
	}
	var out agent.RunState
	if err := json.Unmarshal(x.Output, &out); err != nil {
		t.Fatalf("execution output %s: %v", x.Output, err)
	}
	// The user is told a generic error naming the run; the cause is logged.
	if out.Step != agent.StepDone || out.ErrorCode != agent.CodeInternal || !strings.Contains(out.Error, st.RunID) || strings.Contains(out.Error, "Runtime") {
		t.Errorf("execution output %s, want the run done with a generic internal error naming the run", x.Output)
	}
	run := e.runStatus(t, st.RunID, store.RunFailed)
	saved, err := agent.DecodeState(run)
	if err != nil || !saved.Failed() {
		t.Errorf("saved run state %+v (%v), want it failed", saved, err)
	}
	e.told(t, st.RunID, "finish", "", st.RunID)
	e.laneFree(t, sid)

	// The session takes the next message at once. (That run fails today:
	// the failed run left the crash call without a tool result in history,
	// which OpenAI-compatible APIs refuse with status 400, so the session
	// cannot get an answer until it is reset. The check here is that the
	// run is executed, not how it ends.)
	next := e.deliver(t, sid, "still there?")
	x = e.h.wait(t, next.RunID, "done")
	e.succeeded(t, x)
	if n := len(e.fake.Requests()); n != 2 {
		t.Errorf("the fake LLM got %d requests, want 2: the next message did not reach the model", n)
	}
	e.laneFree(t, sid)
}

// queueBehind delivers two messages to a session so that the second is
// queued behind the first's run: the first run's model call is held until
// the second is queued. The fake LLM answers with replies, then echoes.
func (e *env) queueBehind(t *testing.T, sid, first, second string, replies ...fakellm.Reply) (agent.RunState, agent.RunState) {
	t.Helper()
	e.fake.Reset()
	e.fake.Enqueue(replies...)
	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce)
	var once sync.Once
	e.fake.OnRequest(func(fakellm.Request) {
		once.Do(func() {
			select {
			case <-release:
			case <-time.After(waitFor):
			}
		})
	})
	a := e.deliver(t, sid, first)
	if _, ok := e.fake.WaitRequests(1, waitFor); !ok {
		t.Fatal("the first run never called the model")
	}
	// The first run is thinking, holding the lane.
	b := e.deliver(t, sid, second)
	if b.RunID == a.RunID {
		t.Fatal("both messages went to one run")
	}
	e.runStatus(t, b.RunID, store.RunQueued)
	if slices.ContainsFunc(e.h.executions(t), func(x execution) bool { return x.Name == b.RunID }) {
		t.Error("the second run's execution started while the first held the lane")
	}
	releaseOnce()
	return a, b
}

// startedDuring checks that execution x started while task k ran.
func startedDuring(t *testing.T, x execution, k *task) {
	t.Helper()
	if k == nil || x.StartSeq < k.Seq || x.StartSeq > k.DoneSeq {
		t.Errorf("execution %s started at %d, want during the task %+v", x.Name, x.StartSeq, k)
	}
}

// lastTask returns the last task of x in state, or nil.
func lastTask(x execution, state string) *task {
	var k *task
	for i := range x.Tasks {
		if x.Tasks[i].State == state {
			k = &x.Tasks[i]
		}
	}
	return k
}

// failureQueued: a run fails (the crash tool kills its Call tool task)
// while a second message waits in the session's queue; the Fail task
// records the failure, tells the user and hands the lane to the queued
// run, which runs.
func (e *env) failureQueued(t *testing.T) {
	const sid = "s-failure-queued"
	first, second := e.queueBehind(t, sid, "Crash, please", "still there?",
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_crash", Name: "crash", Arguments: `{}`}}})
	x1 := e.h.wait(t, first.RunID, "done")
	e.succeeded(t, x1)
	x2 := e.h.wait(t, second.RunID, "done")
	e.succeeded(t, x2)
	fail := lastTask(x1, "Fail")
	if countTasks(x1, "Fail") != 1 || fail.Error != "" || fail.ErrorInfo == nil || fail.ErrorInfo.Error != "Runtime.ExitError" {
		t.Fatalf("Fail tasks %+v, want one, succeeding, with the crash's error", fail)
	}
	startedDuring(t, x2, fail)
	e.noTaskErrors(t, x2)
	e.runStatus(t, first.RunID, store.RunFailed)
	e.runStatus(t, second.RunID, store.RunDone)
	e.told(t, first.RunID, "finish", "", first.RunID)
	e.told(t, second.RunID, "finish", "echo: still there?", "")
	e.laneFree(t, sid)
}

// releaseLane: a run fails and telling the user of the failure crashes
// the Fail task too (stepcmd crashes telling a failure to this session's
// user); its Catch sends the run to Release lane, which saves the run as
// failed and hands the lane to the message queued behind it, and the
// execution still ends as succeeded.
func (e *env) releaseLane(t *testing.T) {
	sid := crashTellingSession
	first, second := e.queueBehind(t, sid, "Crash, please", "still there?",
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_crash", Name: "crash", Arguments: `{}`}}})
	x1 := e.h.wait(t, first.RunID, "done")
	e.succeeded(t, x1)
	x2 := e.h.wait(t, second.RunID, "done")
	e.succeeded(t, x2)
	if fail := lastTask(x1, "Fail"); countTasks(x1, "Fail") != 1 || fail.Error != "Runtime.ExitError" {
		t.Errorf("Fail tasks %+v, want one, crashed", fail)
	}
	release := lastTask(x1, "Release lane")
	if countTasks(x1, "Release lane") != 1 || release.Error != "" {
		t.Fatalf("Release lane tasks %+v, want one, succeeding (tasks %+v)", release, x1.Tasks)
	}
	startedDuring(t, x2, release)
	run := e.runStatus(t, first.RunID, store.RunFailed)
	if saved, err := agent.DecodeState(run); err != nil || saved.Step != agent.StepDone || saved.ErrorCode != agent.CodeInternal {
		t.Errorf("saved run state %+v (%v), want done with an internal error", saved, err)
	}
	// The crash call got a result, so the next run's history is whole.
	want := []string{"user: Crash, please", "assistant: [crash]", "tool crash call_crash: error:", "user: still there?", "assistant: echo: still there?"}
	if hist := e.history(t, sid); !matchHistory(hist, want) {
		t.Errorf("history:\n%s\nwant (prefixes):\n%s", strings.Join(summary(hist), "\n"), strings.Join(want, "\n"))
	}
	e.runStatus(t, second.RunID, store.RunDone)
	e.told(t, second.RunID, "finish", "echo: still there?", "")
	e.laneFree(t, sid)
}

// approvalExpires runs the definition synthesized with
// approval_timeout=2s, in a harness of its own: nobody answers, Await
// approval times out (States.Timeout), and Approval expired resolves the
// approval as expired, tells the user, finishes the run and frees the
// session, whose next message runs. The park task is held until the
// execution has ended, so the test does not race the timer: it runs
// late, as a slow invocation would, finds its token spent and changes
// nothing.
func (e *env) approvalExpires(t *testing.T) {
	const sid = "s-expiry"
	h := startHarness(t, e.step, e.stepTable, shortApprovalFile)
	d := *e.driver
	d.Client = awssfn.New(awssfn.Options{Region: "us-east-1", BaseEndpoint: aws.String(h.base),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	e.fake.Reset()
	e.fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_late", Name: "write_file", Arguments: `{"path":"late.txt","content":"too late"}`}}})
	h.post(t, "/control/hold?state="+url.QueryEscape("Await approval"))
	st := e.deliverVia(t, &d, sid, "Please write late.txt")
	x := h.wait(t, st.RunID, "done")
	e.succeeded(t, x)
	h.post(t, "/control/release?state="+url.QueryEscape("Await approval"))
	x = h.wait(t, st.RunID, "idle")
	if park := lastTask(x, "Await approval"); park == nil || park.Error != "" || park.DoneSeq < x.EndSeq {
		t.Errorf("park task %+v, want it run, after the execution ended (%d), without error", park, x.EndSeq)
	}
	expired := lastTask(x, "Approval expired")
	if countTasks(x, "Approval expired") != 1 || expired.Error != "" || expired.ErrorInfo == nil || expired.ErrorInfo.Error != "States.Timeout" {
		t.Fatalf("Approval expired tasks %+v, want one, after States.Timeout (tasks %+v)", expired, x.Tasks)
	}
	if n := countTasks(x, "Fail"); n != 0 || len(x.Resumes) != 0 {
		t.Errorf("%d Fail tasks and resumes %+v, want none", n, x.Resumes)
	}
	var out agent.RunState
	if err := json.Unmarshal(x.Output, &out); err != nil || out.Step != agent.StepDone || out.ErrorCode != agent.CodeApprovalExpired {
		t.Errorf("execution output %s (%v), want the run done with %s", x.Output, err, agent.CodeApprovalExpired)
	}
	if _, err := e.db.PendingApproval(e.ctx, sid); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("pending approval after expiry: %v, want none", err)
	}
	ap, err := e.db.GetApproval(e.ctx, out.Approval)
	if err != nil || ap.Status != store.ApprovalDenied || ap.Decision != "expired" {
		t.Errorf("approval %+v (%v), want denied as expired", ap, err)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "late.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("late.txt exists (stat: %v)", err)
	}
	e.runStatus(t, st.RunID, store.RunFailed)
	e.told(t, st.RunID, "approval", "write_file", "")
	e.told(t, st.RunID, "finish", "", "in time")
	want := []string{"user: Please write late.txt", "assistant: [write_file]", "tool write_file call_late: error: not run"}
	if hist := e.history(t, sid); !matchHistory(hist, want) {
		t.Errorf("history:\n%s\nwant (prefixes):\n%s", strings.Join(summary(hist), "\n"), strings.Join(want, "\n"))
	}
	e.laneFree(t, sid)
	// The task's token is spent: a late resume is refused, which the
	// driver takes as done.
	if err := d.Resume(e.ctx, ap); err != nil {
		t.Errorf("a late resume: %v", err)
	}
	next := e.deliverVia(t, &d, sid, "still there?")
	x = h.wait(t, next.RunID, "done")
	e.succeeded(t, x)
	e.told(t, next.RunID, "finish", "echo: still there?", "")
	e.laneFree(t, sid)
}

// inOrder: the second message to a session arrives while the first's run
// holds the lane; it is queued, not started, and the first run's finish
// hands the lane over and starts it (a plain answer's think finishes the
// run: the last Step).
func (e *env) inOrder(t *testing.T) {
	const sid = "s-order"
	first, second := e.queueBehind(t, sid, "first", "second")

	x1 := e.h.wait(t, first.RunID, "done")
	e.succeeded(t, x1)
	x2 := e.h.wait(t, second.RunID, "done")
	e.succeeded(t, x2)
	var finish *task
	for i, k := range x1.Tasks {
		if k.State == "Step" {
			finish = &x1.Tasks[i]
		}
	}
	// The second execution starts during the step that finished the first
	// run.
	startedDuring(t, x2, finish)
	e.noTaskErrors(t, x1)
	e.noTaskErrors(t, x2)

	want := []string{"user: first", "assistant: echo: first", "user: second", "assistant: echo: second"}
	if hist := e.history(t, sid); !matchHistory(hist, want) || len(hist) != len(want) {
		t.Errorf("history:\n%s\nwant:\n%s", strings.Join(summary(hist), "\n"), strings.Join(want, "\n"))
	}
	reqs := e.fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the fake LLM got %d requests, want 2", len(reqs))
	}
	var convo []string
	for _, m := range reqs[1].Messages {
		if m.Role != "system" {
			convo = append(convo, m.Role+": "+m.Content)
		}
	}
	if !slices.Equal(convo, want[:3]) {
		t.Errorf("the second run sent %q, want %q", convo, want[:3])
	}
	e.runStatus(t, first.RunID, store.RunDone)
	e.runStatus(t, second.RunID, store.RunDone)
	e.told(t, first.RunID, "finish", "echo: first", "")
	e.told(t, second.RunID, "finish", "echo: second", "")
	e.laneFree(t, sid)
}

// apiErrors: the harness's Step Functions endpoint answers what the
// driver relies on with the errors the SDK decodes into their types.
func (e *env) apiErrors(t *testing.T) {
	client, ok := e.driver.Client.(*awssfn.Client)
	if !ok {
		t.Fatalf("the driver's client is a %T", e.driver.Client)
	}
	xs := e.h.executions(t)
	if len(xs) == 0 {
		t.Fatal("no executions")
	}
	_, err := client.StartExecution(e.ctx, &awssfn.StartExecutionInput{
		StateMachineArn: aws.String(stateMachineARN), Name: aws.String(xs[0].Name), Input: aws.String(`{}`)})
	var exists *sfntypes.ExecutionAlreadyExists
	if !errors.As(err, &exists) {
		t.Errorf("StartExecution with a used name: %v, want ExecutionAlreadyExists", err)
	}
	_, err = client.StartExecution(e.ctx, &awssfn.StartExecutionInput{
		StateMachineArn: aws.String(stateMachineARN + "-other"), Name: aws.String("x"), Input: aws.String(`{}`)})
	var noMachine *sfntypes.StateMachineDoesNotExist
	if !errors.As(err, &noMachine) {
		t.Errorf("StartExecution of another state machine: %v, want StateMachineDoesNotExist", err)
	}
	_, err = client.SendTaskSuccess(e.ctx, &awssfn.SendTaskSuccessInput{TaskToken: aws.String("AQBnot-a-token"), Output: aws.String(`{}`)})
	var invalid *sfntypes.InvalidToken
	if !errors.As(err, &invalid) {
		t.Errorf("SendTaskSuccess with an unknown token: %v, want InvalidToken", err)
	}
	// An approval answered twice: the second resume finds the task done
	// (TaskTimedOut), which the driver takes as resumed already.
	ap := e.answered
	if ap.Token == "" {
		t.Fatal("no answered approval: the approval scenario failed")
	}
	_, err = client.SendTaskSuccess(e.ctx, &awssfn.SendTaskSuccessInput{TaskToken: aws.String(ap.Token), Output: aws.String(`{}`)})
	var gone *sfntypes.TaskTimedOut
	if !errors.As(err, &gone) {
		t.Errorf("SendTaskSuccess with a spent token: %v, want TaskTimedOut", err)
	}
	if err := e.driver.Resume(e.ctx, ap); err != nil {
		t.Errorf("resuming a resumed run: %v", err)
	}
}

// env is what the scenarios share.
type env struct {
	ctx         context.Context
	fake        *fakellm.Server
	db          *dynamo.Store
	driver      *sfn.Driver
	h           *harness
	workspace   string
	repliesPath string
	// step is the step command's binary, and stepTable the endpoint of
	// the table with the step function's grants it runs with.
	step, stepTable string
	// answered is the approval the approval scenario answered.
	answered store.Approval
}

func setup(t *testing.T) *env {
	t.Helper()
	table := cloudtest.NewTable(t)
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is needed to run the state machine with aws-local-stepfunctions (apt-get install nodejs npm)")
	}
	npmInstall(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	e := &env{ctx: ctx, db: table.Store, workspace: t.TempDir()}
	tmp := t.TempDir()
	e.repliesPath = filepath.Join(tmp, "replies.jsonl")

	e.step = filepath.Join(tmp, "stepcmd")
	e.stepTable = table.Policed(t, "step")
	s3Endpoint, bucket := cloudtest.S3(t)
	if out, err := exec.Command("go", "build", "-o", e.step, "./stepcmd").CombinedOutput(); err != nil {
		t.Fatalf("go build ./stepcmd: %v\n%s", err, out)
	}

	e.fake = fakellm.New()
	t.Cleanup(e.fake.Close)

	// The Lambda environment (infra/README.md), here and in the harness's
	// step processes.
	for _, k := range []string{"AWS_PROFILE", "AWS_SESSION_TOKEN", "BEDROCK_MODEL", "OPENAI_API_KEY_SECRET_ARN", "WS_ENDPOINT", "AGENTS_CONFIG", "SESSION_SHARING"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	for k, v := range map[string]string{
		"TABLE_NAME": table.Name,
		// The step processes have the step function's grants on the table.
		"DYNAMODB_ENDPOINT":                 e.stepTable,
		"STATE_MACHINE_ARN":                 stateMachineARN,
		"AWS_REGION":                        "us-east-1",
		"AWS_ACCESS_KEY_ID":                 "local",
		"AWS_SECRET_ACCESS_KEY":             "local",
		"AWS_EC2_METADATA_DISABLED":         "true",
		"DEFAULT_PROVIDER":                  cloud.ProviderOpenAI,
		"OPENAI_BASE_URL":                   e.fake.URL + "/v1",
		"OPENAI_MODEL":                      "fake-model",
		"OPENAI_API_KEY":                    "test-provider-key",
		"LOG_LEVEL":                         "warn",
		"WORKSPACE_BUCKET":                  bucket,
		"S3_ENDPOINT":                       s3Endpoint,
		"SFNLOCAL_WORKSPACE":                e.workspace,
		"SFNLOCAL_REPLIES":                  e.repliesPath,
		"SFNLOCAL_CRASH_TELLING_FAILURE_TO": "user-" + crashTellingSession,
	} {
		t.Setenv(k, v)
	}
	e.h = startHarness(t, e.step, e.stepTable, definitionFile)
	// The channels' side: the driver the api, ws and telegram functions
	// deliver messages with, talking to the harness's Step Functions,
	// with the ws function's grants on the table.
	t.Setenv("STEPFUNCTIONS_ENDPOINT", e.h.base)
	t.Setenv("DYNAMODB_ENDPOINT", table.Policed(t, "ws"))
	root, err := cloud.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e.driver = root.Driver
	return e
}

// npmInstall installs the harness's pinned packages when node_modules is
// missing or older than package-lock.json.
func npmInstall(t *testing.T) {
	t.Helper()
	lock, err := os.Stat("package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat("node_modules/.package-lock.json"); err == nil && !st.ModTime().Before(lock.ModTime()) {
		return
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Fatal("npm is needed to install aws-local-stepfunctions and asl-validator (apt-get install npm)")
	}
	cmd := exec.Command("npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in tests/sfnlocal: %v\n%s", err, out)
	}
}

// deliver hands a user's message to a session as the channels do.
func (e *env) deliver(t *testing.T, sid, text string) agent.RunState {
	t.Helper()
	return e.deliverVia(t, e.driver, sid, text)
}

// deliverVia delivers with the driver d.
func (e *env) deliverVia(t *testing.T, d *sfn.Driver, sid, text string) agent.RunState {
	t.Helper()
	st, err := d.Deliver(e.ctx, agent.Input{
		SessionID: sid, Agent: "default",
		Messages: []chat.Message{{Role: chat.User, Content: text}},
		Autonomy: tool.Supervised, Interactive: true,
		Reply: agent.Reply{Channel: channel, To: "user-" + sid},
	}, func(string) {})
	if err != nil {
		t.Fatalf("deliver %q: %v", text, err)
	}
	return st
}

func (e *env) writeFile(t *testing.T, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.workspace, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (e *env) history(t *testing.T, sid string) []store.Message {
	t.Helper()
	msgs, err := e.db.Messages(e.ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

func (e *env) runStatus(t *testing.T, id string, want store.RunStatus) store.Run {
	t.Helper()
	run, err := e.db.GetRun(e.ctx, id)
	if err != nil {
		t.Fatalf("run %s: %v", id, err)
	}
	if run.Status != want {
		t.Errorf("run %s is %s, want %s (state %s)", id, run.Status, want, run.State)
	}
	return run
}

// laneFree checks that the session's lane was released: another owner can
// take it.
func (e *env) laneFree(t *testing.T, sid string) {
	t.Helper()
	owner := "probe-" + agent.NewID()
	ok, err := e.db.AcquireLane(e.ctx, sid, owner, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Errorf("the lane of %s is still taken", sid)
		return
	}
	if err := e.db.ReleaseLane(e.ctx, sid, owner); err != nil {
		t.Fatal(err)
	}
}

// reply is one line stepcmd records for the test channel.
type reply struct {
	Kind      string   `json:"kind"`
	RunID     string   `json:"run_id"`
	SessionID string   `json:"session_id"`
	To        string   `json:"to"`
	Text      string   `json:"text"`
	Error     string   `json:"error"`
	ErrorCode string   `json:"error_code"`
	Calls     []string `json:"calls"`
}

// replies returns what the user was told so far.
func (e *env) replies(t *testing.T) []reply {
	t.Helper()
	b, err := os.ReadFile(e.repliesPath)
	if err != nil {
		t.Fatalf("nothing was told to the user: %v", err)
	}
	var out []reply
	for line := range strings.Lines(string(b)) {
		var r reply
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("replies line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// told checks that the user was told exactly one event of kind about the
// run, with text (for approvals: contained in the prompt) and an error
// containing wantErr (none when empty).
func (e *env) told(t *testing.T, runID, kind, text, wantErr string) {
	t.Helper()
	var got []reply
	for _, r := range e.replies(t) {
		if r.RunID == runID && r.Kind == kind {
			got = append(got, r)
		}
	}
	if len(got) != 1 {
		t.Fatalf("the user was told %d %s events about run %s, want 1: %+v", len(got), kind, runID, got)
	}
	r := got[0]
	textOK := r.Text == text
	if kind == "approval" {
		textOK = strings.Contains(r.Text, text)
	}
	errOK := r.Error == "" && wantErr == "" || wantErr != "" && strings.Contains(r.Error, wantErr)
	if !textOK || !errOK || r.To != "user-"+r.SessionID {
		t.Errorf("told %+v; want %s %q, error %q", r, kind, text, wantErr)
	}
}

func (e *env) succeeded(t *testing.T, x execution) {
	t.Helper()
	if x.Status != "SUCCEEDED" {
		t.Fatalf("execution %s %s: %s %s\ntasks %+v", x.Name, x.Status, x.Error, x.Cause, x.Tasks)
	}
}

func (e *env) noTaskErrors(t *testing.T, x execution) {
	t.Helper()
	for _, k := range x.Tasks {
		if k.Error != "" {
			t.Errorf("execution %s: task %+v failed", x.Name, k)
		}
	}
}

// summary renders history one line a message: "role: content", the tool
// names of an assistant's calls, "tool NAME ID: result".
func summary(msgs []store.Message) []string {
	var out []string
	for _, m := range msgs {
		switch {
		case len(m.ToolCalls) > 0:
			var names []string
			for _, c := range m.ToolCalls {
				names = append(names, c.Name)
			}
			out = append(out, fmt.Sprintf("%s: [%s]", m.Role, strings.Join(names, " ")))
		case m.Role == chat.Tool:
			out = append(out, fmt.Sprintf("tool %s %s: %s", m.Name, m.ToolCallID, m.Content))
		default:
			out = append(out, fmt.Sprintf("%s: %s", m.Role, m.Content))
		}
	}
	return out
}

// matchHistory reports whether msgs, summarized, start with the prefixes
// in want, one for one and in order.
func matchHistory(msgs []store.Message, want []string) bool {
	got := summary(msgs)
	if len(got) != len(want) {
		return false
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			return false
		}
	}
	return true
}

// harness is the node process running harness.mjs.
type harness struct {
	base   string
	stdin  io.WriteCloser
	stderr *syncBuffer
}

type execution struct {
	Name     string          `json:"name"`
	Input    string          `json:"input"`
	Status   string          `json:"status"`
	Output   json.RawMessage `json:"output"`
	Error    string          `json:"error"`
	Cause    string          `json:"cause"`
	StartSeq int             `json:"start_seq"`
	EndSeq   int             `json:"end_seq"`
	Tasks    []task          `json:"tasks"`
	Events   []event         `json:"events"`
	Resumes  []struct {
		Seq   int    `json:"seq"`
		Token string `json:"token"`
		Step  string `json:"step"`
	} `json:"resumes"`
	Parked *string `json:"parked"`
}

// task is one invocation of the step command.
type task struct {
	Seq       int    `json:"seq"`
	DoneSeq   int    `json:"done_seq"`
	State     string `json:"state"`
	Action    string `json:"action"`
	Step      string `json:"step"`
	CallID    string `json:"call_id"`
	Error     string `json:"error"`
	ErrorInfo *struct {
		Error string `json:"Error"`
		Cause string `json:"Cause"`
	} `json:"error_info"`
}

// event is an aws-local-stepfunctions execution event, in short.
type event struct {
	Type   string `json:"type"`
	State  string `json:"state"`
	Parent string `json:"parent"`
	Error  string `json:"error"`
}

// count counts the events of type typ whose state (or parent state) is
// state; any state when state is empty.
func count(evs []event, typ, state string) int {
	n := 0
	for _, ev := range evs {
		if ev.Type == typ && (state == "" || ev.State == state || ev.Parent == state) {
			n++
		}
	}
	return n
}

func countTasks(x execution, state string) int {
	n := 0
	for _, k := range x.Tasks {
		if k.State == state {
			n++
		}
	}
	return n
}

// startHarness starts a harness executing the definition in the file
// definition, whose step processes (the binary step) reach the table at
// the endpoint table; it stops when the test ends.
func startHarness(t *testing.T, step, table, definition string) *harness {
	t.Helper()
	cmd := exec.Command("node", "harness.mjs", "--definition", definition, "--step", step, "--arn", stateMachineARN)
	// The step processes reach the table as the step function, whatever
	// endpoint the channels' side uses by now.
	cmd.Env = append(os.Environ(), "DYNAMODB_ENDPOINT="+table)
	h := &harness{stderr: &syncBuffer{}}
	cmd.Stderr = h.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h.stdin = stdin
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		stdin.Close() // the harness exits when its stdin closes
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("harness stderr (tail):\n%s", tail(h.stderr.String(), 8000))
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		<-exited
		t.Fatalf("the harness did not start: %v\n%s", err, h.stderr.String())
	}
	var hello struct{ Port int }
	if err := json.Unmarshal([]byte(line), &hello); err != nil || hello.Port == 0 {
		t.Fatalf("harness said %q (%v)", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	h.base = fmt.Sprintf("http://127.0.0.1:%d", hello.Port)
	return h
}

func (h *harness) get(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := http.Get(h.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", path, resp.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, b)
	}
}

// post sends a control request that changes the harness (hold, release).
func (h *harness) post(t *testing.T, path string) {
	t.Helper()
	resp, err := http.Post(h.base+path, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s\n%s", path, resp.Status, b)
	}
}

// wait waits until the execution named name has ended ("done"), is
// parked on a task token or ended ("parked"), has a task held or ended
// ("held"), or has ended with no task running ("idle").
func (h *harness) wait(t *testing.T, name, until string) execution {
	t.Helper()
	var x execution
	h.get(t, fmt.Sprintf("/control/executions/%s?until=%s&timeout_ms=%d", url.PathEscape(name), until, waitFor.Milliseconds()), &x)
	return x
}

func (h *harness) executions(t *testing.T) []execution {
	t.Helper()
	var xs []execution
	h.get(t, "/control/executions", &xs)
	return xs
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
