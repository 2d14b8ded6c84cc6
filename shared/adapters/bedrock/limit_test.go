package bedrock

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm/llmtest"
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

func TestNewConverseRejectsNegativeReplyLimit(t *testing.T) {
	isolateAWS(t, "eu-west-3")
	_, err := NewConverse(context.Background(), ConverseConfig{Model: converseTestModel, MaxReplyBytes: -1})
	if err == nil || !strings.Contains(err.Error(), "negative reply limit") {
		t.Errorf("NewConverse error = %v, want one about the negative reply limit", err)
	}
}
