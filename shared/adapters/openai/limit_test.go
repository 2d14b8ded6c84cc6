package openai

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm/llmtest"
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

// TestStreamRefusalCounts checks that a refusal, which becomes the
// content, is cut at the limit like content.
func TestStreamRefusalCounts(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w, chunk(`{"refusal":"I can't help with that."}`, "stop"), "[DONE]")
	})
	got, err := newLimitedProvider(t, srv.URL).Generate(context.Background(), llm.Request{Messages: hello}, func(string) {})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	want := chat.Message{Role: chat.Assistant, Content: "I can't help"}
	if diff := cmp.Diff(want, got.Message); diff != "" || got.FinishReason != llm.FinishLength {
		t.Errorf("message (-want +got):\n%s\nfinish reason %q, want %q", diff, got.FinishReason, llm.FinishLength)
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
			// Blank lines do not split an error body, which is read
			// whole.
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
