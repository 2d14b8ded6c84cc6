package sfn

import (
	"context"
	"errors"
	"fmt"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// Stop ends the run at the head of the session's queue at its user's
// request (a channel's /stop), as agent.Driver.Stop does locally; false
// when the session has no run to stop, or its run finished first. The
// session is the caller's to derive from the user's identity (sessions
// are named after their owner), so a user reaches only their own runs.
//
// The run may be stepping right now. An inline invocation is fenced by
// the run's lease, which Stop takes from it (Claims.TakeRun): its next
// commit is refused (store.ErrLeaseLost) and its next renewal fails,
// which cuts the model call it waits for. Any other step of the run (a
// task of the state machine, an approval's resume) is fenced by the
// store, which writes no commit of a finished run (store.ErrRunFinished)
// and starts none of its calls. Either way nothing of the run is told
// after the stop.
//
// Under its lease Stop commits the run ended as cancelled (agent.Loop.
// Cancel: silent, its approval dropped, its open calls closed), passes
// the session's lane on, so that the next queued run starts, and sends a
// parked execution on with the ended state, which ends it now rather
// than when its approval times out.
func (d *Driver) Stop(ctx context.Context, sessionID string) (bool, error) {
	run, err := d.Loop.Store.NextRun(ctx, sessionID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("stop: %w", err)
	}
	st, err := agent.DecodeState(run)
	if err != nil {
		return false, fmt.Errorf("stop: %w", err)
	}
	if in := d.Inline; in != nil && in.Claims != nil {
		lease, err := in.Claims.TakeRun(ctx, run.ID, agent.NewID(), in.now().Add(in.lease()))
		switch {
		case err != nil:
			return false, fmt.Errorf("stop: %w", err)
		case lease == 0:
			return false, nil // gone with its session's reset
		}
		ctx = agent.WithLease(ctx, lease)
	}
	ended, err := d.Loop.Cancel(ctx, st)
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		return true, nil // another stop took the run from this one and ends it
	case err != nil:
		return false, fmt.Errorf("stop: %w", err)
	case ended.ErrorCode != agent.CodeCancelled:
		return false, nil // it finished before the stop
	}
	if _, err := d.passOn(ctx, ended); err != nil {
		return true, fmt.Errorf("stop: %w", err)
	}
	if st.Parked() {
		d.endParked(ctx, st)
	}
	return true, nil
}

// endParked sends the execution of the stopped run st, parked at its
// approval, on with the run's ended state, so that it ends. One whose
// park task has not stored its token yet finds the approval answered and
// sends itself on (park); one not sent on ends when its approval times
// out, finding the run done (a failure here is only logged).
func (d *Driver) endParked(ctx context.Context, st agent.RunState) {
	ap, err := d.Loop.Store.GetApproval(ctx, st.Approval)
	if err == nil && ap.Token != "" {
		err = d.resume(ctx, st.RunID, ap.Token)
	}
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		d.log().Warn("stopped run: its parked execution was not sent on", "run_id", st.RunID, "error", err)
	}
}
