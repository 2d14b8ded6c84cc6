package cloudtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest/awsmodel"
)

// executionPrefix is the ARN of an execution of StateMachineARN without
// its name.
const executionPrefix = "arn:aws:states:us-east-1:123456789012:execution:Lambdaclaw-loop:"

// StepHandler is the step function's handler.
type StepHandler func(context.Context, sfn.Event) (any, error)

// SFN is a fake of the Step Functions API (the awsJson1_0 protocol) for
// what the driver calls: StartExecution, whose execution names are unique
// per state machine, and SendTaskSuccess, whose task tokens resume once;
// and DescribeExecution, for an operator's tool.
// A request the service's model refuses (awsmodel) is answered
// ValidationException, and fails the test.
type SFN struct {
	URL string

	t     testing.TB
	model *awsmodel.Model
	ctx   context.Context
	wg    sync.WaitGroup
	mu    sync.Mutex
	exec  map[string]*Execution // by name
	// order lists the execution names as they were started.
	order  []string
	tokens map[string]chan string // live task tokens
	step   StepHandler
	// refuse, when set, is the error StartExecution answers.
	refuse string
}

// Refuse makes StartExecution fail with the error typ from now on (as
// ExecutionLimitExceeded, when the account's open executions are at
// their limit), or succeed again when typ is "".
func (f *SFN) Refuse(typ string) {
	f.mu.Lock()
	f.refuse = typ
	f.mu.Unlock()
}

// status is the execution's status as DescribeExecution tells it:
// RUNNING until a played execution ended, then SUCCEEDED, or FAILED when
// it could not end.
func (e *Execution) status() string {
	select {
	case <-e.done:
		if e.Err != nil {
			return "FAILED"
		}
		return "SUCCEEDED"
	default:
		return "RUNNING"
	}
}

// Execution is one started execution.
type Execution struct {
	Name, Input string
	// Output is the final state once a played execution ended; Err tells
	// why it could not end.
	Output json.RawMessage
	Err    error
	done   chan struct{}
}

// NewSFN starts the fake; it stops, and waits for the executions it
// plays, when the test ends.
func NewSFN(t testing.TB) *SFN {
	f := &SFN{t: t, model: awsmodel.Load(t, "stepfunctions"), exec: map[string]*Execution{}, tokens: map[string]chan string{}}
	f.ctx, f.URL = startFake(t, f.serve, &f.wg)
	return f
}

// Play makes the fake run every execution it starts from now on, as the
// state machine does, invoking step for its tasks.
func (f *SFN) Play(step StepHandler) {
	f.mu.Lock()
	f.step = step
	f.mu.Unlock()
}

// Started returns the names of the executions started, in order.
func (f *SFN) Started() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.order...)
}

// Execution returns the execution called name, or nil.
func (f *SFN) Execution(name string) *Execution {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.exec[name]
}

// Wait waits until the played execution name has ended.
func (f *SFN) Wait(name string, timeout time.Duration) *Execution {
	f.t.Helper()
	var e *Execution
	Wait(f.t, timeout, "execution "+name+" to start", func() bool { e = f.Execution(name); return e != nil })
	select {
	case <-e.done:
		return e
	case <-time.After(timeout):
		f.t.Fatalf("execution %s did not end within %s", name, timeout)
		return nil
	}
}

// AddToken makes token a live task token, as a waitForTaskToken task does
// before it invokes its function. The output SendTaskSuccess sends with
// it arrives on the returned channel.
func (f *SFN) AddToken(token string) <-chan string {
	ch := make(chan string, 1)
	f.mu.Lock()
	f.tokens[token] = ch
	f.mu.Unlock()
	return ch
}

// TokenLive reports whether token still waits for SendTaskSuccess.
func (f *SFN) TokenLive(token string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.tokens[token]
	return ok
}

func (f *SFN) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	reply := awsJSON{w, "application/x-amz-json-1.0"}
	fail := func(typ, msg string) { reply.fail(http.StatusBadRequest, typ, msg) }
	ok := reply.ok
	target := r.Header.Get("X-Amz-Target")
	op, in, err := f.model.FromAWSJSON(target, body)
	if err := refused(f.t, f.model, op, in, err); err != nil {
		fail("ValidationException", err.Error())
		return
	}
	switch target {
	case "AWSStepFunctions.StartExecution":
		var in struct {
			StateMachineArn string `json:"stateMachineArn"`
			Name            string `json:"name"`
			Input           string `json:"input"`
		}
		if err := json.Unmarshal(body, &in); err != nil || in.Name == "" || in.StateMachineArn != StateMachineARN {
			fail("ValidationException", fmt.Sprintf("bad StartExecution: %s", body))
			return
		}
		f.mu.Lock()
		if f.refuse != "" {
			typ := f.refuse
			f.mu.Unlock()
			fail(typ, "refused by the test")
			return
		}
		if _, dup := f.exec[in.Name]; dup {
			f.mu.Unlock()
			fail("ExecutionAlreadyExists", "Execution Already Exists: '"+in.Name+"'")
			return
		}
		e := &Execution{Name: in.Name, Input: in.Input, done: make(chan struct{})}
		f.exec[in.Name] = e
		f.order = append(f.order, in.Name)
		step := f.step
		f.mu.Unlock()
		if step != nil {
			f.wg.Go(func() { f.play(e, step) })
		}
		ok(map[string]any{"executionArn": executionPrefix + in.Name, "startDate": float64(time.Now().Unix())})
	case "AWSStepFunctions.DescribeExecution":
		var in struct {
			ExecutionArn string `json:"executionArn"`
		}
		json.Unmarshal(body, &in)
		name, found := strings.CutPrefix(in.ExecutionArn, executionPrefix)
		f.mu.Lock()
		e := f.exec[name]
		f.mu.Unlock()
		if !found || e == nil {
			fail("ExecutionDoesNotExist", "Execution Does Not Exist: '"+in.ExecutionArn+"'")
			return
		}
		ok(map[string]any{"executionArn": in.ExecutionArn, "stateMachineArn": StateMachineARN, "name": name,
			"status": e.status(), "startDate": float64(time.Now().Unix())})
	case "AWSStepFunctions.SendTaskSuccess":
		var in struct {
			TaskToken string `json:"taskToken"`
			Output    string `json:"output"`
		}
		if err := json.Unmarshal(body, &in); err != nil {
			fail("ValidationException", err.Error())
			return
		}
		f.mu.Lock()
		ch, live := f.tokens[in.TaskToken]
		delete(f.tokens, in.TaskToken)
		f.mu.Unlock()
		if !live {
			fail("InvalidToken", "Invalid Token: '"+in.TaskToken+"'")
			return
		}
		ch <- in.Output
		ok(struct{}{})
	default:
		fail("UnknownOperationException", "unknown operation "+target)
	}
}

// play runs an execution as the definition of infra/statemachine.go does:
// Step until the state's step is done; on wait, the park task with a task
// token, then wait for SendTaskSuccess; on act, one Call tool task per
// call id, then Step. Errors named Transient are retried (three times);
// any other error, or one retried too often, goes to the Fail task.
func (f *SFN) play(e *Execution, step StepHandler) {
	defer close(e.done)
	invoke := func(ev sfn.Event) (json.RawMessage, error) {
		var err error
		for attempt := range 4 {
			var out any
			out, err = step(f.ctx, ev)
			var tr *sfn.Transient
			if err == nil {
				return json.Marshal(out)
			}
			if !errors.As(err, &tr) || attempt == 3 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		return nil, err
	}
	failWith := func(state json.RawMessage, cause error) {
		var m map[string]any
		json.Unmarshal(state, &m)
		m["error_info"] = map[string]string{"Error": "Transient", "Cause": cause.Error()}
		withErr, _ := json.Marshal(m)
		out, err := invoke(sfn.Event{Action: "fail", State: withErr})
		e.Output, e.Err = out, err
	}
	state := json.RawMessage(e.Input)
	for range 100 {
		var st struct {
			Step     string   `json:"step"`
			Calls    []string `json:"calls"`
			Approval string   `json:"approval"`
			RunID    string   `json:"run_id"`
		}
		if err := json.Unmarshal(state, &st); err != nil {
			e.Err = err
			return
		}
		switch st.Step {
		case "done":
			e.Output = state
			return
		case "wait":
			token := "token-" + st.Approval
			ch := f.AddToken(token)
			if _, err := invoke(sfn.Event{Action: "park", State: state, TaskToken: token}); err != nil {
				failWith(state, err)
				return
			}
			select {
			case out := <-ch:
				state = json.RawMessage(out)
			case <-f.ctx.Done():
				e.Err = errors.New("the test ended while the execution waited for its task token")
				return
			}
			continue
		case "act":
			for _, id := range st.Calls {
				if _, err := invoke(sfn.Event{Action: "call", State: state, CallID: id}); err != nil {
					failWith(state, err)
					return
				}
			}
		}
		out, err := invoke(sfn.Event{Action: "step", State: state})
		if err != nil {
			failWith(state, err)
			return
		}
		state = out
	}
	e.Err = errors.New("the execution ran 100 states without ending")
}
