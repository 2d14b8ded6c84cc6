// Package sfn drives the agent loop from AWS Step Functions (DESIGN.md §4).
// It holds the step Lambda's handler, which runs the same agent.Loop steps
// as the local driver, and the delivery of messages on AWS: a message is
// queued as a run in the store, the session's lane is taken with a
// conditional-write lease, and the run holding the lane is executed by the
// state machine. When a run ends, the lane passes to the session's next
// queued run. An answered approval resumes its parked execution with the
// task token stored on the approval. A user's stop ends a session's head
// run wherever it stands (Driver.Stop, stop.go).
package sfn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// Client is the part of the Step Functions API the driver uses
// (implemented by awsapi.StepFunctions); its errors carry the service's
// codes (awsapi.Code).
type Client interface {
	StartExecution(ctx context.Context, machine, name, input string) (string, error)
	SendTaskSuccess(ctx context.Context, token, output string) error
}

// Lanes leases a session's lane to one run at a time.
type Lanes interface {
	AcquireLane(ctx context.Context, sessionID, owner string, ttl time.Duration) (bool, error)
	ReleaseLane(ctx context.Context, sessionID, owner string) error
	// HoldsLane reports whether owner holds the session's lane.
	HoldsLane(ctx context.Context, sessionID, owner string) (bool, error)
}

// Driver runs the agent loop on Step Functions.
type Driver struct {
	Loop         *agent.Loop
	Lanes        Lanes
	Client       Client
	StateMachine string
	// LaneTTL bounds how long a lane stays taken without a step renewing
	// it; it must outlast the longest approval wait. Zero means 8 days.
	LaneTTL time.Duration
	// Inline, when set, runs durable runs in a Lambda invocation and
	// gives the state machine only the runs that park or run long
	// (inline.go); without it every run is a state machine execution.
	Inline *Inline
	Log    *slog.Logger
}

func (d *Driver) log() *slog.Logger {
	if d.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Log
}

func (d *Driver) laneTTL() time.Duration {
	if d.LaneTTL > 0 {
		return d.LaneTTL
	}
	return 8 * 24 * time.Hour
}

// Event is the step Lambda's input, as the state machine sends it.
type Event struct {
	// Action is "step", "call", "park", "expire", "fail" or "release"
	// from the state machine, or "run" (ActionRun) from an asynchronous
	// invocation (Inline).
	Action string          `json:"action"`
	State  json.RawMessage `json:"state"`
	// TaskToken comes with "park"; CallID with "call".
	TaskToken string `json:"task_token,omitempty"`
	CallID    string `json:"call_id,omitempty"`
}

// errorInfo is what a Catch of the state machine adds to the state: the
// error of the failed task under error_info, and under fail_error_info
// the error of the Fail task itself.
type errorInfo struct {
	Info     *taskError `json:"error_info"`
	FailInfo *taskError `json:"fail_error_info"`
}

// taskError is a task's error as Step Functions reports it.
type taskError struct {
	Error string `json:"Error"`
	Cause string `json:"Cause"`
}

// String renders the error for the log: its name, and the message of a
// Lambda function error (whose cause is its JSON error payload) or the
// cause as it is.
func (e *taskError) String() string {
	if e == nil {
		return "unknown error"
	}
	var lambdaErr struct {
		Message string `json:"errorMessage"`
	}
	switch {
	case json.Unmarshal([]byte(e.Cause), &lambdaErr) == nil && lambdaErr.Message != "":
		return e.Error + ": " + lambdaErr.Message
	case e.Cause != "":
		return e.Error + ": " + e.Cause
	}
	return e.Error
}

// Transient is a failure the state machine retries (its Retry matches the
// error name "Transient").
type Transient struct{ Err error }

func (t *Transient) Error() string { return t.Err.Error() }
func (t *Transient) Unwrap() error { return t.Err }

// Handle runs one task of the state machine and returns its output.
//
//   - step runs the step the state names;
//   - call runs one tool call of the act step;
//   - park stores the task token of the approval task;
//   - expire ends a run whose approval task timed out (Loop.Expire), then
//     steps it: the user is told and the lane passes on;
//   - fail records a run the state machine caught failing, tells the
//     user and passes the lane on;
//   - release ends a run whose Fail task failed too: the run is saved as
//     failed without telling anyone (Loop.Abandon) and the lane passes on;
//   - run (an asynchronous invocation, not a task) steps a run inline
//     (Inline).
func (d *Driver) Handle(ctx context.Context, ev Event) (any, error) {
	var st agent.RunState
	if err := json.Unmarshal(ev.State, &st); err != nil {
		return nil, fmt.Errorf("step handler: decode state: %w", err)
	}
	var info errorInfo
	if ev.Action == "fail" || ev.Action == "release" {
		_ = json.Unmarshal(ev.State, &info)
	}
	switch ev.Action {
	case "step":
		return d.step(ctx, st)
	case "call":
		err := d.Loop.ActCall(ctx, st, ev.CallID)
		if errors.Is(err, store.ErrRunFinished) {
			// The run was stopped: none of its calls starts, and the
			// step that follows finds it done.
			return struct{}{}, nil
		}
		if err != nil {
			return nil, &Transient{fmt.Errorf("tool call %s: %w", ev.CallID, err)}
		}
		return struct{}{}, nil
	case "park":
		return struct{}{}, d.park(ctx, st, ev.TaskToken)
	case "expire":
		next, err := d.Loop.Expire(ctx, st)
		if err != nil {
			return st, &Transient{err}
		}
		return d.step(ctx, next)
	case "fail":
		return d.fail(ctx, st, info.Info.String())
	case "release":
		return d.release(ctx, st, "recording the failure failed ("+info.FailInfo.String()+") after "+info.Info.String())
	case ActionRun:
		return struct{}{}, d.run(ctx, st)
	default:
		return nil, fmt.Errorf("step handler: unknown action %q", ev.Action)
	}
}

// fail records the failure of a run the state machine caught and tells
// the user (Loop.Fail, then the finish step), and passes the session's
// lane on. A run the store has as finished already (its failure was
// recorded, or it finished and the task died after the commit) is not
// recorded again: its outcome is told again if the task may have died
// before telling it (retell), and the lane is passed on.
func (d *Driver) fail(ctx context.Context, st agent.RunState, cause string) (agent.RunState, error) {
	run, err := d.Loop.Store.GetRun(ctx, st.RunID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		st.Step = agent.StepDone
	case err != nil:
		return st, &Transient{fmt.Errorf("fail: %w", err)}
	case run.Status.Finished():
		if _, err := d.retell(ctx, run); err != nil {
			return st, &Transient{fmt.Errorf("fail: %w", err)}
		}
		if saved, err := agent.DecodeState(run); err == nil {
			st = saved
		}
		st.Step = agent.StepDone
	default:
		return d.step(ctx, d.Loop.Fail(st, errors.New(cause)))
	}
	return d.passOn(ctx, st)
}

// release ends a run whose failure could not be recorded: it is saved as
// failed as it stands (Loop.Abandon) and the session's lane passes on, so
// that the session's next message runs.
func (d *Driver) release(ctx context.Context, st agent.RunState, cause string) (agent.RunState, error) {
	st, err := d.Loop.Abandon(ctx, st, errors.New(cause))
	if err != nil {
		return st, &Transient{fmt.Errorf("release: %w", err)}
	}
	return d.passOn(ctx, st)
}

// retell tells again how the finished run ended when the invocation
// that finished it may have died between the commit and the telling:
// the run still holds its session's lane, which the invocation passes on
// only after it told (step). A repeated delivery of a run whose hand-off
// is done tells nothing. It reports whether the run holds the lane.
func (d *Driver) retell(ctx context.Context, run store.Run) (bool, error) {
	held, err := d.Lanes.HoldsLane(ctx, run.SessionID, run.ID)
	if err != nil || !held {
		return false, err
	}
	d.log().Warn("finished run found holding its lane: its outcome is told again", "run_id", run.ID)
	return true, d.Loop.Retell(ctx, run)
}

// passOn hands the lane of st's session, which st held, on.
func (d *Driver) passOn(ctx context.Context, st agent.RunState) (agent.RunState, error) {
	if err := d.handoff(ctx, st.SessionID, st.RunID); err != nil {
		return st, &Transient{err}
	}
	return st, nil
}

// step runs the step st names (which saves the run) and hands the lane on
// when the run is done. Then it tells the loop's Recorder of the
// exchanges finished runs queued (agent.Loop.RecordQueued), after the
// answer went out and the session's next run started; a failure to
// record is logged and fails nothing.
func (d *Driver) step(ctx context.Context, st agent.RunState) (agent.RunState, error) {
	next, err := d.Loop.Step(ctx, st)
	if errors.Is(err, store.ErrLeaseLost) {
		return st, err // final: another invocation steps the run
	}
	if err != nil {
		return st, &Transient{err}
	}
	if next.Step == agent.StepDone {
		if next, err = d.passOn(ctx, next); err != nil {
			return next, err
		}
		d.record(ctx, next.RunID)
	}
	return next, nil
}

// record tells the loop's Recorder of the exchanges finished runs queued
// (agent.Loop.RecordQueued), once the run runID ended; a failure is
// logged and fails nothing.
func (d *Driver) record(ctx context.Context, runID string) {
	if _, err := d.Loop.RecordQueued(ctx); err != nil {
		d.log().Error("record exchanges", "run_id", runID, "error", err)
	}
}

// park stores the task token that resumes a run waiting for approval. If
// the approval was answered before the token was stored, it resumes the
// run at once.
func (d *Driver) park(ctx context.Context, st agent.RunState, token string) error {
	if err := d.Loop.Store.SetApprovalToken(ctx, st.Approval, token); err != nil {
		return &Transient{fmt.Errorf("park: %w", err)}
	}
	ap, err := d.Loop.Store.GetApproval(ctx, st.Approval)
	if err != nil {
		return &Transient{fmt.Errorf("park: %w", err)}
	}
	if ap.Status == store.ApprovalPending {
		return nil
	}
	return d.resume(ctx, ap.RunID, token)
}

// resume sends a parked execution on: its output is the state the run's
// wait step moves to now that the answer is in (act after a person's
// answer, think after a client's tool results).
func (d *Driver) resume(ctx context.Context, runID, token string) error {
	run, err := d.Loop.Store.GetRun(ctx, runID)
	if err != nil {
		return fmt.Errorf("resume run %s: %w", runID, err)
	}
	st, err := agent.DecodeState(run)
	if err != nil {
		return err
	}
	if st.Parked() {
		if st, err = d.Loop.Step(ctx, st); err != nil {
			return fmt.Errorf("resume run %s: %w", runID, err)
		}
	}
	out, err := json.Marshal(st)
	if err != nil {
		return err
	}
	err = d.Client.SendTaskSuccess(ctx, token, string(out))
	switch {
	case awsapi.HasCode(err, "TaskTimedOut", "InvalidToken"):
		return nil // resumed by the other side first, or timed out
	case err != nil:
		return fmt.Errorf("resume run %s: %w", runID, err)
	}
	return nil
}

// handoff passes the session's lane from owner to the next queued run, or
// releases it. After releasing it looks once more, so a message queued in
// between is never stranded: either its sender took the lane, or this does.
func (d *Driver) handoff(ctx context.Context, sessionID, owner string) error {
	if err := d.Lanes.ReleaseLane(ctx, sessionID, owner); err != nil {
		return fmt.Errorf("release lane: %w", err)
	}
	return d.kick(ctx, sessionID)
}

// kick starts the session's next run if the lane is free.
func (d *Driver) kick(ctx context.Context, sessionID string) error {
	next, err := d.Loop.Store.NextRun(ctx, sessionID)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("next run: %w", err)
	}
	ok, err := d.Lanes.AcquireLane(ctx, sessionID, next.ID, d.laneTTL())
	if err != nil || !ok {
		return err // the lane is busy: its holder hands it on
	}
	st, err := agent.DecodeState(next)
	if err != nil {
		return err
	}
	return d.start(ctx, st)
}

// start begins a run: inline (Inline), or as an execution of the state
// machine.
func (d *Driver) start(ctx context.Context, st agent.RunState) error {
	if d.Inline != nil {
		return d.invoke(ctx, st)
	}
	return d.startExecution(ctx, st)
}

// startExecution begins the execution of a run at st; the run id names
// the execution, so starting it twice is harmless.
func (d *Driver) startExecution(ctx context.Context, st agent.RunState) error {
	in, err := json.Marshal(st)
	if err != nil {
		return err
	}
	_, err = d.Client.StartExecution(ctx, d.StateMachine, st.RunID, string(in))
	if awsapi.HasCode(err, "ExecutionAlreadyExists") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("start execution of run %s: %w", st.RunID, err)
	}
	return nil
}

// Deliver hands a user's message to its session; see agent.Loop.Deliver.
func (d *Driver) Deliver(ctx context.Context, in agent.Input, subscribe func(runID string)) (agent.RunState, error) {
	return d.Loop.Deliver(ctx, in, d, subscribe)
}

// Resume implements agent.Lane: the parked execution is sent on with the
// task token its park task stored. Without a token yet, the park task
// finds the answer itself.
func (d *Driver) Resume(ctx context.Context, ap store.Approval) error {
	ap, err := d.Loop.Store.GetApproval(ctx, ap.ID)
	if err != nil {
		return err
	}
	if ap.Token == "" {
		return nil
	}
	return d.resume(ctx, ap.RunID, ap.Token)
}

// Kick implements agent.Lane: the session's next run starts if its lane
// is free.
func (d *Driver) Kick(ctx context.Context, sessionID string) error { return d.kick(ctx, sessionID) }

// Reset starts a session afresh; see agent.Loop.Reset. A stuck run at
// the head of its queue (one whose invocation Lambda gave up on, say) is
// ended first (agent.Loop.EndStuck) and the lane passed on.
func (d *Driver) Reset(ctx context.Context, sessionID string) error {
	if st, ended, err := d.Loop.EndStuck(ctx, sessionID); err != nil {
		return fmt.Errorf("reset: %w", err)
	} else if ended {
		if _, err := d.passOn(ctx, st); err != nil {
			return fmt.Errorf("reset: %w", err)
		}
	}
	return d.Loop.Reset(ctx, sessionID)
}
