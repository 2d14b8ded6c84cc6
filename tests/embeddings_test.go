package tests

import (
	"context"
	"encoding/base64"
	binenc "encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// embeddingsConfig configures the fake's embeddings endpoint as the
// embedding model, with memory off: the endpoint does not need it, and
// nothing else then asks the fake for vectors.
func embeddingsConfig(fake *fakellm.Server) string {
	return "agents:\n  writer: {}\nmemory:\n  enabled: false\nembeddings:\n  type: openai\n  base_url: " + fake.URL + "/v1\n" +
		"  api_key: {env: OPENAI_API_KEY}\n  model: text-embedding-3-small\n"
}

// TestEmbeddings embeds with the official SDK through the real server and
// the fake's OpenAI-compatible embeddings: the vectors of the length asked
// for, the provider's token count, base64, and the model's own length.
func TestEmbeddings(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := newGateway(t, fake, embeddingsConfig(fake))
	key := g.createKey(t, "--name", "all")
	g.start()
	c := g.client(key)

	texts := []string{"the cat sleeps", "le chat dort 🐈"}
	res, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model:      "default",
		Input:      openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		Dimensions: param.NewOpt[int64](256),
	})
	if err != nil {
		t.Fatalf("embeddings: %v", err)
	}
	if diff := fakellm.DiffEmbeddings(res, "default", texts, 256); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
	reqs := fake.EmbeddingRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d embedding requests reached the provider, want 1", len(reqs))
	}
	if r := reqs[0]; r.Model != "text-embedding-3-small" || r.Dimensions != 256 || r.APIKey != providerKey || !cmp.Equal(texts, r.Input) {
		t.Errorf("provider request %+v: want the configured model, 256 dimensions, the provider's key and the texts", r)
	}

	// One string, the model's own length, base64 as OpenAI encodes it.
	resp, body := g.postTo(t, "/v1/embeddings", key, `{"model":"lambdaclaw/writer","input":"the cat","encoding_format":"base64","user":"u-7"}`, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("base64: %d %s", resp.StatusCode, body)
	}
	var b64 struct {
		Data []struct {
			Embedding string `json:"embedding"`
		} `json:"data"`
		Model string `json:"model"`
	}
	if err := json.Unmarshal(body, &b64); err != nil || len(b64.Data) != 1 || b64.Model != "lambdaclaw/writer" {
		t.Fatalf("base64 answer %.300s (%v)", body, err)
	}
	raw, err := base64.StdEncoding.DecodeString(b64.Data[0].Embedding)
	if err != nil {
		t.Fatal(err)
	}
	var vec []float32
	for i := 0; i+4 <= len(raw); i += 4 {
		vec = append(vec, math.Float32frombits(binenc.LittleEndian.Uint32(raw[i:])))
	}
	if diff := cmp.Diff(fakellm.EmbeddingVector("the cat", 1536), vec); diff != "" {
		t.Errorf("base64 vector (-want +got):\n%s", diff)
	}
	// The provider is always asked for floats.
	if r := fake.EmbeddingRequests()[1]; r.EncodingFormat != "float" || r.Dimensions != 0 {
		t.Errorf("provider request %+v: want floats at the model's own length", r)
	}
}

// TestEmbeddingsRefused checks requests that are refused: an agent the key
// may not use and bad input never reach the provider; what the provider
// refuses or fails at comes back as OpenAI's errors.
func TestEmbeddingsRefused(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := newGateway(t, fake, embeddingsConfig(fake))
	all := g.createKey(t, "--name", "all")
	writer := g.createKey(t, "--name", "writer", "--agents", "writer")
	g.start()

	tooMany, _ := json.Marshal(make([]string, 2049))
	for _, tt := range []struct {
		name, key, body string
		status          int
		code            string
	}{
		{"another agent", writer, `{"model":"default","input":"a"}`, http.StatusNotFound, "model_not_found"},
		{"an unknown agent", all, `{"model":"ghost","input":"a"}`, http.StatusNotFound, "model_not_found"},
		{"malformed JSON", all, `{"model":"default","input":`, http.StatusBadRequest, "invalid_json"},
		{"empty input", all, `{"model":"default","input":""}`, http.StatusBadRequest, "invalid_input"},
		{"an empty text", all, `{"model":"default","input":["a",""]}`, http.StatusBadRequest, "invalid_input"},
		{"too many inputs", all, `{"model":"default","input":` + strings.ReplaceAll(string(tooMany), `""`, `"a"`) + `}`, http.StatusBadRequest, "invalid_input"},
		{"token arrays", all, `{"model":"default","input":[[1,2,3]]}`, http.StatusBadRequest, "invalid_input"},
		{"bad encoding_format", all, `{"model":"default","input":"a","encoding_format":"int8"}`, http.StatusBadRequest, "invalid_encoding_format"},
		{"zero dimensions", all, `{"model":"default","input":"a","dimensions":0}`, http.StatusBadRequest, "invalid_dimensions"},
		{"dimensions not a number", all, `{"model":"default","input":"a","dimensions":"256"}`, http.StatusBadRequest, "invalid_dimensions"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := g.postTo(t, "/v1/embeddings", tt.key, tt.body, nil)
			wantErrorJSON(t, resp, body, tt.status, tt.code)
		})
	}
	if reqs := fake.EmbeddingRequests(); len(reqs) != 0 {
		t.Fatalf("refused requests reached the provider: %d", len(reqs))
	}
	if resp, body := g.postTo(t, "/v1/embeddings", writer, `{"model":"writer","input":"a"}`, nil); resp.StatusCode != http.StatusOK {
		t.Errorf("the key's own agent: %d %s", resp.StatusCode, body)
	}

	// What the provider refuses or fails at.
	fake.EnqueueEmbeddings(fakellm.Reply{Status: http.StatusServiceUnavailable, RetryAfter: "2", ErrorMessage: "overloaded at 10.0.0.7"})
	for _, tt := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"a length the model cannot make", `{"model":"default","input":"a","dimensions":5000}`, http.StatusBadRequest, "invalid_dimensions"},
		{"a text too long", `{"model":"default","input":"` + strings.Repeat("word ", 7000) + `"}`, http.StatusBadRequest, "context_length_exceeded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := g.postTo(t, "/v1/embeddings", all, tt.body, nil)
			wantErrorJSON(t, resp, body, tt.status, tt.code)
		})
	}
	resp, body := g.postTo(t, "/v1/embeddings", all, `{"model":"default","input":"a"}`, nil)
	// The scripted failure answers the first valid request: the two
	// refused above were refused by the fake before it took the script.
	if e := wantErrorJSON(t, resp, body, http.StatusBadGateway, "upstream_error"); e.Error != nil && strings.Contains(e.Error.Message, "10.0.0.7") {
		t.Errorf("the answer quotes the provider: %s", body)
	}
	if got := resp.Header.Get("Retry-After"); got != "2" {
		t.Errorf("Retry-After = %q, want the provider's 2", got)
	}
}

// TestEmbeddingsNotConfigured: without an embeddings section the endpoint
// says so.
func TestEmbeddingsNotConfigured(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := newGateway(t, fake, "")
	key := g.createKey(t, "--name", "all")
	g.start()
	_, err := g.client(key).Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model: "default", Input: openai.EmbeddingNewParamsInputUnion{OfString: param.NewOpt("a")},
	})
	wantAPIError(t, err, http.StatusBadRequest, "embeddings_not_configured")
	if reqs := fake.EmbeddingRequests(); len(reqs) != 0 {
		t.Errorf("%d embedding requests reached the provider", len(reqs))
	}
}

// TestModelsList lists the agents as models with the SDK: only those the
// key may use, created when their workspace was, the same after a
// restart.
func TestModelsList(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := newGateway(t, fake, "agents:\n  writer: {}\n")
	all := g.createKey(t, "--name", "all")
	writer := g.createKey(t, "--name", "writer", "--agents", "writer")
	g.start()

	created := map[string]int64{}
	for _, name := range []string{"default", "writer"} {
		c, err := workspace.Created(g.home, name)
		if err != nil {
			t.Fatal(err)
		}
		created[name] = c.Unix()
	}
	type entry struct {
		ID, Object, OwnedBy string
		Created             int64
	}
	list := func(key string) []entry {
		t.Helper()
		page, err := g.client(key).Models.List(context.Background())
		if err != nil {
			t.Fatalf("models: %v", err)
		}
		var out []entry
		for _, m := range page.Data {
			out = append(out, entry{m.ID, string(m.Object), m.OwnedBy, m.Created})
		}
		return out
	}
	want := []entry{{"default", "model", "lambdaclaw", created["default"]}, {"writer", "model", "lambdaclaw", created["writer"]}}
	if diff := cmp.Diff(want, list(all)); diff != "" {
		t.Errorf("models of a key for every agent (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want[1:], list(writer)); diff != "" {
		t.Errorf("models of a key for writer (-want +got):\n%s", diff)
	}
	m, err := g.client(writer).Models.Get(context.Background(), "writer")
	if err != nil || m.ID != "writer" || m.Created != created["writer"] || m.OwnedBy != "lambdaclaw" {
		t.Errorf("GET /v1/models/writer = %+v, %v", m, err)
	}
	_, err = g.client(writer).Models.Get(context.Background(), "default")
	wantAPIError(t, err, http.StatusNotFound, "model_not_found")

	g.stop()
	g.start()
	if diff := cmp.Diff(want, list(all)); diff != "" {
		t.Errorf("models after a restart (-want +got):\n%s", diff)
	}
}
