// Package llmtest is the conformance suite every llm.Provider adapter runs,
// so that the OpenAI-compatible and the Bedrock providers behave alike:
//
//	func TestConformance(t *testing.T) {
//		llmtest.Run(t, llmtest.Harness{Secret: key, Start: startFake})
//	}
//
// The suite speaks to a provider's real client through a fake of its
// service. It says what the fake answers in the port's terms (an Answer:
// these deltas, these tool calls, this failure, this broken stream) and
// each adapter's tests translate that into their provider's wire format,
// and what the provider sent back into a Call. The suite then holds every
// adapter to the same replies, finish reasons, error classification and
// request mapping.
//
// The suite asks of an adapter only what package llm documents, and
// nothing of a wire format: tool-call arguments and schemas are compared
// as JSON values, and the status of a call that its context ended (a
// timeout, the caller's cancel) is the provider's to say. What a wire
// format alone has (OpenAI's refusals, Bedrock's event-stream framing and
// SigV4) stays in the adapter's own tests. The one exception is the
// parameters of a call (llm.Params), which providers carry in different
// places and not all of them: for each of the suite's parameter cases the
// harness states the settings its provider sends, in its wire format, or
// that it refuses them, and the suite checks the provider does just that.
//
// The package also holds what the fakes share: Serve starts one, Hold,
// WriteWhole and DropStream answer as an Answer's End says, WriteEndless
// and Repeat send answers that never end.
package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/nettest"
)

// Name and Model are what the harness builds the provider under test with:
// its name, and the model of requests that name none.
const (
	Name  = "test"
	Model = "test-model"
)

// Harness is what an adapter's tests give the suite.
type Harness struct {
	// Secret is the credential the provider is built with. No error may
	// show it.
	Secret string
	// Start starts a fake of the provider's service that answers each
	// call as s says (see Script.Next) and returns the provider under
	// test pointed at it, named Name, with default model Model and
	// configured as cfg says. It should fail t if it cannot, and release
	// the fake with t.Cleanup.
	Start func(t *testing.T, cfg Config, s *Script) llm.Provider
	// Params says, for each of the suite's parameter cases by name (see
	// paramsCases), what the provider sends for them: the Settings of
	// the call as JSON, in the provider's wire format, or Refused. Every
	// case must be stated.
	Params map[string]string
}

// Refused is what Harness.Params says of parameters the provider cannot
// honour: llm.CheckParams refuses them with an *llm.UnsupportedError,
// and so does Generate, without a call.
const Refused = "refused"

// Config is the provider a case needs.
type Config struct {
	// Timeout is the provider's call timeout (for a stream, its wait for
	// each event).
	Timeout time.Duration
	// MaxReplyBytes caps a reply; zero keeps the adapter's default.
	MaxReplyBytes int
	// Down asks for a fake that is not there: nothing listens where the
	// provider is pointed.
	Down bool
	// Input are the kinds of parts the provider's model takes besides
	// text; nil keeps the adapter's default, which takes images.
	Input llm.Accepts
}

// Call is a call the fake received, in the port's terms.
type Call struct {
	Model string
	// Stream is set for a streamed call.
	Stream bool
	// Messages are the conversation: system messages first when the
	// provider carries them apart, one Tool message per tool result, no
	// Name on a tool result (no provider sends it), a user's text and
	// its parts (images, documents) as the model received them.
	Messages  []chat.Message
	Tools     []chat.ToolDef
	MaxTokens int
	// Settings is the rest of the body, as JSON in the provider's wire
	// format: all but the model, the conversation (system prompt
	// included) and what asks for a stream. It holds the tools offered,
	// the token limit and every other parameter of the call.
	Settings json.RawMessage
}

// Answer is what the fake sends back to one call.
type Answer struct {
	// Pieces are the reply, in order: a stream sends one event per
	// piece; a whole answer holds them assembled (see Assemble).
	Pieces []Piece
	// Finish is the finish reason in the port's words ("stop",
	// "length", "tool_calls", "content_filter"), which the fake names as
	// its provider does.
	Finish string
	Usage  chat.Usage
	// Failure, when set, is an error the service answers with: the
	// whole answer when there are no pieces, else an error event in the
	// stream after them.
	Failure *Failure
	// End says how the answer ends.
	End End
}

// End is how an answer ends.
type End int

const (
	// Finished answers in full: the reply, its finish reason and usage.
	Finished End = iota
	// Silent sends nothing, and holds the connection until the client
	// leaves.
	Silent
	// Hangup closes the connection without an answer.
	Hangup
	// Stalled begins the answer (a stream's pieces, half of a whole
	// body) and then sends nothing more, holding the connection until
	// the client leaves.
	Stalled
	// Dropped begins the answer and then the connection dies in the
	// middle of it.
	Dropped
	// Unfinished ends a stream cleanly after its pieces, without the
	// event that says the reply is finished.
	Unfinished
	// Malformed follows a stream's pieces with an event that cannot be
	// decoded, or sends half of a whole body as if it were all.
	Malformed
	// Endless follows a stream's pieces with text for ever, until the
	// client leaves.
	Endless
)

// Kind is what a failure is. Each fake names it as its provider does: an
// error code, an exception type.
type Kind string

// The kinds of failure, each with its HTTP status.
const (
	Unauthorized    Kind = "unauthorized"     // 401: the credentials are refused
	Forbidden       Kind = "forbidden"        // 403: no access to the model
	RateLimited     Kind = "rate limited"     // 429
	ServerError     Kind = "server error"     // 500
	Unavailable     Kind = "unavailable"      // 503
	ContextOverflow Kind = "context overflow" // 400: the input does not fit the model
	InvalidRequest  Kind = "invalid request"  // 400: anything else wrong with the request
)

// Status is the HTTP status of a failure of kind k.
func (k Kind) Status() int {
	switch k {
	case Unauthorized:
		return http.StatusUnauthorized
	case Forbidden:
		return http.StatusForbidden
	case RateLimited:
		return http.StatusTooManyRequests
	case ServerError:
		return http.StatusInternalServerError
	case Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

// Failure is an error a service answers with.
type Failure struct {
	Kind    Kind
	Message string
	// RetryAfter is the Retry-After header sent with it, if any.
	RetryAfter string
}

// Piece is one streamed delta: text, or part of a tool call.
type Piece struct {
	Text string
	// IsCall marks a piece of the tool call at position Call among the
	// reply's calls. ID and Name come with its first piece; Args, a piece
	// of its arguments, with any.
	IsCall         bool
	Call           int
	ID, Name, Args string
}

// Text is a streamed piece of text.
func Text(s string) Piece { return Piece{Text: s} }

// CallPiece is a streamed piece of tool call i.
func CallPiece(i int, id, name, args string) Piece {
	return Piece{IsCall: true, Call: i, ID: id, Name: name, Args: args}
}

// Assemble is the assistant message pieces make: their text joined, and
// their tool calls in order of position, arguments joined.
func Assemble(pieces []Piece) chat.Message {
	msg := chat.Message{Role: chat.Assistant}
	for _, p := range pieces {
		if !p.IsCall {
			msg.Content += p.Text
			continue
		}
		for len(msg.ToolCalls) <= p.Call {
			msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{})
		}
		c := &msg.ToolCalls[p.Call]
		c.ID += p.ID
		c.Name += p.Name
		c.Arguments += p.Args
	}
	return msg
}

// Script holds a case's answers and records the calls the fake receives.
type Script struct {
	answers []Answer
	// arrived gets a value as each call is recorded.
	arrived chan struct{}
	mu      sync.Mutex
	calls   []recorded
}

// recorded is a call and whether the fake has finished answering it.
type recorded struct {
	call Call
	done chan struct{}
}

func newScript(answers ...Answer) *Script {
	return &Script{answers: answers, arrived: make(chan struct{}, 16)}
}

// Next records call and returns the answer the fake must send: the
// script's answers in turn, the last one for every call after. The fake
// calls done once it has sent it, when its handler returns.
func (s *Script) Next(call Call) (a Answer, done func()) {
	s.mu.Lock()
	n := len(s.calls)
	c := recorded{call: call, done: make(chan struct{})}
	s.calls = append(s.calls, c)
	s.mu.Unlock()
	select {
	case s.arrived <- struct{}{}:
	default:
	}
	if len(s.answers) > 0 {
		a = s.answers[min(n, len(s.answers)-1)]
	}
	return a, func() { close(c.done) }
}

// received returns the calls recorded so far.
func (s *Script) received() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.calls...)
}

// Serve starts a fake service: it reads each request with read (one it
// cannot read fails t and gets a 400) and answers it with answer. A
// request whose body never fully arrives is dropped without failing t:
// its client left, as one does when it cancels the rest of a batch
// after a failure. When down is set there is no fake: the URL refuses
// connections. It returns the URL, and closes the fake with t.Cleanup.
func Serve[C any](t *testing.T, down bool, read func(*http.Request) (C, error), answer func(http.ResponseWriter, *http.Request, C)) string {
	t.Helper()
	if down {
		return nettest.RefusedURL(t)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		c, err := read(r)
		if err != nil {
			t.Errorf("fake service: %v", err)
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		answer(w, r, c)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Hold answers as the ends that send no answer do, whatever the wire
// format: Silent waits for the client to leave, Hangup closes the
// connection. It reports whether end was one of them.
func Hold(t *testing.T, w http.ResponseWriter, r *http.Request, end End) bool {
	switch end {
	case Silent:
		<-r.Context().Done()
	case Hangup:
		closeConn(t, w)
	default:
		return false
	}
	return true
}

// WriteWhole answers with body, of contentType, ending as end says:
// Finished sends it all, Malformed half of it as if it were all, Stalled
// half of it and then nothing until the client leaves, Dropped half of it
// under a Content-Length for all before the connection dies.
func WriteWhole(t *testing.T, w http.ResponseWriter, r *http.Request, contentType, body string, end End) {
	w.Header().Set("Content-Type", contentType)
	half := body[:len(body)/2]
	switch end {
	case Malformed:
		io.WriteString(w, half)
	case Stalled:
		io.WriteString(w, half)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	case Dropped:
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		io.WriteString(w, half)
		w.(http.Flusher).Flush()
		closeConn(t, w)
	default:
		io.WriteString(w, body)
	}
}

// DropStream ends a stream in the middle of its transfer: it sends part,
// the beginning of an event, and closes the connection.
func DropStream(t *testing.T, w http.ResponseWriter, part []byte) {
	w.Write(part)
	w.(http.Flusher).Flush()
	closeConn(t, w)
}

// closeConn closes the connection under w at once: whatever was written
// and flushed has been sent, the rest of the answer never comes.
func closeConn(t *testing.T, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	conn.Close()
}

// WriteEndless answers with status and contentType, prefix, then unit over
// and over: an answer no client can hold. It returns once the client has
// gone away.
func WriteEndless(w http.ResponseWriter, r *http.Request, status int, contentType string, prefix, unit []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	w.Write(prefix)
	Repeat(w, r, bytes.Repeat(unit, max(1, 64<<10/len(unit))))
}

// Repeat writes b over and over until the client goes away.
func Repeat(w http.ResponseWriter, r *http.Request, b []byte) {
	for r.Context().Err() == nil {
		if _, err := w.Write(b); err != nil {
			return
		}
	}
}

// ASCIIJSON encodes v as JSON with every character outside ASCII escaped
// (\u00e9 for é, a surrogate pair beyond the BMP), as servers written in
// Python send it by default: the longest legitimate form of a reply, in
// which fakes write whole answers.
func ASCIIJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out strings.Builder
	for _, r := range string(b) {
		if r < utf8.RuneSelf {
			out.WriteRune(r)
			continue
		}
		for _, u := range utf16.Encode([]rune{r}) {
			fmt.Fprintf(&out, `\u%04x`, u)
		}
	}
	return out.String()
}
