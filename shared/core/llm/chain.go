package llm

import (
	"context"
	"errors"
	"strings"
)

// NewChain returns a Provider that tries ps in order. A retryable failure
// (rate limit, server error, timeout, open circuit) falls through to the
// next provider; a non-retryable one is returned at once, as is any failure
// after content has been streamed through onDelta or once ctx is done. When
// every provider fails, the error names each of them and errors.As finds the
// last provider's *Error.
//
// A typical chain gives each provider its own retry and breaker:
//
//	NewChain(
//		WithBreaker(WithRetry(primary, 3, time.Second, 10*time.Second), 5, 30*time.Second),
//		WithBreaker(WithRetry(backup, 2, time.Second, 10*time.Second), 5, 30*time.Second),
//	)
//
// With no providers Generate returns ErrNoProvider; with one, NewChain
// returns it unchanged.
func NewChain(ps ...Provider) Provider {
	if len(ps) == 1 {
		return ps[0]
	}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name()
	}
	return &chain{ps: append([]Provider(nil), ps...), name: strings.Join(names, ",")}
}

type chain struct {
	ps   []Provider
	name string
}

// Name joins the providers' names with commas.
func (c *chain) Name() string { return c.name }

// Generate asks each provider in turn until one answers.
func (c *chain) Generate(ctx context.Context, req Request, onDelta OnDelta) (Response, error) {
	if len(c.ps) == 0 {
		return Response{}, ErrNoProvider
	}
	tried := make([]attempt, 0, len(c.ps))
	for _, p := range c.ps {
		resp, streamed, err := generateTracked(ctx, p, req, onDelta)
		if err == nil {
			return resp, nil
		}
		if streamed || ctx.Err() != nil || !IsRetryable(err) {
			return resp, err
		}
		tried = append(tried, attempt{name: p.Name(), err: err})
	}
	return Response{}, &chainError{tried: tried}
}

// attempt is one provider's failure within a chain.
type attempt struct {
	name string
	err  error
}

// chainError is the failure of every provider in a chain.
type chainError struct {
	tried []attempt // in the order tried
}

func (e *chainError) Error() string {
	var b strings.Builder
	b.WriteString("all LLM providers failed: ")
	for i, a := range e.tried {
		if i > 0 {
			b.WriteString("; ")
		}
		var pe *Error
		if !errors.As(a.err, &pe) || pe.Provider == "" {
			b.WriteString(a.name)
			b.WriteString(": ")
		}
		b.WriteString(a.err.Error())
	}
	return b.String()
}

// Unwrap returns the providers' errors, last first, so that errors.As finds
// the most recent failure.
func (e *chainError) Unwrap() []error {
	out := make([]error, len(e.tried))
	for i, a := range e.tried {
		out[len(e.tried)-1-i] = a.err
	}
	return out
}
