package openai

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
)

// Defaults for EmbedConfig.
const (
	// DefaultEmbedBatch is how many texts go in one request when
	// EmbedConfig.BatchSize is not set. OpenAI accepts up to 2048; local
	// servers are happier with fewer.
	DefaultEmbedBatch = 100
	// DefaultEmbedTimeout bounds one embeddings request.
	DefaultEmbedTimeout = 60 * time.Second
)

// maxEmbeddingBytes bounds the response to an embeddings request: this
// many bytes for each text asked about, and maxErrorBody more for what
// surrounds them. It holds a vector of 8192 numbers written as OpenAI
// writes them, 20 bytes or so apiece.
const maxEmbeddingBytes = 8192 * 32

// EmbedConfig describes one OpenAI-compatible /v1/embeddings endpoint.
type EmbedConfig struct {
	// Name identifies the endpoint in errors; "openai" when empty.
	Name string
	// BaseURL is the API root, such as http://localhost:11434/v1 for Ollama.
	// Empty means https://api.openai.com/v1.
	BaseURL string
	// APIKey is sent as a bearer token. Servers such as Ollama need none.
	APIKey string
	// Model is the embedding model, such as text-embedding-3-small. Required.
	Model string
	// Dimensions asks for vectors of this length (text-embedding-3 and later
	// models shorten theirs); zero leaves the model's own.
	Dimensions int
	// BatchSize is the most texts sent in one request; DefaultEmbedBatch
	// when zero.
	BatchSize int
	// Timeout bounds each request; DefaultEmbedTimeout when zero.
	Timeout time.Duration
	// HTTPClient sends the requests, following redirects within the base
	// URL's origin only; when nil, a client over net/http's default
	// transport that keeps 64 idle connections per server (maxIdlePerHost).
	HTTPClient *http.Client
}

// Embedder turns texts into vectors with an OpenAI-compatible embeddings
// endpoint. It is a memory.Embedder, safe for concurrent use. Every failure
// is an *llm.Error classified as the chat Provider classifies its own:
// rate limits, server errors, timeouts and dropped connections are
// retryable, with the server's Retry-After; a malformed answer is not.
type Embedder struct {
	model string
	dims  int
	batch int
	api   *client
	// errs classifies failures; it is a Provider that makes no calls.
	errs *Provider
}

var _ memory.Embedder = (*Embedder)(nil)

// NewEmbedder returns an Embedder for cfg.
func NewEmbedder(cfg EmbedConfig) (*Embedder, error) {
	name := cfg.Name
	if name == "" {
		name = "openai"
	}
	switch {
	case cfg.Model == "":
		return nil, fmt.Errorf("openai embedder %s: model is required", name)
	case cfg.Dimensions < 0:
		return nil, fmt.Errorf("openai embedder %s: negative dimensions %d", name, cfg.Dimensions)
	case cfg.BatchSize < 0:
		return nil, fmt.Errorf("openai embedder %s: negative batch size %d", name, cfg.BatchSize)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("openai embedder %s: negative timeout %s", name, cfg.Timeout)
	}
	e := &Embedder{model: cfg.Model, dims: cfg.Dimensions, batch: cfg.BatchSize}
	if e.batch == 0 {
		e.batch = DefaultEmbedBatch
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultEmbedTimeout
	}
	e.errs = &Provider{name: name, apiKey: cfg.APIKey, timeout: timeout, now: time.Now}
	api, err := newClient(cfg.BaseURL, cfg.APIKey, cfg.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("openai embedder %s: %w", name, err)
	}
	e.api = api
	return e, nil
}

// Model names the model, with the requested dimension when one is set
// ("text-embedding-3-small@256"): vectors of one model at two lengths must
// not share a cache.
func (e *Embedder) Model() string {
	if e.dims > 0 {
		return e.model + "@" + strconv.Itoa(e.dims)
	}
	return e.model
}

// Embed returns one vector per text, in order, sending the texts in
// batches of at most the configured size.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	res, err := e.EmbedRequest(ctx, memory.EmbedRequest{Texts: texts})
	return res.Vectors, err
}

// EmbedRequest returns one vector per text, in order, sending the texts
// in batches of at most the configured size, with the input tokens the
// server counted. Vectors of the length asked for are the server's to
// make (text-embedding-3 models shorten theirs): a server that refuses
// the length, or answers with vectors of another one, gives a
// *memory.DimensionsError.
func (e *Embedder) EmbedRequest(ctx context.Context, r memory.EmbedRequest) (memory.Embeddings, error) {
	if r.Dimensions < 0 {
		return memory.Embeddings{}, &llm.Error{Provider: e.errs.name, Err: &memory.DimensionsError{Dimensions: r.Dimensions}}
	}
	for i, t := range r.Texts {
		if t == "" {
			// The API refuses empty input; say which one rather than
			// letting the server fail the whole batch.
			return memory.Embeddings{}, &llm.Error{Provider: e.errs.name, Err: fmt.Errorf("text %d is empty", i)}
		}
	}
	out := memory.Embeddings{Vectors: make([][]float32, 0, len(r.Texts))}
	asked := cmp.Or(r.Dimensions, e.dims)
	dims := asked
	for start := 0; start < len(r.Texts); start += e.batch {
		batch := r.Texts[start:min(start+e.batch, len(r.Texts))]
		vecs, tokens, err := e.embed(ctx, batch, asked, dims)
		if err != nil {
			return memory.Embeddings{}, err
		}
		dims = len(vecs[0])
		out.Vectors = append(out.Vectors, vecs...)
		out.Tokens += tokens
	}
	return out, nil
}

// embed makes one request, asking for vectors of asked dimensions unless
// it is zero. dims, when not zero, is the length every vector must have.
func (e *Embedder) embed(ctx context.Context, texts []string, asked, dims int) ([][]float32, int, error) {
	req, err := json.Marshal(embeddingsRequest{Input: texts, Model: e.model, EncodingFormat: "float", Dimensions: asked})
	if err != nil {
		return nil, 0, &llm.Error{Provider: e.errs.name, Err: fmt.Errorf("encode request: %w", err)}
	}
	callCtx, cancel := context.WithTimeoutCause(ctx, e.errs.timeout, errTimedOut)
	defer cancel()
	res, err := e.api.post(callCtx, "embeddings", req)
	if err != nil {
		le := e.errs.classify(ctx, callCtx, res, err)
		if asked > 0 && le.Status == http.StatusBadRequest && !le.ContextOverflow && refusesDimensions(le.Err.Error()) {
			le.Err = fmt.Errorf("%w (%w)", &memory.DimensionsError{Dimensions: asked}, le.Err)
		}
		return nil, 0, le
	}
	defer res.Body.Close()
	bound := int64(len(texts))*maxEmbeddingBytes + maxErrorBody
	body, err := io.ReadAll(io.LimitReader(res.Body, bound+1))
	if err != nil {
		return nil, 0, e.errs.classify(ctx, callCtx, res, err)
	}
	if int64(len(body)) > bound {
		return nil, 0, &llm.Error{Provider: e.errs.name, Status: res.StatusCode,
			Err: fmt.Errorf("invalid response from server: more than %d bytes for %d texts", bound, len(texts))}
	}
	vecs, tokens, err := decodeEmbeddings(body, len(texts), dims)
	var le *lengthError
	if asked > 0 && errors.As(err, &le) {
		// The server ignored the length asked for: the model cannot make
		// it (dims is asked then, in every batch).
		err = fmt.Errorf("%w: %w", &memory.DimensionsError{Dimensions: asked}, err)
	}
	if err != nil {
		return nil, 0, &llm.Error{Provider: e.errs.name, Status: res.StatusCode, Err: fmt.Errorf("invalid response from server: %w", err)}
	}
	return vecs, tokens, nil
}

// embeddingsRequest is the body of an embeddings call.
type embeddingsRequest struct {
	Input          []string `json:"input"`
	Model          string   `json:"model"`
	EncodingFormat string   `json:"encoding_format"`
	// Dimensions asks for vectors of this length; zero leaves it out.
	Dimensions int `json:"dimensions,omitempty"`
}

// embeddingsResponse is the answer to an embeddings call: the fields
// read of it.
type embeddingsResponse struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
	Usage struct {
		PromptTokens int `json:"prompt_tokens"`
	} `json:"usage"`
}

// lengthError is an answer's vector of another length than the others
// or than the one asked for.
type lengthError struct{ index, got, want int }

func (e *lengthError) Error() string {
	return fmt.Sprintf("embedding %d has %d dimensions, want %d", e.index, e.got, e.want)
}

// refusesDimensions reports whether a server's error message refuses the
// dimensions parameter: OpenAI's "This model does not support specifying
// dimensions.", vLLM's "does not support matryoshka representation".
func refusesDimensions(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "dimension") || strings.Contains(m, "matryoshka")
}

// decodeEmbeddings reads an embeddings response for n texts: one
// embedding per input, placed by its index, all of one length (dims when
// not zero; a vector of another length is a *lengthError), and the input
// tokens it reports.
func decodeEmbeddings(body []byte, n, dims int) ([][]float32, int, error) {
	var r embeddingsResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, 0, err
	}
	if len(r.Data) != n {
		return nil, 0, fmt.Errorf("%d embeddings for %d inputs", len(r.Data), n)
	}
	out := make([][]float32, n)
	for _, d := range r.Data {
		i := d.Index
		switch {
		case i < 0 || i >= n:
			return nil, 0, fmt.Errorf("embedding index %d out of range", i)
		case out[i] != nil:
			return nil, 0, fmt.Errorf("embedding index %d repeated", i)
		case len(d.Embedding) == 0:
			return nil, 0, fmt.Errorf("embedding %d is empty", i)
		}
		if dims == 0 {
			dims = len(d.Embedding)
		}
		if len(d.Embedding) != dims {
			return nil, 0, &lengthError{index: i, got: len(d.Embedding), want: dims}
		}
		out[i] = d.Embedding
	}
	// n entries, none repeated, none out of range: every input has one.
	return out, max(r.Usage.PromptTokens, 0), nil
}
