// Package llm is the port to language models: the Provider interface every
// adapter implements, the errors they return, and the resilience wrappers
// (retry with backoff, circuit breaker, fallback chain) the agent loop uses.
package llm

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
)

// Request is one call to a model.
type Request struct {
	// Model overrides the provider's configured model when set.
	Model    string
	Messages []chat.Message
	Tools    []chat.ToolDef
	Params
}

// Response is a model's complete answer.
type Response struct {
	Message      chat.Message
	Usage        chat.Usage
	FinishReason string
	// Model is the model that answered.
	Model string
	// Provider is the name of the provider that answered.
	Provider string
}

// OnDelta receives content text as it streams. It must not block for long.
type OnDelta func(text string)

// Provider generates a completion. When onDelta is non-nil the provider
// streams and calls it with each piece of content as it arrives; the returned
// Response is the assembled message either way.
type Provider interface {
	Name() string
	Generate(ctx context.Context, req Request, onDelta OnDelta) (Response, error)
}

// Error is a failed provider call, classified so that callers can decide to
// retry or fall through to the next provider.
type Error struct {
	Provider string
	// Status is the HTTP status, 0 when the request never got an answer.
	Status int
	// Retryable is true for rate limits, server errors, timeouts and
	// connection failures.
	Retryable bool
	// RetryAfter is the wait the provider asked for, if any.
	RetryAfter time.Duration
	// ContextOverflow is true when the provider rejected the request because
	// the conversation does not fit the model's context window.
	ContextOverflow bool
	Err             error
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("provider %s: status %d: %v", e.Provider, e.Status, e.Err)
	}
	return fmt.Sprintf("provider %s: %v", e.Provider, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// ErrNoProvider is returned when no provider is configured.
var ErrNoProvider = errors.New("no LLM provider is configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server such as Ollama or OpenRouter), or add a provider to the config file")

// ErrCircuitOpen is returned by a provider whose circuit breaker is open.
var ErrCircuitOpen = errors.New("circuit breaker open")

// IsRetryable reports whether err is a transient provider failure.
func IsRetryable(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Retryable
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrCircuitOpen)
}
