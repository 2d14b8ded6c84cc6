package schedule

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
)

// Engine keeps jobs and their timers, and claims their firings. Every
// method but Claim and Finish acts for an owner: a job of another owner is
// ErrNotFound. The local engine is SQLite (its own timers, see Timers);
// the AWS engine keeps one EventBridge Scheduler schedule per job, whose
// deliveries call Claim. Both pass scheduletest.Run.
type Engine interface {
	// Create validates j (see Job.Validate), gives it an id when it has
	// none, sets its times and next firing, and stores it.
	Create(ctx context.Context, j Job) (Job, error)
	// Update replaces the definition of the owner's job j.ID (schedule,
	// message, session, target, limits, name); its next firing is
	// computed afresh from now, and it keeps its paused state.
	Update(ctx context.Context, j Job) (Job, error)
	// Delete removes the job and its runs: it never fires again, even if a
	// firing of it is being delivered. A run in progress finishes.
	Delete(ctx context.Context, owner, id string) error
	// SetPaused pauses or resumes the job. A resumed job fires next at its
	// first firing after now: what fell in the pause is not caught up.
	SetPaused(ctx context.Context, owner, id string, paused bool) (Job, error)
	Get(ctx context.Context, owner, id string) (Job, error)
	// List returns the owner's jobs, oldest first.
	List(ctx context.Context, owner string) ([]Job, error)
	// Page returns up to limit (at least 1) of the owner's jobs in List's
	// order, from the first after cursor ("" for the first of all), and
	// the cursor of the page after it ("" when this page ends the list).
	// A cursor holds its place when jobs are made or deleted meanwhile;
	// one Page did not return is ErrCursor.
	Page(ctx context.Context, owner, cursor string, limit int) ([]Job, string, error)
	// Runs returns the job's latest runs, newest first, at most limit.
	Runs(ctx context.Context, owner, id string, limit int) ([]Run, error)
	// Claim claims the firing before it runs, atomically. It returns the
	// run to start: Status RunRunning (or RunSkipped, with the reason,
	// when the firing is over the job's daily limit or missed under
	// CatchUpSkip; a skipped run is not started). Claiming a firing again
	// is ErrClaimed while its lease runs and ErrDone once it has
	// finished; after the lease a claim takes the run over (Resumed), to
	// start the same agent run again, which continues where it stopped. A
	// firing the job is not at (paused, not yet due, or past: coalesced)
	// is ErrNotDue; a deleted job's is ErrNotFound. A claimed firing moves
	// the job on to its first firing after now: missed firings coalesce.
	Claim(ctx context.Context, f Firing) (Run, error)
	// Trigger fires the owner's job now, whatever its schedule and pause
	// ("cron run"), and returns the claimed run (RunSkipped over the daily
	// limit). It does not move the job's next firing.
	Trigger(ctx context.Context, owner, id string) (Run, error)
	// Finish records the end of a claimed run. Finishing a run that has
	// finished already changes nothing; a deleted job's is ErrNotFound.
	Finish(ctx context.Context, f Firing, r Result) error
}

// Timers is an Engine that keeps the timers itself, for a process that
// fires them (the local server's Poller).
type Timers interface {
	Engine
	// Due returns up to limit firings due at the engine's now: one per
	// unpaused job whose next firing has come, at its latest due firing.
	Due(ctx context.Context, limit int) ([]Firing, error)
	// NextDue returns the earliest next firing of an unpaused job; ok is
	// false when there is none.
	NextDue(ctx context.Context) (next time.Time, ok bool, err error)
	// Unfinished returns the runs claimed and not finished, to resume
	// after a restart.
	Unfinished(ctx context.Context) ([]Run, error)
}

// Firing names one firing of a job: its id and scheduled time (to the
// millisecond). EventBridge Scheduler names it by schedule name and
// <aws.scheduler.scheduled-time>.
type Firing struct {
	JobID string    `json:"job_id"`
	At    time.Time `json:"at"`
}

// RunID is the id of the agent run of the firing: the same whoever
// claims it, so starting it twice enqueues it once.
func (f Firing) RunID() string {
	sum := sha256.Sum256([]byte("schedule\x00" + f.JobID + "\x00" + strconv.FormatInt(f.At.UnixMilli(), 10)))
	return hex.EncodeToString(sum[:16])
}

// String is "<job id>@<unix ms>", how a firing travels as a reply address.
func (f Firing) String() string { return f.JobID + "@" + strconv.FormatInt(f.At.UnixMilli(), 10) }

// ParseFiring reads Firing.String.
func ParseFiring(s string) (Firing, error) {
	i := len(s) - 1
	for i >= 0 && s[i] != '@' {
		i--
	}
	if i <= 0 {
		return Firing{}, fmt.Errorf("firing %q: want <job id>@<unix ms>", s)
	}
	ms, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil {
		return Firing{}, fmt.Errorf("firing %q: %w", s, err)
	}
	return Firing{JobID: s[:i], At: time.UnixMilli(ms).UTC()}, nil
}

// RunStatus is where a firing's run is.
type RunStatus string

// Run statuses.
const (
	RunRunning RunStatus = "running"
	RunDone    RunStatus = "done"
	RunFailed  RunStatus = "failed"
	RunSkipped RunStatus = "skipped"
)

// Run is the record of one firing.
type Run struct {
	Firing
	// Manual: fired by Trigger, not by the schedule.
	Manual bool      `json:"manual,omitempty"`
	Status RunStatus `json:"status"`
	// Reason says why a run was skipped or failed.
	Reason     string    `json:"reason,omitempty"`
	ClaimedAt  time.Time `json:"claimed_at"`
	LeaseUntil time.Time `json:"lease_until,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	Tokens     int       `json:"tokens,omitempty"`
	// Reply is the start of the run's answer (MaxReply bytes).
	Reply string `json:"reply,omitempty"`
	// Delivered is the target the reply went to ("" when none).
	Delivered string `json:"delivered,omitempty"`
	// Resumed: this claim took over a run whose lease ran out.
	Resumed bool `json:"-"`
	// Job is the job as it was claimed, set by Claim, Trigger and
	// Timers.Unfinished: what Runner.Start runs.
	Job Job `json:"-"`
}

// String describes the run.
func (r Run) String() string {
	s := fmt.Sprintf("%s %s", r.Firing, r.Status)
	if r.Reason != "" {
		s += " (" + r.Reason + ")"
	}
	return s
}

// Result is how a run ended, for Finish.
type Result struct {
	Status    RunStatus
	Reason    string
	Tokens    int
	Reply     string
	Delivered string
}

// Decision is what a claim of a due firing does, decided by Decide for
// every engine alike.
type Decision struct {
	Status RunStatus
	Reason string
	// Next is the job's next firing after the claim.
	Next time.Time
}

// Decide is the claim of firing at of job j at now, with runsToday runs
// (not skipped) of the job in the day of at (Schedule.Day). The engine
// has checked that at is due (j.Next ≤ at ≤ now) or manual.
func Decide(j Job, at, now time.Time, runsToday int, manual bool) Decision {
	d := Decision{Status: RunRunning, Next: j.Next}
	if !manual {
		from := j.Next // ≤ at, checked by the engine
		if from.IsZero() || at.Before(from) {
			from = at
		}
		latest, missed := j.Schedule.Latest(from, now)
		d.Next = j.Schedule.Next(latest)
		if j.catchUp() == CatchUpSkip && (missed > 0 || now.Sub(at) > Grace) {
			d.Status, d.Reason = RunSkipped, fmt.Sprintf("missed: %d firing(s) from %s were due while nothing ran them", missed+1, from.Format(time.RFC3339))
			return d
		}
	}
	if h := j.Heartbeat; h != nil && !manual && !h.Active(at) {
		d.Status, d.Reason = RunSkipped, "outside the heartbeat's active hours ("+h.ActiveHours+" "+h.zone().String()+")"
		return d
	}
	if n := j.Limits.RunsPerDay; n > 0 && runsToday >= n {
		d.Status, d.Reason = RunSkipped, fmt.Sprintf("daily limit of %d run(s) reached", n)
	}
	return d
}

// Prepare completes a job being created at now by an engine: its times,
// anchor and next firing. It validates the job first.
func Prepare(j Job, now time.Time, minEvery time.Duration, newID func() string) (Job, error) {
	now = now.UTC().Truncate(time.Millisecond)
	if err := j.Validate(now, minEvery); err != nil {
		return Job{}, err
	}
	if j.ID == "" {
		j.ID = newID()
	}
	j.CreatedAt, j.UpdatedAt = now, now
	return Reschedule(j, now), nil
}

// Reschedule sets the job's next firing to its first after now; an
// every-schedule without an anchor starts one interval after now.
func Reschedule(j Job, now time.Time) Job {
	now = now.UTC().Truncate(time.Millisecond)
	if j.Schedule.Every > 0 && j.Schedule.Anchor.IsZero() {
		j.Schedule.Anchor = now.Add(time.Duration(j.Schedule.Every))
	}
	if !j.Schedule.At.IsZero() {
		j.Schedule.At = j.Schedule.At.UTC().Truncate(time.Millisecond)
	}
	j.Next = j.Schedule.Next(now)
	return j
}
