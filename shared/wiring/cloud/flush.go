package cloud

import (
	"context"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
)

// FlushTime bounds how long an invocation waits, before it returns, for
// the events it emitted to be written (within the invocation's deadline
// too). Lambda freezes a function between invocations: an event still
// queued then (obs.Emitter writes off the request path) would be written
// with the next invocation, or lost with the instance.
const FlushTime = time.Second

// Flush writes the events emitted so far (their log and EMF lines) before
// the invocation returns, waiting at most FlushTime; a flush cut short is
// logged.
func (r *Root) Flush(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, FlushTime)
	defer cancel()
	r.flush(ctx)
}

func (r *Root) flush(ctx context.Context) {
	if err := r.events.Flush(ctx); err != nil {
		r.Log.Warn("events not all written before the invocation returned", "err", err)
	}
}

// Flushed returns h, a handler of a function built on r, flushing the
// events the invocation emitted before it returns (Flush).
func Flushed[E, R any](r *Root, h func(context.Context, E) (R, error)) func(context.Context, E) (R, error) {
	return func(ctx context.Context, ev E) (R, error) {
		defer r.Flush(ctx)
		return h(ctx, ev)
	}
}

// Step returns the handler of the step function: the Step Functions
// tasks and the asynchronous invocations of inline runs (sfn.Driver),
// flushing their events before it returns.
func (r *Root) Step() func(context.Context, sfn.Event) (any, error) {
	return Flushed(r, r.Driver.Handle)
}
