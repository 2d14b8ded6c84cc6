package sfn

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// Invoker is the part of the Lambda API the inline driver uses
// (implemented by awsapi.Lambda): an asynchronous invocation.
type Invoker interface {
	InvokeAsync(ctx context.Context, function string, payload []byte) error
}

// Claims leases a run to the one invocation that steps it inline
// (implemented by dynamo.Store).
type Claims interface {
	// ClaimRun takes the run's lease for holder until until, unless
	// another holder's is live at now. lease is the version of the lease
	// taken (every claim increments it; store.Commit.Lease), zero when
	// holder did not get it; first says nobody claimed the run before.
	ClaimRun(ctx context.Context, runID, holder string, now, until time.Time) (lease int64, first bool, err error)
	// RenewRun moves holder's lease on to until; false when holder lost it.
	RenewRun(ctx context.Context, runID, holder string, until time.Time) (bool, error)
	// TakeRun takes the run's lease for holder until until even from a
	// live holder, whose commits and renewals fail from then on (a stop,
	// Driver.Stop); lease is zero for a run that does not exist.
	TakeRun(ctx context.Context, runID, holder string, until time.Time) (lease int64, err error)
}

// Inline makes the driver run durable runs in a Lambda invocation rather
// than one state machine task per step, which is what a turn costs most
// on Step Functions (a state transition per task and per choice).
//
// Starting a run invokes Function (the step function) asynchronously with
// the action "run". That invocation claims the run (Claims), then steps
// it, each step committed to the store as on the state machine, until it
// is done. A run that parks (an approval, a client's tool results), fails
// a step, or stands at a step that could outlive the invocation is handed
// to the state machine at the step it stands at, before the step starts:
// an execution named after the run, so a hand-over repeated is no second
// execution. A step could outlive it when what is left of the invocation
// is less than the step's bound (agent.Loop.Bound: its model call with
// retries and fallbacks, its tool calls' timeouts, an exec's Fargate
// start) and Margin; a step whose bound is not known is handed over too.
// On the state machine each task has an invocation of its own, which
// every step fits: the loop's MaxStep is the function's timeout less
// Margin, at which model calls are cut, and a tool that may take longer
// is refused at startup (agent.Loop.CheckFits).
//
// Durability comes from Lambda's asynchronous invocation: the event is
// queued, and an invocation that fails or times out is invoked again
// (twice, a minute and more apart), then sent to the function's
// on-failure destination (a dead-letter queue with an alarm, whose runs
// `lambdaclaw runs retry|abandon` hands over or ends). A repeated
// invocation never steps the run inline: if the first one's lease is live
// (renewed every third of Lease while it steps), it is a duplicate
// delivery and does nothing; if the lease lapsed, the first one crashed,
// and the state machine takes the run over at its last committed step,
// with its retries and the Fail path that tells the user and frees the
// session. A repeated invocation that finds the run finished tells its
// outcome again if the run still holds its session's lane: the first one
// died between the commit that finished it and the hand-off that follows
// the telling (Driver.finished); one that finds it parked tells its
// approval again before the hand-over (the first one may have died
// between the commit that parked it and the telling). Lease must be
// shorter than Lambda's delay before a retry (a minute).
//
// The lease fences the invocation's commits: each step commits on the
// condition that the run's lease version is still the one its claim took
// (agent.WithLease), so an invocation that lost the lease (it stalled
// past it, and a retry took the run over) has every later commit refused
// (store.ErrLeaseLost) and stops, having changed nothing. A renewal that
// fails stops the stepping too: the invocation ends in an error, and
// Lambda's retry hands the run over.
type Inline struct {
	Invoker  Invoker
	Function string
	Claims   Claims
	// Lease is how long a claim holds without renewal; zero means 20 s.
	Lease time.Duration
	// Margin is the time a step needs beyond its bound (agent.Loop.Bound),
	// for the store and the reply channel: a step whose bound and Margin
	// exceed what is left of the invocation is handed over. Zero means
	// StepMargin.
	Margin time.Duration
	// Now returns the time of the leases; nil means time.Now.
	Now func() time.Time
}

func (in *Inline) now() time.Time {
	if in.Now != nil {
		return in.Now()
	}
	return time.Now()
}

func (in *Inline) lease() time.Duration {
	if in.Lease > 0 {
		return in.Lease
	}
	return 20 * time.Second
}

// StepMargin is the time a step needs beyond its bound, for the store and
// the reply channel.
const StepMargin = 30 * time.Second

// fits reports whether a step that may take bound fits in what is left
// of the invocation of ctx.
func (in *Inline) fits(ctx context.Context, bound time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || time.Until(deadline) >= bound+cmp.Or(in.Margin, StepMargin)
}

// ActionRun is the action of the event that runs a run inline.
const ActionRun = "run"

// invoke queues the inline run of st: an asynchronous invocation of the
// step function.
func (d *Driver) invoke(ctx context.Context, st agent.RunState) error {
	state, err := json.Marshal(st)
	if err != nil {
		return err
	}
	payload, err := json.Marshal(Event{Action: ActionRun, State: state})
	if err != nil {
		return err
	}
	if err := d.Inline.Invoker.InvokeAsync(ctx, d.Inline.Function, payload); err != nil {
		return fmt.Errorf("invoke the run of %s: %w", st.RunID, err)
	}
	return nil
}

// run steps the run of st inline (see Inline). An error makes Lambda
// invoke it again, and that invocation hands the run over.
func (d *Driver) run(ctx context.Context, st agent.RunState) error {
	if d.Inline == nil || d.Inline.Claims == nil {
		return errors.New("run: this driver does not run inline")
	}
	run, err := d.Loop.Store.GetRun(ctx, st.RunID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		d.log().Warn("inline run: no such run (its session was reset)", "run_id", st.RunID)
		return nil
	case err != nil:
		return fmt.Errorf("run %s: %w", st.RunID, err)
	case run.Status.Finished():
		// A repeated delivery of a run done, or the retry of an
		// invocation that died after the commit that finished it.
		return d.finished(ctx, run)
	}
	if st, err = agent.DecodeState(run); err != nil {
		return err
	}
	in := d.Inline
	holder := agent.NewID()
	now := in.now()
	lease, first, err := in.Claims.ClaimRun(ctx, st.RunID, holder, now, now.Add(in.lease()))
	switch {
	case err != nil:
		return fmt.Errorf("run %s: %w", st.RunID, err)
	case lease == 0:
		return nil // another invocation steps it: a repeated delivery
	case !first:
		// An earlier invocation ended without finishing the run; one
		// that parked it may have died before it told the approval.
		if err := d.Loop.Retell(ctx, run); err != nil {
			return fmt.Errorf("run %s: %w", st.RunID, err)
		}
		return d.handOver(ctx, st, "the inline run was interrupted")
	}
	ctx, held, stop := d.hold(ctx, st.RunID, holder)
	defer stop()
	ctx = agent.WithLease(ctx, lease)
	for st.Step != agent.StepDone {
		if err := held(); err != nil {
			return d.stopped(st, err)
		}
		if st.Parked() {
			return d.handOver(ctx, st, "")
		}
		bound, err := d.Loop.Bound(ctx, st)
		if err != nil {
			return d.handOver(ctx, st, err.Error())
		}
		if !in.fits(ctx, bound) {
			d.log().Info("run handed to the state machine: its next step may outlive the invocation",
				"run_id", st.RunID, "step", st.Step, "bound", bound.String())
			return d.handOver(ctx, st, "")
		}
		next, err := d.step(ctx, st)
		switch {
		case errors.Is(err, store.ErrLeaseLost) || errors.Is(held(), store.ErrLeaseLost):
			return d.stopped(st, store.ErrLeaseLost)
		case err != nil && ctx.Err() != nil:
			return fmt.Errorf("run %s: %w", st.RunID, err)
		case err != nil:
			return d.handOver(ctx, next, err.Error())
		}
		st = next
	}
	return nil
}

// finished ends an inline invocation of a finished run: when an earlier
// invocation died after the commit that finished it, before it passed
// the lane on, the outcome is told again (retell) and the lane passed
// on, and the exchanges it queued are recorded, as step does.
func (d *Driver) finished(ctx context.Context, run store.Run) error {
	held, err := d.retell(ctx, run)
	if err != nil || !held {
		return err
	}
	if err := d.handoff(ctx, run.SessionID, run.ID); err != nil {
		return err
	}
	d.record(ctx, run.ID)
	return nil
}

// handOver starts the state machine's execution of the run at st.
func (d *Driver) handOver(ctx context.Context, st agent.RunState, why string) error {
	if why != "" {
		d.log().Warn("run handed to the state machine", "run_id", st.RunID, "step", st.Step, "reason", why)
	}
	return d.startExecution(ctx, st)
}

// stopped ends the inline stepping of st when its lease no longer holds
// it (why, from hold or a refused commit): another invocation took the
// run over, and this one leaves it alone; any other reason is an error,
// so that Lambda invokes the run again and that invocation hands it over.
func (d *Driver) stopped(st agent.RunState, why error) error {
	if errors.Is(why, store.ErrLeaseLost) {
		d.log().Warn("inline run taken over: this invocation stops", "run_id", st.RunID, "step", st.Step)
		return nil
	}
	return fmt.Errorf("run %s: stop at %s: %w", st.RunID, st.Step, why)
}

// hold renews the run's lease while the run is stepped. The context it
// returns ends when the lease is lost. held reports, between steps,
// whether the lease still holds: store.ErrLeaseLost once another holder
// took it, or the error of a renewal that failed (after which it renews
// no more: nothing tells that the lease still holds).
func (d *Driver) hold(ctx context.Context, runID, holder string) (context.Context, func() error, func()) {
	in := d.Inline
	ctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	var gone error
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(in.lease() / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			ok, err := in.Claims.RenewRun(ctx, runID, holder, in.now().Add(in.lease()))
			if err != nil {
				d.log().Warn("renew the inline lease", "run_id", runID, "error", err)
				mu.Lock()
				gone = fmt.Errorf("renew the lease: %w", err)
				mu.Unlock()
				return
			}
			if !ok {
				mu.Lock()
				gone = store.ErrLeaseLost
				mu.Unlock()
				cancel()
				return
			}
		}
	})
	held := func() error {
		mu.Lock()
		defer mu.Unlock()
		return gone
	}
	return ctx, held, func() {
		close(done)
		wg.Wait()
		cancel()
	}
}
