package bedrock

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/llm"
)

// testReplyLimit is the reply limit of these tests, in bytes.
const testReplyLimit = 12

// newLimitedConverse builds a provider capping replies at testReplyLimit,
// pointed at endpoint.
func newLimitedConverse(t *testing.T, endpoint string) *Converse {
	t.Helper()
	isolateAWS(t, "")
	c, err := NewConverse(context.Background(), ConverseConfig{
		Name: "bedrock-test", Region: "eu-west-3", Model: converseTestModel, Timeout: 10 * time.Second,
		Endpoint: endpoint, MaxReplyBytes: testReplyLimit,
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

// writeEndless answers with status, prefix, then unit over and over until
// the client goes away: a reply no client can hold.
func writeEndless(w http.ResponseWriter, r *http.Request, status int, contentType string, prefix, unit []byte) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	w.Write(prefix)
	block := bytes.Repeat(unit, 64<<10/len(unit))
	for r.Context().Err() == nil {
		if _, err := w.Write(block); err != nil {
			return
		}
	}
}

// TestConverseStreamReplyLimit checks that a streamed reply stops at the
// limit: what was kept and passed to onDelta fits, ends on a rune
// boundary, a tool call cut short is dropped, and the stream is closed at
// once (the over-limit streams never end by themselves).
func TestConverseStreamReplyLimit(t *testing.T) {
	end := [][]byte{
		eventFrame("messageStop", `{"stopReason":"end_turn"}`),
		eventFrame("metadata", `{"usage":{"inputTokens":9,"outputTokens":3,"totalTokens":12}}`),
	}
	tests := []struct {
		name       string
		frames     [][]byte
		endless    bool // the stream goes on after the frames until the client leaves
		want       chat.Message
		wantFinish string
		wantDeltas []string
	}{
		{
			name:       "under the limit",
			frames:     append([][]byte{textFrame(0, "Hello, "), textFrame(0, "you")}, end...),
			want:       chat.Message{Role: chat.Assistant, Content: "Hello, you"},
			wantFinish: "stop", wantDeltas: []string{"Hello, ", "you"},
		},
		{
			name:       "exactly the limit",
			frames:     append([][]byte{textFrame(0, "Hello, "), textFrame(0, "world")}, end...),
			want:       chat.Message{Role: chat.Assistant, Content: "Hello, world"},
			wantFinish: "stop", wantDeltas: []string{"Hello, ", "world"},
		},
		{
			name:       "over the limit",
			frames:     [][]byte{textFrame(0, "Hello, "), textFrame(0, "world! "), textFrame(0, "And more.")},
			endless:    true,
			want:       chat.Message{Role: chat.Assistant, Content: "Hello, world"},
			wantFinish: "length", wantDeltas: []string{"Hello, ", "world"},
		},
		{
			name:       "cut on a rune boundary",
			frames:     [][]byte{textFrame(0, "Grüße, "), textFrame(0, "ééé")},
			endless:    true,
			want:       chat.Message{Role: chat.Assistant, Content: "Grüße, é"},
			wantFinish: "length", wantDeltas: []string{"Grüße, ", "é"},
		},
		{
			name: "tool calls under the limit",
			frames: [][]byte{
				toolStartFrame(0, "c1", "fn"), toolInputFrame(0, `{"a":1}`),
				eventFrame("messageStop", `{"stopReason":"tool_use"}`),
			},
			want:       chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "fn", Arguments: `{"a":1}`}}},
			wantFinish: "tool_calls",
		},
		{
			// "Hi" + "c1" + "fn" + `{"a":` is 11 bytes: the rest of the
			// input does not fit and the call is dropped.
			name:       "tool input counts",
			frames:     [][]byte{textFrame(0, "Hi"), toolStartFrame(1, "c1", "fn"), toolInputFrame(1, `{"a":`), toolInputFrame(1, `"xyz"}`)},
			endless:    true,
			want:       chat.Message{Role: chat.Assistant, Content: "Hi"},
			wantFinish: "length", wantDeltas: []string{"Hi"},
		},
		{
			name: "a whole call is kept, the one cut short dropped",
			frames: [][]byte{
				toolStartFrame(0, "c1", "fn"), toolInputFrame(0, `{}`),
				toolStartFrame(1, "c2", "fn"), toolInputFrame(1, `{"long":1}`),
			},
			endless:    true,
			want:       chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "fn", Arguments: `{}`}}},
			wantFinish: "length",
		},
		{
			name:       "a tool name that does not fit",
			frames:     [][]byte{textFrame(0, "Hello"), toolStartFrame(1, "c1", "a_long_tool_name")},
			endless:    true,
			want:       chat.Message{Role: chat.Assistant, Content: "Hello"},
			wantFinish: "length", wantDeltas: []string{"Hello"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			left := make(chan struct{})
			f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) {
				writeEventStream(w, tt.frames...)
				if !tt.endless {
					return
				}
				more := textFrame(0, "and on and on")
				for r.Context().Err() == nil {
					if _, err := w.Write(more); err != nil {
						break
					}
				}
				close(left)
			})
			c := newLimitedConverse(t, f.URL)
			// A provider that kept reading would never see the end of
			// the endless streams: the deadline stops it, and the test
			// fails.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var deltas []string
			got, err := c.Generate(ctx, llm.Request{Messages: helloBedrock}, func(s string) { deltas = append(deltas, s) })
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if ctx.Err() != nil {
				t.Fatal("Generate returned at the deadline: the provider kept reading the stream after the limit")
			}
			if diff := cmp.Diff(tt.want, got.Message); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			if got.FinishReason != tt.wantFinish {
				t.Errorf("finish reason = %q, want %q", got.FinishReason, tt.wantFinish)
			}
			if diff := cmp.Diff(tt.wantDeltas, deltas); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
			if n := len(strings.Join(deltas, "")); n > testReplyLimit {
				t.Errorf("deltas hold %d bytes, over the %d-byte limit", n, testReplyLimit)
			}
			if !utf8.ValidString(got.Message.Content) {
				t.Errorf("content %q is not valid UTF-8", got.Message.Content)
			}
			if tt.endless {
				select {
				case <-left:
				case <-time.After(10 * time.Second):
					t.Fatal("the provider kept reading the stream after the limit")
				}
			}
		})
	}
}

// TestConverseReplyLimit checks non-streamed replies: cut to the limit
// like streamed ones when the body is within its bound.
func TestConverseReplyLimit(t *testing.T) {
	answer := func(content, stop string) string {
		return `{"output":{"message":{"role":"assistant","content":[` + content + `]}},"stopReason":"` + stop + `",
			"usage":{"inputTokens":3,"outputTokens":2,"totalTokens":5},"metrics":{"latencyMs":1}}`
	}
	tests := []struct {
		name       string
		body       string
		want       chat.Message
		wantFinish string
	}{
		{
			name:       "under the limit",
			body:       answer(`{"text":"Hello, "},{"text":"you"}`, "end_turn"),
			want:       chat.Message{Role: chat.Assistant, Content: "Hello, you"},
			wantFinish: "stop",
		},
		{
			name:       "over the limit",
			body:       answer(`{"text":"Hello, "},{"text":"world! And more."}`, "end_turn"),
			want:       chat.Message{Role: chat.Assistant, Content: "Hello, world"},
			wantFinish: "length",
		},
		{
			// Escaped non-ASCII text: "Grüße, ééé".
			name:       "cut on a rune boundary",
			body:       answer(`{"text":"Gr\u00fc\u00dfe, \u00e9\u00e9\u00e9"}`, "end_turn"),
			want:       chat.Message{Role: chat.Assistant, Content: "Grüße, é"},
			wantFinish: "length",
		},
		{
			name: "tool input counts",
			body: answer(`{"text":"Hi"},{"toolUse":{"toolUseId":"c1","name":"fn","input":{}}},
				{"toolUse":{"toolUseId":"c2","name":"fn","input":{"a":1}}}`, "tool_use"),
			want:       chat.Message{Role: chat.Assistant, Content: "Hi", ToolCalls: []chat.ToolCall{{ID: "c1", Name: "fn", Arguments: "{}"}}},
			wantFinish: "length",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) { writeConverseJSON(w, tt.body) })
			got, err := newLimitedConverse(t, f.URL).Generate(context.Background(), llm.Request{Messages: helloBedrock}, nil)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if diff := cmp.Diff(tt.want, got.Message); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			if got.FinishReason != tt.wantFinish {
				t.Errorf("finish reason = %q, want %q", got.FinishReason, tt.wantFinish)
			}
		})
	}
}

// TestConverseReplyTooLargeToRead checks answers that never end: a body,
// an event-stream message announcing more than the bound, or an error
// body. Each is read only up to its bound, then fails with a clear error
// that names neither the endpoint nor the key.
func TestConverseReplyTooLargeToRead(t *testing.T) {
	const tooLarge = "the model's reply is larger than the 12-byte limit"
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
				writeEndless(w, r, http.StatusOK, "application/json", []byte(`{"output":{"message":{"role":"assistant","content":[{"text":"`), []byte("aé"))
			},
			want: llm.Error{Status: http.StatusOK}, mention: tooLarge,
		},
		{
			name:   "event-stream message",
			stream: true,
			handle: func(w http.ResponseWriter, r *http.Request) {
				writeEndless(w, r, http.StatusOK, eventStream, append(textFrame(0, "Hi"), huge...), []byte("a"))
			},
			want: llm.Error{Status: http.StatusOK}, mention: tooLarge,
		},
		{
			// A length under the prelude's would make the SDK read a
			// payload of nearly 4 GiB.
			name:   "event-stream message shorter than its prelude",
			stream: true,
			handle: func(w http.ResponseWriter, r *http.Request) {
				writeEndless(w, r, http.StatusOK, eventStream, binary.BigEndian.AppendUint32(nil, 8), []byte("a"))
			},
			want: llm.Error{Status: http.StatusOK}, mention: "shorter than its prelude",
		},
		{
			name: "error body",
			handle: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Amzn-ErrorType", "InternalServerException")
				writeEndless(w, r, http.StatusInternalServerError, "application/json", []byte(`{"message":"`), []byte("x"))
			},
			want: llm.Error{Status: http.StatusInternalServerError, Retryable: true}, mention: "Internal Server Error",
		},
		{
			name:   "error body of a stream",
			stream: true,
			handle: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Amzn-ErrorType", "InternalServerException")
				writeEndless(w, r, http.StatusInternalServerError, "application/json", []byte(`{"message":"`), []byte("x"))
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
	big := strings.Repeat("x", int(llm.ReplyBodyBound(testReplyLimit))-200)
	var stream []byte
	for _, text := range []string{"Hi", big, "", big} {
		stream = append(stream, textFrame(0, text)...)
	}
	got, err := io.ReadAll(limitFrames(io.NopCloser(io.MultiReader(
		bytes.NewReader(stream[:3]), bytes.NewReader(stream[3:20]), bytes.NewReader(stream[20:]),
	)), testReplyLimit))
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
