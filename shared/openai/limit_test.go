package openai

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/llm/llmtest"
)

func newLimitedProvider(t *testing.T, baseURL string) *Provider {
	t.Helper()
	p, err := New(Config{Name: "test", BaseURL: baseURL + "/v1", APIKey: testKey, Model: "test-model", Timeout: 10 * time.Second, MaxReplyBytes: llmtest.Limit})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// writeEndless answers with status, prefix, then unit over and over until
// the client goes away: a reply no client can hold.
func writeEndless(w http.ResponseWriter, r *http.Request, status int, contentType, prefix, unit string) {
	llmtest.WriteEndless(w, r, status, contentType, []byte(prefix), []byte(unit))
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

// sseEvents encodes streamed pieces as chunks.
func sseEvents(pieces []llmtest.Piece) []string {
	var events []string
	for _, p := range pieces {
		if p.IsCall {
			events = append(events, toolChunk(p.Call, p.ID, p.Name, p.Args))
		} else {
			events = append(events, content(p.Text))
		}
	}
	return events
}

// TestStreamReplyLimit checks that a streamed reply stops at the limit:
// what was kept and passed to onDelta fits, ends on a rune boundary, a
// tool call cut short is dropped, and the stream is closed at once (the
// over-limit streams never end by themselves).
func TestStreamReplyLimit(t *testing.T) {
	for _, tc := range llmtest.StreamCases() {
		t.Run(tc.Name, func(t *testing.T) {
			left := make(chan struct{})
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				if tc.End != "" {
					writeSSE(w, slices.Concat(sseEvents(tc.Pieces), []string{chunk(`{}`, tc.End), usageChunk, "[DONE]"})...)
					return
				}
				writeSSE(w, sseEvents(tc.Pieces)...)
				llmtest.Repeat(w, r, []byte("data: "+content("and on and on")+"\n\n"))
				close(left)
			})
			llmtest.CheckLimitedReply(t, newLimitedProvider(t, srv.URL), llm.Request{Messages: hello}, true, llmtest.Limit, tc.Want)
			if tc.End == "" {
				llmtest.WaitClosed(t, left)
			}
		})
	}
}

func TestStreamRefusalCounts(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w, chunk(`{"refusal":"I can't help with that."}`, "stop"), "[DONE]")
	})
	want := llmtest.Reply{Message: chat.Message{Role: chat.Assistant, Content: "I can't help"}, FinishReason: llm.FinishLength}
	llmtest.CheckLimitedReply(t, newLimitedProvider(t, srv.URL), llm.Request{Messages: hello}, true, llmtest.Limit, want)
}

// TestCompleteReplyLimit checks non-streamed replies: cut to the limit
// like streamed ones when the body is within its bound.
func TestCompleteReplyLimit(t *testing.T) {
	type function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type toolCall struct {
		ID       string   `json:"id"`
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	for _, tc := range llmtest.CompleteCases() {
		t.Run(tc.Name, func(t *testing.T) {
			msg := map[string]any{"role": "assistant", "content": tc.Message.Content}
			var calls []toolCall
			for _, c := range tc.Message.ToolCalls {
				calls = append(calls, toolCall{ID: c.ID, Type: "function", Function: function{Name: c.Name, Arguments: c.Arguments}})
			}
			if calls != nil {
				msg["tool_calls"] = calls
			}
			body := llmtest.ASCIIJSON(map[string]any{
				"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "test-model",
				"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": tc.End}},
				"usage":   map[string]int{"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
			})
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, body) })
			llmtest.CheckLimitedReply(t, newLimitedProvider(t, srv.URL), llm.Request{Messages: hello}, false, llmtest.Limit, tc.Want)
		})
	}
}

// TestReplyTooLargeToRead checks answers that never end: a body, one
// streamed event, or an error body. Each is read only up to its bound,
// then fails with a clear error that names neither the URL nor the key.
func TestReplyTooLargeToRead(t *testing.T) {
	tooLarge := fmt.Sprintf("the model's reply is larger than the %d-byte limit", llmtest.Limit)
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
