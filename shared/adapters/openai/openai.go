// Package openai is the llm.Provider for any server that speaks OpenAI's chat
// completions API: OpenAI itself, OpenRouter, Ollama, vLLM, LM Studio and
// others. It wraps github.com/openai/openai-go with the SDK's own retries
// turned off: retrying, circuit breaking and fallback belong to the llm
// package's wrappers, which rely on the classified *llm.Error every failure
// here returns.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// DefaultTimeout bounds a call when Config.Timeout is not set.
const DefaultTimeout = 120 * time.Second

// Config describes one OpenAI-compatible endpoint.
type Config struct {
	// Name identifies the provider in errors and responses; "openai" when empty.
	Name string
	// BaseURL is the API root, such as http://localhost:11434/v1 for Ollama.
	// Empty means https://api.openai.com/v1.
	BaseURL string
	// APIKey is sent as a bearer token. Servers such as Ollama need none.
	APIKey string
	// Model is the model used when a request does not name one. Required.
	Model string
	// Timeout bounds a non-streaming call, and for a streaming call the wait
	// for the response and for each following chunk. DefaultTimeout when zero.
	Timeout time.Duration
	// HTTPClient sends the requests; a client over http.DefaultTransport when nil.
	HTTPClient *http.Client
	// MaxReplyBytes caps one reply: its content, refusal and tool calls.
	// A longer reply is cut and ends with finish reason "length"; a
	// response body (or one streamed event) too large to read within
	// llm.ReplyBodyBound of it fails. llm.DefaultMaxReplyBytes when zero.
	MaxReplyBytes int
}

// Provider calls an OpenAI-compatible chat completions endpoint. It is safe
// for concurrent use.
type Provider struct {
	name    string
	model   string
	apiKey  string
	timeout time.Duration
	// maxReply caps a reply's bytes; a longer one is cut.
	maxReply int
	// tools caches the encoded tool sets of requests.
	tools toolCache
	// official is set for OpenAI's own API. It is sent
	// max_completion_tokens (its current field, required by its reasoning
	// models) instead of max_tokens, which compatible servers understand,
	// and no metadata (see CheckParams).
	official bool
	svc      oai.ChatCompletionService
	// now is the clock used to read Retry-After dates; tests replace it.
	now func() time.Time
}

var (
	_ llm.Provider      = (*Provider)(nil)
	_ llm.ParamsChecker = (*Provider)(nil)
)

// New returns a Provider for cfg. The HTTP client and request options are
// built once here so that calls only pay for their own request.
func New(cfg Config) (*Provider, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai provider: model is required")
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("openai provider: negative timeout %s", cfg.Timeout)
	}
	if cfg.MaxReplyBytes < 0 {
		return nil, fmt.Errorf("openai provider: negative reply limit %d", cfg.MaxReplyBytes)
	}
	p := &Provider{
		name:     cfg.Name,
		model:    cfg.Model,
		apiKey:   cfg.APIKey,
		timeout:  cfg.Timeout,
		maxReply: cfg.MaxReplyBytes,
		now:      time.Now,
	}
	if p.name == "" {
		p.name = "openai"
	}
	if p.timeout == 0 {
		p.timeout = DefaultTimeout
	}
	if p.maxReply == 0 {
		p.maxReply = llm.DefaultMaxReplyBytes
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	opts := []option.RequestOption{
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if cfg.BaseURL == "" {
		opts = append(opts, option.WithEnvironmentProduction())
		p.official = true
	} else {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("openai provider %s: base URL %q is not an http(s) URL", p.name, cfg.BaseURL)
		}
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
		p.official = u.Hostname() == "api.openai.com"
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	p.svc = oai.NewChatCompletionService(opts...)
	return p, nil
}

// Name returns the configured provider name.
func (p *Provider) Name() string { return p.name }

// errTimedOut is the cause of a call context that our own timeout ended.
var errTimedOut = errors.New("timed out")

// Generate sends req to the chat completions endpoint. With a nil onDelta the
// answer arrives in one response; otherwise it is streamed and onDelta gets
// each piece of content in order. A reply longer than the configured limit
// is cut there, on a rune boundary, and ends with finish reason "length".
// Parameters CheckParams refuses fail the call before it is made. Every
// failure is an *llm.Error.
func (p *Provider) Generate(ctx context.Context, req llm.Request, onDelta llm.OnDelta) (llm.Response, error) {
	if err := p.CheckParams(req.Params); err != nil {
		return llm.Response{}, &llm.Error{Provider: p.name, Err: err}
	}
	body, model, err := p.body(req, onDelta != nil)
	if err != nil {
		return llm.Response{}, &llm.Error{Provider: p.name, Err: err}
	}
	if onDelta == nil {
		return p.complete(ctx, body, model)
	}
	return p.stream(ctx, body, model, onDelta)
}

// CheckParams implements llm.ParamsChecker. Every parameter is sent as
// given, save metadata to OpenAI's own API without store: OpenAI takes
// metadata only for a completion it stores, and the gateway asks it to
// store one only when the client does.
func (p *Provider) CheckParams(params llm.Params) error {
	if p.official && len(params.Metadata) > 0 && (params.Store == nil || !*params.Store) {
		return &llm.UnsupportedError{Provider: p.name, Param: "metadata",
			Reason: "OpenAI takes metadata only for completions it stores: send store true with it"}
	}
	return nil
}

// withBody sends body in place of the SDK's encoding of its parameters.
func withBody(body []byte) option.RequestOption {
	return option.WithRequestBody("application/json", body)
}

// complete makes a non-streaming call. The SDK reads the whole body, so
// that body is bounded as it arrives.
func (p *Provider) complete(ctx context.Context, body []byte, model string) (llm.Response, error) {
	callCtx, cancel := context.WithTimeoutCause(ctx, p.timeout, errTimedOut)
	defer cancel()
	var res *http.Response
	var answer []byte
	limit := limitBodies(p.maxReply, false)
	// The body is decoded here rather than by the SDK so that a malformed
	// answer (not retryable) is told apart from a dropped connection.
	if _, err := p.svc.New(callCtx, oai.ChatCompletionNewParams{}, withBody(body), limit, option.WithResponseInto(&res), option.WithResponseBodyInto(&answer)); err != nil {
		return llm.Response{}, p.classify(ctx, callCtx, res, err)
	}
	var completion oai.ChatCompletion
	if err := json.Unmarshal(answer, &completion); err != nil {
		return llm.Response{}, &llm.Error{Provider: p.name, Status: statusOf(res), Err: fmt.Errorf("invalid response from server: %w", err)}
	}
	resp, err := p.fromCompletion(&completion, model)
	if err != nil {
		return llm.Response{}, &llm.Error{Provider: p.name, Status: statusOf(res), Err: err}
	}
	if llm.CapReply(&resp.Message, p.maxReply) {
		resp.FinishReason = llm.FinishLength
	}
	return resp, nil
}

// stream makes a streaming call. The call fails when the response or any
// following chunk takes longer than the timeout to arrive. It stops
// reading, closing the stream, once the reply reaches its limit.
func (p *Provider) stream(ctx context.Context, body []byte, model string, onDelta llm.OnDelta) (llm.Response, error) {
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(p.timeout, func() { cancel(errTimedOut) })
	defer idle.Stop()

	var res *http.Response
	limit := limitBodies(p.maxReply, true)
	s := p.svc.NewStreaming(callCtx, oai.ChatCompletionNewParams{}, withBody(body), limit, option.WithResponseInto(&res))
	defer s.Close()
	acc := accumulator{model: model, budget: llm.NewReplyBudget(p.maxReply)}
	for s.Next() {
		idle.Reset(p.timeout)
		if acc.add(s.Current(), onDelta) {
			return acc.response(p.name)
		}
	}
	if err := s.Err(); err != nil {
		return llm.Response{}, p.classify(ctx, callCtx, res, err)
	}
	if callCtx.Err() != nil {
		return llm.Response{}, p.classify(ctx, callCtx, res, context.Cause(callCtx))
	}
	if acc.finishReason == "" {
		return llm.Response{}, &llm.Error{
			Provider:  p.name,
			Status:    statusOf(res),
			Retryable: true,
			Err:       errors.New("stream ended before the model finished its answer"),
		}
	}
	return acc.response(p.name)
}

func statusOf(res *http.Response) int {
	if res == nil {
		return 0
	}
	return res.StatusCode
}
