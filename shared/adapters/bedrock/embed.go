// Package bedrock holds the adapters of Amazon Bedrock's runtime API,
// called through shared/adapters/awsapi: the llm.Provider on Converse and
// ConverseStream, and the memory.Embedder on Amazon Titan Text
// Embeddings V2, called with InvokeModel, one text per call.
//
// A user's media (chat.Part) go to Converse as blocks ahead of the
// message's text (converse_media.go): images as `image` blocks (format
// png, jpeg, gif or webp; source.bytes), those given by URL fetched first
// with ConverseConfig.Images (web_fetch's address rules, at most
// chat.DefaultLimits' image size); files as `document` blocks (format
// pdf, csv, doc, docx, xls, xlsx, html, txt or md by media type; a name
// of the characters Bedrock allows). Audio is refused, as is any kind
// ConverseConfig.Input leaves out (default: images and documents):
// CheckPart answers before a run is queued.
package bedrock

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
)

// Defaults for EmbedConfig.
const (
	DefaultEmbedModel       = "amazon.titan-embed-text-v2:0"
	DefaultEmbedDimensions  = 1024
	DefaultEmbedConcurrency = 8
	DefaultEmbedTimeout     = 30 * time.Second
)

// providerName names Bedrock in errors.
const providerName = "bedrock"

// EmbedConfig describes the Titan Text Embeddings V2 model on Bedrock.
type EmbedConfig struct {
	// Region is the Bedrock region. Required.
	Region string
	// ModelID is the model (or inference profile) id;
	// DefaultEmbedModel when empty.
	ModelID string
	// Dimensions is the vector length: 1024 (DefaultEmbedDimensions when
	// zero), 512 or 256.
	Dimensions int
	// Concurrency bounds the InvokeModel calls in flight for one Embed
	// (Titan takes one text per call); DefaultEmbedConcurrency when zero.
	Concurrency int
	// Timeout bounds each call, its retries included;
	// DefaultEmbedTimeout when zero.
	Timeout time.Duration
	// MaxAttempts is the attempts per call, retrying throttling and
	// server errors with the SDK's backoff; zero keeps the SDK's default
	// (3).
	MaxAttempts int
	// Credentials sign the calls; nil takes the environment's
	// (awsapi.EnvConfig: a Lambda function's role).
	Credentials aws.CredentialsProvider
	// BaseEndpoint replaces the regional endpoint: a VPC endpoint, or a
	// test server.
	BaseEndpoint string
	// HTTPClient sends the requests; http.DefaultClient when nil.
	HTTPClient *http.Client
}

// Embedder is a memory.Embedder on Titan Text Embeddings V2. Vectors are
// normalised by the model. It is safe for concurrent use. Every failure
// is an *llm.Error: throttling, server errors, timeouts and dropped
// connections are retryable, with the service's Retry-After; a text too
// long for the model is a context overflow.
type Embedder struct {
	client      *awsapi.BedrockRuntime
	model       string
	dims        int
	concurrency int
	timeout     time.Duration
}

var _ memory.Embedder = (*Embedder)(nil)

// NewEmbedder returns an Embedder for cfg. It loads AWS credentials when
// none are given; it makes no call.
func NewEmbedder(ctx context.Context, cfg EmbedConfig) (*Embedder, error) {
	e := &Embedder{model: cfg.ModelID, dims: cfg.Dimensions, concurrency: cfg.Concurrency, timeout: cfg.Timeout}
	if e.model == "" {
		e.model = DefaultEmbedModel
	}
	if e.dims == 0 {
		e.dims = DefaultEmbedDimensions
	}
	if e.concurrency == 0 {
		e.concurrency = DefaultEmbedConcurrency
	}
	if e.timeout == 0 {
		e.timeout = DefaultEmbedTimeout
	}
	switch {
	case cfg.Region == "":
		return nil, errors.New("bedrock embedder: region is required")
	case !slices.Contains(titanDimensions, e.dims):
		return nil, fmt.Errorf("bedrock embedder: Titan V2 makes vectors of 256, 512 or 1024 dimensions, not %d", e.dims)
	case e.concurrency < 0, e.timeout < 0, cfg.MaxAttempts < 0:
		return nil, errors.New("bedrock embedder: negative concurrency, timeout or attempts")
	}
	if cfg.BaseEndpoint != "" {
		if u, err := url.Parse(cfg.BaseEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("bedrock embedder: endpoint %q is not an http(s) URL", cfg.BaseEndpoint)
		}
	}
	awsCfg := aws.Config{Region: cfg.Region, Credentials: cfg.Credentials}
	if awsCfg.Credentials == nil {
		loaded, err := awsapi.EnvConfig(os.Getenv)
		if err != nil {
			return nil, fmt.Errorf("bedrock embedder: %w", err)
		}
		loaded.Region = cfg.Region
		awsCfg = loaded
	}
	if cfg.MaxAttempts > 0 {
		awsCfg.RetryMaxAttempts = cfg.MaxAttempts
	}
	if cfg.HTTPClient != nil {
		awsCfg.HTTPClient = cfg.HTTPClient
	}
	client, err := awsapi.NewBedrockRuntime(awsCfg, cfg.BaseEndpoint, 0)
	if err != nil {
		return nil, fmt.Errorf("bedrock embedder: %w", err)
	}
	e.client = client
	return e, nil
}

// Model names the model and the vector length
// ("amazon.titan-embed-text-v2:0@1024"): vectors of one model at two
// lengths must not share a cache.
func (e *Embedder) Model() string { return e.model + "@" + strconv.Itoa(e.dims) }

// titanRequest is the InvokeModel body for Titan Text Embeddings V2.
type titanRequest struct {
	InputText  string `json:"inputText"`
	Dimensions int    `json:"dimensions"`
	Normalize  bool   `json:"normalize"`
}

// titanResponse is the part of its answer the adapter reads.
type titanResponse struct {
	Embedding           []float32 `json:"embedding"`
	InputTextTokenCount int       `json:"inputTextTokenCount"`
}

// titanDimensions are the vector lengths Titan V2 makes.
var titanDimensions = []int{256, 512, 1024}

// Embed returns one vector per text, in order. Titan embeds one text per
// call; the calls run concurrently, at most Concurrency at a time, and the
// first failure cancels the rest.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	res, err := e.EmbedRequest(ctx, memory.EmbedRequest{Texts: texts})
	return res.Vectors, err
}

// EmbedRequest returns one vector per text, in order, as Embed does, with
// the input tokens Titan counted (the sum of each call's
// inputTextTokenCount). Titan V2 makes vectors of 256, 512 or 1024
// dimensions; another length is a *memory.DimensionsError, before any call.
func (e *Embedder) EmbedRequest(ctx context.Context, r memory.EmbedRequest) (memory.Embeddings, error) {
	dims := cmp.Or(r.Dimensions, e.dims)
	if !slices.Contains(titanDimensions, dims) {
		return memory.Embeddings{}, &llm.Error{Provider: providerName, Err: &memory.DimensionsError{Dimensions: dims, Supported: titanDimensions}}
	}
	for i, t := range r.Texts {
		if t == "" {
			return memory.Embeddings{}, &llm.Error{Provider: providerName, Err: fmt.Errorf("text %d is empty", i)}
		}
	}
	out := make([][]float32, len(r.Texts))
	tokens := make([]int, len(r.Texts))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		once     sync.Once
		firstErr error
		slots    = make(chan struct{}, e.concurrency)
	)
	for i, text := range r.Texts {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			v, n, err := e.embed(ctx, text, dims)
			if err != nil {
				once.Do(func() { firstErr = fmt.Errorf("text %d: %w", i, err); cancel() })
				return
			}
			out[i], tokens[i] = v, n
		})
	}
	wg.Wait()
	if firstErr != nil {
		var le *llm.Error
		if errors.As(firstErr, &le) {
			// Keep the classification, with the text's position in the
			// message.
			return memory.Embeddings{}, &llm.Error{Provider: le.Provider, Status: le.Status, Retryable: le.Retryable, RetryAfter: le.RetryAfter,
				ContextOverflow: le.ContextOverflow, Err: firstErr}
		}
		return memory.Embeddings{}, firstErr
	}
	if err := ctx.Err(); err != nil {
		return memory.Embeddings{}, &llm.Error{Provider: providerName, Err: fmt.Errorf("call abandoned by the caller: %w", err)}
	}
	res := memory.Embeddings{Vectors: out}
	for _, n := range tokens {
		res.Tokens += n
	}
	return res, nil
}

// errTimedOut is the cause of a call context that the per-call timeout ended.
var errTimedOut = errors.New("timed out")

// embed makes one InvokeModel call for a vector of dims dimensions, and
// returns it with the tokens Titan counted.
func (e *Embedder) embed(ctx context.Context, text string, dims int) ([]float32, int, error) {
	body, err := json.Marshal(titanRequest{InputText: text, Dimensions: dims, Normalize: true})
	if err != nil {
		return nil, 0, &llm.Error{Provider: providerName, Err: err}
	}
	callCtx, cancel := context.WithTimeoutCause(ctx, e.timeout, errTimedOut)
	defer cancel()
	out, err := e.client.InvokeModel(callCtx, e.model, "application/json", "application/json", body)
	if err != nil {
		return nil, 0, e.classify(ctx, callCtx, err)
	}
	var res titanResponse
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, 0, &llm.Error{Provider: providerName, Status: http.StatusOK, Err: fmt.Errorf("invalid response from %s: %w", e.model, err)}
	}
	if len(res.Embedding) != dims {
		return nil, 0, &llm.Error{Provider: providerName, Status: http.StatusOK,
			Err: fmt.Errorf("invalid response from %s: %d dimensions, want %d", e.model, len(res.Embedding), dims)}
	}
	return res.Embedding, max(res.InputTextTokenCount, 0), nil
}

// retryableCodes are Bedrock runtime errors that may pass when the call is
// made again.
var retryableCodes = map[string]bool{
	"ThrottlingException":         true,
	"ServiceUnavailableException": true,
	"InternalServerException":     true,
	"ModelNotReadyException":      true,
	"ModelTimeoutException":       true,
}

// classify turns a failed call into an *llm.Error. parent is the caller's
// context, call the one with this call's timeout.
func (e *Embedder) classify(parent, call context.Context, err error) *llm.Error {
	le := &llm.Error{Provider: providerName, Err: err}
	api, isAPI := errors.AsType[*awsapi.Error](err)
	le.Status = awsapi.Status(err)
	if isAPI {
		le.RetryAfter = llm.ParseRetryAfter(api.Header, time.Now())
	}
	var ne net.Error
	switch {
	case parent.Err() != nil:
		le.Err = fmt.Errorf("call abandoned by the caller: %w", parent.Err())
	case errors.Is(context.Cause(call), errTimedOut):
		le.Retryable = true
		le.Err = fmt.Errorf("no answer within %s: %w", e.timeout, context.DeadlineExceeded)
	case isAPI:
		le.ContextOverflow = api.Code == "ValidationException" && isOverflowMessage(api.Message)
		le.Retryable = retryableCodes[api.Code] || le.Status == http.StatusTooManyRequests || le.Status >= 500
		le.Err = &bedrockError{msg: api.Code + ": " + api.Message, err: err}
	case le.Status != 0:
		le.Retryable = le.Status == http.StatusTooManyRequests || le.Status >= 500
	case errors.As(err, &ne):
		// No answer: a refused, reset or timed-out connection.
		le.Retryable = true
	}
	return le
}
