package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// Run runs the conformance suite against the provider h starts. Most
// cases run twice: once for a whole answer, once for a stream.
func Run(t *testing.T, h Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"Reply", testReply},
		{"FinishReason", testFinishReason},
		{"Request", testRequest},
		{"Params", testParams},
		{"Media", testMedia},
		{"InvalidRequest", testInvalidRequest},
		{"ErrorAnswer", testErrorAnswer},
		{"ErrorInStream", testErrorInStream},
		{"BrokenAnswer", testBrokenAnswer},
		{"Timeout", testTimeout},
		{"CallerCancels", testCallerCancels},
		{"RetriedByWrapper", testRetriedByWrapper},
		{"Limit", testLimit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

const (
	// longTimeout is the provider's timeout in the cases that are not
	// about timing out.
	longTimeout = 20 * time.Second
	// shortTimeout is the timeout of the cases that are: their fake
	// never answers in time, so their outcome does not depend on the
	// machine's speed.
	shortTimeout = 50 * time.Millisecond
)

var (
	hello = llm.Request{Messages: []chat.Message{{Role: chat.User, Content: "Hello"}}}
	usage = chat.Usage{PromptTokens: 9, CompletionTokens: 3, TotalTokens: 12}
	// hel is a stream's beginning before it breaks.
	hel = []Piece{Text("Hel")}
)

// modes runs fn for a whole answer and for a stream.
func modes(t *testing.T, fn func(t *testing.T, stream bool)) {
	t.Run("whole", func(t *testing.T) { fn(t, false) })
	t.Run("stream", func(t *testing.T) { fn(t, true) })
}

// streamOnly runs fn for a stream, for cases a whole answer cannot make.
func streamOnly(t *testing.T, fn func(t *testing.T, stream bool)) {
	t.Run("stream", func(t *testing.T) { fn(t, true) })
}

// start starts the harness's fake with answers, and the provider pointed at
// it with the long timeout unless cfg sets one.
func (h Harness) start(t *testing.T, cfg Config, answers ...Answer) (llm.Provider, *Script) {
	t.Helper()
	if cfg.Timeout == 0 {
		cfg.Timeout = longTimeout
	}
	s := newScript(answers...)
	return h.Start(t, cfg, s), s
}

// generate calls p, streaming when stream is set, and returns the deltas
// too. The call has a deadline, so that a provider that never returns
// fails the case instead of hanging the suite.
func generate(t *testing.T, p llm.Provider, req llm.Request, stream bool) (llm.Response, []string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*longTimeout)
	defer cancel()
	var deltas []string
	var onDelta llm.OnDelta
	if stream {
		onDelta = func(s string) { deltas = append(deltas, s) }
	}
	resp, err := p.Generate(ctx, req, onDelta)
	if ctx.Err() != nil {
		t.Fatal("Generate returned only at the suite's deadline")
	}
	return resp, deltas, err
}

// textOf is the text pieces: the deltas a stream of pieces gives.
func textOf(pieces []Piece) []string {
	var out []string
	for _, p := range pieces {
		if !p.IsCall {
			out = append(out, p.Text)
		}
	}
	return out
}

func msg(content string, calls ...chat.ToolCall) chat.Message {
	return chat.Message{Role: chat.Assistant, Content: content, ToolCalls: calls}
}

// jsonValues compares tool-call arguments and tool schemas as the JSON
// values they hold: providers that carry them as documents re-encode them.
var jsonValues = cmp.Options{
	cmp.FilterPath(isField("Arguments"), cmp.Comparer(func(a, b string) bool { return sameJSON(a, b) })),
	cmp.FilterPath(isField("Parameters"), cmp.Comparer(func(a, b json.RawMessage) bool { return sameJSON(string(a), string(b)) })),
}

func isField(name string) func(cmp.Path) bool {
	return func(p cmp.Path) bool {
		f, ok := p.Last().(cmp.StructField)
		return ok && f.Name() == name
	}
}

// sameJSON reports whether a and b hold the same JSON value; texts that
// are not JSON must be equal.
func sameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	return cmp.Equal(x, y)
}

// checkError checks that err is an *llm.Error of the provider under test
// classified as want, that it mentions mention and never shows the secret.
func (h Harness) checkError(t *testing.T, err error, want llm.Error, mention string) {
	t.Helper()
	want.Provider = Name
	CheckError(t, err, want, h.Secret, mention)
}

// CheckError checks that err is an *llm.Error classified as want (its
// Provider, Status, Retryable, RetryAfter and ContextOverflow, and so
// llm.IsRetryable), that its text holds each of mention and, unless secret
// is empty, not secret. It returns the *llm.Error.
func CheckError(t *testing.T, err error, want llm.Error, secret string, mention ...string) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want an *llm.Error", err, err)
	}
	got := llm.Error{Provider: e.Provider, Status: e.Status, Retryable: e.Retryable, RetryAfter: e.RetryAfter, ContextOverflow: e.ContextOverflow}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("classification (-want +got):\n%s\nerror: %v", diff, err)
	}
	if llm.IsRetryable(err) != want.Retryable {
		t.Errorf("llm.IsRetryable(%v) = %v", err, !want.Retryable)
	}
	for _, m := range mention {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not mention %q", err, m)
		}
	}
	if secret != "" && strings.Contains(err.Error(), secret) {
		t.Errorf("error %q shows the secret", err)
	}
	return e
}

// testReply checks replies of text and of tool calls, several in one
// reply, their arguments streamed in fragments that interleave: the
// message, the finish reason, the usage and, streamed, the deltas, in
// order, that make the message's content.
func testReply(t *testing.T, h Harness) {
	weather := chat.ToolCall{ID: "call_a", Name: "get_weather", Arguments: `{"city": "Paris"}`}
	clock := chat.ToolCall{ID: "call_b", Name: "get_time", Arguments: `{"tz": "UTC"}`}
	tests := []struct {
		name   string
		pieces []Piece
		finish string
		want   chat.Message
	}{
		{"text", []Piece{Text("Hel"), Text("lo, "), Text("wörld!")}, "stop", msg("Hello, wörld!")},
		{
			"tool calls",
			[]Piece{Text("Let me check."), CallPiece(0, weather.ID, weather.Name, weather.Arguments), CallPiece(1, clock.ID, clock.Name, clock.Arguments)},
			"tool_calls", msg("Let me check.", weather, clock),
		},
		{
			"tool-call arguments in fragments",
			[]Piece{
				CallPiece(0, weather.ID, weather.Name, ""),
				CallPiece(0, "", "", `{"ci`),
				CallPiece(1, clock.ID, clock.Name, ""),
				CallPiece(0, "", "", `ty": "Par`),
				CallPiece(1, "", "", `{"tz":`),
				CallPiece(0, "", "", `is"}`),
				CallPiece(1, "", "", ` "UTC"}`),
			},
			"tool_calls", msg("", weather, clock),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				p, _ := h.start(t, Config{}, Answer{Pieces: tt.pieces, Finish: tt.finish, Usage: usage})
				got, deltas, err := generate(t, p, hello, stream)
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				want := llm.Response{Message: tt.want, Usage: usage, FinishReason: tt.finish, Model: Model, Provider: Name}
				if diff := cmp.Diff(want, got, jsonValues); diff != "" {
					t.Errorf("response (-want +got):\n%s", diff)
				}
				var wantDeltas []string
				if stream {
					wantDeltas = textOf(tt.pieces)
				}
				if diff := cmp.Diff(wantDeltas, deltas); diff != "" {
					t.Errorf("deltas (-want +got):\n%s", diff)
				}
				if stream && strings.Join(deltas, "") != got.Message.Content {
					t.Errorf("deltas %q do not make the content %q", deltas, got.Message.Content)
				}
			})
		})
	}
}

// testFinishReason checks that the provider's reasons come out in the
// port's words.
func testFinishReason(t *testing.T, h Harness) {
	call := chat.ToolCall{ID: "call_a", Name: "get_time", Arguments: `{}`}
	for _, finish := range []string{"stop", "length", "tool_calls", "content_filter"} {
		t.Run(finish, func(t *testing.T) {
			pieces, want := []Piece{Text("Hi")}, msg("Hi")
			if finish == "tool_calls" {
				pieces, want = append(pieces, CallPiece(0, call.ID, call.Name, call.Arguments)), msg("Hi", call)
			}
			modes(t, func(t *testing.T, stream bool) {
				p, _ := h.start(t, Config{}, Answer{Pieces: pieces, Finish: finish, Usage: usage})
				got, _, err := generate(t, p, hello, stream)
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				if got.FinishReason != finish {
					t.Errorf("finish reason = %q, want %q", got.FinishReason, finish)
				}
				if diff := cmp.Diff(want, got.Message, jsonValues); diff != "" {
					t.Errorf("message (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// testRequest checks what the provider sends: the model, every role of a
// conversation with tool calls and their results, the tools offered and
// the token limit.
func testRequest(t *testing.T, h Harness) {
	weather := chat.ToolDef{Name: "get_weather", Description: "Current weather.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
	clock := chat.ToolDef{Name: "get_time", Description: "The time in a zone.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"tz":{"type":"string"}}}`)}
	conversation := []chat.Message{
		{Role: chat.System, Content: "You are terse."},
		{Role: chat.User, Content: "Weather and time in Paris?"},
		{Role: chat.Assistant, Content: "Let me look.", ToolCalls: []chat.ToolCall{
			{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			{ID: "call_t", Name: "get_time", Arguments: ""},
		}},
		{Role: chat.Tool, ToolCallID: "call_w", Name: "get_weather", Content: "18°C, cloudy"},
		{Role: chat.Tool, ToolCallID: "call_t", Name: "get_time", Content: "14:05"},
		{Role: chat.Assistant, Content: "18°C and 14:05."},
		{Role: chat.User, Content: "Thanks"},
	}
	// As sent: a call without arguments has an empty object, a tool
	// result no name.
	sent := []chat.Message{
		conversation[0], conversation[1],
		{Role: chat.Assistant, Content: "Let me look.", ToolCalls: []chat.ToolCall{
			{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			{ID: "call_t", Name: "get_time", Arguments: "{}"},
		}},
		{Role: chat.Tool, ToolCallID: "call_w", Content: "18°C, cloudy"},
		{Role: chat.Tool, ToolCallID: "call_t", Content: "14:05"},
		conversation[5], conversation[6],
	}
	tests := []struct {
		name string
		req  llm.Request
		want Call
	}{
		{
			"conversation",
			llm.Request{Model: "other-model", Messages: conversation, Tools: []chat.ToolDef{weather, clock}, Params: llm.Params{MaxTokens: 256}},
			Call{Model: "other-model", Messages: sent, Tools: []chat.ToolDef{weather, clock}, MaxTokens: 256},
		},
		{"default model", hello, Call{Model: Model, Messages: hello.Messages}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				p, s := h.start(t, Config{}, Answer{Pieces: []Piece{Text("ok")}, Finish: "stop", Usage: usage})
				got, _, err := generate(t, p, tt.req, stream)
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				if got.Model != tt.want.Model {
					t.Errorf("response from model %q, want %q", got.Model, tt.want.Model)
				}
				calls := s.received()
				if len(calls) != 1 {
					t.Fatalf("%d calls, want 1", len(calls))
				}
				want := tt.want
				want.Stream = stream
				if diff := cmp.Diff(want, calls[0].call, jsonValues, cmpopts.IgnoreFields(Call{}, "Settings")); diff != "" {
					t.Errorf("call (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// testInvalidRequest checks that a request no provider could take fails
// at once, without a call, and is not retryable.
func testInvalidRequest(t *testing.T, h Harness) {
	tests := []struct {
		name    string
		req     llm.Request
		mention string
	}{
		{"tool result without call id", llm.Request{Messages: []chat.Message{{Role: chat.Tool, Content: "x"}}}, "tool_call_id"},
		{"unknown role", llm.Request{Messages: []chat.Message{{Role: "robot", Content: "x"}}}, `unknown role "robot"`},
		{"tool without a name", llm.Request{Messages: hello.Messages, Tools: []chat.ToolDef{{Description: "x"}}}, "no name"},
		{"tool schema not JSON", llm.Request{Messages: hello.Messages, Tools: []chat.ToolDef{{Name: "t", Parameters: json.RawMessage(`{bad`)}}}, "not valid JSON"},
		{"tool choice of a function not offered", llm.Request{Messages: hello.Messages, Tools: []chat.ToolDef{TimeTool},
			Params: llm.Params{ToolChoice: &llm.ToolChoice{Mode: llm.ToolsFunction, Name: "get_weather"}}}, `"get_weather", which is not among the tools offered`},
		{"tool call required without tools", llm.Request{Messages: hello.Messages,
			Params: llm.Params{ToolChoice: &llm.ToolChoice{Mode: llm.ToolsRequired}}}, "no tools are offered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				p, s := h.start(t, Config{}, Answer{Pieces: []Piece{Text("ok")}, Finish: "stop"})
				_, _, err := generate(t, p, tt.req, stream)
				h.checkError(t, err, llm.Error{}, tt.mention)
				if n := len(s.received()); n != 0 {
					t.Errorf("%d calls made for an invalid request", n)
				}
			})
		})
	}
}

// failures are the errors a service answers with and how each must be
// classified.
var failures = []struct {
	failure Failure
	want    llm.Error
}{
	{Failure{Kind: Unauthorized, Message: "The security token included in the request is invalid."}, llm.Error{Status: 401}},
	{Failure{Kind: Forbidden, Message: "You don't have access to the model with the specified model ID."}, llm.Error{Status: 403}},
	{Failure{Kind: RateLimited, Message: "Too many requests, please wait before trying again.", RetryAfter: "7"},
		llm.Error{Status: 429, Retryable: true, RetryAfter: 7 * time.Second}},
	{Failure{Kind: RateLimited, Message: "Rate limit reached for requests."}, llm.Error{Status: 429, Retryable: true}},
	{Failure{Kind: ServerError, Message: "The server had an error while processing your request."}, llm.Error{Status: 500, Retryable: true}},
	{Failure{Kind: Unavailable, Message: "The service is overloaded, try again later."}, llm.Error{Status: 503, Retryable: true}},
	{Failure{Kind: ContextOverflow, Message: "This model's maximum context length is 8192 tokens, however you requested 9000 tokens."},
		llm.Error{Status: 400, ContextOverflow: true}},
	{Failure{Kind: InvalidRequest, Message: "A conversation must start with a user message."}, llm.Error{Status: 400}},
}

// testErrorAnswer checks the classification of a service's error answers,
// made once: retrying is the llm wrappers' job.
func testErrorAnswer(t *testing.T, h Harness) {
	for _, tt := range failures {
		name := string(tt.failure.Kind)
		if tt.failure.RetryAfter != "" {
			name += " with Retry-After"
		}
		t.Run(name, func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				f := tt.failure
				p, s := h.start(t, Config{}, Answer{Failure: &f})
				_, _, err := generate(t, p, hello, stream)
				h.checkError(t, err, tt.want, f.Message)
				if n := len(s.received()); n != 1 {
					t.Errorf("%d calls, want 1", n)
				}
			})
		})
	}
}

// testErrorInStream checks errors sent in the middle of a stream, after
// the text already passed on.
func testErrorInStream(t *testing.T, h Harness) {
	for _, tt := range failures {
		switch tt.failure.Kind {
		case RateLimited, ServerError, Unavailable, ContextOverflow:
		default:
			continue // a service refuses those before it streams
		}
		if tt.failure.RetryAfter != "" {
			continue // an event carries no header
		}
		t.Run(string(tt.failure.Kind), func(t *testing.T) {
			f := tt.failure
			p, _ := h.start(t, Config{}, Answer{Pieces: hel, Failure: &f})
			_, deltas, err := generate(t, p, hello, true)
			h.checkError(t, err, tt.want, f.Message)
			if diff := cmp.Diff(textOf(hel), deltas); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
		})
	}
}

// testBrokenAnswer checks answers that break: a connection that closes or
// dies, a stream that ends before its finish, a body that cannot be read.
// A broken transfer is retryable, an answer that cannot be decoded is not.
func testBrokenAnswer(t *testing.T, h Harness) {
	tests := []struct {
		name       string
		cfg        Config
		answer     Answer
		streamOnly bool
		want       llm.Error
	}{
		{name: "service down", cfg: Config{Down: true}, want: llm.Error{Retryable: true}},
		{name: "hangup", answer: Answer{End: Hangup}, want: llm.Error{Retryable: true}},
		{name: "dropped", answer: Answer{Pieces: hel, Finish: "stop", End: Dropped}, want: llm.Error{Status: 200, Retryable: true}},
		{name: "unfinished", answer: Answer{Pieces: hel, End: Unfinished}, streamOnly: true, want: llm.Error{Status: 200, Retryable: true}},
		{name: "malformed", answer: Answer{Pieces: hel, Finish: "stop", End: Malformed}, want: llm.Error{Status: 200}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := modes
			if tt.streamOnly {
				run = streamOnly
			}
			run(t, func(t *testing.T, stream bool) {
				p, _ := h.start(t, tt.cfg, tt.answer)
				_, deltas, err := generate(t, p, hello, stream)
				h.checkError(t, err, tt.want, "")
				var want []string
				if stream {
					want = textOf(tt.answer.Pieces)
				}
				if diff := cmp.Diff(want, deltas); diff != "" {
					t.Errorf("deltas before the break (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// testTimeout checks calls that end at the provider's timeout: no answer
// at all, or an answer that stops coming. Either is retryable and wraps
// context.DeadlineExceeded.
func testTimeout(t *testing.T, h Harness) {
	tests := []struct {
		name   string
		answer Answer
	}{
		{"no answer", Answer{End: Silent}},
		{"answer stalls", Answer{Pieces: hel, Finish: "stop", End: Stalled}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				p, _ := h.start(t, Config{Timeout: shortTimeout}, tt.answer)
				_, _, err := generate(t, p, hello, stream)
				checkEnded(t, err, true, context.DeadlineExceeded)
			})
		})
	}
}

// checkEnded checks that err is an *llm.Error of the provider under test
// that wraps cause and is retryable or not: the error of a call its
// context ended, whose status, if any, is the provider's to say.
func checkEnded(t *testing.T, err error, retryable bool, cause error) {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) || e.Provider != Name || e.Retryable != retryable || e.ContextOverflow {
		t.Fatalf("error = %v, want an *llm.Error of %s, retryable %v", err, Name, retryable)
	}
	if !errors.Is(err, cause) {
		t.Errorf("error %v does not wrap %v", err, cause)
	}
}

// testCallerCancels checks calls the caller abandons: waiting for an
// answer, or in the middle of a stream. They are not retryable and wrap
// context.Canceled.
func testCallerCancels(t *testing.T, h Harness) {
	modes(t, func(t *testing.T, stream bool) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var onDelta llm.OnDelta
		answer := Answer{End: Silent}
		if stream {
			answer = Answer{Pieces: hel, End: Stalled}
			onDelta = func(string) { cancel() }
		}
		p, s := h.start(t, Config{}, answer)
		if !stream {
			go func() {
				select {
				case <-s.arrived:
					cancel()
				case <-ctx.Done():
				}
			}()
		}
		_, err := p.Generate(ctx, hello, onDelta)
		checkEnded(t, err, false, context.Canceled)
	})
}

// testRetriedByWrapper checks the provider under llm.WithRetry: a rate
// limit, then the reply.
func testRetriedByWrapper(t *testing.T, h Harness) {
	modes(t, func(t *testing.T, stream bool) {
		limited := Failure{Kind: RateLimited, Message: "slow down"}
		p, s := h.start(t, Config{}, Answer{Failure: &limited}, Answer{Pieces: []Piece{Text("ok")}, Finish: "stop", Usage: usage})
		got, _, err := generate(t, llm.WithRetry(p, 3, time.Millisecond, 10*time.Millisecond), hello, stream)
		if err != nil || got.Message.Content != "ok" {
			t.Fatalf("Generate = %+v, %v; want ok after one retry", got, err)
		}
		if n := len(s.received()); n != 2 {
			t.Errorf("%d calls, want 2", n)
		}
	})
}
