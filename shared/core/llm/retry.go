package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// WithRetry returns a Provider that calls p up to attempts times while the
// error is retryable (see IsRetryable). Waits grow exponentially from base,
// capped at max, with jitter (each wait is between half and all of its
// nominal value). A provider's Retry-After is honoured: the wait is at least
// that long, and when it exceeds max the error is returned at once so that a
// fallback chain can move on instead of stalling.
//
// A call whose onDelta has already been invoked is never retried: its
// content has reached a user. Cancelling ctx stops any wait.
//
// attempts below 1 mean 1, a negative base means 0, and max below base means
// base.
func WithRetry(p Provider, attempts int, base, max time.Duration) Provider {
	if attempts < 1 {
		attempts = 1
	}
	if base < 0 {
		base = 0
	}
	if max < base {
		max = base
	}
	return &retrier{
		p:        p,
		attempts: attempts,
		base:     base,
		max:      max,
		sleep:    sleepCtx,
		jitter:   halfJitter,
	}
}

type retrier struct {
	p        Provider
	attempts int
	base     time.Duration
	max      time.Duration
	// sleep waits d or until ctx is done; tests replace it to record waits.
	sleep func(ctx context.Context, d time.Duration) error
	// jitter randomises a nominal wait; tests replace it to make waits exact.
	jitter func(d time.Duration) time.Duration
}

// Name returns the wrapped provider's name: retrying is invisible to callers.
func (r *retrier) Name() string { return r.p.Name() }

// Generate calls the wrapped provider, retrying transient failures.
func (r *retrier) Generate(ctx context.Context, req Request, onDelta OnDelta) (Response, error) {
	for attempt := 1; ; attempt++ {
		resp, streamed, err := generateTracked(ctx, r.p, req, onDelta)
		if err == nil {
			return resp, nil
		}
		if streamed || attempt >= r.attempts || ctx.Err() != nil || !IsRetryable(err) {
			return resp, err
		}
		wait := r.jitter(r.backoff(attempt))
		if ra := retryAfter(err); ra > 0 {
			if ra > r.max {
				return resp, err
			}
			wait = max(wait, ra)
		}
		if serr := r.sleep(ctx, wait); serr != nil {
			return Response{}, fmt.Errorf("%s: retry abandoned after attempt %d (last error: %v): %w", r.p.Name(), attempt, err, serr)
		}
	}
}

// backoff is the nominal wait after the given failed attempt (1-based).
func (r *retrier) backoff(attempt int) time.Duration {
	d := r.base
	for i := 1; i < attempt && d < r.max; i++ {
		d *= 2
	}
	return min(d, r.max)
}

// retryAfter returns the wait a provider asked for, if err carries one.
func retryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

// generateTracked calls p and reports whether onDelta was invoked.
func generateTracked(ctx context.Context, p Provider, req Request, onDelta OnDelta) (Response, bool, error) {
	if onDelta == nil {
		resp, err := p.Generate(ctx, req, nil)
		return resp, false, err
	}
	var streamed atomic.Bool
	resp, err := p.Generate(ctx, req, func(text string) {
		streamed.Store(true)
		onDelta(text)
	})
	return resp, streamed.Load(), err
}

// halfJitter returns a random duration in [d/2, d].
func halfJitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// sleepCtx waits d or until ctx is done, returning the context's cause then.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
