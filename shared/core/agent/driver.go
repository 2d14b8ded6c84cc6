package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// Driver steps runs in-process: one goroutine per active session (the
// lane), so a session's runs go one at a time in order while sessions run
// in parallel. It saves the RunState after every step, so a process killed
// between steps resumes where it stopped.
type Driver struct {
	loop *Loop
	log  *slog.Logger
	ctx  context.Context

	mu     sync.Mutex
	active map[string]bool
	wake   map[string]bool
	// stops holds, for each active lane, how to stop the run it drives
	// (Stop).
	stops map[string]*stopper
	lanes sync.WaitGroup
	// idle is closed when the last active lane stops; nil while none
	// is active.
	idle chan struct{}

	// record wakes the goroutine that tells the loop's Recorder of the
	// exchanges finished runs queued (Loop.RecordQueued).
	record   chan struct{}
	recorder sync.WaitGroup
}

// NewDriver returns a driver whose lanes run until ctx is cancelled. When
// the loop has a Recorder, a goroutine tells it of finished exchanges off
// the request path, starting with any a previous process left queued.
func NewDriver(ctx context.Context, loop *Loop, log *slog.Logger) *Driver {
	d := &Driver{loop: loop, log: log, ctx: ctx, active: map[string]bool{}, wake: map[string]bool{}, stops: map[string]*stopper{},
		record: make(chan struct{}, 1)}
	if loop.Recorder != nil {
		d.record <- struct{}{}
		d.recorder.Go(d.recordLoop)
	}
	return d
}

// recordLoop drains the queue of exchanges each time a run finishes.
func (d *Driver) recordLoop() {
	for {
		select {
		case <-d.ctx.Done():
			return
		case <-d.record:
		}
		if _, err := d.loop.RecordQueued(d.ctx); err != nil {
			d.log.Error("record exchanges", "error", err)
		}
	}
}

// Deliver hands a user's message to its session; see Loop.Deliver.
func (d *Driver) Deliver(ctx context.Context, in Input, subscribe func(runID string)) (RunState, error) {
	return d.loop.Deliver(ctx, in, d, subscribe)
}

// Resume implements Lane: the parked run's lane is woken.
func (d *Driver) Resume(_ context.Context, ap store.Approval) error {
	d.Wake(ap.SessionID)
	return nil
}

// Kick implements Lane.
func (d *Driver) Kick(_ context.Context, sessionID string) error {
	d.Wake(sessionID)
	return nil
}

// Start enqueues a run and wakes its session's lane.
func (d *Driver) Start(ctx context.Context, in Input) (RunState, error) {
	st, err := d.loop.Enqueue(ctx, in)
	if err != nil {
		return st, err
	}
	d.Wake(st.SessionID)
	return st, nil
}

// Wake makes sure the session's lane is running.
func (d *Driver) Wake(sessionID string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.active[sessionID] {
		d.wake[sessionID] = true
		return
	}
	d.activate(sessionID)
	go d.lane(sessionID)
}

// activate marks the session's lane active, for the goroutine the caller
// starts (lane); d.mu is held.
func (d *Driver) activate(sessionID string) {
	if len(d.active) == 0 {
		d.idle = make(chan struct{})
	}
	d.active[sessionID] = true
	d.stops[sessionID] = newStopper(d.ctx)
	d.lanes.Add(1)
}

// Recover resumes the unfinished runs found in the store after a restart
// and returns how many sessions it woke.
func (d *Driver) Recover(ctx context.Context) (int, error) {
	ids, err := d.loop.Store.UnfinishedSessions(ctx)
	if err != nil {
		return 0, fmt.Errorf("recover runs: %w", err)
	}
	for _, id := range ids {
		d.Wake(id)
	}
	return len(ids), nil
}

// Wait blocks until every lane has stopped (after the driver's context is
// cancelled, or when no work is left), and, once the context is cancelled,
// the recorder too.
func (d *Driver) Wait() {
	d.lanes.Wait()
	if d.ctx.Err() != nil {
		d.recorder.Wait()
	}
}

func (d *Driver) lane(sessionID string) {
	defer d.lanes.Done()
	for d.ctx.Err() == nil {
		run, err := d.loop.Store.NextRun(d.ctx, sessionID)
		if errors.Is(err, store.ErrNotFound) {
			if d.woken(sessionID) {
				continue
			}
			return
		}
		if err != nil {
			d.log.Error("lane: next run", "session_id", sessionID, "error", err)
			if !sleep(d.ctx, time.Second) {
				break
			}
			continue
		}
		finished := d.drive(run, d.stopperOf(sessionID))
		select {
		case d.record <- struct{}{}:
		default: // already woken
		}
		// A run that waits for an approval blocks the lane; an answer
		// wakes it again.
		if !finished && !d.woken(sessionID) {
			return
		}
	}
	d.mu.Lock()
	d.stopped(sessionID)
	delete(d.wake, sessionID)
	d.mu.Unlock()
}

// woken reports whether the session's lane was woken while it worked, and
// should look again; if not, the lane ends: it is no longer active.
func (d *Driver) woken(sessionID string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.wake[sessionID] {
		delete(d.wake, sessionID)
		return true
	}
	d.stopped(sessionID)
	return false
}

// stopped marks the session's lane no longer active; d.mu is held.
func (d *Driver) stopped(sessionID string) {
	if !d.active[sessionID] {
		return
	}
	d.stops[sessionID].cancel()
	delete(d.stops, sessionID)
	delete(d.active, sessionID)
	if len(d.active) == 0 {
		close(d.idle)
		d.idle = nil
	}
}

// Idle waits until no lane is active: every run woken before it
// finished, parked or stopped, and the events of its steps emitted. It
// returns ctx's error if ctx is done first.
func (d *Driver) Idle(ctx context.Context) error {
	d.mu.Lock()
	idle := d.idle
	d.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("agent: wait for the lanes to stop: %w", ctx.Err())
	}
}

// drive steps one run to its end, and reports false when it stopped
// because the run is parked waiting for an approval. A step that errors is
// retried with backoff; after repeated failures the run is finished as
// failed so the lane is not blocked forever. A run stop asks to stop
// (Stop) is ended as cancelled, by the lane, so that no step of it
// commits after.
func (d *Driver) drive(run store.Run, stop *stopper) bool {
	st, err := DecodeState(run)
	if err != nil {
		d.log.Error("lane: bad run state", "run_id", run.ID, "error", err)
		if err := d.loop.MarkFailed(d.ctx, run); err != nil {
			d.log.Error("lane: mark run failed", "run_id", run.ID, "error", err)
		}
		return true
	}
	failures := 0
	for st.Step != StepDone {
		if stop.asked() {
			return d.cancel(st)
		}
		waiting := st.Parked()
		next, err := d.loop.Step(stop.ctx, st)
		if err != nil {
			if d.ctx.Err() != nil {
				return true // shutting down; the saved state resumes on restart
			}
			if stop.asked() {
				return d.cancel(st)
			}
			failures++
			d.log.Error("step failed", "run_id", st.RunID, "step", st.Step, "attempt", failures, "error", err)
			saved, ok := d.saved(st)
			switch {
			case !ok:
				return true // ended meanwhile (a reset, `lambdaclaw runs abandon`)
			case saved.Error != "" && st.Error == "":
				st, failures = saved, 0 // failed by `lambdaclaw runs abandon`
				continue
			case failures >= 5 && st.Step != StepFinish:
				st, failures = d.loop.Fail(st, fmt.Errorf("step %s failed: %w", st.Step, err)), 0
				continue
			case failures >= 5 && st.Error != "":
				// Not even the failure can be told: the run ends failed as
				// it stands, as the state machine's release does.
				if _, err := d.loop.Abandon(d.ctx, st, err); err == nil {
					return true
				}
			}
			if !sleep(d.ctx, min(time.Duration(failures)*200*time.Millisecond, 5*time.Second)) {
				return true
			}
			continue
		}
		failures = 0
		if waiting && next.Parked() {
			return false // still unanswered
		}
		st = next
		if st.Parked() {
			return false
		}
	}
	return true
}

// cancel ends st, which its user stopped, and reports whether it ended.
func (d *Driver) cancel(st RunState) bool {
	if _, err := d.loop.Cancel(d.ctx, st); err != nil {
		d.log.Error("lane: cancel run", "run_id", st.RunID, "error", err)
		return true // the lane looks again: NextRun finds it unfinished
	}
	d.log.Info("run stopped by its user", "run_id", st.RunID)
	return true
}

// stopper stops the run a lane drives: its steps run with ctx, which
// stop cancels.
type stopper struct {
	ctx     context.Context
	cancel  context.CancelFunc
	mu      sync.Mutex
	stopped bool
}

func newStopper(parent context.Context) *stopper {
	ctx, cancel := context.WithCancel(parent)
	return &stopper{ctx: ctx, cancel: cancel}
}

// stop asks the lane to end its run and cuts its step short.
func (s *stopper) stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.cancel()
}

// asked reports whether stop was called.
func (s *stopper) asked() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped
}

// stopperOf returns the stopper of the session's lane for its next run:
// a fresh one once a stop was asked, so that it ends the run it was
// asked for only.
func (d *Driver) stopperOf(sessionID string) *stopper {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.stops[sessionID]
	if s.asked() {
		s = newStopper(d.ctx)
		d.stops[sessionID] = s
	}
	return s
}

// Stop ends the run at the head of the session's queue at the user's
// request (a channel's /stop), and reports whether there was one: a run
// being stepped has its step's context cancelled and is ended as
// cancelled by its lane (Loop.Cancel), so that nothing of it commits
// after; a parked run is ended at once; the lane goes on with the
// session's next run. What the run wrote stays in the session.
func (d *Driver) Stop(ctx context.Context, sessionID string) (bool, error) {
	run, err := d.loop.Store.NextRun(ctx, sessionID)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("stop: %w", err)
	}
	d.mu.Lock()
	if d.active[sessionID] {
		d.stops[sessionID].stop()
		d.mu.Unlock()
		return true, nil
	}
	// No lane drives the run (it is parked, or waits for a restart's
	// Recover): this call holds the lane while it ends the run, then
	// hands it on.
	d.activate(sessionID)
	d.mu.Unlock()
	defer func() { go d.lane(sessionID) }()
	st, err := DecodeState(run)
	if err != nil {
		return false, fmt.Errorf("stop: %w", err)
	}
	if _, err := d.loop.Cancel(ctx, st); err != nil {
		return false, fmt.Errorf("stop: %w", err)
	}
	return true, nil
}

// saved returns the run of st as the store has it now; false when it is
// finished or gone.
func (d *Driver) saved(st RunState) (RunState, bool) {
	run, err := d.loop.Store.GetRun(d.ctx, st.RunID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return st, false
	case err != nil:
		return st, true
	case run.Status.Finished():
		return st, false
	}
	saved, err := DecodeState(run)
	if err != nil {
		return st, true
	}
	return saved, true
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Reset starts a session afresh; see Loop.Reset. A stuck run at the head
// of its queue is ended first (Loop.EndStuck), and the lane woken for
// the runs behind it.
func (d *Driver) Reset(ctx context.Context, sessionID string) error {
	if _, ended, err := d.loop.EndStuck(ctx, sessionID); err != nil {
		return fmt.Errorf("reset: %w", err)
	} else if ended {
		d.Wake(sessionID)
	}
	return d.loop.Reset(ctx, sessionID)
}
