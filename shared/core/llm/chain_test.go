package llm

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestChain(t *testing.T) {
	openCircuit := &Error{Provider: "a", Retryable: true, Err: ErrCircuitOpen}
	tests := []struct {
		name      string
		a, b      []result
		stream    bool
		wantText  string
		wantErr   *Error // the error errors.As must find; nil: success expected
		wantCalls [2]int
	}{
		{
			name:      "first provider answers",
			a:         []result{ok("from a")},
			wantText:  "from a",
			wantCalls: [2]int{1, 0},
		},
		{
			name:      "429 falls through",
			a:         []result{fail(rateLimited(time.Minute))},
			b:         []result{ok("from b")},
			wantText:  "from b",
			wantCalls: [2]int{1, 1},
		},
		{
			name:      "500 falls through",
			a:         []result{fail(statusErr(500, true))},
			b:         []result{ok("from b")},
			wantText:  "from b",
			wantCalls: [2]int{1, 1},
		},
		{
			name:      "timeout falls through",
			a:         []result{fail(timeoutErr())},
			b:         []result{ok("from b")},
			wantText:  "from b",
			wantCalls: [2]int{1, 1},
		},
		{
			name:      "open circuit falls through",
			a:         []result{fail(openCircuit)},
			b:         []result{ok("from b")},
			wantText:  "from b",
			wantCalls: [2]int{1, 1},
		},
		{
			name:      "bare deadline error falls through",
			a:         []result{fail(context.DeadlineExceeded)},
			b:         []result{ok("from b")},
			wantText:  "from b",
			wantCalls: [2]int{1, 1},
		},
		{
			name:      "400 does not fall through",
			a:         []result{fail(statusErr(400, false))},
			b:         []result{ok("never")},
			wantErr:   statusErr(400, false),
			wantCalls: [2]int{1, 0},
		},
		{
			name:      "401 does not fall through",
			a:         []result{fail(statusErr(401, false))},
			b:         []result{ok("never")},
			wantErr:   statusErr(401, false),
			wantCalls: [2]int{1, 0},
		},
		{
			name:      "no fall-through after streaming started",
			a:         []result{{deltas: []string{"Hel"}, err: statusErr(500, true)}},
			b:         []result{ok("never")},
			stream:    true,
			wantErr:   statusErr(500, true),
			wantCalls: [2]int{1, 0},
		},
		{
			name:      "streaming falls through when nothing was streamed",
			a:         []result{fail(statusErr(502, true))},
			b:         []result{{text: "from b", deltas: []string{"from b"}}},
			stream:    true,
			wantText:  "from b",
			wantCalls: [2]int{1, 1},
		},
		{
			name:      "all fail: the last error is found",
			a:         []result{fail(rateLimited(time.Second))},
			b:         []result{fail(statusErr(503, true))},
			wantErr:   statusErr(503, true),
			wantCalls: [2]int{1, 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := newFake("a", tt.a...), newFake("b", tt.b...)
			c := NewChain(a, b)
			var onDelta OnDelta
			if tt.stream {
				onDelta = func(string) {}
			}
			resp, err := c.Generate(context.Background(), Request{}, onDelta)
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
					t.Fatalf("error = %v, want an *Error", err)
				}
				if diff := cmp.Diff(tt.wantErr, got, cmp.Comparer(sameError)); diff != "" {
					t.Errorf("error mismatch (-want +got):\n%s", diff)
				}
			}
			if got := [2]int{a.callCount(), b.callCount()}; got != tt.wantCalls {
				t.Errorf("calls = %v, want %v", got, tt.wantCalls)
			}
		})
	}
}

func TestChainAllFailedNamesEveryProvider(t *testing.T) {
	c := NewChain(
		newFake("a", fail(&Error{Provider: "a", Status: 429, Retryable: true, Err: errors.New("slow down")})),
		newFake("b", fail(&Error{Provider: "b", Retryable: true, Err: ErrCircuitOpen})),
		newFake("c", fail(context.DeadlineExceeded)),
	)
	_, err := c.Generate(context.Background(), Request{}, nil)
	if err == nil {
		t.Fatal("Generate succeeded, want failure")
	}
	msg := err.Error()
	for _, want := range []string{"provider a: status 429: slow down", "provider b: circuit breaker open", "c: context deadline exceeded"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if !errors.Is(err, ErrCircuitOpen) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap every provider's error", err)
	}
	var last *Error
	if !errors.As(err, &last) || last.Provider != "b" {
		t.Errorf("errors.As found %+v, want the last *Error (provider b)", last)
	}
}

func TestChainStopsWhenContextDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	a := &cancellingProvider{cancel: cancel}
	b := newFake("b", ok("never"))
	_, err := NewChain(a, b).Generate(ctx, Request{}, nil)
	if err == nil {
		t.Fatal("Generate succeeded, want the first provider's error")
	}
	if got := b.callCount(); got != 0 {
		t.Errorf("second provider called %d times after the context was cancelled", got)
	}
}

// cancellingProvider cancels the caller's context and fails retryably, as a
// provider does when the user hangs up mid-call.
type cancellingProvider struct{ cancel context.CancelFunc }

func (p *cancellingProvider) Name() string { return "a" }

func (p *cancellingProvider) Generate(ctx context.Context, req Request, onDelta OnDelta) (Response, error) {
	p.cancel()
	return Response{}, timeoutErr()
}

func TestChainNoProviders(t *testing.T) {
	_, err := NewChain().Generate(context.Background(), Request{}, nil)
	if !errors.Is(err, ErrNoProvider) {
		t.Errorf("error = %v, want ErrNoProvider", err)
	}
}

func TestChainName(t *testing.T) {
	a, b := newFake("openai", nil...), newFake("ollama", nil...)
	if got := NewChain(a, b).Name(); got != "openai,ollama" {
		t.Errorf("Name = %q, want openai,ollama", got)
	}
	if got := NewChain(a); got != Provider(a) {
		t.Errorf("NewChain of one provider = %v, want the provider itself", got)
	}
}

func TestChainFallsThroughOpenBreaker(t *testing.T) {
	a := newFake("a", fail(statusErr(500, true)), ok("never"))
	guarded, _ := newTestBreaker(a, 1, time.Hour)
	b := newFake("b", ok("b1"), ok("b2"))
	c := NewChain(guarded, b)
	for i, want := range []string{"b1", "b2"} {
		resp, err := c.Generate(context.Background(), Request{}, nil)
		if err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
		if resp.Message.Content != want {
			t.Errorf("call %d content = %q, want %q", i+1, resp.Message.Content, want)
		}
	}
	if got := a.callCount(); got != 1 {
		t.Errorf("guarded provider called %d times, want 1 (then the circuit is open)", got)
	}
}
