package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"

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
	// HTTPClient sends the requests; a client over http.DefaultTransport when nil.
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
	svc   oai.EmbeddingService
	// errs classifies failures; it is a Provider with no chat service.
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
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	opts := []option.RequestOption{option.WithHTTPClient(hc), option.WithMaxRetries(0)}
	if cfg.BaseURL == "" {
		opts = append(opts, option.WithEnvironmentProduction())
	} else {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("openai embedder %s: base URL %q is not an http(s) URL", name, cfg.BaseURL)
		}
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	e.svc = oai.NewEmbeddingService(opts...)
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
	for i, t := range texts {
		if t == "" {
			// The API refuses empty input; say which one rather than
			// letting the server fail the whole batch.
			return nil, &llm.Error{Provider: e.errs.name, Err: fmt.Errorf("text %d is empty", i)}
		}
	}
	out := make([][]float32, 0, len(texts))
	dims := e.dims
	for start := 0; start < len(texts); start += e.batch {
		batch := texts[start:min(start+e.batch, len(texts))]
		vecs, err := e.embed(ctx, batch, dims)
		if err != nil {
			return nil, err
		}
		dims = len(vecs[0])
		out = append(out, vecs...)
	}
	return out, nil
}

// embed makes one request. dims, when not zero, is the length every vector
// must have.
func (e *Embedder) embed(ctx context.Context, texts []string, dims int) ([][]float32, error) {
	params := oai.EmbeddingNewParams{
		Input:          oai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		Model:          e.model,
		EncodingFormat: oai.EmbeddingNewParamsEncodingFormatFloat,
	}
	if e.dims > 0 {
		params.Dimensions = param.NewOpt(int64(e.dims))
	}
	callCtx, cancel := context.WithTimeoutCause(ctx, e.errs.timeout, errTimedOut)
	defer cancel()
	var res *http.Response
	var body []byte
	// The body is decoded here rather than by the SDK so that a malformed
	// answer (not retryable) is told apart from a dropped connection.
	if _, err := e.svc.New(callCtx, params, option.WithResponseInto(&res), option.WithResponseBodyInto(&body)); err != nil {
		return nil, e.errs.classify(ctx, callCtx, res, err)
	}
	vecs, err := decodeEmbeddings(body, len(texts), dims)
	if err != nil {
		return nil, &llm.Error{Provider: e.errs.name, Status: statusOf(res), Err: fmt.Errorf("invalid response from server: %w", err)}
	}
	return vecs, nil
}

// decodeEmbeddings reads an embeddings response for n texts: one
// embedding per input, placed by its index, all of one length (dims when
// not zero).
func decodeEmbeddings(body []byte, n, dims int) ([][]float32, error) {
	var r oai.CreateEmbeddingResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	if len(r.Data) != n {
		return nil, fmt.Errorf("%d embeddings for %d inputs", len(r.Data), n)
	}
	out := make([][]float32, n)
	for _, d := range r.Data {
		i := d.Index
		switch {
		case i < 0 || i >= int64(n):
			return nil, fmt.Errorf("embedding index %d out of range", i)
		case out[i] != nil:
			return nil, fmt.Errorf("embedding index %d repeated", i)
		case len(d.Embedding) == 0:
			return nil, fmt.Errorf("embedding %d is empty", i)
		}
		if dims == 0 {
			dims = len(d.Embedding)
		}
		if len(d.Embedding) != dims {
			return nil, fmt.Errorf("embedding %d has %d dimensions, want %d", i, len(d.Embedding), dims)
		}
		v := make([]float32, len(d.Embedding))
		for j, f := range d.Embedding {
			v[j] = float32(f)
		}
		out[i] = v
	}
	// n entries, none repeated, none out of range: every input has one.
	return out, nil
}
