package agent

import (
	"context"
	"fmt"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// Outcome returns the state of the run of that id and, once the run has
// answered, what it told its client: its result, its client calls, or the
// prompt of the approval it waits for. The result is nil while the run is
// queued or working. Callers that did not watch the run (a stored
// response read later) learn its outcome this way. A run at its finish
// step has its answer: finish tells it, then records the run as done.
func (l *Loop) Outcome(ctx context.Context, runID string) (RunState, *Result, error) {
	run, err := l.Store.GetRun(ctx, runID)
	if err != nil {
		return RunState{}, nil, fmt.Errorf("outcome of run %s: %w", runID, err)
	}
	st, err := DecodeState(run)
	if err != nil {
		return st, nil, err
	}
	switch {
	case run.Status == store.RunDone || run.Status == store.RunFailed, st.Step == StepFinish, st.waitingForClient():
	case st.Parked():
		ap, err := l.Store.GetApproval(ctx, st.Approval)
		if err != nil {
			return st, nil, fmt.Errorf("outcome of run %s: %w", runID, err)
		}
		if ap.Status != store.ApprovalPending {
			return st, nil, nil // answered: the run goes on
		}
		return st, &Result{Content: ap.Prompt, Usage: st.Usage.Sub(st.Reported), FinishReason: "stop"}, nil
	default:
		return st, nil, nil
	}
	res, err := l.Result(ctx, st)
	if err != nil {
		return st, nil, err
	}
	return st, &res, nil
}

// Thread returns the messages of a session's runs up to the run of seq,
// and whether the session has no later run: the conversation a run
// ended, which a client may continue or branch from.
func (l *Loop) Thread(ctx context.Context, sessionID string, seq int64) ([]chat.Message, bool, error) {
	all, err := l.Store.Messages(ctx, sessionID)
	if err != nil {
		return nil, false, fmt.Errorf("thread of session %s: %w", sessionID, err)
	}
	if len(all) == 0 {
		return nil, false, fmt.Errorf("thread of session %s: %w", sessionID, store.ErrNotFound)
	}
	limit := store.RunPrefix(seq + 1)
	var out []chat.Message
	latest := true
	for _, m := range all {
		if m.Key < limit {
			out = append(out, m.Message)
		} else {
			latest = false
		}
	}
	return out, latest, nil
}
