package agent

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// TestStuckRuns: a run at the head of its session that has not stepped
// for the idle time is stuck; a parked one, a finished one and one that
// stepped lately are not.
func TestStuckRuns(t *testing.T) {
	f := newFixture(t, 5)
	ctx := t.Context()
	enqueue := func(session string) RunState {
		t.Helper()
		st, err := f.loop.Enqueue(ctx, Input{SessionID: session, Agent: "a", Owner: "key:" + session, Messages: []chat.Message{user("hi")}})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	stuck := enqueue("s1")
	enqueue("s1") // queued behind: not the head
	parked := enqueue("s2")
	parked.Step = StepWait
	if err := f.loop.commit(ctx, parked, store.Commit{}); err != nil {
		t.Fatal(err)
	}
	f.llm.script = append(f.llm.script, say("done"))
	f.runToEnd(t, enqueue("s3"))

	if got, err := f.loop.StuckRuns(ctx, time.Hour, 10); err != nil || len(got) != 0 {
		t.Errorf("stuck runs at an hour: %+v, %v; want none (they stepped just now)", got, err)
	}
	f.loop.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	got, err := f.loop.StuckRuns(ctx, time.Hour, 10)
	if err != nil || len(got) != 1 || got[0].Run.ID != stuck.RunID || got[0].State.Owner != "key:s1" {
		t.Fatalf("stuck runs: %+v, %v; want the head of s1 only", got, err)
	}
	if r := got[0].Reason(); r != "no step for 2h0m0s (at begin)" {
		t.Errorf("reason %q", r)
	}
	if got, _ := f.loop.StuckRuns(ctx, time.Hour, 0); len(got) != 0 {
		t.Errorf("limit 0 listed %d", len(got))
	}
}

// TestResetEndsStuckRun: a reset of a session whose run is stuck ends
// that run failed and resets the session; another session's stuck run,
// another owner's, is left alone. A run that is not stuck keeps the
// session busy.
func TestResetEndsStuckRun(t *testing.T) {
	f := newFixture(t, 5)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	d := NewDriver(ctx, f.loop, slog.New(slog.DiscardHandler))
	mine, err := f.loop.Enqueue(ctx, Input{SessionID: "s-mine", Agent: "a", Owner: "key:me", Messages: []chat.Message{user("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := f.loop.Enqueue(ctx, Input{SessionID: "s-other", Agent: "a", Owner: "key:other", Messages: []chat.Message{user("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Reset(ctx, "s-mine"); !errors.Is(err, ErrBusy) {
		t.Errorf("reset of a session whose run was just queued: %v, want ErrBusy", err)
	}
	f.loop.Now = func() time.Time { return time.Now().Add(StuckAfter) }
	if err := d.Reset(ctx, "s-mine"); err != nil {
		t.Fatalf("reset of a session with a stuck run: %v", err)
	}
	if h := f.history(t, "s-mine"); len(h) != 0 {
		t.Errorf("history after the reset: %v", h)
	}
	if run, err := f.store.GetRun(ctx, mine.RunID); err == nil && run.Status != store.RunFailed {
		t.Errorf("the stuck run is %s after the reset, want failed or gone", run.Status)
	}
	run, err := f.store.GetRun(ctx, other.RunID)
	if err != nil || run.Status.Finished() {
		t.Errorf("another owner's stuck run after the reset: %+v, %v; want it untouched", run.Status, err)
	}
}

// abandoningStore fails every commit of a model's answer (the think step
// finishing the run), and at the first such failure saves the run failed, as `lambdaclaw runs
// abandon` does from another process between two attempts of the lane.
type abandoningStore struct {
	store.Store
	loop     *Loop
	failures int
}

func (s *abandoningStore) CommitRun(ctx context.Context, c store.Commit) error {
	st, err := DecodeState(c.Run)
	if err != nil || st.Step != StepDone || st.Error != "" {
		return s.Store.CommitRun(ctx, c)
	}
	s.failures++
	if s.failures == 1 {
		saved, err := s.Store.GetRun(ctx, c.Run.ID)
		if err != nil {
			return err
		}
		at, err := DecodeState(saved)
		if err != nil {
			return err
		}
		if err := (&Loop{Store: s.Store}).SaveFailure(ctx, at, errors.New("abandoned")); err != nil {
			return err
		}
	}
	return errors.New("the disk is unwell")
}

// TestDriverTakesUpSavedFailure: while the lane retries a failing step,
// the run is saved failed by another process; the lane's next attempt
// takes that up, tells the user and ends the run, instead of retrying
// the step until it gives up itself.
func TestDriverTakesUpSavedFailure(t *testing.T) {
	f := newFixture(t, 5)
	for range 10 {
		f.llm.script = append(f.llm.script, say("never saved"))
	}
	s := &abandoningStore{Store: f.store}
	f.loop.Store = s
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	d := NewDriver(ctx, f.loop, slog.New(slog.DiscardHandler))
	sub := f.hub.Subscribe(RunKey("r1"))
	defer f.hub.Unsubscribe(RunKey("r1"), sub)
	if _, err := d.Start(ctx, Input{RunID: "r1", SessionID: "s", Agent: "a", Messages: []chat.Message{user("hi")}}); err != nil {
		t.Fatal(err)
	}
	for {
		ev, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Result != nil {
			if ev.Result.Error == "" {
				t.Errorf("result %+v, want the failure", ev.Result)
			}
			break
		}
	}
	d.Wait()
	run, err := f.store.GetRun(ctx, "r1")
	if err != nil || run.Status != store.RunFailed {
		t.Errorf("run %+v, %v; want failed", run.Status, err)
	}
	if s.failures != 1 {
		t.Errorf("the failing step was tried %d times, want once: the saved failure ends it", s.failures)
	}
}
