package openai

import (
	"context"
	"io"
	"net/http"
	"slices"
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

func newLimitedProvider(t *testing.T, baseURL string) *Provider {
	t.Helper()
	p, err := New(Config{Name: "test", BaseURL: baseURL + "/v1", APIKey: testKey, Model: "test-model", Timeout: 10 * time.Second, MaxReplyBytes: testReplyLimit})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// writeEndless answers with status, prefix, then unit over and over until
// the client goes away: a reply no client can hold.
func writeEndless(w http.ResponseWriter, r *http.Request, status int, contentType, prefix, unit string) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	io.WriteString(w, prefix)
	block := strings.Repeat(unit, 64<<10/len(unit))
	for r.Context().Err() == nil {
		if _, err := io.WriteString(w, block); err != nil {
			return
		}
	}
}

// toolChunk is a streamed tool-call delta.
func toolChunk(index int, id, name, args string) string {
	tc := `{"index":` + string(rune('0'+index)) + `,"function":{"arguments":` + quote(args)
	if name != "" {
		tc += `,"name":` + quote(name)
	}
	tc += `}`
	if id != "" {
		tc += `,"id":` + quote(id) + `,"type":"function"`
	}
	return chunk(`{"tool_calls":[`+tc+`}]}`, "")
}

func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func content(s string) string { return chunk(`{"content":`+quote(s)+`}`, "") }

// TestStreamReplyLimit checks that a streamed reply stops at the limit:
// what was kept and passed to onDelta fits, ends on a rune boundary, a
// tool call cut short is dropped, and the stream is closed at once (the
// over-limit streams never end by themselves).
func TestStreamReplyLimit(t *testing.T) {
	tests := []struct {
		name       string
		events     []string
		endless    bool // the stream goes on after the events until the client leaves
		want       chat.Message
		wantFinish string
		wantDeltas []string
	}{
		{
			name:       "under the limit",
			events:     []string{content("Hello, "), content("you"), chunk(`{}`, "stop")},
			want:       chat.Message{Role: chat.Assistant, Content: "Hello, you"},
			wantFinish: "stop", wantDeltas: []string{"Hello, ", "you"},
		},
		{
			name:       "exactly the limit",
			events:     []string{content("Hello, "), content("world"), chunk(`{}`, "stop")},
			want:       chat.Message{Role: chat.Assistant, Content: "Hello, world"},
			wantFinish: "stop", wantDeltas: []string{"Hello, ", "world"},
		},
		{
			name:       "over the limit",
			events:     []string{content("Hello, "), content("world! "), content("And more.")},
			endless:    true,
			want:       chat.Message{Role: chat.Assistant, Content: "Hello, world"},
			wantFinish: "length", wantDeltas: []string{"Hello, ", "world"},
		},
		{
			name:       "cut on a rune boundary",
			events:     []string{content("Grüße, "), content("ééé")},
			endless:    true,
			want:       chat.Message{Role: chat.Assistant, Content: "Grüße, é"},
			wantFinish: "length", wantDeltas: []string{"Grüße, ", "é"},
		},
		{
			name: "tool calls under the limit",
			events: []string{
				toolChunk(0, "c1", "fn", ""), toolChunk(0, "", "", `{"a":1}`), chunk(`{}`, "tool_calls"),
			},
			want:       chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "fn", Arguments: `{"a":1}`}}},
			wantFinish: "tool_calls",
		},
		{
			// "Hi" + "c1" + "fn" + `{"a":` is 11 bytes: the rest of the
			// arguments does not fit and the call is dropped.
			name:       "tool-call arguments count",
			events:     []string{content("Hi"), toolChunk(0, "c1", "fn", `{"a":`), toolChunk(0, "", "", `"xyz"}`)},
			endless:    true,
			want:       chat.Message{Role: chat.Assistant, Content: "Hi"},
			wantFinish: "length", wantDeltas: []string{"Hi"},
		},
		{
			name: "a whole call is kept, the one cut short dropped",
			events: []string{
				toolChunk(0, "c1", "fn", `{}`), toolChunk(1, "c2", "fn", `{"long":1}`),
			},
			endless:    true,
			want:       chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "fn", Arguments: `{}`}}},
			wantFinish: "length",
		},
		{
			name:       "refusals count",
			events:     []string{chunk(`{"refusal":"I can't help with that."}`, "")},
			endless:    true,
			want:       chat.Message{Role: chat.Assistant, Content: "I can't help"},
			wantFinish: "length",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			left := make(chan struct{})
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if !tt.endless {
					writeSSE(w, slices.Concat(tt.events, []string{usageChunk, "[DONE]"})...)
					return
				}
				writeSSE(w, tt.events...)
				for r.Context().Err() == nil {
					if _, err := io.WriteString(w, "data: "+content("and on and on")+"\n\n"); err != nil {
						break
					}
				}
				close(left)
			})
			p := newLimitedProvider(t, srv.URL)
			// A provider that kept reading would never see the end of
			// the endless streams: the deadline stops it, and the test
			// fails.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var deltas []string
			got, err := p.Generate(ctx, llm.Request{Messages: hello}, func(s string) { deltas = append(deltas, s) })
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

// TestCompleteReplyLimit checks non-streamed replies: cut to the limit
// like streamed ones when the body is within its bound.
func TestCompleteReplyLimit(t *testing.T) {
	completion := func(message, finish string) string {
		return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"test-model",
			"choices":[{"index":0,"message":` + message + `,"logprobs":null,"finish_reason":"` + finish + `"}],
			"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`
	}
	tests := []struct {
		name       string
		body       string
		want       chat.Message
		wantFinish string
	}{
		{
			name:       "under the limit",
			body:       completion(`{"role":"assistant","content":"Hello, you"}`, "stop"),
			want:       chat.Message{Role: chat.Assistant, Content: "Hello, you"},
			wantFinish: "stop",
		},
		{
			name:       "over the limit",
			body:       completion(`{"role":"assistant","content":"Hello, world! And more."}`, "stop"),
			want:       chat.Message{Role: chat.Assistant, Content: "Hello, world"},
			wantFinish: "length",
		},
		{
			// Escaped non-ASCII text: "Grüße, ééé".
			name:       "cut on a rune boundary",
			body:       completion(`{"role":"assistant","content":"Gr\u00fc\u00dfe, \u00e9\u00e9\u00e9"}`, "stop"),
			want:       chat.Message{Role: chat.Assistant, Content: "Grüße, é"},
			wantFinish: "length",
		},
		{
			name: "tool-call arguments count",
			body: completion(`{"role":"assistant","content":"Hi","tool_calls":[
				{"id":"c1","type":"function","function":{"name":"fn","arguments":"{}"}},
				{"id":"c2","type":"function","function":{"name":"fn","arguments":"{\"a\":1}"}}]}`, "tool_calls"),
			want:       chat.Message{Role: chat.Assistant, Content: "Hi", ToolCalls: []chat.ToolCall{{ID: "c1", Name: "fn", Arguments: "{}"}}},
			wantFinish: "length",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, tt.body) })
			got, err := newLimitedProvider(t, srv.URL).Generate(context.Background(), llm.Request{Messages: hello}, nil)
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

// TestReplyTooLargeToRead checks answers that never end: a body, one
// streamed event, or an error body. Each is read only up to its bound,
// then fails with a clear error that names neither the URL nor the key.
func TestReplyTooLargeToRead(t *testing.T) {
	tooLarge := "the model's reply is larger than the 12-byte limit"
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
				writeEndless(w, r, http.StatusOK, "application/json", `{"choices":[{"index":0,"message":{"role":"assistant","content":"`, "aé")
			},
			want: llm.Error{Provider: "test", Status: http.StatusOK}, mention: tooLarge,
		},
		{
			name:   "one streamed event",
			stream: true,
			handle: func(w http.ResponseWriter, r *http.Request) {
				writeEndless(w, r, http.StatusOK, "text/event-stream", `data: {"choices":[{"index":0,"delta":{"content":"`, "a")
			},
			want: llm.Error{Provider: "test", Status: http.StatusOK}, mention: tooLarge,
		},
		{
			name:   "a streamed event of endless lines",
			stream: true,
			handle: func(w http.ResponseWriter, r *http.Request) {
				writeEndless(w, r, http.StatusOK, "text/event-stream", "", "data: x\r\n")
			},
			want: llm.Error{Provider: "test", Status: http.StatusOK}, mention: tooLarge,
		},
		{
			name: "error body",
			handle: func(w http.ResponseWriter, r *http.Request) {
				writeEndless(w, r, http.StatusInternalServerError, "application/json", `{"error":{"message":"`, "x")
			},
			want: llm.Error{Provider: "test", Status: http.StatusInternalServerError, Retryable: true}, mention: "Internal Server Error",
		},
		{
			// Blank lines do not split an error body, which the SDK
			// reads whole.
			name:   "error body of a stream",
			stream: true,
			handle: func(w http.ResponseWriter, r *http.Request) {
				writeEndless(w, r, http.StatusInternalServerError, "text/event-stream", "", "data: x\n\n")
			},
			want: llm.Error{Provider: "test", Status: http.StatusInternalServerError, Retryable: true}, mention: "Internal Server Error",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.handle)
			_, err := newLimitedProvider(t, srv.URL).Generate(context.Background(), llm.Request{Messages: hello}, deltaFunc(tt.stream, t))
			checkError(t, err, tt.want, tt.mention)
			if strings.Contains(err.Error(), srv.URL) || strings.Contains(err.Error(), "127.0.0.1") {
				t.Errorf("error %q names the server", err)
			}
		})
	}
}

// TestEventLimit checks where server-sent events end for the bound: at a
// blank line, "\r\n" line endings included, and nowhere else.
func TestEventLimit(t *testing.T) {
	const limit = 10
	event := strings.Repeat("x", int(llm.ReplyBodyBound(limit))*2/3)
	tests := []struct {
		name    string
		stream  string
		wantErr bool
	}{
		{"events within the bound", "data: " + event + "\n\ndata: " + event + "\n\n", false},
		{"CRLF events within the bound", "data: " + event + "\r\n\r\ndata: " + event + "\r\n\r\n", false},
		{"lines of one event add up", "data: " + event + "\ndata: " + event + "\n\n", true},
		{"a line of a lone CR is not blank", "data: " + event + "\r\n\r\r\ndata: " + event + "\n\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := io.ReadAll(limitEvents(io.NopCloser(strings.NewReader(tt.stream)), limit))
			if tt.wantErr {
				if _, ok := err.(*llm.ReplyTooLargeError); !ok {
					t.Errorf("error = %v, want *llm.ReplyTooLargeError", err)
				}
				return
			}
			if err != nil || string(got) != tt.stream {
				t.Errorf("read %d of %d bytes, error %v", len(got), len(tt.stream), err)
			}
		})
	}
}

func TestNewRejectsNegativeReplyLimit(t *testing.T) {
	if _, err := New(Config{Model: "m", MaxReplyBytes: -1}); err == nil || !strings.Contains(err.Error(), "negative reply limit") {
		t.Errorf("New error = %v, want one about the negative reply limit", err)
	}
	p, err := New(Config{Model: "m"})
	if err != nil || p.maxReply != llm.DefaultMaxReplyBytes {
		t.Errorf("New without a limit: maxReply = %d (error %v), want %d", p.maxReply, err, llm.DefaultMaxReplyBytes)
	}
}
