package sfnlocal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// stepInvoker runs each asynchronous invocation of the step function as
// one process of the step command (as the harness runs the Task states),
// with the inline driver on (RUN_FUNCTION), and waits for it.
type stepInvoker struct {
	step, table, sfnEndpoint string
	out                      bytes.Buffer
}

func (s *stepInvoker) InvokeAsync(ctx context.Context, _ string, payload []byte) error {
	cmd := exec.CommandContext(ctx, s.step)
	cmd.Env = append(os.Environ(), "RUN_FUNCTION=lambdaclaw-step", "DYNAMODB_ENDPOINT="+s.table, "STEPFUNCTIONS_ENDPOINT="+s.sfnEndpoint)
	cmd.Stdin = bytes.NewReader(payload)
	cmd.Stdout, cmd.Stderr = &s.out, &s.out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("step command: %w\n%s", err, s.out.String())
	}
	return nil
}

// inlineHandOver: a run started inline asks for approval; the invocation
// hands it to the synthesized state machine parked at wait, whose Step
// task finds the approval pending and parks it in Await approval; "/yes"
// resumes it with the task token, and the approved call runs once.
func (e *env) inlineHandOver(t *testing.T) {
	const sid = "s-inline-handover"
	e.fake.Reset()
	e.fake.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_inline", Name: "write_file", Arguments: `{"path":"inline.txt","content":"handed over"}`}}},
		fakellm.Reply{Content: "I wrote inline.txt."},
	)
	d := *e.driver
	d.Inline = &sfn.Inline{Invoker: &stepInvoker{step: e.step, table: e.stepTable, sfnEndpoint: e.h.base}, Function: "lambdaclaw-step"}
	st := e.deliverVia(t, &d, sid, "Please write inline.txt")
	x := e.h.wait(t, st.RunID, "parked")
	var in agent.RunState
	if err := json.Unmarshal([]byte(x.Input), &in); err != nil || in.Step != agent.StepWait {
		t.Fatalf("the execution started with %+v (%v), want the run at wait", in, err)
	}
	if x.Parked == nil || len(x.Tasks) == 0 || x.Tasks[0].State != "Step" || x.Tasks[0].Step != agent.StepWait {
		t.Fatalf("execution %s: tasks %+v; want Step at wait, then parked", x.Name, x.Tasks)
	}
	if n := len(e.fake.Requests()); n != 1 {
		t.Errorf("the model was asked %d times before the approval, want once (inline)", n)
	}
	e.deliverVia(t, &d, sid, "/yes")
	x = e.h.wait(t, st.RunID, "done")
	e.succeeded(t, x)
	e.noTaskErrors(t, x)
	if b, err := os.ReadFile(filepath.Join(e.workspace, "inline.txt")); err != nil || string(b) != "handed over" {
		t.Errorf("inline.txt = %q, %v", b, err)
	}
	want := []string{"user: Please write inline.txt", "assistant: [write_file]", "tool write_file call_inline: ", "assistant: I wrote inline.txt."}
	if hist := e.history(t, sid); !matchHistory(hist, want) {
		t.Errorf("history:\n%v\nwant (prefixes):\n%v", summary(hist), want)
	}
	e.runStatus(t, st.RunID, store.RunDone)
	e.laneFree(t, sid)
	e.told(t, st.RunID, "finish", "I wrote inline.txt.", "")
}
