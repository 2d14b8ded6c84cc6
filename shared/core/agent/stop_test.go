package agent

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// hangingProvider never answers its first request until its context
// ends; it answers "ok" to the others.
type hangingProvider struct {
	started chan struct{}
	calls   int
}

func (p *hangingProvider) Name() string { return "hanging" }

func (p *hangingProvider) Generate(ctx context.Context, _ llm.Request, _ llm.OnDelta) (llm.Response, error) {
	p.calls++
	if p.calls == 1 {
		close(p.started)
		<-ctx.Done()
		return llm.Response{}, ctx.Err()
	}
	return llm.Response{Message: chat.Message{Role: chat.Assistant, Content: "ok"}}, nil
}

// idle waits until d's lanes stopped.
func idle(t *testing.T, d *Driver) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := d.Idle(ctx); err != nil {
		t.Fatal(err)
	}
}

// finished returns the state of the run id once it is done.
func finished(t *testing.T, f *fixture, id string) RunState {
	t.Helper()
	run, err := f.store.GetRun(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	st, err := DecodeState(run)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Status.Finished() || st.Step != StepDone {
		t.Fatalf("run %s: status %s, step %s; want it finished", id, run.Status, st.Step)
	}
	return st
}

// TestStopRunning: Stop cuts the step of the run being stepped short and
// ends the run as cancelled, told to nobody; the session's next run goes
// on. With nothing to stop, Stop says so.
func TestStopRunning(t *testing.T) {
	f := newFixture(t, 5)
	p := &hangingProvider{started: make(chan struct{})}
	f.loop.Agents = Registry{"a": {Name: "a", Provider: p, Tools: f.loop.Agents.(Registry)["a"].Tools, MaxToolIterations: 5}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	d := NewDriver(ctx, f.loop, slog.New(slog.DiscardHandler))
	if stopped, err := d.Stop(ctx, "s"); stopped || err != nil {
		t.Fatalf("Stop of an idle session = %v, %v; want false, nil", stopped, err)
	}
	first, err := d.Start(ctx, Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("long")}})
	if err != nil {
		t.Fatal(err)
	}
	sub := f.hub.Subscribe(RunKey(first.RunID))
	second, err := d.Start(ctx, Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("next")}})
	if err != nil {
		t.Fatal(err)
	}
	<-p.started
	if stopped, err := d.Stop(ctx, "s"); !stopped || err != nil {
		t.Fatalf("Stop = %v, %v; want true, nil", stopped, err)
	}
	idle(t, d)
	if st := finished(t, f, first.RunID); st.ErrorCode != CodeCancelled || !st.Silent {
		t.Errorf("stopped run: code %q, silent %v; want %q, silent", st.ErrorCode, st.Silent, CodeCancelled)
	}
	if st := finished(t, f, second.RunID); st.Failed() {
		t.Errorf("the run after the stopped one failed: %s", st.Error)
	}
	ectx, ecancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer ecancel()
	if ev, err := sub.Next(ectx); err == nil && ev.Result != nil {
		t.Errorf("the stopped run told a result: %+v", ev.Result)
	}
}

// TestStopParked: a run parked for an approval is ended at once, its
// approval dropped, and the session's next run goes on.
func TestStopParked(t *testing.T) {
	f := newFixture(t, 5)
	f.llm.onEmpty = say("ok")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	d := NewDriver(ctx, f.loop, slog.New(slog.DiscardHandler))
	parked := parkedRun(t, f)
	f.llm.script = nil
	next, err := f.loop.Enqueue(ctx, Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("next")}})
	if err != nil {
		t.Fatal(err)
	}
	if stopped, err := d.Stop(ctx, "s"); !stopped || err != nil {
		t.Fatalf("Stop = %v, %v; want true, nil", stopped, err)
	}
	idle(t, d)
	if st := finished(t, f, parked.RunID); st.ErrorCode != CodeCancelled {
		t.Errorf("stopped run: code %q, want %q", st.ErrorCode, CodeCancelled)
	}
	if _, err := f.loop.PendingApproval(ctx, "s"); !errors.Is(err, ErrNoPendingApproval) {
		t.Errorf("pending approval after the stop: %v", err)
	}
	if st := finished(t, f, next.RunID); st.Failed() {
		t.Errorf("the run after the stopped one failed: %s", st.Error)
	}
	if f.echo.n != 0 {
		t.Errorf("the stopped run's tool ran %d times", f.echo.n)
	}
}

// TestDeliverStaleApproval: a message that answers an approval by its id
// (a button) answers only the approval the session waits for; another
// id, or none pending, is refused and changes nothing.
func TestDeliverStaleApproval(t *testing.T) {
	f := newFixture(t, 5)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	d := NewDriver(ctx, f.loop, slog.New(slog.DiscardHandler))
	parked := parkedRun(t, f)
	ap, err := f.loop.PendingApproval(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	in := Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("/yes")}, Autonomy: tool.Supervised, Interactive: true}
	in.Approval = ap.ID + "x"
	if _, err := d.Deliver(ctx, in, func(string) {}); !errors.Is(err, ErrStaleApproval) {
		t.Fatalf("answer of another approval: %v, want ErrStaleApproval", err)
	}
	if got, err := f.loop.PendingApproval(ctx, "s"); err != nil || got.ID != ap.ID || got.Status != store.ApprovalPending {
		t.Fatalf("the approval after a stale answer: %+v, %v", got, err)
	}
	in.Approval = ap.ID
	got, err := d.Deliver(ctx, in, func(string) {})
	if err != nil || got.RunID != parked.RunID {
		t.Fatalf("answer of the pending approval: run %s, %v; want run %s", got.RunID, err, parked.RunID)
	}
	idle(t, d)
	if f.echo.n != 1 {
		t.Errorf("tool ran %d times, want 1", f.echo.n)
	}
	if _, err := d.Deliver(ctx, in, func(string) {}); !errors.Is(err, ErrStaleApproval) {
		t.Errorf("a second answer of the same approval: %v, want ErrStaleApproval", err)
	}
}
