package llm

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// newTestRetrier wraps p with exact (jitter-free) waits that are recorded
// instead of slept.
func newTestRetrier(p Provider, attempts int, base, max time.Duration, slept *[]time.Duration) *retrier {
	r := WithRetry(p, attempts, base, max).(*retrier)
	r.jitter = func(d time.Duration) time.Duration { return d }
	r.sleep = func(ctx context.Context, d time.Duration) error {
		*slept = append(*slept, d)
		return nil
	}
	return r
}

func TestRetry(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name      string
		results   []result
		attempts  int
		base, max time.Duration
		stream    bool
		wantText  string
		wantErr   *Error // nil: success expected
		wantCalls int
		wantSlept []time.Duration
	}{
		{
			name:     "first try succeeds",
			results:  []result{ok("hi")},
			attempts: 3, base: 100 * ms, max: time.Second,
			wantText:  "hi",
			wantCalls: 1,
		},
		{
			name:     "server errors then success",
			results:  []result{fail(statusErr(500, true)), fail(statusErr(503, true)), ok("hi")},
			attempts: 3, base: 100 * ms, max: time.Second,
			wantText:  "hi",
			wantCalls: 3,
			wantSlept: []time.Duration{100 * ms, 200 * ms},
		},
		{
			name:     "timeout is retried",
			results:  []result{fail(timeoutErr()), ok("hi")},
			attempts: 2, base: 100 * ms, max: time.Second,
			wantText:  "hi",
			wantCalls: 2,
			wantSlept: []time.Duration{100 * ms},
		},
		{
			name:     "retry-after longer than backoff is honoured",
			results:  []result{fail(rateLimited(700 * ms)), ok("hi")},
			attempts: 3, base: 100 * ms, max: time.Second,
			wantText:  "hi",
			wantCalls: 2,
			wantSlept: []time.Duration{700 * ms},
		},
		{
			name:     "retry-after shorter than backoff waits the backoff",
			results:  []result{fail(rateLimited(50 * ms)), ok("hi")},
			attempts: 3, base: 100 * ms, max: time.Second,
			wantText:  "hi",
			wantCalls: 2,
			wantSlept: []time.Duration{100 * ms},
		},
		{
			name:     "retry-after beyond max gives up at once",
			results:  []result{fail(rateLimited(5 * time.Second)), ok("never")},
			attempts: 3, base: 100 * ms, max: time.Second,
			wantErr:   rateLimited(5 * time.Second),
			wantCalls: 1,
		},
		{
			name:     "non-retryable error is returned at once",
			results:  []result{fail(statusErr(400, false)), ok("never")},
			attempts: 3, base: 100 * ms, max: time.Second,
			wantErr:   statusErr(400, false),
			wantCalls: 1,
		},
		{
			name:     "attempts exhausted returns the last error",
			results:  []result{fail(statusErr(500, true)), fail(statusErr(502, true)), fail(statusErr(503, true))},
			attempts: 3, base: 100 * ms, max: time.Second,
			wantErr:   statusErr(503, true),
			wantCalls: 3,
			wantSlept: []time.Duration{100 * ms, 200 * ms},
		},
		{
			name: "backoff is capped at max",
			results: []result{
				fail(statusErr(500, true)), fail(statusErr(500, true)), fail(statusErr(500, true)), ok("hi"),
			},
			attempts: 4, base: 100 * ms, max: 250 * ms,
			wantText:  "hi",
			wantCalls: 4,
			wantSlept: []time.Duration{100 * ms, 200 * ms, 250 * ms},
		},
		{
			name:     "no retry once content was streamed",
			results:  []result{{deltas: []string{"Hel"}, err: statusErr(500, true)}, ok("never")},
			attempts: 3, base: 100 * ms, max: time.Second,
			stream:    true,
			wantErr:   statusErr(500, true),
			wantCalls: 1,
		},
		{
			name:     "streaming call that failed before any content is retried",
			results:  []result{fail(statusErr(500, true)), {text: "hi", deltas: []string{"hi"}}},
			attempts: 3, base: 100 * ms, max: time.Second,
			stream:    true,
			wantText:  "hi",
			wantCalls: 2,
			wantSlept: []time.Duration{100 * ms},
		},
		{
			name:     "single attempt never retries",
			results:  []result{fail(statusErr(500, true)), ok("never")},
			attempts: 0, base: 100 * ms, max: time.Second,
			wantErr:   statusErr(500, true),
			wantCalls: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake("fake", tt.results...)
			var slept []time.Duration
			r := newTestRetrier(f, tt.attempts, tt.base, tt.max, &slept)
			var onDelta OnDelta
			if tt.stream {
				onDelta = func(string) {}
			}
			resp, err := r.Generate(context.Background(), Request{}, onDelta)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				if resp.Message.Content != tt.wantText {
					t.Errorf("content = %q, want %q", resp.Message.Content, tt.wantText)
				}
			} else {
				var got *Error
				if !errors.As(err, &got) {
					t.Fatalf("Generate error = %v, want *Error", err)
				}
				if diff := cmp.Diff(tt.wantErr, got, cmp.Comparer(sameError)); diff != "" {
					t.Errorf("error mismatch (-want +got):\n%s", diff)
				}
			}
			if got := f.callCount(); got != tt.wantCalls {
				t.Errorf("calls = %d, want %d", got, tt.wantCalls)
			}
			if diff := cmp.Diff(tt.wantSlept, slept); diff != "" {
				t.Errorf("waits mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// sameError compares the classification of two *Errors and their messages.
func sameError(a, b *Error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Provider == b.Provider && a.Status == b.Status && a.Retryable == b.Retryable &&
		a.RetryAfter == b.RetryAfter && a.ContextOverflow == b.ContextOverflow && a.Error() == b.Error()
}

func TestRetryStopsWhenContextCancelledDuringWait(t *testing.T) {
	f := newFake("fake", fail(statusErr(500, true)), ok("never"))
	r := WithRetry(f, 3, time.Hour, time.Hour).(*retrier)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r.sleep = func(ctx context.Context, d time.Duration) error {
		cancel() // the caller gives up while we wait
		return sleepCtx(ctx, d)
	}
	_, err := r.Generate(ctx, Request{}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
	if got := f.callCount(); got != 1 {
		t.Errorf("calls = %d, want 1", got)
	}
}

func TestRetryDoesNotRetryAfterContextDone(t *testing.T) {
	f := newFake("fake", fail(timeoutErr()), ok("never"))
	var slept []time.Duration
	r := newTestRetrier(f, 3, time.Millisecond, time.Second, &slept)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Generate(ctx, Request{}, nil); err == nil {
		t.Fatal("Generate succeeded, want the provider's error")
	}
	if got := f.callCount(); got != 1 || len(slept) != 0 {
		t.Errorf("calls = %d, waits = %v; want 1 call and no wait", got, slept)
	}
}

func TestRetryName(t *testing.T) {
	if got := WithRetry(newFake("primary"), 3, time.Second, time.Second).Name(); got != "primary" {
		t.Errorf("Name = %q, want primary", got)
	}
}

func TestHalfJitterStaysInRange(t *testing.T) {
	for _, d := range []time.Duration{0, 1, 2, 3, time.Millisecond, time.Second} {
		for range 200 {
			got := halfJitter(d)
			if got < d/2 || got > d {
				t.Fatalf("halfJitter(%v) = %v, want within [%v, %v]", d, got, d/2, d)
			}
		}
	}
}

func TestSleepCtx(t *testing.T) {
	if err := sleepCtx(context.Background(), time.Microsecond); err != nil {
		t.Errorf("sleepCtx on a live context = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sleepCtx(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("sleepCtx on a cancelled context = %v, want context.Canceled", err)
	}
	if err := sleepCtx(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("sleepCtx(0) on a cancelled context = %v, want context.Canceled", err)
	}
}
