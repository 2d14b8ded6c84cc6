package obs_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
)

// captureHandler keeps the records it handles. When gate is set, each
// Handle first reports on entered (without blocking) and then waits for
// gate to be closed, so a test can hold the writer goroutine still.
type captureHandler struct {
	level   slog.Level
	entered chan struct{}
	gate    chan struct{}

	mu      sync.Mutex
	records []slog.Record
}

func (h *captureHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *captureHandler) Handle(_ context.Context, r slog.Record) error {
	if h.gate != nil {
		select {
		case h.entered <- struct{}{}:
		default:
		}
		<-h.gate
	}
	h.mu.Lock()
	h.records = append(h.records, r.Clone())
	h.mu.Unlock()
	return nil
}

func (h *captureHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *captureHandler) WithGroup(string) slog.Handler      { return h }

// line is what a test compares of a record.
type line struct {
	Time  time.Time
	Level slog.Level
	Msg   string
	Attrs map[string]any
}

func (h *captureHandler) lines() []line {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []line
	for _, r := range h.records {
		l := line{Time: r.Time, Level: r.Level, Msg: r.Message, Attrs: map[string]any{}}
		r.Attrs(func(a slog.Attr) bool {
			l.Attrs[a.Key] = a.Value.Any()
			return true
		})
		out = append(out, l)
	}
	return out
}

func TestEmitReachesHandler(t *testing.T) {
	h := &captureHandler{}
	e := obs.NewEmitter(slog.New(h), 16)
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	e.Emit(obs.Event{Type: obs.AgentStart, SessionID: "s-1", RunID: "r-1", Time: t0,
		Attrs: []slog.Attr{slog.String("agent", "default"), slog.Int("iteration", 2)}})
	e.Emit(obs.Event{Type: obs.SessionEnd, SessionID: "s-2", Time: t0.Add(time.Second)})
	e.Emit(obs.Event{Type: obs.LLMRequest, RunID: "r-3", Time: t0.Add(2 * time.Second)})
	e.Close()

	want := []line{
		{Time: t0, Level: slog.LevelInfo, Msg: obs.AgentStart, Attrs: map[string]any{
			"event": obs.AgentStart, "session_id": "s-1", "run_id": "r-1", "agent": "default", "iteration": int64(2)}},
		{Time: t0.Add(time.Second), Level: slog.LevelInfo, Msg: obs.SessionEnd, Attrs: map[string]any{
			"event": obs.SessionEnd, "session_id": "s-2"}},
		{Time: t0.Add(2 * time.Second), Level: slog.LevelInfo, Msg: obs.LLMRequest, Attrs: map[string]any{
			"event": obs.LLMRequest, "run_id": "r-3"}},
	}
	if diff := cmp.Diff(want, h.lines()); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if n := e.Dropped(); n != 0 {
		t.Errorf("Dropped() = %d, want 0", n)
	}
}

func TestEmitStampsTime(t *testing.T) {
	h := &captureHandler{}
	e := obs.NewEmitter(slog.New(h), 4)
	before := time.Now()
	e.Emit(obs.Event{Type: obs.TurnComplete})
	e.Close()
	after := time.Now()
	ls := h.lines()
	if len(ls) != 1 {
		t.Fatalf("got %d records, want 1", len(ls))
	}
	if ls[0].Time.Before(before) || ls[0].Time.After(after) {
		t.Errorf("record time %v is not between %v and %v", ls[0].Time, before, after)
	}
}

func TestEmitDropsWhenFull(t *testing.T) {
	h := &captureHandler{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	e := obs.NewEmitter(slog.New(h), 2)
	defer e.Close()

	e.Emit(obs.Event{Type: "e0"})
	<-h.entered // the writer holds e0 and waits on the gate: the buffer is empty
	for _, typ := range []string{"e1", "e2", "e3", "e4", "e5"} {
		e.Emit(obs.Event{Type: typ}) // must not block
	}
	if n := e.Dropped(); n != 3 {
		t.Errorf("Dropped() = %d, want 3", n)
	}
	close(h.gate)
	e.Close()
	var got []string
	for _, l := range h.lines() {
		got = append(got, l.Msg)
	}
	if diff := cmp.Diff([]string{"e0", "e1", "e2"}, got); diff != "" {
		t.Errorf("handled events (-want +got):\n%s", diff)
	}
}

func TestCloseFlushes(t *testing.T) {
	h := &captureHandler{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	e := obs.NewEmitter(slog.New(h), 100)
	var want []string
	for i := range 50 {
		typ := string(rune('a'+i%26)) + string(rune('a'+i/26))
		want = append(want, typ)
		e.Emit(obs.Event{Type: typ})
	}
	close(h.gate) // nothing was written yet; Close must write all 50
	e.Close()
	var got []string
	for _, l := range h.lines() {
		got = append(got, l.Msg)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("handled events (-want +got):\n%s", diff)
	}
	e.Close() // a second Close is harmless
}

func TestFlush(t *testing.T) {
	h := &captureHandler{entered: make(chan struct{}, 1), gate: make(chan struct{})}
	e := obs.NewEmitter(slog.New(h), 100)
	defer e.Close()
	for range 50 {
		e.Emit(obs.Event{Type: obs.LLMRequest})
	}
	<-h.entered // the writer holds the first event
	close(h.gate)
	e.Flush()
	if n := len(h.lines()); n != 50 {
		t.Errorf("%d events written when Flush returned, want 50", n)
	}
	e.Close()
	e.Flush() // returns at once after Close
}

func TestEmitAfterClose(t *testing.T) {
	h := &captureHandler{}
	e := obs.NewEmitter(slog.New(h), 4)
	e.Close()
	e.Emit(obs.Event{Type: obs.SessionEnd}) // must neither panic nor block
	if n := e.Dropped(); n != 1 {
		t.Errorf("Dropped() = %d, want 1", n)
	}
	if n := len(h.lines()); n != 0 {
		t.Errorf("%d records written after Close", n)
	}
}

func TestEmitConcurrentWithClose(t *testing.T) {
	e := obs.NewEmitter(slog.New(&captureHandler{}), 8)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				e.Emit(obs.Event{Type: obs.LLMRequest})
			}
		})
	}
	e.Close()
	wg.Wait()
}

func TestDisabledLevel(t *testing.T) {
	h := &captureHandler{level: slog.LevelWarn}
	e := obs.NewEmitter(slog.New(h), 4)
	e.Emit(obs.Event{Type: obs.AgentStart})
	e.Close()
	if n := len(h.lines()); n != 0 {
		t.Errorf("%d records written below the handler's level", n)
	}
}

func TestNilEmitter(t *testing.T) {
	var e *obs.Emitter
	e.Emit(obs.Event{Type: obs.AgentStart})
	if n := e.Dropped(); n != 0 {
		t.Errorf("Dropped() = %d on nil", n)
	}
	e.Close()
}
