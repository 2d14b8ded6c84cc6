// Command stepcmd is the step function (functions/step) as a process, for
// the local execution of the state machine (tests/sfnlocal): the harness
// runs it once per Task state, as the Lambda service would invoke the
// function.
//
// It reads one event (sfn.Event) as JSON from stdin, builds the handler as
// functions/step does (turns.New(ctx, fargate.Exec).Driver.Handle, from the same
// environment: TABLE_NAME, DYNAMODB_ENDPOINT, STATE_MACHINE_ARN,
// STEPFUNCTIONS_ENDPOINT, OPENAI_BASE_URL, …), runs it and writes its
// result as JSON to stdout. A failure is reported as the Lambda runtime
// reports a function error — {"errorType":…,"errorMessage":…}, errorType
// naming the error's Go type as aws-lambda-go does (so sfn.Transient is
// "Transient") — on stdout, with exit status 1.
//
// The test changes what turns.New builds in two ways, both outside the
// code under test:
//
//   - the agents get the file tools on the workspace SFNLOCAL_WORKSPACE
//     (write_file needs approval) and a "crash" tool that kills the process
//     from a tool goroutine, as a bug or an out-of-memory kill would kill
//     the function (the harness then reports Runtime.ExitError, as Lambda
//     does);
//   - what runs tell their reply channel "sfnlocal" (the user) is appended
//     as JSON lines to the file SFNLOCAL_REPLIES; telling a failure to the
//     recipient SFNLOCAL_CRASH_TELLING_FAILURE_TO kills the process instead,
//     as a crash of the Fail task would.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
	"github.com/lambdaclaw/lambdaclaw/shared/tools/files"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/fargate"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/turns"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// Channel is the reply channel whose events the command records.
const Channel = "sfnlocal"

// timeout stands for the function's timeout (900 s in infra), which the
// inline runs measure their budget against.
const timeout = 15 * time.Minute

func main() { os.Exit(run()) }

func run() int {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var ev sfn.Event
	if err := json.NewDecoder(os.Stdin).Decode(&ev); err != nil {
		return report(fmt.Errorf("stepcmd: read the event: %w", err))
	}
	root, err := turns.New(ctx, fargate.Exec)
	if err != nil {
		return report(err)
	}
	if err := equip(root); err != nil {
		return report(err)
	}
	out, err := root.Driver.Handle(ctx, ev)
	if err != nil {
		return report(err)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		return report(err)
	}
	return 0
}

// report writes err as the Lambda runtime reports a function error.
func report(err error) int {
	b, _ := json.Marshal(map[string]string{"errorType": errorType(err), "errorMessage": err.Error()})
	os.Stdout.Write(append(b, '\n'))
	return 1
}

// errorType names err as aws-lambda-go does: the name of its type, behind
// a pointer.
func errorType(err error) string {
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.Name()
}

// equip gives the agents the test's tools and records the test channel.
func equip(root *cloud.Root) error {
	ws := os.Getenv("SFNLOCAL_WORKSPACE")
	if ws == "" {
		return errors.New("stepcmd: SFNLOCAL_WORKSPACE is not set")
	}
	quota, err := workspace.NewQuota(workspace.Limits{MaxFileBytes: config.DefaultMaxFileBytes, WorkspaceQuotaBytes: config.DefaultWorkspaceQuotaBytes})
	if err != nil {
		return err
	}
	tools, err := tool.NewRegistry(files.ReadFile(), files.WriteFile(quota), files.ListDir(), crash{})
	if err != nil {
		return err
	}
	for _, a := range root.Agents.Current() {
		a.Tools, a.Workspace = tools, osroot.New(ws)
	}
	router, ok := root.Loop.Replier.(agent.Router)
	if !ok {
		return fmt.Errorf("stepcmd: the loop's replier is a %T, not an agent.Router", root.Loop.Replier)
	}
	router[Channel] = &recorder{path: os.Getenv("SFNLOCAL_REPLIES"), crashFailureTo: os.Getenv("SFNLOCAL_CRASH_TELLING_FAILURE_TO")}
	return nil
}

// Reply is one line of the SFNLOCAL_REPLIES file.
type Reply struct {
	Kind       string `json:"kind"` // delta, approval or finish
	RunID      string `json:"run_id"`
	SessionID  string `json:"session_id"`
	To         string `json:"to"`
	Text       string `json:"text,omitempty"`
	Error      string `json:"error,omitempty"`
	ErrorCode  string `json:"error_code,omitempty"`
	ApprovalID string `json:"approval_id,omitempty"`
	// Calls are the ids of the client's tool calls a finish hands it.
	Calls []string `json:"calls,omitempty"`
}

// recorder is the agent.Replier of the test channel.
type recorder struct {
	path string
	// crashFailureTo is the recipient to whom telling a failure crashes.
	crashFailureTo string
	mu             sync.Mutex
}

func (r *recorder) write(x Reply) {
	if r.path == "" {
		return
	}
	b, _ := json.Marshal(x)
	r.mu.Lock()
	defer r.mu.Unlock()
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "stepcmd: record reply:", err)
		return
	}
	defer f.Close()
	if _, err := f.Write(append(b, '\n')); err != nil {
		fmt.Fprintln(os.Stderr, "stepcmd: record reply:", err)
	}
}

func (r *recorder) Delta(st agent.RunState, text string) {
	r.write(Reply{Kind: "delta", RunID: st.RunID, SessionID: st.SessionID, To: st.Reply.To, Text: text})
}

func (r *recorder) Approval(st agent.RunState, a store.Approval) {
	r.write(Reply{Kind: "approval", RunID: st.RunID, SessionID: st.SessionID, To: st.Reply.To, Text: a.Prompt, ApprovalID: a.ID})
}

func (r *recorder) Finish(st agent.RunState, res agent.Result) {
	if res.ErrorCode != "" && r.crashFailureTo != "" && st.Reply.To == r.crashFailureTo {
		panic("stepcmd: crashing while telling " + st.Reply.To + " of a failure")
	}
	x := Reply{Kind: "finish", RunID: st.RunID, SessionID: st.SessionID, To: st.Reply.To, Text: res.Content, Error: res.Error, ErrorCode: res.ErrorCode}
	for _, c := range res.ToolCalls {
		x.Calls = append(x.Calls, c.ID)
	}
	r.write(x)
}

// crash is a tool that kills the process.
type crash struct{}

func (crash) Definition() chat.ToolDef {
	return chat.ToolDef{
		Name:        "crash",
		Description: "Test tool: crashes the process running it.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
	}
}

// Policy: the crash is no read (a read may run again after a restart,
// which would crash the function again, as the failure test must not
// see), and it writes nothing that other keys see: it runs without asking
// under supervised autonomy, as the tests deliver, and a call of it found
// started is reported interrupted instead of run again.
func (crash) Policy() tool.Policy { return tool.Policy{Effect: tool.WriteOwn} }

func (crash) Call(context.Context, tool.Env, json.RawMessage) (string, error) {
	panic("crash tool called")
}
