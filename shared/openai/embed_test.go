package openai

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/llm"
)

func newEmbedder(t *testing.T, baseURL string, mod func(*EmbedConfig)) *Embedder {
	t.Helper()
	cfg := EmbedConfig{Name: "test", BaseURL: baseURL + "/v1", APIKey: testKey, Model: "text-embedding-3-small"}
	if mod != nil {
		mod(&cfg)
	}
	e, err := NewEmbedder(cfg)
	if err != nil {
		t.Fatalf("NewEmbedder: %v", err)
	}
	return e
}

// embeddingsBody is a /v1/embeddings response with the vectors given, in
// reverse index order to show that the index, not the position, counts.
func embeddingsBody(vecs ...string) string {
	var data []string
	for i := len(vecs) - 1; i >= 0; i-- {
		data = append(data, fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":%s}`, i, vecs[i]))
	}
	return `{"object":"list","data":[` + strings.Join(data, ",") + `],"model":"text-embedding-3-small","usage":{"prompt_tokens":8,"total_tokens":8}}`
}

func TestEmbed(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, embeddingsBody(`[0.1,0.2,0.3]`, `[0.4,0.5,0.6]`))
	})
	e := newEmbedder(t, s.URL, func(c *EmbedConfig) { c.Dimensions = 3 })
	got, err := e.Embed(context.Background(), []string{"the cat", "le chat 🐈"})
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	want := [][]float32{{0.1, 0.2, 0.3}, {0.4, 0.5, 0.6}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("vectors (-want +got):\n%s", d)
	}
	reqs := s.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.path != "/v1/embeddings" || r.auth != "Bearer "+testKey {
		t.Errorf("request to %s with Authorization %q", r.path, r.auth)
	}
	wantBody := map[string]any{
		"input":           []any{"the cat", "le chat 🐈"},
		"model":           "text-embedding-3-small",
		"dimensions":      float64(3),
		"encoding_format": "float",
	}
	if d := cmp.Diff(wantBody, r.body); d != "" {
		t.Errorf("request body (-want +got):\n%s", d)
	}
	if e.Model() != "text-embedding-3-small@3" {
		t.Errorf("Model() = %q", e.Model())
	}
}

func TestEmbedBatches(t *testing.T) {
	var s *server
	s = newServer(t, func(w http.ResponseWriter, r *http.Request) {
		// Answer each text with a vector holding its length.
		reqs := s.requests()
		var vecs []string
		for _, in := range reqs[len(reqs)-1].body["input"].([]any) {
			vecs = append(vecs, fmt.Sprintf("[%d,1]", len(in.(string))))
		}
		writeJSON(w, 200, embeddingsBody(vecs...))
	})
	e := newEmbedder(t, s.URL, func(c *EmbedConfig) { c.BatchSize = 2 })
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	got, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	want := [][]float32{{1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("vectors (-want +got):\n%s", d)
	}
	var sizes []int
	for _, r := range s.requests() {
		sizes = append(sizes, len(r.body["input"].([]any)))
	}
	if d := cmp.Diff([]int{2, 2, 1}, sizes); d != "" {
		t.Errorf("batch sizes (-want +got):\n%s", d)
	}
	if _, ok := s.requests()[0].body["dimensions"]; ok {
		t.Error("dimensions sent although none was configured")
	}
	if e.Model() != "text-embedding-3-small" {
		t.Errorf("Model() = %q", e.Model())
	}
}

func TestEmbedErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		header  map[string]string
		body    string
		want    llm.Error
		mention string
	}{
		{
			name:    "rate limited",
			status:  429,
			header:  map[string]string{"Retry-After": "7"},
			body:    `{"error":{"message":"Rate limit reached for text-embedding-3-small on requests per min (RPM): Limit 3000, Used 3000, Requested 1.","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			want:    llm.Error{Provider: "test", Status: 429, Retryable: true, RetryAfter: 7 * time.Second},
			mention: "Rate limit reached",
		},
		{
			name:    "input too long",
			status:  400,
			body:    `{"error":{"message":"This model's maximum context length is 8192 tokens, however you requested 9000 tokens (9000 in your prompt; 0 for the completion). Please reduce your prompt; or completion length.","type":"invalid_request_error","param":null,"code":null}}`,
			want:    llm.Error{Provider: "test", Status: 400, ContextOverflow: true},
			mention: "maximum context length",
		},
		{
			name:    "server error",
			status:  503,
			body:    `{"error":{"message":"The server is overloaded or not ready yet.","type":"server_error","param":null,"code":null}}`,
			want:    llm.Error{Provider: "test", Status: 503, Retryable: true},
			mention: "overloaded",
		},
		{
			name:    "malformed body",
			status:  200,
			body:    `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2`,
			want:    llm.Error{Provider: "test", Status: 200},
			mention: "invalid response",
		},
		{
			name:    "too few embeddings",
			status:  200,
			body:    embeddingsBody(`[0.1,0.2]`),
			want:    llm.Error{Provider: "test", Status: 200},
			mention: "1 embeddings for 2 inputs",
		},
		{
			name:    "ragged dimensions",
			status:  200,
			body:    embeddingsBody(`[0.1,0.2]`, `[0.1,0.2,0.3]`),
			want:    llm.Error{Provider: "test", Status: 200},
			mention: "dimensions",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				writeJSON(w, tc.status, tc.body)
			})
			e := newEmbedder(t, s.URL, nil)
			_, err := e.Embed(context.Background(), []string{"one", "two"})
			checkError(t, err, tc.want, tc.mention)
		})
	}
}

func TestEmbedTimeout(t *testing.T) {
	release := make(chan struct{})
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	e := newEmbedder(t, s.URL, func(c *EmbedConfig) { c.Timeout = 50 * time.Millisecond })
	_, err := e.Embed(context.Background(), []string{"slow"})
	checkError(t, err, llm.Error{Provider: "test", Retryable: true}, "no response within 50ms")
}

func TestEmbedEmptyInputs(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		t.Error("no request expected")
	})
	e := newEmbedder(t, s.URL, nil)
	got, err := e.Embed(context.Background(), nil)
	if err != nil || len(got) != 0 {
		t.Errorf("Embed(nil) = %v, %v", got, err)
	}
	_, err = e.Embed(context.Background(), []string{"a", ""})
	checkError(t, err, llm.Error{Provider: "test"}, "text 1 is empty")
}

func TestNewEmbedder(t *testing.T) {
	for _, cfg := range []EmbedConfig{
		{},
		{Model: "m", BaseURL: "localhost:11434"},
		{Model: "m", Dimensions: -1},
		{Model: "m", BatchSize: -1},
		{Model: "m", Timeout: -time.Second},
	} {
		if _, err := NewEmbedder(cfg); err == nil {
			t.Errorf("NewEmbedder(%+v): no error", cfg)
		}
	}
}
