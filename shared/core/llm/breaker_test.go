package llm

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeClock is a settable clock for the breaker.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTestBreaker(p Provider, failures int, cooldown time.Duration) (*breaker, *fakeClock) {
	clock := &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	b := WithBreaker(p, failures, cooldown).(*breaker)
	b.now = clock.now
	return b, clock
}

// outcome is what a call through the breaker did.
type outcome string

const (
	answered outcome = "answered" // the provider was called and succeeded
	failed   outcome = "failed"   // the provider was called and failed
	rejected outcome = "rejected" // the circuit was open; the provider was not called
)

func TestBreaker(t *testing.T) {
	const cooldown = 30 * time.Second
	type call struct {
		advance time.Duration // clock movement before the call
		result  result        // the provider's answer, if it is called
		want    outcome
	}
	e500 := fail(statusErr(500, true))
	e429 := fail(rateLimited(time.Second))
	e400 := fail(statusErr(400, false))
	e401 := fail(statusErr(401, false))
	tests := []struct {
		name  string
		calls []call
	}{
		{
			name: "opens after consecutive retryable failures",
			calls: []call{
				{result: e500, want: failed},
				{result: e429, want: failed},
				{result: fail(timeoutErr()), want: failed},
				{want: rejected},
				{advance: cooldown - time.Nanosecond, want: rejected},
			},
		},
		{
			name: "non-retryable errors do not count and reset the streak",
			calls: []call{
				{result: e500, want: failed},
				{result: e500, want: failed},
				{result: e400, want: failed},
				{result: e500, want: failed},
				{result: e401, want: failed},
				{result: e500, want: failed},
				{result: e500, want: failed},
				{result: ok("still closed"), want: answered},
			},
		},
		{
			name: "success resets the streak",
			calls: []call{
				{result: e500, want: failed},
				{result: e500, want: failed},
				{result: ok("hi"), want: answered},
				{result: e500, want: failed},
				{result: e500, want: failed},
				{result: ok("still closed"), want: answered},
			},
		},
		{
			name: "half-open trial success closes the circuit",
			calls: []call{
				{result: e500, want: failed},
				{result: e500, want: failed},
				{result: e500, want: failed},
				{want: rejected},
				{advance: cooldown, result: ok("trial"), want: answered},
				{result: e500, want: failed},
				{result: ok("closed again"), want: answered},
			},
		},
		{
			name: "half-open trial failure re-opens for another cooldown",
			calls: []call{
				{result: e500, want: failed},
				{result: e500, want: failed},
				{result: e500, want: failed},
				{advance: cooldown, result: e500, want: failed},
				{want: rejected},
				{advance: cooldown / 2, want: rejected},
				{advance: cooldown / 2, result: ok("second trial"), want: answered},
			},
		},
		{
			name: "half-open trial answered with a non-retryable error closes the circuit",
			calls: []call{
				{result: e500, want: failed},
				{result: e500, want: failed},
				{result: e500, want: failed},
				{advance: cooldown, result: e400, want: failed},
				{result: ok("closed"), want: answered},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var script []result
			for _, c := range tt.calls {
				if c.want != rejected {
					script = append(script, c.result)
				}
			}
			f := newFake("primary", script...)
			b, clock := newTestBreaker(f, 3, cooldown)
			var got []outcome
			for _, c := range tt.calls {
				clock.advance(c.advance)
				before := f.callCount()
				_, err := b.Generate(context.Background(), Request{}, nil)
				called := f.callCount() > before
				switch {
				case err == nil && called:
					got = append(got, answered)
				case err != nil && called:
					got = append(got, failed)
				case err != nil && errors.Is(err, ErrCircuitOpen):
					got = append(got, rejected)
				default:
					t.Fatalf("call without provider call returned %v", err)
				}
			}
			var want []outcome
			for _, c := range tt.calls {
				want = append(want, c.want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("outcomes mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBreakerOpenError(t *testing.T) {
	f := newFake("primary", fail(statusErr(503, true)))
	b, clock := newTestBreaker(f, 1, 30*time.Second)
	if _, err := b.Generate(context.Background(), Request{}, nil); err == nil {
		t.Fatal("first call succeeded, want the scripted 503")
	}
	clock.advance(10 * time.Second)
	_, err := b.Generate(context.Background(), Request{}, nil)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v, want *Error", err)
	}
	if !errors.Is(err, ErrCircuitOpen) {
		t.Errorf("error %v does not wrap ErrCircuitOpen", err)
	}
	got := Error{Provider: e.Provider, Status: e.Status, Retryable: e.Retryable, RetryAfter: e.RetryAfter}
	want := Error{Provider: "primary", Status: 0, Retryable: true, RetryAfter: 20 * time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("open error mismatch (-want +got):\n%s", diff)
	}
	if !IsRetryable(err) {
		t.Error("open-circuit error is not retryable")
	}
}

func TestBreakerIgnoresCallerCancellation(t *testing.T) {
	f := newFake("primary", fail(statusErr(500, true)), fail(timeoutErr()), ok("hi"))
	b, _ := newTestBreaker(f, 2, time.Minute)
	if _, err := b.Generate(context.Background(), Request{}, nil); err == nil {
		t.Fatal("want the scripted 500")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.Generate(ctx, Request{}, nil); err == nil {
		t.Fatal("want the scripted timeout")
	}
	// Two failures, but the second was the caller's cancellation: still closed.
	if _, err := b.Generate(context.Background(), Request{}, nil); err != nil {
		t.Fatalf("third call: %v, want success with the circuit still closed", err)
	}
}

// blockingProvider waits for release before answering, so that a call can be
// held in flight.
type blockingProvider struct {
	entered chan struct{}
	release chan struct{}
}

func (p *blockingProvider) Name() string { return "blocking" }

func (p *blockingProvider) Generate(ctx context.Context, req Request, onDelta OnDelta) (Response, error) {
	p.entered <- struct{}{}
	<-p.release
	return Response{}, nil
}

func TestBreakerHalfOpenAdmitsOneTrial(t *testing.T) {
	bp := &blockingProvider{entered: make(chan struct{}), release: make(chan struct{})}
	b, clock := newTestBreaker(bp, 1, time.Minute)
	// Open the circuit directly through a recorded failure.
	b.record(context.Background(), false, statusErr(500, true))
	clock.advance(time.Minute)

	var wg sync.WaitGroup
	var trialErr error
	wg.Go(func() { _, trialErr = b.Generate(context.Background(), Request{}, nil) })
	<-bp.entered // the trial is in flight

	_, err := b.Generate(context.Background(), Request{}, nil)
	if !errors.Is(err, ErrCircuitOpen) {
		t.Errorf("second call during the trial = %v, want ErrCircuitOpen", err)
	}
	close(bp.release)
	wg.Wait()
	if trialErr != nil {
		t.Fatalf("trial: %v", trialErr)
	}
	// The trial succeeded: the circuit is closed and calls go through.
	done := make(chan error, 1)
	go func() {
		_, err := b.Generate(context.Background(), Request{}, nil)
		done <- err
	}()
	<-bp.entered
	if err := <-done; err != nil {
		t.Fatalf("call after successful trial: %v", err)
	}
}

func TestBreakerConcurrentUse(t *testing.T) {
	results := make([]result, 0, 200)
	for i := range 200 {
		if i%3 == 0 {
			results = append(results, ok("hi"))
		} else {
			results = append(results, fail(statusErr(500, true)))
		}
	}
	f := newFake("primary", results...)
	b := WithBreaker(f, 5, time.Hour)
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() { _, _ = b.Generate(context.Background(), Request{}, nil) })
	}
	wg.Wait()
	if got := f.callCount(); got > 100 {
		t.Errorf("provider called %d times for 100 requests", got)
	}
}
