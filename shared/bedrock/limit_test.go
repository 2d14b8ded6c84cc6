package bedrock

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/llm/llmtest"
)

// newLimitedConverse builds a provider capping replies at llmtest.Limit,
// pointed at endpoint.
func newLimitedConverse(t *testing.T, endpoint string) *Converse {
	t.Helper()
	isolateAWS(t, "")
	c, err := NewConverse(context.Background(), ConverseConfig{
		Name: "bedrock-test", Region: "eu-west-3", Model: converseTestModel, Timeout: 10 * time.Second,
		Endpoint: endpoint, MaxReplyBytes: llmtest.Limit,
	})
	if err != nil {
		t.Fatalf("NewConverse: %v", err)
	}
	return c
}

func textFrame(index int, text string) []byte {
	return eventFrame("contentBlockDelta", `{"contentBlockIndex":`+string(rune('0'+index))+`,"delta":{"text":`+jsonString(text)+`}}`)
}

func toolStartFrame(index int, id, name string) []byte {
	return eventFrame("contentBlockStart", `{"contentBlockIndex":`+string(rune('0'+index))+`,"start":{"toolUse":{"name":`+jsonString(name)+`,"toolUseId":`+jsonString(id)+`}}}`)
}

func toolInputFrame(index int, input string) []byte {
	return eventFrame("contentBlockDelta", `{"contentBlockIndex":`+string(rune('0'+index))+`,"delta":{"toolUse":{"input":`+jsonString(input)+`}}}`)
}

func jsonString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// frames encodes streamed pieces as ConverseStream events: text in block
// 0, tool call i in block i+1.
func frames(pieces []llmtest.Piece) [][]byte {
	var out [][]byte
	for _, p := range pieces {
		if !p.IsCall {
			out = append(out, textFrame(0, p.Text))
			continue
		}
		if p.ID != "" || p.Name != "" {
			out = append(out, toolStartFrame(p.Call+1, p.ID, p.Name))
		}
		if p.Args != "" {
			out = append(out, toolInputFrame(p.Call+1, p.Args))
		}
	}
	return out
}

// stopReasons are Bedrock's names of the finish reasons of the shared
// cases.
var stopReasons = map[string]string{"stop": "end_turn", "tool_calls": "tool_use"}

// TestConverseStreamReplyLimit checks that a streamed reply stops at the
// limit: what was kept and passed to onDelta fits, ends on a rune
// boundary, a tool call cut short is dropped, and the stream is closed at
// once (the over-limit streams never end by themselves).
func TestConverseStreamReplyLimit(t *testing.T) {
	for _, tc := range llmtest.StreamCases() {
		t.Run(tc.Name, func(t *testing.T) {
			left := make(chan struct{})
			f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) {
				if tc.End != "" {
					writeEventStream(w, append(frames(tc.Pieces),
						eventFrame("messageStop", `{"stopReason":"`+stopReasons[tc.End]+`"}`),
						eventFrame("metadata", `{"usage":{"inputTokens":9,"outputTokens":3,"totalTokens":12}}`))...)
					return
				}
				writeEventStream(w, frames(tc.Pieces)...)
				llmtest.Repeat(w, r, textFrame(0, "and on and on"))
				close(left)
			})
			llmtest.CheckLimitedReply(t, newLimitedConverse(t, f.URL), llm.Request{Messages: helloBedrock}, true, llmtest.Limit, tc.Want)
			if tc.End == "" {
				llmtest.WaitClosed(t, left)
			}
		})
	}
}

// TestConverseReplyLimit checks non-streamed replies: cut to the limit
// like streamed ones when the body is within its bound.
func TestConverseReplyLimit(t *testing.T) {
	for _, tc := range llmtest.CompleteCases() {
		t.Run(tc.Name, func(t *testing.T) {
			var blocks []any
			if tc.Message.Content != "" {
				blocks = append(blocks, map[string]string{"text": tc.Message.Content})
			}
			for _, c := range tc.Message.ToolCalls {
				blocks = append(blocks, map[string]any{"toolUse": map[string]any{"toolUseId": c.ID, "name": c.Name, "input": json.RawMessage(c.Arguments)}})
			}
			body := llmtest.ASCIIJSON(map[string]any{
				"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": blocks}},
				"stopReason": stopReasons[tc.End],
				"usage":      map[string]int{"inputTokens": 3, "outputTokens": 2, "totalTokens": 5},
				"metrics":    map[string]int{"latencyMs": 1},
			})
			f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) { writeConverseJSON(w, body) })
			llmtest.CheckLimitedReply(t, newLimitedConverse(t, f.URL), llm.Request{Messages: helloBedrock}, false, llmtest.Limit, tc.Want)
		})
	}
}

// TestConverseReplyTooLargeToRead checks answers that never end: a body,
// an event-stream message announcing more than the bound, or an error
// body. Each is read only up to its bound, then fails with a clear error
// that names neither the endpoint nor the key.
func TestConverseReplyTooLargeToRead(t *testing.T) {
	tooLarge := fmt.Sprintf("the model's reply is larger than the %d-byte limit", llmtest.Limit)
	const eventStream = "application/vnd.amazon.eventstream"
	huge := binary.BigEndian.AppendUint32(nil, 1<<31)
	tests := []struct {
		name    string
		stream  bool
		handle  func(w http.ResponseWriter, r *http.Request)
		want    llm.Error
		mention string
	}{
		{
			name: "body",
			handle: func(w http.ResponseWriter, r *http.Request) {
				llmtest.WriteEndless(w, r, http.StatusOK, "application/json", []byte(`{"output":{"message":{"role":"assistant","content":[{"text":"`), []byte("aé"))
			},
			want: llm.Error{Status: http.StatusOK}, mention: tooLarge,
		},
		{
			name:   "event-stream message",
			stream: true,
			handle: func(w http.ResponseWriter, r *http.Request) {
				llmtest.WriteEndless(w, r, http.StatusOK, eventStream, append(textFrame(0, "Hi"), huge...), []byte("a"))
			},
			want: llm.Error{Status: http.StatusOK}, mention: tooLarge,
		},
		{
			// A length under the prelude's would make the SDK read a
			// payload of nearly 4 GiB.
			name:   "event-stream message shorter than its prelude",
			stream: true,
			handle: func(w http.ResponseWriter, r *http.Request) {
				llmtest.WriteEndless(w, r, http.StatusOK, eventStream, binary.BigEndian.AppendUint32(nil, 8), []byte("a"))
			},
			want: llm.Error{Status: http.StatusOK}, mention: "shorter than its prelude",
		},
		{
			name: "error body",
			handle: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Amzn-ErrorType", "InternalServerException")
				llmtest.WriteEndless(w, r, http.StatusInternalServerError, "application/json", []byte(`{"message":"`), []byte("x"))
			},
			want: llm.Error{Status: http.StatusInternalServerError, Retryable: true}, mention: "Internal Server Error",
		},
		{
			name:   "error body of a stream",
			stream: true,
			handle: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Amzn-ErrorType", "InternalServerException")
				llmtest.WriteEndless(w, r, http.StatusInternalServerError, "application/json", []byte(`{"message":"`), []byte("x"))
			},
			want: llm.Error{Status: http.StatusInternalServerError, Retryable: true}, mention: "Internal Server Error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) { tt.handle(w, r) })
			var onDelta llm.OnDelta
			if tt.stream {
				onDelta = func(string) {}
			}
			_, err := newLimitedConverse(t, f.URL).Generate(context.Background(), llm.Request{Messages: helloBedrock}, onDelta)
			checkLLMError(t, err, tt.want, tt.mention)
			if strings.Contains(err.Error(), f.URL) || strings.Contains(err.Error(), "127.0.0.1") {
				t.Errorf("error %q names the endpoint", err)
			}
		})
	}
}

// TestFrameLimit checks the framing the bound follows: messages of any
// size within it pass, split across reads anywhere.
func TestFrameLimit(t *testing.T) {
	big := strings.Repeat("x", int(llm.ReplyBodyBound(llmtest.Limit))-200)
	var stream []byte
	for _, text := range []string{"Hi", big, "", big} {
		stream = append(stream, textFrame(0, text)...)
	}
	got, err := io.ReadAll(limitFrames(io.NopCloser(io.MultiReader(
		bytes.NewReader(stream[:3]), bytes.NewReader(stream[3:20]), bytes.NewReader(stream[20:]),
	)), llmtest.Limit))
	if err != nil || !bytes.Equal(got, stream) {
		t.Errorf("read %d of %d bytes, error %v", len(got), len(stream), err)
	}
}

func TestNewConverseRejectsNegativeReplyLimit(t *testing.T) {
	isolateAWS(t, "eu-west-3")
	_, err := NewConverse(context.Background(), ConverseConfig{Model: converseTestModel, MaxReplyBytes: -1})
	if err == nil || !strings.Contains(err.Error(), "negative reply limit") {
		t.Errorf("NewConverse error = %v, want one about the negative reply limit", err)
	}
}
