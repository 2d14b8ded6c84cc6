package checkin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
)

// Jobs starts the runs of jobs' firings that a timer delivers (on AWS,
// EventBridge Scheduler's schedules, one per job, which invoke the
// scheduler function). A firing is claimed before it runs: a second
// delivery of it starts nothing.
type Jobs struct {
	Engine schedule.Engine
	Runner *schedule.Runner
	// Gone removes the timer of a job that no longer exists (one left by
	// a delete that did not finish).
	Gone func(ctx context.Context, id string) error
	Log  *slog.Logger
}

// Fired says what a delivery did.
type Fired struct {
	// Outcome is "started", "resumed" (a claim whose run died, started
	// again), "skipped" (over the daily limit, or missed), "duplicate"
	// (claimed or run already), "not due" (paused, or coalesced) or
	// "gone" (the job was deleted); for a RunNow, "not found" (no such
	// job of the owner).
	Outcome string `json:"outcome"`
	RunID   string `json:"run_id,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Fire claims the firing f and starts its run. Only a failure to claim or
// to start is an error, for the delivery to be retried; a retry after the
// claim's lease takes the run over and starts the same run again.
func (h *Jobs) Fire(ctx context.Context, f schedule.Firing) (Fired, error) {
	run, err := h.Engine.Claim(ctx, f)
	switch {
	case errors.Is(err, schedule.ErrClaimed), errors.Is(err, schedule.ErrDone):
		h.Log.Info("check-in delivered again", "job", f.JobID, "at", f.At, "reason", err.Error())
		return Fired{Outcome: "duplicate", RunID: f.RunID()}, nil
	case errors.Is(err, schedule.ErrNotDue):
		h.Log.Info("check-in not due", "job", f.JobID, "at", f.At, "reason", err.Error())
		return Fired{Outcome: "not due"}, nil
	case errors.Is(err, schedule.ErrNotFound):
		if err := h.Gone(ctx, f.JobID); err != nil {
			return Fired{}, fmt.Errorf("check-in of deleted job %s: %w", f.JobID, err)
		}
		h.Log.Info("check-in of a deleted job: its schedule is removed", "job", f.JobID)
		return Fired{Outcome: "gone"}, nil
	case err != nil:
		return Fired{}, fmt.Errorf("check-in %s: %w", f, err)
	}
	return h.start(ctx, run)
}

// start starts a claimed firing's run, unless the claim skipped it.
func (h *Jobs) start(ctx context.Context, run schedule.Run) (Fired, error) {
	if run.Status == schedule.RunSkipped {
		h.Log.Info("check-in skipped", "job", run.JobID, "at", run.At, "reason", run.Reason)
		return Fired{Outcome: "skipped", Reason: run.Reason}, nil
	}
	if err := h.Runner.Start(ctx, run); err != nil {
		return Fired{}, fmt.Errorf("check-in %s: %w", run.Firing, err)
	}
	out := Fired{Outcome: "started", RunID: run.RunID()}
	if run.Resumed {
		out.Outcome = "resumed"
	}
	h.Log.Info("check-in started", "job", run.JobID, "at", run.At, "run_id", out.RunID, "resumed", run.Resumed, "manual", run.Manual)
	return out, nil
}

// RunNow is the event of `lambdaclaw cron run --stack`: fire the owner's
// job now, whatever its schedule.
type RunNow struct {
	Owner string `json:"owner"`
	Job   string `json:"job"`
}

// Trigger fires the owner's job now (Engine.Trigger) and starts its run.
// An unknown job, or another owner's, is the outcome "not found".
func (h *Jobs) Trigger(ctx context.Context, r RunNow) (Fired, error) {
	run, err := h.Engine.Trigger(ctx, r.Owner, r.Job)
	if errors.Is(err, schedule.ErrNotFound) {
		return Fired{Outcome: "not found", Reason: fmt.Sprintf("%s has no job %s", r.Owner, r.Job)}, nil
	}
	if err != nil {
		return Fired{}, fmt.Errorf("run job %s of %s now: %w", r.Job, r.Owner, err)
	}
	return h.start(ctx, run)
}
