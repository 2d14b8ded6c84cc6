// Package llmtest holds what the tests of llm.Provider adapters share:
// checks of how a provider keeps a reply within its size limit, and fake
// servers' answers that never end.
package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/llm"
)

// Reply is what a provider must return: the message, its finish reason and,
// when streamed, the deltas passed to onDelta.
type Reply struct {
	Message      chat.Message
	FinishReason string
	Deltas       []string
}

// CheckLimitedReply calls p (streaming when stream is set) and checks that
// it returns want, and that neither the message's content nor the deltas
// pass limit bytes or split a rune. The call has a deadline, so that a
// provider that keeps reading an endless stream fails the test instead of
// hanging it.
func CheckLimitedReply(t *testing.T, p llm.Provider, req llm.Request, stream bool, limit int, want Reply) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var deltas []string
	var onDelta llm.OnDelta
	if stream {
		onDelta = func(s string) { deltas = append(deltas, s) }
	}
	got, err := p.Generate(ctx, req, onDelta)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Generate returned at the deadline: the provider kept reading the stream after the limit")
	}
	if diff := cmp.Diff(want.Message, got.Message); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	if got.FinishReason != want.FinishReason {
		t.Errorf("finish reason = %q, want %q", got.FinishReason, want.FinishReason)
	}
	if diff := cmp.Diff(want.Deltas, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	if n := len(strings.Join(deltas, "")); n > limit {
		t.Errorf("deltas hold %d bytes, over the %d-byte limit", n, limit)
	}
	if n := len(got.Message.Content); n > limit || !utf8.ValidString(got.Message.Content) {
		t.Errorf("content of %d bytes (limit %d), valid UTF-8 %v", n, limit, utf8.ValidString(got.Message.Content))
	}
}

// WaitClosed waits for left, closed by a fake server once the client
// closed its endless answer, and fails the test if that does not come.
func WaitClosed(t *testing.T, left <-chan struct{}) {
	t.Helper()
	select {
	case <-left:
	case <-time.After(10 * time.Second):
		t.Fatal("the provider kept reading the stream after the limit")
	}
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

// Limit is the reply limit, in bytes, that StreamCases and CompleteCases
// are written for.
const Limit = 12

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

// StreamCase is a streamed reply and what a provider limited to Limit
// bytes must make of it.
type StreamCase struct {
	Name   string
	Pieces []Piece
	// End is the finish reason the stream ends with after its pieces,
	// "stop" or "tool_calls"; with none the stream goes on for ever.
	End  string
	Want Reply
}

// StreamCases are the streamed replies every provider must cut the same
// way: under, at and over the limit, cut inside a rune, and with tool
// calls, whose ids, names and arguments count and which are dropped when
// cut short.
func StreamCases() []StreamCase {
	msg := func(content string, calls ...chat.ToolCall) chat.Message {
		return chat.Message{Role: chat.Assistant, Content: content, ToolCalls: calls}
	}
	return []StreamCase{
		{
			Name: "under the limit", Pieces: []Piece{Text("Hello, "), Text("you")}, End: "stop",
			Want: Reply{Message: msg("Hello, you"), FinishReason: "stop", Deltas: []string{"Hello, ", "you"}},
		},
		{
			Name: "exactly the limit", Pieces: []Piece{Text("Hello, "), Text("world")}, End: "stop",
			Want: Reply{Message: msg("Hello, world"), FinishReason: "stop", Deltas: []string{"Hello, ", "world"}},
		},
		{
			Name: "over the limit", Pieces: []Piece{Text("Hello, "), Text("world! "), Text("And more.")},
			Want: Reply{Message: msg("Hello, world"), FinishReason: llm.FinishLength, Deltas: []string{"Hello, ", "world"}},
		},
		{
			Name: "cut on a rune boundary", Pieces: []Piece{Text("Grüße, "), Text("ééé")},
			Want: Reply{Message: msg("Grüße, é"), FinishReason: llm.FinishLength, Deltas: []string{"Grüße, ", "é"}},
		},
		{
			Name: "tool calls under the limit", Pieces: []Piece{CallPiece(0, "c1", "fn", ""), CallPiece(0, "", "", `{"a":1}`)}, End: "tool_calls",
			Want: Reply{Message: msg("", chat.ToolCall{ID: "c1", Name: "fn", Arguments: `{"a":1}`}), FinishReason: "tool_calls"},
		},
		{
			// "Hi" + "c1" + "fn" + `{"a":` is 11 bytes: the rest of the
			// arguments does not fit and the call is dropped.
			Name:   "tool-call arguments count",
			Pieces: []Piece{Text("Hi"), CallPiece(0, "c1", "fn", `{"a":`), CallPiece(0, "", "", `"xyz"}`)},
			Want:   Reply{Message: msg("Hi"), FinishReason: llm.FinishLength, Deltas: []string{"Hi"}},
		},
		{
			Name:   "a whole call is kept, the one cut short dropped",
			Pieces: []Piece{CallPiece(0, "c1", "fn", `{}`), CallPiece(1, "c2", "fn", `{"long":1}`)},
			Want:   Reply{Message: msg("", chat.ToolCall{ID: "c1", Name: "fn", Arguments: `{}`}), FinishReason: llm.FinishLength},
		},
		{
			Name:   "a tool name that does not fit",
			Pieces: []Piece{Text("Hello"), CallPiece(0, "c1", "a_long_tool_name", "")},
			Want:   Reply{Message: msg("Hello"), FinishReason: llm.FinishLength, Deltas: []string{"Hello"}},
		},
	}
}

// CompleteCase is a reply sent in one response, ending with End ("stop"
// or "tool_calls"), and what a provider limited to Limit bytes must make
// of it.
type CompleteCase struct {
	Name    string
	Message chat.Message
	End     string
	Want    Reply
}

// CompleteCases are the replies sent whole that every provider must cut
// the same way, within the bound of their body.
func CompleteCases() []CompleteCase {
	msg := func(content string, calls ...chat.ToolCall) chat.Message {
		return chat.Message{Role: chat.Assistant, Content: content, ToolCalls: calls}
	}
	c1 := chat.ToolCall{ID: "c1", Name: "fn", Arguments: `{}`}
	c2 := chat.ToolCall{ID: "c2", Name: "fn", Arguments: `{"a":1}`}
	return []CompleteCase{
		{Name: "under the limit", Message: msg("Hello, you"), End: "stop", Want: Reply{Message: msg("Hello, you"), FinishReason: "stop"}},
		{Name: "over the limit", Message: msg("Hello, world! And more."), End: "stop", Want: Reply{Message: msg("Hello, world"), FinishReason: llm.FinishLength}},
		{Name: "cut on a rune boundary", Message: msg("Grüße, ééé"), End: "stop", Want: Reply{Message: msg("Grüße, é"), FinishReason: llm.FinishLength}},
		{Name: "tool-call arguments count", Message: msg("Hi", c1, c2), End: "tool_calls", Want: Reply{Message: msg("Hi", c1), FinishReason: llm.FinishLength}},
	}
}

// ASCIIJSON encodes v as JSON with every character outside ASCII escaped
// (\u00e9 for é, a surrogate pair beyond the BMP), as servers written in
// Python send it by default: the longest legitimate form of a reply.
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
