package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// StuckAfter is how long the run at the head of a session may go without
// a step before it counts as stuck: longer than the longest step (a Lambda
// invocation lasts 15 minutes at most; a tool call has its time limit).
const StuckAfter = 30 * time.Minute

// Stuck is a run that holds its session's queue without progressing.
type Stuck struct {
	Run   store.Run
	State RunState
	// Idle is how long ago the run last committed a step.
	Idle time.Duration
}

// Reason says where the run stands, for an operator.
func (s Stuck) Reason() string {
	if s.State.Error != "" {
		return fmt.Sprintf("failed at %s; the failure is not yet told", s.State.Step)
	}
	return fmt.Sprintf("no step for %s (at %s)", s.Idle.Round(time.Second), s.State.Step)
}

// IsStuck reports whether run, the head of its session's queue, is
// unfinished, waits for nobody (it is not parked for an approval or a
// client's tool results, which time out by themselves) and has not
// committed a step for idle or longer.
func IsStuck(run store.Run, now time.Time, idle time.Duration) (Stuck, bool) {
	if run.Status.Finished() {
		return Stuck{}, false
	}
	st, err := DecodeState(run)
	if err != nil || st.Parked() {
		return Stuck{}, false
	}
	s := Stuck{Run: run, State: st, Idle: now.Sub(run.UpdatedAt)}
	return s, s.Idle >= idle
}

// StuckRuns lists, oldest first and at most limit, the runs at the head
// of their sessions' queues that are stuck (IsStuck) at idle. An operator
// acts on them (lambdaclaw runs); every session's runs behind them wait.
func (l *Loop) StuckRuns(ctx context.Context, idle time.Duration, limit int) ([]Stuck, error) {
	ids, err := l.Store.UnfinishedSessions(ctx)
	if err != nil {
		return nil, fmt.Errorf("stuck runs: %w", err)
	}
	now := l.now()
	var out []Stuck
	for _, id := range ids {
		run, err := l.Store.NextRun(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("stuck runs: %w", err)
		}
		if s, ok := IsStuck(run, now, idle); ok {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b Stuck) int { return cmp.Compare(b.Idle, a.Idle) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// EndStuck ends the run at the head of the session's queue if it is stuck
// (IsStuck at StuckAfter): it is recorded as failed (Abandon), so that a
// reset of the session is not refused for it. The caller passes the
// session's lane on when ended is true.
func (l *Loop) EndStuck(ctx context.Context, sessionID string) (st RunState, ended bool, err error) {
	run, err := l.Store.NextRun(ctx, sessionID)
	if errors.Is(err, store.ErrNotFound) {
		return RunState{}, false, nil
	}
	if err != nil {
		return RunState{}, false, fmt.Errorf("end stuck run: %w", err)
	}
	s, ok := IsStuck(run, l.now(), StuckAfter)
	if !ok {
		return RunState{}, false, nil
	}
	st, err = l.Abandon(ctx, s.State, fmt.Errorf("ended by a reset of its session: %s", s.Reason()))
	if err != nil {
		return st, false, err
	}
	return st, true, nil
}

// SaveFailure saves st as failed with err at its finish step (Fail), for
// the driver stepping the run to tell the user and move the session on:
// what `lambdaclaw runs abandon` does to a local run, which the local
// driver picks up at its next attempt (Driver) or its next start.
func (l *Loop) SaveFailure(ctx context.Context, st RunState, err error) error {
	return l.commit(ctx, l.Fail(st, err), store.Commit{})
}
