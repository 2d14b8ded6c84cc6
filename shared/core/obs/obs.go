// Package obs emits the observability events of seed 001 (agent_start,
// llm_request, llm_response, tool_call_start, tool_call_result,
// turn_complete, compaction_complete, approval_requested,
// approval_resolved, session_start, session_end), and bootstrap_changed,
// as structured log lines.
//
// Emitting is fire-and-forget (seed 000 ADR-004): Emit never blocks the
// agent loop. Events go through a bounded buffer to one writer goroutine;
// when the buffer is full the event is dropped and counted.
package obs

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Event types of seed 001.
const (
	AgentStart     = "agent_start"
	LLMRequest     = "llm_request"
	LLMResponse    = "llm_response"
	ToolCallStart  = "tool_call_start"
	ToolCallResult = "tool_call_result"
	// ToolCallInterrupted: a call found started and without a result
	// when its step ran again, answered as interrupted, not run again.
	ToolCallInterrupted = "tool_call_interrupted"
	TurnComplete        = "turn_complete"
	CompactionComplete  = "compaction_complete"
	ApprovalRequested   = "approval_requested"
	ApprovalResolved    = "approval_resolved"
	SessionStart        = "session_start"
	SessionEnd          = "session_end"
	// BootstrapChanged is a bootstrap file of an agent's workspace (one
	// that shapes every user's system prompt: IDENTITY.md, SOUL.md,
	// USER.md, TOOLS.md, AGENTS.md, BOOTSTRAP.md, MEMORY.md) created,
	// changed or deleted by a tool call, with the owner whose run made it.
	BootstrapChanged = "bootstrap_changed"
	// PromptFileSkipped warns that a workspace file was left out of an
	// agent's system prompt because it cannot be read (attributes agent
	// and error).
	PromptFileSkipped = "prompt_file_skipped"
	// BudgetExhausted is a model call refused before it was made because
	// a token budget had no room for it (attributes agent, budget, limit).
	BudgetExhausted = "budget_exhausted"
	// BudgetLow is a token budget fallen below its notice threshold, once
	// per window (attributes budget, spent, limit).
	BudgetLow = "budget_low"
	// ToolCallBlocked is a tool call a guardrail refused before it ran
	// (attributes tool_name, rule).
	ToolCallBlocked = "tool_call_blocked"
)

// Event is one observation. Attrs must already be scrubbed of secrets.
type Event struct {
	Type      string
	SessionID string
	RunID     string
	Attrs     []slog.Attr
	Time      time.Time

	// flushed, set by Flush, is closed when the events before it are
	// written.
	flushed chan struct{}
}

// Emitter delivers events to a slog.Logger, and their metrics to sinks,
// without blocking callers.
type Emitter struct {
	log     *slog.Logger
	metrics []Metrics
	ch      chan Event
	dropped atomic.Int64
	done    chan struct{}
	once    sync.Once
	// mu guards closed, so that Emit never sends on the closed channel.
	mu     sync.RWMutex
	closed bool
}

// NewEmitter starts an emitter that writes to log, and records the
// metrics of the events in sinks, buffering up to size events.
func NewEmitter(log *slog.Logger, size int, sinks ...Sink) *Emitter {
	e := &Emitter{log: log, ch: make(chan Event, size), done: make(chan struct{})}
	for _, s := range sinks {
		e.metrics = append(e.metrics, Metrics{s})
	}
	go e.run()
	return e
}

// Emit queues ev; it drops the event if the buffer is full.
func (e *Emitter) Emit(ev Event) {
	if e == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		e.dropped.Add(1)
		return
	}
	select {
	case e.ch <- ev:
	default:
		e.dropped.Add(1)
	}
}

// Dropped reports how many events were dropped because the buffer was full.
func (e *Emitter) Dropped() int64 {
	if e == nil {
		return 0
	}
	return e.dropped.Load()
}

// Close writes the events still buffered and stops the emitter. Events
// emitted after Close are dropped.
func (e *Emitter) Close() {
	if e == nil {
		return
	}
	e.once.Do(func() {
		e.mu.Lock()
		e.closed = true
		close(e.ch)
		e.mu.Unlock()
		<-e.done
	})
}

// Flush waits until the events emitted before it are written and their
// metrics recorded, or until ctx is done, whose error it returns then;
// it returns at once after Close.
func (e *Emitter) Flush(ctx context.Context) error {
	if e == nil {
		return nil
	}
	done := make(chan struct{})
	e.mu.RLock()
	if e.closed {
		e.mu.RUnlock()
		return nil
	}
	select {
	case e.ch <- Event{flushed: done}:
		e.mu.RUnlock()
	case <-ctx.Done():
		e.mu.RUnlock()
		return fmt.Errorf("obs: flush: %w", ctx.Err())
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("obs: flush: %w", ctx.Err())
	}
}

func (e *Emitter) run() {
	defer close(e.done)
	ctx := context.Background()
	for ev := range e.ch {
		if ev.flushed != nil {
			close(ev.flushed)
			continue
		}
		r := slog.NewRecord(ev.Time, slog.LevelInfo, ev.Type, 0)
		r.AddAttrs(slog.String("event", ev.Type))
		if ev.SessionID != "" {
			r.AddAttrs(slog.String("session_id", ev.SessionID))
		}
		if ev.RunID != "" {
			r.AddAttrs(slog.String("run_id", ev.RunID))
		}
		r.AddAttrs(ev.Attrs...)
		if e.log.Handler().Enabled(ctx, slog.LevelInfo) {
			_ = e.log.Handler().Handle(ctx, r)
		}
		for _, m := range e.metrics {
			m.Emit(ev)
		}
	}
}
