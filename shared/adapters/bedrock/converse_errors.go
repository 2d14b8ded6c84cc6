package bedrock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// maxConverseErrorText bounds how much of Bedrock's error message is kept.
const maxConverseErrorText = 500

// converseExceptions are the Converse and ConverseStream exceptions, keyed
// by lower-case code (event-stream exception frames spell them
// "throttlingException"): their documented HTTP status, used for those
// sent in the middle of a stream, and whether the call may pass if made
// again.
var converseExceptions = map[string]struct {
	status    int
	retryable bool
}{
	"throttlingexception":           {http.StatusTooManyRequests, true},
	"modelnotreadyexception":        {http.StatusTooManyRequests, true},
	"servicequotaexceededexception": {http.StatusBadRequest, false},
	"serviceunavailableexception":   {http.StatusServiceUnavailable, true},
	"internalserverexception":       {http.StatusInternalServerError, true},
	"modelstreamerrorexception":     {http.StatusFailedDependency, true},
	"modeltimeoutexception":         {http.StatusRequestTimeout, true},
	"modelerrorexception":           {http.StatusFailedDependency, false},
	"validationexception":           {http.StatusBadRequest, false},
	"accessdeniedexception":         {http.StatusForbidden, false},
	"resourcenotfoundexception":     {http.StatusNotFound, false},
}

// classify turns a failed call into an *llm.Error. parent is the caller's
// context, call the one derived for this call (carrying
// errConverseTimedOut as its cause when the timeout ended it); inStream
// says the error came while reading an answer that had begun.
func (c *Converse) classify(parent, call context.Context, err error, inStream bool) *llm.Error {
	e := &llm.Error{Provider: c.name}
	api, isAPI := errors.AsType[*awsapi.Error](err)
	// answered is an error Bedrock answered the call with, rather than
	// an exception in the stream of an answer.
	answered := isAPI && api.Header != nil
	_, isBig := errors.AsType[*awsapi.TooLargeError](err)
	e.Status = awsapi.Status(err)
	if e.Status == 0 && inStream {
		e.Status = http.StatusOK
	}
	if answered {
		e.RetryAfter = llm.ParseRetryAfter(api.Header, c.now())
	}
	switch {
	case parent.Err() != nil:
		e.Err = fmt.Errorf("call abandoned by the caller: %w", parent.Err())
	case errors.Is(context.Cause(call), errConverseTimedOut):
		e.Retryable = true
		if inStream {
			e.Err = fmt.Errorf("stream stalled for %s: %w", c.timeout, context.DeadlineExceeded)
		} else {
			e.Err = fmt.Errorf("no response within %s: %w", c.timeout, context.DeadlineExceeded)
		}
	case isAPI:
		known, isKnown := converseExceptions[strings.ToLower(api.Code)]
		if !answered && isKnown {
			e.Status = known.status
		}
		msg := truncateConverse(api.Message)
		e.ContextOverflow = strings.EqualFold(api.Code, "ValidationException") && isOverflowMessage(msg)
		e.Retryable = !e.ContextOverflow && (known.retryable || retryableHTTPStatus(e.Status))
		text := api.Code
		if msg != "" {
			text += ": " + msg
		}
		if !answered {
			text = "error in stream: " + text
		}
		if api.RequestID != "" {
			text += " [request " + api.RequestID + "]"
		}
		e.Err = &bedrockError{msg: text, err: err}
	case isBig && e.Status >= 300:
		// An error too long to read: its status tells what it was.
		e.Retryable = retryableHTTPStatus(e.Status)
		e.Err = &bedrockError{msg: http.StatusText(e.Status), err: err}
	case isBig:
		// Not retryable: the same request would likely get as long an
		// answer again. The client's text, which names the operation's
		// bound in bytes, is left out.
		e.Err = &llm.ReplyTooLargeError{Limit: c.maxReply}
	case connectionFailed(err):
		e.Retryable = true
		if inStream {
			e.Err = fmt.Errorf("stream cut off: %w", err)
		} else {
			e.Err = fmt.Errorf("connection failed: %w", err)
		}
	case inStream:
		e.Err = fmt.Errorf("invalid event stream: %w", err)
	default:
		e.Err = fmt.Errorf("request failed: %w", err)
	}
	return e
}

// retryableHTTPStatus reports whether a call that got status may pass if
// made again: timeouts, rate limits and server errors.
func retryableHTTPStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// isOverflowMessage reports whether a validation message says the
// conversation does not fit the model's context window, as Bedrock's
// models word it: "Input is too long for requested model", "prompt is too
// long", "maximum context length", "too many input tokens".
func isOverflowMessage(msg string) bool {
	m := strings.ToLower(msg)
	for _, phrase := range []string{"too long", "context length", "context window", "context limit", "maximum context", "exceeds the context", "too many input tokens"} {
		if strings.Contains(m, phrase) {
			return true
		}
	}
	return false
}

// connectionFailed reports whether a transport error is worth retrying:
// refused, reset or dropped connections and network timeouts.
func connectionFailed(err error) bool {
	for _, target := range []error{
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
		io.ErrUnexpectedEOF, io.EOF,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// truncateConverse trims a message to maxConverseErrorText bytes, on a
// rune boundary.
func truncateConverse(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxConverseErrorText {
		return s
	}
	cut := maxConverseErrorText
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// bedrockError is Bedrock's error told in a line, still inspectable
// with awsapi.Code (ThrottlingException, say).
type bedrockError struct {
	msg string
	err error
}

func (e *bedrockError) Error() string { return e.msg }

func (e *bedrockError) Unwrap() error { return e.err }
