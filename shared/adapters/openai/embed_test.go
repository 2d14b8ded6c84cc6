package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm/llmtest"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
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

// TestEmbedResponseBounded checks that an answer that never ends is read
// only up to its bound, for the number of texts asked about.
func TestEmbedResponseBounded(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		llmtest.WriteEndless(w, r, http.StatusOK, "application/json", []byte(`{"data":[{"index":0,"embedding":[`), []byte("0.125,"))
	})
	_, err := newEmbedder(t, s.URL, nil).Embed(context.Background(), []string{"one", "two"})
	checkError(t, err, llm.Error{Provider: "test", Status: 200}, fmt.Sprintf("more than %d bytes for 2 texts", 2*maxEmbeddingBytes+maxErrorBody))
}

// TestEmbedRequestDimensionsRefused checks that a 400 refusing the
// dimensions asked for (OpenAI's for text-embedding-ada-002, vLLM's for a
// model that is not Matryoshka) is a *memory.DimensionsError, and that a
// 400 that is not about them, or one when no length was asked for, is not.
func TestEmbedRequestDimensionsRefused(t *testing.T) {
	const adaRefusal = `{"error":{"message":"This model does not support specifying dimensions.","type":"invalid_request_error","param":null,"code":null}}`
	const vllmRefusal = `{"object":"error","message":"Model \"bge-m3\" does not support matryoshka representation, changing output dimensions will lead to poor results.","type":"BadRequestError","param":null,"code":400}`
	const otherRefusal = `{"error":{"message":"'$.input' is invalid.","type":"invalid_request_error","param":null,"code":null}}`
	for _, tc := range []struct {
		name       string
		body       string
		dims       int
		dimsError  bool
		wantStatus int
	}{
		{"OpenAI refuses the length", adaRefusal, 256, true, 400},
		{"vLLM refuses the length", vllmRefusal, 256, true, 400},
		{"another refusal", otherRefusal, 256, false, 400},
		{"no length asked for", adaRefusal, 0, false, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusBadRequest, tc.body) })
			_, err := newEmbedder(t, s.URL, nil).EmbedRequest(context.Background(), memory.EmbedRequest{Texts: []string{"one"}, Dimensions: tc.dims})
			checkError(t, err, llm.Error{Provider: "test", Status: tc.wantStatus}, "")
			var de *memory.DimensionsError
			if got := errors.As(err, &de); got != tc.dimsError {
				t.Errorf("error %v: a *memory.DimensionsError is %v, want %v", err, got, tc.dimsError)
			}
			if tc.dims > 0 {
				if got := s.requests()[0].body["dimensions"]; got != float64(tc.dims) {
					t.Errorf("dimensions sent = %v, want %d", got, tc.dims)
				}
			}
		})
	}
}

// TestEmbedRequestOverridesConfiguredLength checks that a request's
// length replaces the configured one, and that usage missing from an
// answer counts no tokens.
func TestEmbedRequestOverridesConfiguredLength(t *testing.T) {
	s := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.5,0.25]}],"model":"m"}`)
	})
	got, err := newEmbedder(t, s.URL, func(c *EmbedConfig) { c.Dimensions = 3 }).
		EmbedRequest(context.Background(), memory.EmbedRequest{Texts: []string{"one"}, Dimensions: 2})
	if err != nil {
		t.Fatalf("EmbedRequest: %v", err)
	}
	if diff := cmp.Diff(memory.Embeddings{Vectors: [][]float32{{0.5, 0.25}}}, got); diff != "" {
		t.Errorf("embeddings (-want +got):\n%s", diff)
	}
	if d := s.requests()[0].body["dimensions"]; d != float64(2) {
		t.Errorf("dimensions sent = %v, want 2", d)
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
