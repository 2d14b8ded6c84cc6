package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"

	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
)

// maxErrorText bounds how much of a server's error message is kept.
const maxErrorText = 500

// classify turns a failed call into an *llm.Error. parent is the caller's
// context, call the one derived for this call (carrying errTimedOut as its
// cause when our timeout ended it), res the HTTP response if one arrived.
func (p *Provider) classify(parent, call context.Context, res *http.Response, err error) *llm.Error {
	e := &llm.Error{Provider: p.name, Status: statusOf(res)}
	var apiErr *apiError
	var streamErr *streamError
	var tooLarge *llm.ReplyTooLargeError
	switch {
	case parent.Err() != nil:
		e.Err = fmt.Errorf("call abandoned by the caller: %w", parent.Err())
	case errors.Is(context.Cause(call), errTimedOut):
		e.Retryable = true
		if res == nil {
			e.Err = fmt.Errorf("no response within %s: %w", p.timeout, context.DeadlineExceeded)
		} else {
			e.Err = fmt.Errorf("response stalled for %s: %w", p.timeout, context.DeadlineExceeded)
		}
	case errors.As(err, &apiErr):
		p.fromStatus(e, apiErr.status, apiErr.header, apiErr.code, apiErr.msg)
	case errors.As(err, &tooLarge):
		// Not retryable: the same request would likely get as long an
		// answer again.
		e.Err = tooLarge
	case errors.As(err, &streamErr):
		p.fromStreamError(e, streamErr)
	case transient(err):
		e.Retryable = true
		if res != nil {
			e.Err = fmt.Errorf("response cut off: %w", err)
		} else {
			e.Err = fmt.Errorf("connection failed: %w", err)
		}
	case res != nil:
		e.Err = fmt.Errorf("invalid response from server: %w", err)
	default:
		e.Err = fmt.Errorf("request failed: %w", err)
	}
	if msg := e.Err.Error(); p.redact(msg) != msg {
		e.Err = &redactedError{msg: p.redact(msg), err: e.Err}
	}
	return e
}

// redact removes the API key from text a server or transport produced. A
// placeholder key ("ollama", "none") is not a secret and is left alone, so
// words that happen to equal it stay intact.
func (p *Provider) redact(s string) string {
	return scrub.Known(s, p.apiKey)
}

// fromStatus fills e from an HTTP error status and the server's error code
// and message.
func (p *Provider) fromStatus(e *llm.Error, status int, h http.Header, code, msg string) {
	e.Status = status
	e.Retryable = retryableStatus(status)
	e.RetryAfter = llm.ParseRetryAfter(h, p.now())
	e.ContextOverflow = status == http.StatusBadRequest && isContextOverflow(code, msg)
	text := p.redact(truncate(msg))
	if text == "" {
		text = http.StatusText(status)
	}
	if _, numeric := strconv.Atoi(code); code != "" && numeric != nil && !strings.Contains(text, code) {
		text += " (" + code + ")"
	}
	if id := h.Get("X-Request-Id"); id != "" {
		text += " [request " + id + "]"
	}
	e.Err = errors.New(text)
}

// streamError is the error of an error event sent in the middle of a
// stream, such as {"error": {"message": "...", "code": 502}}.
type streamError struct{ data json.RawMessage }

func (e *streamError) Error() string { return "error in stream: " + string(e.data) }

// fromStreamError fills e from an error event.
func (p *Provider) fromStreamError(e *llm.Error, se *streamError) {
	var body struct {
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
	msg, code := rawString(se.data), ""
	if json.Unmarshal(se.data, &body) == nil {
		msg, code = body.Message, rawCode(body.Code)
	}
	if msg == "" {
		msg = string(se.data)
	}
	if n, err := strconv.Atoi(code); err == nil && n >= 400 && n < 600 {
		e.Status = n
		e.Retryable = retryableStatus(n)
		e.ContextOverflow = n == http.StatusBadRequest && isContextOverflow("", msg)
	} else {
		e.ContextOverflow = isContextOverflow(code, msg)
		e.Retryable = !e.ContextOverflow
	}
	e.Err = fmt.Errorf("error in stream: %s", p.redact(truncate(msg)))
}

// errorBody pulls a code and message out of an error body: OpenAI's
// {"error": {"message": ..., "code": ...}}, or the shapes other servers
// send: {"error": "..."} (Ollama), {"message": ..., "code": 400} at the
// top level (vLLM), {"detail": "..."} (FastAPI). Anything else gives
// neither.
func errorBody(data []byte) (code, msg string) {
	var body struct {
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
		Error   json.RawMessage `json:"error"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(data, &body) != nil {
		return "", ""
	}
	var openAI struct {
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(body.Error, &openAI) == nil && openAI.Message != "" {
		return rawCode(openAI.Code), openAI.Message
	}
	msg = body.Message
	if msg == "" {
		msg = rawString(body.Error)
	}
	if msg == "" {
		msg = rawString(body.Detail)
	}
	return rawCode(body.Code), msg
}

// rawString returns a JSON string's value, or "" for anything else.
func rawString(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// rawCode renders an error code that servers send as a string or a number.
func rawCode(raw json.RawMessage) string {
	if s := rawString(raw); s != "" {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// retryableStatus reports whether a request that got status may succeed if
// sent again: timeouts, conflicts, rate limits and server errors.
func retryableStatus(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return true
	}
	return status >= 500
}

// isContextOverflow reports whether an error says the conversation does not
// fit the model's context window.
func isContextOverflow(code, msg string) bool {
	if code == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(msg)
	for _, phrase := range []string{"maximum context length", "context window", "context_length_exceeded", "context length exceeded"} {
		if strings.Contains(m, phrase) {
			return true
		}
	}
	return false
}

// transient reports whether a transport error is worth retrying: refused,
// reset or dropped connections, network timeouts and temporary DNS failures.
func transient(err error) bool {
	for _, target := range []error{
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
		io.ErrUnexpectedEOF, io.EOF,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.IsTemporary || dns.IsTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op)
}

func truncate(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxErrorText {
		return s
	}
	cut := maxErrorText
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// redactedError hides the API key in a transport error's text (a key placed
// in the base URL, say) while keeping the error inspectable with errors.Is.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

func (e *redactedError) Unwrap() error { return e.err }
