package sfn

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// CodeTimeout is the error code of a request that stopped waiting for its
// run; the run goes on.
const CodeTimeout = "run_timeout"

// Runner is the gateway.Runner of the api function. It picks the driver by
// the kind of request:
//
//   - a stateless request (Input.Ephemeral) runs inline, in this
//     invocation, with the agent.Driver over the in-memory part of the
//     store: the client holds the history, nothing is persisted, and the
//     answer streams as it is written;
//   - a stateful request goes through Step Functions like every other
//     durable run (Durable.Deliver), so that it persists exactly as the
//     state machine does and queues behind the session's other runs. The
//     request then waits for the run's outcome by polling the store (the
//     run's state, then its answer, failure or approval prompt) and
//     publishes it to Hub, where the gateway listens. What the run
//     streams arrives as the step function stores it (Drafts, written by
//     agent.DraftWriter): a piece per quarter second.
type Runner struct {
	Inline  *agent.Driver
	Durable *Driver
	Hub     *agent.Hub
	// Drafts, when set, is where the step function stores what a run
	// streams.
	Drafts store.Drafts
	// Poll is the first interval between two reads of the run; it grows
	// to MaxPoll. Zero means 100 ms.
	Poll time.Duration
	// MaxPoll is the longest interval between two reads; zero means 1 s.
	MaxPoll time.Duration
	// Wait bounds the wait for a run; zero means 14 minutes. The request
	// also stops waiting 5 s before its context's deadline (the Lambda
	// invocation's), answering with CodeTimeout.
	Wait time.Duration
	Log  *slog.Logger
}

var _ gateway.Runner = (*Runner)(nil)

// Deliver implements gateway.Runner.
func (r *Runner) Deliver(ctx context.Context, in agent.Input, subscribe func(runID string)) (agent.RunState, error) {
	if in.Ephemeral {
		return r.Inline.Deliver(ctx, in, subscribe)
	}
	var runID string
	st, err := r.Durable.Deliver(ctx, in, func(id string) {
		runID = id
		subscribe(id)
	})
	if err != nil {
		return st, err
	}
	if runID == "" {
		runID = st.RunID
	}
	go r.watch(ctx, runID)
	return st, nil
}

// Reset implements gateway.Runner.
func (r *Runner) Reset(ctx context.Context, sessionID string) error {
	return r.Durable.Reset(ctx, sessionID)
}

// watch polls the run until it finishes or parks for an approval, and
// publishes that to the Hub. It stops when ctx ends.
func (r *Runner) watch(ctx context.Context, runID string) {
	wait := r.Wait
	if wait <= 0 {
		wait = 14 * time.Minute
	}
	deadline := time.Now().Add(wait)
	if d, ok := ctx.Deadline(); ok && d.Add(-5*time.Second).Before(deadline) {
		deadline = d.Add(-5 * time.Second)
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	interval, maxInterval := r.Poll, r.MaxPoll
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	if maxInterval <= 0 {
		maxInterval = time.Second
	}
	last := agent.RunState{RunID: runID}
	sent := 0 // draft pieces published
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-wctx.Done():
			if ctx.Err() == nil {
				r.Hub.Finish(last, agent.Result{Usage: last.Usage, ErrorCode: CodeTimeout,
					Error: "the run did not finish in time; it goes on, and its answer will be in the session's history"})
			}
			return
		case <-t.C:
		}
		before := sent
		st, done, err := r.check(wctx, runID, &sent)
		if err != nil && wctx.Err() == nil {
			r.log().Warn("poll run", "run_id", runID, "error", err)
		}
		if st.RunID != "" {
			last = st
		}
		if done {
			return
		}
		if sent > before {
			interval = r.Poll // the run streams: follow it closely
			if interval <= 0 {
				interval = 100 * time.Millisecond
			}
		}
		t.Reset(interval)
		interval = min(interval*3/2, maxInterval)
	}
}

// check reads the run once, publishes the draft pieces it stored since
// sent, and its outcome or its approval prompt when there is one; done
// reports that it did. The run is read before its drafts: a run done has
// stored all it streamed.
func (r *Runner) check(ctx context.Context, runID string, sent *int) (st agent.RunState, done bool, err error) {
	loop := r.Durable.Loop
	run, err := loop.Store.GetRun(ctx, runID)
	if err != nil {
		return st, false, err
	}
	if st, err = agent.DecodeState(run); err != nil {
		return st, false, err
	}
	if r.Drafts != nil && st.Stream {
		pieces, err := r.Drafts.Drafts(ctx, runID, *sent)
		if err != nil {
			return st, false, err
		}
		for _, p := range pieces {
			r.Hub.Delta(st, p)
		}
		*sent += len(pieces)
	}
	switch {
	case run.Status == store.RunDone || run.Status == store.RunFailed:
		res, err := loop.Result(ctx, st)
		if err != nil {
			return st, false, err
		}
		r.Hub.Finish(st, res)
		return st, true, nil
	case st.Parked():
		ap, err := loop.Store.GetApproval(ctx, st.Approval)
		if err != nil || ap.Status != store.ApprovalPending {
			// Answered: the run goes on once the state machine resumes it.
			return st, false, err
		}
		if ap.Kind == store.ApprovalDelegation {
			// The run waits for the agents it delegated to: a question
			// one of them asks is this run's.
			if ap, err = loop.PendingApproval(ctx, st.SessionID); errors.Is(err, agent.ErrNoPendingApproval) {
				return st, false, nil
			} else if err != nil {
				return st, false, err
			}
		}
		if ap.Kind == store.ApprovalClientTools {
			// The run handed its client calls to run: that is its answer
			// to this request.
			res, err := loop.Result(ctx, st)
			if err != nil {
				return st, false, err
			}
			r.Hub.Finish(st, res)
			return st, true, nil
		}
		r.Hub.Approval(st, ap)
		return st, true, nil
	}
	return st, false, nil
}

func (r *Runner) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}
