package llm

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// WithBreaker returns a Provider guarded by a circuit breaker. After
// failures consecutive retryable failures the circuit opens: calls fail at
// once with an *Error wrapping ErrCircuitOpen (Retryable, Status 0,
// RetryAfter set to the rest of the cooldown) without reaching p. Once
// cooldown has passed the circuit is half-open: one trial call goes through
// while others are still rejected; its success closes the circuit and its
// failure opens it for another cooldown.
//
// Only retryable errors count as failures. A non-retryable error (a 400 or
// 401) is an answer from a working server and resets the count; a call ended
// by the caller's own context counts for nothing. failures below 1 means 1.
func WithBreaker(p Provider, failures int, cooldown time.Duration) Provider {
	if failures < 1 {
		failures = 1
	}
	return &breaker{p: p, threshold: failures, cooldown: cooldown, now: time.Now}
}

type breakerState int

const (
	closed breakerState = iota
	open
	halfOpen
)

type breaker struct {
	p         Provider
	threshold int
	cooldown  time.Duration
	// now is the clock; tests replace it.
	now func() time.Time

	mu       sync.Mutex
	state    breakerState
	failures int       // consecutive retryable failures while closed
	openedAt time.Time // when the circuit last opened
	trial    bool      // a half-open trial call is in flight
}

// Name returns the wrapped provider's name.
func (b *breaker) Name() string { return b.p.Name() }

// Generate calls the wrapped provider unless the circuit is open.
func (b *breaker) Generate(ctx context.Context, req Request, onDelta OnDelta) (Response, error) {
	isTrial, err := b.admit()
	if err != nil {
		return Response{}, err
	}
	resp, err := b.p.Generate(ctx, req, onDelta)
	b.record(ctx, isTrial, err)
	return resp, err
}

// admit decides whether a call may go through and whether it is the
// half-open trial.
func (b *breaker) admit() (trial bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case closed:
		return false, nil
	case open:
		elapsed := b.now().Sub(b.openedAt)
		if elapsed < b.cooldown {
			return false, b.openError(b.cooldown - elapsed)
		}
		b.state = halfOpen
		b.trial = true
		return true, nil
	default: // halfOpen
		if b.trial {
			return false, b.openError(0)
		}
		b.trial = true
		return true, nil
	}
}

func (b *breaker) openError(remaining time.Duration) *Error {
	msg := "trial call in progress"
	if remaining > 0 {
		msg = fmt.Sprintf("next trial in %s", remaining.Round(time.Millisecond))
	}
	return &Error{
		Provider:   b.p.Name(),
		Retryable:  true,
		RetryAfter: remaining,
		Err:        fmt.Errorf("%w after %d consecutive failures; %s", ErrCircuitOpen, b.threshold, msg),
	}
}

// record updates the state with the outcome of an admitted call.
func (b *breaker) record(ctx context.Context, trial bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if trial {
		b.trial = false
	}
	switch {
	case err != nil && ctx.Err() != nil:
		// The caller gave up; this says nothing about the provider. A
		// half-open circuit stays half-open so the next call is the trial.
	case err != nil && IsRetryable(err):
		if trial {
			b.trip()
			return
		}
		if b.state == closed {
			b.failures++
			if b.failures >= b.threshold {
				b.trip()
			}
		}
	default:
		// Success, or a non-retryable answer from a server that is up.
		if trial || b.state == closed {
			b.state = closed
			b.failures = 0
		}
	}
}

func (b *breaker) trip() {
	b.state = open
	b.openedAt = b.now()
	b.failures = 0
}
