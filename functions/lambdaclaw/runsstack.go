package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// Stack outputs of the runs commands (infra/stack.go).
const (
	outStateMachine = "StateMachineArn"
	outStepFunction = "StepFunctionArn"
	outRunFailures  = "RunFailuresUrl"
)

// Endpoint overrides of Step Functions (as in the Lambda functions) and
// SQS, for tests.
const (
	envStepFunctionsEndpoint = "STEPFUNCTIONS_ENDPOINT"
	envSQSEndpoint           = "SQS_ENDPOINT"
)

// maxFailureMessages bounds the messages of RunFailures a command reads;
// maxExecutions the executions a run is given (its own, then retries).
const (
	maxFailureMessages = 1000
	maxExecutions      = 10
)

// openStackRuns opens the runs of a deployed stack. A retry hands the run
// to the state machine at its last committed step, as the inline driver
// does (sfn.Inline); an abandon asks the step function to end the run
// through the state machine's Fail path (the action "fail", or "expire"
// for a run parked for an answer), which tells the user and passes the
// session's lane on.
func openStackRuns(ctx context.Context, st *stackFlags) (*runsAt, error) {
	d, err := st.open(ctx)
	if err != nil {
		return nil, err
	}
	if err := d.need(outTable, outStateMachine, outStepFunction, outRunFailures); err != nil {
		return nil, err
	}
	db, err := d.store(ctx)
	if err != nil {
		return nil, err
	}
	queue, err := awsapi.NewSQS(d.aws, getenv(envSQSEndpoint))
	if err != nil {
		return nil, err
	}
	machines, err := awsapi.NewStepFunctions(d.aws, getenv(envStepFunctionsEndpoint))
	if err != nil {
		return nil, err
	}
	fn, err := d.lambda()
	if err != nil {
		return nil, err
	}
	q := &failureQueue{url: d.outputs[outRunFailures], where: d.where(), api: queue}
	x := &stackRuns{d: d, machine: d.outputs[outStateMachine], sfn: machines, fn: fn}
	return &runsAt{loop: &agent.Loop{Store: db}, failures: q.runs, drop: q.drop, retry: x.retry, abandon: x.abandon, close: func() {}}, nil
}

// sfnAPI is the part of the Step Functions API the runs commands use.
type sfnAPI interface {
	StartExecution(ctx context.Context, machine, name, input string) (string, error)
	DescribeExecution(ctx context.Context, arn string) (string, error)
}

// stackRuns retries and abandons the runs of a stack.
type stackRuns struct {
	d       *deployment
	machine string
	sfn     sfnAPI
	fn      lambdaAPI
}

// executionRunning is the status of an execution that runs.
const executionRunning = "RUNNING"

// executionName is the name of the run's execution number i: the run id,
// as the driver names it, then the run id with a suffix for each retry
// (an execution's name is never reused).
func executionName(runID string, i int) string {
	if i == 0 {
		return runID
	}
	return fmt.Sprintf("%s-retry%d", runID, i)
}

// executionARN is the ARN of the execution called name.
func (x *stackRuns) executionARN(name string) string {
	return strings.Replace(x.machine, ":stateMachine:", ":execution:", 1) + ":" + name
}

// running returns the name of the run's execution that is running, or ""
// when none is (its executions are tried in order until one that does
// not exist).
func (x *stackRuns) running(ctx context.Context, runID string) (string, error) {
	for i := range maxExecutions {
		name := executionName(runID, i)
		status, err := x.sfn.DescribeExecution(ctx, x.executionARN(name))
		switch {
		case awsapi.HasCode(err, "ExecutionDoesNotExist"):
			return "", nil
		case err != nil:
			return "", fmt.Errorf("%s: describe execution %s: %w", x.d.where(), name, err)
		case status == executionRunning:
			return name, nil
		}
	}
	return "", nil
}

// retry starts an execution of the state machine at the run's last
// committed step: the run's own (as a hand-over names it), or, when that
// one ended, the next retry's. An execution that is running it already
// is left to do so: a retry repeated starts nothing.
func (x *stackRuns) retry(ctx context.Context, run store.Run, st agent.RunState) (string, error) {
	input, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	for i := range maxExecutions {
		name := executionName(run.ID, i)
		if len(name) > 80 {
			return "", fmt.Errorf("run %s: the execution name %s is longer than Step Functions allows (80)", run.ID, name)
		}
		_, err := x.sfn.StartExecution(ctx, x.machine, name, string(input))
		switch {
		case err == nil:
			return fmt.Sprintf("run %s handed to the state machine at its %s step: execution %s", run.ID, st.Step, name), nil
		case !awsapi.HasCode(err, "ExecutionAlreadyExists"):
			return "", fmt.Errorf("%s: start execution %s: %w", x.d.where(), name, err)
		}
		status, err := x.sfn.DescribeExecution(ctx, x.executionARN(name))
		if err != nil {
			return "", fmt.Errorf("%s: describe execution %s: %w", x.d.where(), name, err)
		}
		if status == executionRunning {
			return fmt.Sprintf("run %s: execution %s is running it already; nothing started", run.ID, name), nil
		}
	}
	return "", fmt.Errorf("run %s had %d executions already: abandon it (lambdaclaw runs abandon %s --stack %s)", run.ID, maxExecutions, run.ID, x.d.name)
}

// abandon asks the step function to end the run failed, as the state
// machine's Fail path does (an expired approval for a parked run): the
// user is told, the session's lane passes on. A run an execution is
// running is refused: that execution ends it.
func (x *stackRuns) abandon(ctx context.Context, run store.Run, st agent.RunState) (string, error) {
	name, err := x.running(ctx, run.ID)
	if err != nil {
		return "", err
	}
	if name != "" {
		return "", fmt.Errorf("run %s: execution %s is running it; stop it (aws stepfunctions stop-execution) or let it end", run.ID, name)
	}
	state := map[string]any{}
	if err := json.Unmarshal(run.State, &state); err != nil {
		return "", fmt.Errorf("run %s: %w", run.ID, err)
	}
	action := "fail"
	if st.Parked() {
		action = "expire"
	} else {
		state["error_info"] = map[string]string{"Error": "Abandoned", "Cause": errAbandoned.Error()}
	}
	raw, err := json.Marshal(state)
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(sfn.Event{Action: action, State: raw})
	if err != nil {
		return "", err
	}
	out, err := x.fn.Invoke(ctx, x.d.outputs[outStepFunction], payload)
	if err != nil {
		return "", fmt.Errorf("%s: invoke the step function: %w", x.d.where(), err)
	}
	if out.FunctionError != "" {
		var fe struct {
			Message string `json:"errorMessage"`
		}
		_ = json.Unmarshal(out.Payload, &fe)
		return "", fmt.Errorf("%s: the step function could not end run %s: %s", x.d.where(), run.ID, fe.Message)
	}
	return fmt.Sprintf("run %s ended failed: its user was told, and the session's next message runs", run.ID), nil
}

// sqsAPI is the part of the SQS API the runs commands use.
type sqsAPI interface {
	Receive(ctx context.Context, queue string, max, hide int) ([]awsapi.Message, error)
	DeleteBatch(ctx context.Context, queue string, entries []awsapi.Entry) ([]awsapi.BatchError, error)
	ShowBatch(ctx context.Context, queue string, entries []awsapi.Entry) ([]awsapi.BatchError, error)
}

// failureQueue is the stack's RunFailures queue: each message is the
// invocation record of a run Lambda gave up on (its on-failure
// destination), whose requestPayload is the event of the run (sfn.Event).
type failureQueue struct {
	api        sqsAPI
	url, where string
}

// failure is a message of the queue, received.
type failure struct {
	runID, handle string
	attempts      int
	err           string
	at            time.Time
}

// scanHide is how long a scan hides the messages it received from other
// readers; it shows them again when it is done.
const scanHide = 60

// scan receives the queue's messages, at most maxFailureMessages, and
// keeps them hidden until release.
func (q *failureQueue) scan(ctx context.Context) ([]failure, error) {
	var out []failure
	for len(out) < maxFailureMessages {
		msgs, err := q.api.Receive(ctx, q.url, 10, scanHide)
		if err != nil {
			_ = q.release(ctx, out)
			return nil, fmt.Errorf("%s: read RunFailures: %w", q.where, err)
		}
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			out = append(out, parseFailure(m))
		}
	}
	return out, nil
}

// parseFailure reads an invocation record; a message that is none has no
// run id.
func parseFailure(m awsapi.Message) failure {
	var rec struct {
		Timestamp      time.Time `json:"timestamp"`
		RequestContext struct {
			Attempts int `json:"approximateInvokeCount"`
		} `json:"requestContext"`
		RequestPayload  sfn.Event `json:"requestPayload"`
		ResponsePayload struct {
			Message string `json:"errorMessage"`
		} `json:"responsePayload"`
	}
	f := failure{handle: m.ReceiptHandle}
	if json.Unmarshal([]byte(m.Body), &rec) != nil {
		return f
	}
	var st agent.RunState
	if rec.RequestPayload.Action == sfn.ActionRun && json.Unmarshal(rec.RequestPayload.State, &st) == nil {
		f.runID = st.RunID
	}
	f.attempts, f.err, f.at = rec.RequestContext.Attempts, rec.ResponsePayload.Message, rec.Timestamp
	return f
}

// release shows the messages again, at once.
func (q *failureQueue) release(ctx context.Context, msgs []failure) error {
	return q.batches(ctx, msgs, func(ctx context.Context, batch []awsapi.Entry) ([]awsapi.BatchError, error) {
		return q.api.ShowBatch(ctx, q.url, batch)
	})
}

// batches applies do to msgs ten at a time (SQS's batch limit), each
// entry named by its place in the batch.
func (q *failureQueue) batches(ctx context.Context, msgs []failure, do func(context.Context, []awsapi.Entry) ([]awsapi.BatchError, error)) error {
	for batch := range slices.Chunk(msgs, 10) {
		entries := make([]awsapi.Entry, len(batch))
		for i, m := range batch {
			entries[i] = awsapi.Entry{ID: fmt.Sprint(i), ReceiptHandle: m.handle}
		}
		failed, err := do(ctx, entries)
		if err != nil {
			return fmt.Errorf("%s: RunFailures: %w", q.where, err)
		}
		if len(failed) > 0 {
			return fmt.Errorf("%s: RunFailures: %s: %s", q.where, failed[0].Code, failed[0].Message)
		}
	}
	return nil
}

// runs returns what the queue holds of each run.
func (q *failureQueue) runs(ctx context.Context) (map[string]failedRun, error) {
	msgs, err := q.scan(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]failedRun{}
	for _, m := range msgs {
		if m.runID == "" {
			continue
		}
		f := out[m.runID]
		f.messages++
		if !m.at.Before(f.at) {
			f.attempts, f.err, f.at = m.attempts, m.err, m.at
		}
		out[m.runID] = f
	}
	return out, q.release(ctx, msgs)
}

// drop deletes the messages of the runs ids holds true from the queue
// and returns how many there were.
func (q *failureQueue) drop(ctx context.Context, ids map[string]bool) (int, error) {
	msgs, err := q.scan(ctx)
	if err != nil {
		return 0, err
	}
	var mine, others []failure
	for _, m := range msgs {
		if m.runID != "" && ids[m.runID] {
			mine = append(mine, m)
		} else {
			others = append(others, m)
		}
	}
	err = q.batches(ctx, mine, func(ctx context.Context, batch []awsapi.Entry) ([]awsapi.BatchError, error) {
		return q.api.DeleteBatch(ctx, q.url, batch)
	})
	return len(mine), errors.Join(err, q.release(ctx, others))
}
