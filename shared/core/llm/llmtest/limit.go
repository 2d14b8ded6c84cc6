package llmtest

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// Limit is the reply limit, in bytes, of the limit cases.
const Limit = 12

// limitCase is an answer and what a provider limited to Limit bytes must
// make of it: the message, its finish reason and, streamed, the deltas.
type limitCase struct {
	name   string
	answer Answer
	want   chat.Message
	finish string
	deltas []string
}

// streamLimitCases are the streamed replies every provider must cut the
// same way: under, at and over the limit, cut inside a rune, and with tool
// calls, whose ids, names and arguments count and which are dropped when
// cut short. The streams over the limit never end by themselves.
func streamLimitCases() []limitCase {
	over := func(pieces ...Piece) Answer { return Answer{Pieces: pieces, End: Endless} }
	return []limitCase{
		{
			name:   "under the limit",
			answer: Answer{Pieces: []Piece{Text("Hello, "), Text("you")}, Finish: "stop"},
			want:   msg("Hello, you"), finish: "stop", deltas: []string{"Hello, ", "you"},
		},
		{
			name:   "exactly the limit",
			answer: Answer{Pieces: []Piece{Text("Hello, "), Text("world")}, Finish: "stop"},
			want:   msg("Hello, world"), finish: "stop", deltas: []string{"Hello, ", "world"},
		},
		{
			name:   "over the limit",
			answer: over(Text("Hello, "), Text("world! "), Text("And more.")),
			want:   msg("Hello, world"), finish: llm.FinishLength, deltas: []string{"Hello, ", "world"},
		},
		{
			name:   "cut on a rune boundary",
			answer: over(Text("Grüße, "), Text("ééé")),
			want:   msg("Grüße, é"), finish: llm.FinishLength, deltas: []string{"Grüße, ", "é"},
		},
		{
			name:   "tool calls under the limit",
			answer: Answer{Pieces: []Piece{CallPiece(0, "c1", "fn", ""), CallPiece(0, "", "", `{"a":1}`)}, Finish: "tool_calls"},
			want:   msg("", chat.ToolCall{ID: "c1", Name: "fn", Arguments: `{"a":1}`}), finish: "tool_calls",
		},
		{
			// "Hi" + "c1" + "fn" + `{"a":` is 11 bytes: the rest of the
			// arguments does not fit and the call is dropped.
			name:   "tool-call arguments count",
			answer: over(Text("Hi"), CallPiece(0, "c1", "fn", `{"a":`), CallPiece(0, "", "", `"xyz"}`)),
			want:   msg("Hi"), finish: llm.FinishLength, deltas: []string{"Hi"},
		},
		{
			name:   "a whole call is kept, the one cut short dropped",
			answer: over(CallPiece(0, "c1", "fn", `{}`), CallPiece(1, "c2", "fn", `{"long":1}`)),
			want:   msg("", chat.ToolCall{ID: "c1", Name: "fn", Arguments: `{}`}), finish: llm.FinishLength,
		},
		{
			name:   "a tool name that does not fit",
			answer: over(Text("Hello"), CallPiece(0, "c1", "a_long_tool_name", "")),
			want:   msg("Hello"), finish: llm.FinishLength, deltas: []string{"Hello"},
		},
	}
}

// wholeLimitCases are the replies sent whole that every provider must cut
// the same way, within the bound of their body.
func wholeLimitCases() []limitCase {
	c1 := chat.ToolCall{ID: "c1", Name: "fn", Arguments: `{}`}
	answer := func(finish string, pieces ...Piece) Answer {
		return Answer{Pieces: pieces, Finish: finish, Usage: usage}
	}
	return []limitCase{
		{name: "under the limit", answer: answer("stop", Text("Hello, you")), want: msg("Hello, you"), finish: "stop"},
		{name: "over the limit", answer: answer("stop", Text("Hello, world! And more.")), want: msg("Hello, world"), finish: llm.FinishLength},
		{name: "cut on a rune boundary", answer: answer("stop", Text("Grüße, ééé")), want: msg("Grüße, é"), finish: llm.FinishLength},
		{
			name:   "tool-call arguments count",
			answer: answer("tool_calls", Text("Hi"), CallPiece(0, "c1", "fn", `{}`), CallPiece(1, "c2", "fn", `{"a":1}`)),
			want:   msg("Hi", c1), finish: llm.FinishLength,
		},
	}
}

// testLimit checks that a reply stops at the limit: what was kept and,
// streamed, passed to onDelta fits, ends on a rune boundary, a tool call
// cut short is dropped, and a stream that goes on is closed at once.
// Replies sent whole are cut like streamed ones when the body is within
// its bound.
func testLimit(t *testing.T, h Harness) {
	t.Run("stream", func(t *testing.T) { runLimit(t, h, streamLimitCases(), true) })
	t.Run("whole", func(t *testing.T) { runLimit(t, h, wholeLimitCases(), false) })
}

func runLimit(t *testing.T, h Harness, cases []limitCase, stream bool) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, s := h.start(t, Config{MaxReplyBytes: Limit}, tc.answer)
			got, deltas, err := generate(t, p, hello, stream)
			checkLimited(t, got, err, deltas, tc)
			if tc.answer.End != Endless {
				return
			}
			select {
			case <-s.received()[0].done:
			case <-time.After(10 * time.Second):
				t.Fatal("the provider kept reading the stream after the limit")
			}
		})
	}
}

// checkLimited checks that a call returned tc's reply, and that neither
// the message's content nor the deltas pass Limit bytes or split a rune.
func checkLimited(t *testing.T, got llm.Response, err error, deltas []string, tc limitCase) {
	t.Helper()
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if diff := cmp.Diff(tc.want, got.Message, jsonValues); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	if got.FinishReason != tc.finish {
		t.Errorf("finish reason = %q, want %q", got.FinishReason, tc.finish)
	}
	if diff := cmp.Diff(tc.deltas, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	if n := len(strings.Join(deltas, "")); n > Limit {
		t.Errorf("deltas hold %d bytes, over the %d-byte limit", n, Limit)
	}
	if n := len(got.Message.Content); n > Limit || !utf8.ValidString(got.Message.Content) {
		t.Errorf("content of %d bytes (limit %d), valid UTF-8 %v", n, Limit, utf8.ValidString(got.Message.Content))
	}
}
