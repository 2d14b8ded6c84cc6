package gateway_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// fakeEmbedder answers with vectorOf each text, counting a token per
// byte, or fails with err; it records the requests.
type fakeEmbedder struct {
	mu   sync.Mutex
	reqs []memory.EmbedRequest
	err  error
}

// fakeDims is the length of the fake's vectors when none is asked for.
const fakeDims = 3

// vectorOf is the fake's vector of text: exact in float32 and in JSON.
func vectorOf(text string, dims int) []float32 {
	v := make([]float32, dims)
	for j := range v {
		v[j] = float32(len(text)) + float32(j)/4 - 1
	}
	return v
}

func (f *fakeEmbedder) EmbedRequest(_ context.Context, r memory.EmbedRequest) (memory.Embeddings, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, r)
	err := f.err
	f.mu.Unlock()
	if err != nil {
		return memory.Embeddings{}, err
	}
	dims := r.Dimensions
	if dims == 0 {
		dims = fakeDims
	}
	var res memory.Embeddings
	for _, t := range r.Texts {
		res.Vectors = append(res.Vectors, vectorOf(t, dims))
		res.Tokens += len(t)
	}
	return res, nil
}

func (f *fakeEmbedder) requests() []memory.EmbedRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]memory.EmbedRequest(nil), f.reqs...)
}

// withEmbedder gives the gateway emb.
func withEmbedder(emb gateway.Embedder) func(*gateway.Config) {
	return func(c *gateway.Config) { c.Embedder = emb }
}

// TestEmbeddingsAnswer checks a whole answer, byte for byte: OpenAI's
// shape, the vectors in order, the model as the client named it and the
// tokens the embedder counted.
func TestEmbeddingsAnswer(t *testing.T) {
	emb := &fakeEmbedder{}
	f := newFixture(t, withEmbedder(emb))
	w := f.do("POST", "/v1/embeddings", f.token, `{"model":"lambdaclaw/coder","input":["hi","hello"],"user":"u-42"}`)
	want := `{"object":"list","data":[` +
		`{"object":"embedding","index":0,"embedding":[1,1.25,1.5]},` +
		`{"object":"embedding","index":1,"embedding":[4,4.25,4.5]}],` +
		`"model":"lambdaclaw/coder","usage":{"prompt_tokens":7,"total_tokens":7}}` + "\n"
	if w.Code != http.StatusOK || w.Body.String() != want {
		t.Errorf("answer %d %s\nwant 200 %s", w.Code, w.Body, want)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if diff := cmp.Diff([]memory.EmbedRequest{{Texts: []string{"hi", "hello"}}}, emb.requests()); diff != "" {
		t.Errorf("embedder requests (-want +got):\n%s", diff)
	}
}

// embeddingsAnswer is an answer decoded, embeddings as floats or base64.
type embeddingsAnswer struct {
	Object string `json:"object"`
	Data   []struct {
		Object    string          `json:"object"`
		Index     int             `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
	Model string `json:"model"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// vectors returns the answer's vectors, decoding base64 ones as OpenAI's
// clients do (little-endian float32).
func (a embeddingsAnswer) vectors(t *testing.T, b64 bool) [][]float32 {
	t.Helper()
	var out [][]float32
	for i, d := range a.Data {
		if d.Object != "embedding" || d.Index != i {
			t.Errorf("data[%d] is object %q index %d", i, d.Object, d.Index)
		}
		var v []float32
		if !b64 {
			if err := json.Unmarshal(d.Embedding, &v); err != nil {
				t.Fatalf("data[%d].embedding %s: %v", i, d.Embedding, err)
			}
			out = append(out, v)
			continue
		}
		var s string
		if err := json.Unmarshal(d.Embedding, &s); err != nil {
			t.Fatalf("data[%d].embedding %s is not a string: %v", i, d.Embedding, err)
		}
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(raw)%4 != 0 {
			t.Fatalf("data[%d].embedding %q is not base64 of float32s: %v", i, s, err)
		}
		for j := 0; j < len(raw); j += 4 {
			v = append(v, math.Float32frombits(binary.LittleEndian.Uint32(raw[j:])))
		}
		out = append(out, v)
	}
	return out
}

func TestEmbeddings(t *testing.T) {
	long := strings.Repeat("é", 300)
	many := make([]string, gateway.MaxEmbeddingInputs)
	for i := range many {
		many[i] = fmt.Sprint("text ", i)
	}
	manyJSON, _ := json.Marshal(many)
	tests := []struct {
		name  string
		body  string
		texts []string
		dims  int
		b64   bool
	}{
		{"a string", `{"model":"default","input":"the cat"}`, []string{"the cat"}, 0, false},
		{"an array", `{"model":"default","input":["a","bb",` + fmt.Sprintf("%q", long) + `]}`, []string{"a", "bb", long}, 0, false},
		{"the most inputs", `{"model":"default","input":` + string(manyJSON) + `}`, many, 0, false},
		{"dimensions", `{"model":"default","input":["a","bb"],"dimensions":5}`, []string{"a", "bb"}, 5, false},
		{"null dimensions", `{"model":"default","input":"a","dimensions":null}`, []string{"a"}, 0, false},
		{"float", `{"model":"default","input":"a","encoding_format":"float"}`, []string{"a"}, 0, false},
		{"base64", `{"model":"default","input":["a","bb"],"encoding_format":"base64","dimensions":4}`, []string{"a", "bb"}, 4, true},
		{"user", `{"model":"default","input":"a","user":"u-1"}`, []string{"a"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			emb := &fakeEmbedder{}
			f := newFixture(t, withEmbedder(emb))
			w := f.do("POST", "/v1/embeddings", f.token, tt.body)
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %.300s", w.Code, w.Body)
			}
			var got embeddingsAnswer
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatalf("answer %.300s: %v", w.Body, err)
			}
			dims, tokens := tt.dims, 0
			if dims == 0 {
				dims = fakeDims
			}
			var want [][]float32
			for _, text := range tt.texts {
				want = append(want, vectorOf(text, dims))
				tokens += len(text)
			}
			if diff := cmp.Diff(want, got.vectors(t, tt.b64)); diff != "" {
				t.Errorf("vectors (-want +got):\n%s", diff)
			}
			if got.Object != "list" || got.Model != "default" || got.Usage.PromptTokens != tokens || got.Usage.TotalTokens != tokens {
				t.Errorf("answer object %q model %q usage %+v, want list, default and %d tokens", got.Object, got.Model, got.Usage, tokens)
			}
			if diff := cmp.Diff([]memory.EmbedRequest{{Texts: tt.texts, Dimensions: tt.dims}}, emb.requests()); diff != "" {
				t.Errorf("embedder requests (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEmbeddingsBadRequests checks requests refused before the embedder
// is asked anything.
func TestEmbeddingsBadRequests(t *testing.T) {
	badRequest := func(code string) apiErr { return apiErr{http.StatusBadRequest, "invalid_request_error", code} }
	tooMany, _ := json.Marshal(make([]string, gateway.MaxEmbeddingInputs+1))
	tests := []struct {
		name    string
		body    string
		want    apiErr
		mention string
	}{
		{"malformed JSON", `{"model":"default",`, badRequest("invalid_json"), "not valid JSON"},
		{"trailing data", `{"model":"default","input":"a"} {}`, badRequest("invalid_json"), "not valid JSON"},
		{"empty body", ``, badRequest("invalid_json"), "not valid JSON"},
		{"model not a string", `{"model":5,"input":"a"}`, badRequest("invalid_type"), "model must be of type string"},
		{"unknown field", `{"model":"default","input":"a","extra":{"x":1}}`, badRequest("unknown_parameter"), "Unrecognized request argument supplied: extra"},
		{"missing model", `{"input":"a"}`, badRequest("missing_model"), "model is required"},
		{"unknown model", `{"model":"ghost","input":"a"}`, apiErr{http.StatusNotFound, "invalid_request_error", "model_not_found"}, `"ghost"`},
		{"no input", `{"model":"default"}`, badRequest("invalid_input"), "input is required"},
		{"null input", `{"model":"default","input":null}`, badRequest("invalid_input"), "input is required"},
		{"empty string", `{"model":"default","input":""}`, badRequest("invalid_input"), "empty string"},
		{"empty array", `{"model":"default","input":[]}`, badRequest("invalid_input"), "empty array"},
		{"an empty string in the array", `{"model":"default","input":["a",""]}`, badRequest("invalid_input"), "input[1] must not be an empty string"},
		{"too many inputs", `{"model":"default","input":` + string(tooMany) + `}`, badRequest("invalid_input"), "at most 2048"},
		{"a token array", `{"model":"default","input":[1,2,3]}`, badRequest("invalid_input"), "token arrays are not supported"},
		{"token arrays", `{"model":"default","input":[[1,2],[3]]}`, badRequest("invalid_input"), "token arrays are not supported"},
		{"an object in the array", `{"model":"default","input":["a",{"text":"b"}]}`, badRequest("invalid_input"), "input[1] must be a string"},
		{"input an object", `{"model":"default","input":{"text":"a"}}`, badRequest("invalid_input"), "a string or an array of strings"},
		{"zero dimensions", `{"model":"default","input":"a","dimensions":0}`, badRequest("invalid_dimensions"), "positive integer"},
		{"negative dimensions", `{"model":"default","input":"a","dimensions":-256}`, badRequest("invalid_dimensions"), "positive integer"},
		{"fractional dimensions", `{"model":"default","input":"a","dimensions":1.5}`, badRequest("invalid_dimensions"), "positive integer"},
		{"dimensions a string", `{"model":"default","input":"a","dimensions":"256"}`, badRequest("invalid_dimensions"), "positive integer"},
		{"unknown encoding_format", `{"model":"default","input":"a","encoding_format":"int8"}`, badRequest("invalid_encoding_format"), `"int8"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			emb := &fakeEmbedder{}
			f := newFixture(t, withEmbedder(emb))
			got, msg := decodeError(t, f.do("POST", "/v1/embeddings", f.token, tt.body))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if !strings.Contains(msg, tt.mention) {
				t.Errorf("message %q does not mention %q", msg, tt.mention)
			}
			if reqs := emb.requests(); len(reqs) != 0 {
				t.Errorf("a refused request reached the embedder: %+v", reqs)
			}
		})
	}
}

// TestEmbeddingsForAllowedAgentsOnly checks that a key restricted to some
// agents embeds only with them, and that keys, rate limits and the body
// limit guard the endpoint as they do the others.
func TestEmbeddingsForAllowedAgentsOnly(t *testing.T) {
	emb := &fakeEmbedder{}
	f := newFixture(t, withEmbedder(emb), func(c *gateway.Config) { c.MaxBodyBytes = 256 })
	writer := f.addKey(store.APIKey{ID: "k-writer", Agents: []string{"writer"}, RatePerMinute: 60})
	notFound := apiErr{http.StatusNotFound, "invalid_request_error", "model_not_found"}
	tests := []struct {
		name  string
		token string
		body  string
		want  apiErr
	}{
		{"another agent", writer, `{"model":"default","input":"a"}`, notFound},
		{"another agent, prefixed", writer, `{"model":"lambdaclaw/coder","input":"a"}`, notFound},
		{"no key", "", `{"model":"writer","input":"a"}`, apiErr{http.StatusUnauthorized, "invalid_request_error", "invalid_api_key"}},
		{"body too large", writer, `{"model":"writer","input":"` + strings.Repeat("a", 300) + `"}`,
			apiErr{http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := decodeError(t, f.do("POST", "/v1/embeddings", tt.token, tt.body))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
	if reqs := emb.requests(); len(reqs) != 0 {
		t.Errorf("refused requests reached the embedder: %+v", reqs)
	}
	if w := f.do("POST", "/v1/embeddings", writer, `{"model":"writer","input":"a"}`); w.Code != http.StatusOK {
		t.Errorf("the key's own agent: status %d: %s", w.Code, w.Body)
	}
	if diff := cmp.Diff([]limitCall{{"k-writer", 60}}, f.limiter.calls[len(f.limiter.calls)-1:]); diff != "" {
		t.Errorf("rate limit asked (-want +got):\n%s", diff)
	}
}

func TestEmbeddingsNotConfigured(t *testing.T) {
	f := newFixture(t) // no Embedder
	got, msg := decodeError(t, f.do("POST", "/v1/embeddings", f.token, `{"model":"default","input":"a"}`))
	if diff := cmp.Diff(apiErr{http.StatusBadRequest, "invalid_request_error", "embeddings_not_configured"}, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if !strings.Contains(msg, "no embedding model") {
		t.Errorf("message %q does not say that no embedding model is configured", msg)
	}
}

// TestEmbeddingsFailures checks how the embedder's failures reach the
// client: what the client can fix is a 400, a provider that fails a 502
// with its Retry-After, anything else a 500; never with the provider's
// own message.
func TestEmbeddingsFailures(t *testing.T) {
	const key = "sk-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3dEf6hIj9kLm2n"
	const secret = "provider says: key " + key + " at 10.0.0.7"
	upstream := func(le llm.Error) error { le.Provider, le.Err = "embeddings", errors.New(secret); return &le }
	tests := []struct {
		name       string
		err        error
		want       apiErr
		message    string // "" for one that ends with the request id
		retryAfter string
	}{
		{"length the model cannot make",
			&llm.Error{Provider: "bedrock", Err: &memory.DimensionsError{Dimensions: 300, Supported: []int{256, 512, 1024}}},
			apiErr{http.StatusBadRequest, "invalid_request_error", "invalid_dimensions"},
			"the embedding model cannot make vectors of 300 dimensions; it makes 256, 512, 1024", ""},
		{"length refused by the server",
			&llm.Error{Provider: "embeddings", Status: 400, Err: fmt.Errorf("%w (%w)", &memory.DimensionsError{Dimensions: 7}, errors.New(secret))},
			apiErr{http.StatusBadRequest, "invalid_request_error", "invalid_dimensions"},
			"the embedding model cannot make vectors of 7 dimensions", ""},
		{"input too long", upstream(llm.Error{Status: 400, ContextOverflow: true}),
			apiErr{http.StatusBadRequest, "invalid_request_error", "context_length_exceeded"},
			"an input is longer than the embedding model accepts; shorten or split it", ""},
		{"input refused", upstream(llm.Error{Status: 400}),
			apiErr{http.StatusBadRequest, "invalid_request_error", "input_rejected"}, "", ""},
		{"rate limited", upstream(llm.Error{Status: 429, Retryable: true, RetryAfter: 6500 * time.Millisecond}),
			apiErr{http.StatusBadGateway, "server_error", "upstream_error"}, "", "7"},
		{"server error", upstream(llm.Error{Status: 500, Retryable: true}),
			apiErr{http.StatusBadGateway, "server_error", "upstream_error"}, "", ""},
		{"bad credentials", upstream(llm.Error{Status: 401}),
			apiErr{http.StatusBadGateway, "server_error", "upstream_error"}, "", ""},
		{"unreachable", upstream(llm.Error{Retryable: true}),
			apiErr{http.StatusBadGateway, "server_error", "upstream_error"}, "", ""},
		{"not a provider's error", errors.New(secret),
			apiErr{http.StatusInternalServerError, "server_error", "internal_error"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			f := newFixture(t, withEmbedder(&fakeEmbedder{err: tt.err}), logTo(&logs))
			w := f.do("POST", "/v1/embeddings", f.token, `{"model":"default","input":"a","dimensions":300}`)
			got, msg := decodeError(t, w)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			id := w.Header().Get(gateway.RequestIDHeader)
			switch {
			case tt.message != "" && msg != tt.message:
				t.Errorf("message %q, want %q", msg, tt.message)
			case tt.message == "" && !strings.HasSuffix(msg, "(request id "+id+")"):
				t.Errorf("message %q does not end with the request id %s", msg, id)
			}
			if strings.Contains(w.Body.String(), key) || strings.Contains(w.Body.String(), "10.0.0.7") {
				t.Errorf("answer %s quotes the provider", w.Body)
			}
			if got := w.Header().Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tt.retryAfter)
			}
			if tt.message == "" {
				if line := logLine(t, logs.String(), "embedding failed"); line["request_id"] != id || strings.Contains(fmt.Sprint(line["error"]), key) || !strings.Contains(fmt.Sprint(line["error"]), "10.0.0.7") {
					t.Errorf("log line %v: want request_id %s and the error, scrubbed", line, id)
				}
			}
		})
	}
}
