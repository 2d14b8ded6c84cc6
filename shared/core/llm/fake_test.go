package llm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
)

// result is one scripted outcome of a fake provider call.
type result struct {
	text   string   // the reply's content on success
	deltas []string // streamed through onDelta before returning
	err    error
}

// fakeProvider answers calls with scripted results, in order.
type fakeProvider struct {
	name string

	mu      sync.Mutex
	results []result
	calls   int
}

func newFake(name string, results ...result) *fakeProvider {
	return &fakeProvider{name: name, results: results}
}

func (f *fakeProvider) Name() string { return f.name }

func (f *fakeProvider) Generate(ctx context.Context, req Request, onDelta OnDelta) (Response, error) {
	f.mu.Lock()
	i := f.calls
	f.calls++
	f.mu.Unlock()
	if i >= len(f.results) {
		return Response{}, fmt.Errorf("fake %s: unexpected call %d", f.name, i+1)
	}
	r := f.results[i]
	if onDelta != nil {
		for _, d := range r.deltas {
			onDelta(d)
		}
	}
	if r.err != nil {
		return Response{}, r.err
	}
	return Response{
		Message:  chat.Message{Role: chat.Assistant, Content: r.text},
		Provider: f.name,
	}, nil
}

func (f *fakeProvider) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func ok(text string) result { return result{text: text} }

func fail(err error) result { return result{err: err} }

func statusErr(status int, retryable bool) *Error {
	return &Error{Provider: "fake", Status: status, Retryable: retryable, Err: errors.New("scripted failure")}
}

func rateLimited(after time.Duration) *Error {
	e := statusErr(429, true)
	e.RetryAfter = after
	return e
}

func timeoutErr() *Error {
	return &Error{Provider: "fake", Retryable: true, Err: fmt.Errorf("no response: %w", context.DeadlineExceeded)}
}
