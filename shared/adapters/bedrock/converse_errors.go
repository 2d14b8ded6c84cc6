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

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

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
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		e.Status = re.HTTPStatusCode()
		if re.Response != nil {
			e.RetryAfter = llm.ParseRetryAfter(re.Response.Header, c.now())
		}
	} else if inStream {
		e.Status = http.StatusOK
	}
	var api smithy.APIError
	var send *smithyhttp.RequestSendError
	var tooLarge *llm.ReplyTooLargeError
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
	case errors.As(err, &api):
		code := api.ErrorCode()
		known, isKnown := converseExceptions[strings.ToLower(code)]
		if inStream && re == nil && isKnown {
			e.Status = known.status
		}
		msg := truncateConverse(api.ErrorMessage())
		e.ContextOverflow = strings.EqualFold(code, "ValidationException") && isOverflowMessage(msg)
		e.Retryable = !e.ContextOverflow && (known.retryable || retryableHTTPStatus(e.Status))
		text := code
		if msg != "" {
			text += ": " + msg
		}
		if inStream && re == nil {
			text = "error in stream: " + text
		}
		if re != nil && re.RequestID != "" {
			text += " [request " + re.RequestID + "]"
		}
		e.Err = &converseError{msg: text, err: err}
	case e.Status >= 400:
		e.Retryable = retryableHTTPStatus(e.Status)
		e.Err = &converseError{msg: http.StatusText(e.Status), err: err}
	case errors.As(err, &tooLarge):
		// Not retryable: the same request would likely get as long an
		// answer again. The SDK's text, which names the endpoint, is
		// left out.
		e.Err = tooLarge
	case errors.As(err, &send) || connectionFailed(err):
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

// converseError is Bedrock's error told in a line, still inspectable with
// errors.As (for *types.ThrottlingException, say).
type converseError struct {
	msg string
	err error
}

func (e *converseError) Error() string { return e.msg }

func (e *converseError) Unwrap() error { return e.err }
