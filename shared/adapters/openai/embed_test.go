package openai

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
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

// TestEmbedKeyAndModel checks what OpenAI's API alone asks: the key as a
// bearer token; and the model's name with the length asked for. What
// every embedder does is in the conformance suite.
func TestEmbedKeyAndModel(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, embeddingsBody(`[0.1,0.2,0.3]`))
	})
	e := newEmbedder(t, s.URL, func(c *EmbedConfig) { c.Dimensions = 3 })
	if _, err := e.Embed(context.Background(), []string{"the cat"}); err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if auth := s.requests()[0].auth; auth != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want the bearer key", auth)
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

// TestEmbedErrors checks answers that do not fit their batch. Errors
// every embedder classifies alike are in the conformance suite.
func TestEmbedErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		mention string
	}{
		{"too few embeddings", embeddingsBody(`[0.1,0.2]`), "1 embeddings for 2 inputs"},
		{"ragged dimensions", embeddingsBody(`[0.1,0.2]`, `[0.1,0.2,0.3]`), "dimensions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, tc.body) })
			_, err := newEmbedder(t, s.URL, nil).Embed(context.Background(), []string{"one", "two"})
			checkError(t, err, llm.Error{Provider: "test", Status: 200}, tc.mention)
		})
	}
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
