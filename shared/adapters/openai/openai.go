// Package openai is the llm.Provider for any server that speaks OpenAI's chat
// completions API: OpenAI itself, OpenRouter, Ollama, vLLM, LM Studio and
// others, and the memory.Embedder for its embeddings API.
//
// It speaks the wire format itself, with net/http and encoding/json
// (client.go), rather than through the official SDK, openai-go: for two
// calls whose requests the adapter encoded itself anyway, the SDK made the
// stripped lambdaclaw binary 19 MB larger (59.1 MB against 39.9 MB for
// linux/arm64), and the step and api functions as much. It never retries:
// retrying, circuit breaking and fallback belong to the llm package's
// wrappers, which rely on the classified *llm.Error every failure here
// returns. The SDK remains a client the tests drive the gateway with.
//
// A user's media (chat.Part) are sent as the client sent them, after the
// message's text: image_url parts (the https URL, or a data: URL),
// input_audio (wav or mp3) and file parts (file_data as a data: URL).
// Config.Input says which kinds the model takes (default: images);
// CheckPart refuses the others before a run is queued.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
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
	// HTTPClient sends the requests, following redirects within the base
	// URL's origin only; when nil, a client over net/http's default
	// transport that keeps 64 idle connections per server (maxIdlePerHost).
	HTTPClient *http.Client
	// MaxReplyBytes caps one reply: its content, refusal and tool calls.
	// A longer reply is cut and ends with finish reason "length"; a
	// response body (or one streamed event) too large to read within
	// llm.ReplyBodyBound of it fails. llm.DefaultMaxReplyBytes when zero.
	MaxReplyBytes int
	// Input are the kinds of parts the model takes besides text
	// (chat.PartImage, chat.PartAudio, chat.PartFile); nil means
	// DefaultInput.
	Input llm.Accepts
}

// DefaultInput is what a model of an OpenAI-compatible server takes
// besides text unless configured: images, which most vision models read.
var DefaultInput = llm.Accepts{chat.PartImage}

// Provider calls an OpenAI-compatible chat completions endpoint. It is safe
// for concurrent use.
type Provider struct {
	name    string
	model   string
	apiKey  string
	timeout time.Duration
	// maxReply caps a reply's bytes; a longer one is cut.
	maxReply int
	// input are the kinds of parts the model takes besides text.
	input llm.Accepts
	// tools caches the encoded tool sets of requests.
	tools toolCache
	// official is set for OpenAI's own API. It is sent
	// max_completion_tokens (its current field, required by its reasoning
	// models) instead of max_tokens, which compatible servers understand,
	// and no metadata (see CheckParams).
	official bool
	api      *client
	// now is the clock used to read Retry-After dates; tests replace it.
	now func() time.Time
}

var (
	_ llm.Provider      = (*Provider)(nil)
	_ llm.ParamsChecker = (*Provider)(nil)
	_ llm.PartsChecker  = (*Provider)(nil)
)

// New returns a Provider for cfg.
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
		input:    cfg.Input,
		now:      time.Now,
	}
	if p.input == nil {
		p.input = DefaultInput
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
	api, err := newClient(cfg.BaseURL, cfg.APIKey, cfg.HTTPClient)
	if err != nil {
		return nil, fmt.Errorf("openai provider %s: %w", p.name, err)
	}
	p.api, p.official = api, api.official()
	return p, nil
}

// Name returns the configured provider name.
func (p *Provider) Name() string { return p.name }

// Bound implements llm.Bounded: the timeout bounds a call that does not
// stream (a streamed one, only the wait for each chunk).
func (p *Provider) Bound() (time.Duration, bool) { return p.timeout, true }

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
	if err := llm.CheckParts(p, req.Messages); err != nil {
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

// CheckPart implements llm.PartsChecker: the model takes the kinds of
// parts its input says, and audio in the formats input_audio has.
func (p *Provider) CheckPart(part chat.Part) error {
	if err := p.input.Check(p.name, part); err != nil {
		return err
	}
	if _, ok := audioFormats[part.MediaType]; part.Type == chat.PartAudio && !ok {
		return &llm.UnsupportedError{Provider: p.name, Param: "audio", Reason: "input_audio takes wav or mp3, not " + part.MediaType}
	}
	return nil
}

// complete makes a non-streaming call, reading a body bounded for the
// reply limit.
func (p *Provider) complete(ctx context.Context, body []byte, model string) (llm.Response, error) {
	callCtx, cancel := context.WithTimeoutCause(ctx, p.timeout, errTimedOut)
	defer cancel()
	res, err := p.api.post(callCtx, "chat/completions", body)
	if err != nil {
		return llm.Response{}, p.classify(ctx, callCtx, res, err)
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(llm.LimitBody(res.Body, p.maxReply))
	if err != nil {
		return llm.Response{}, p.classify(ctx, callCtx, res, err)
	}
	var c chatCompletion
	if err := json.Unmarshal(answer, &c); err != nil {
		return llm.Response{}, &llm.Error{Provider: p.name, Status: res.StatusCode, Err: fmt.Errorf("invalid response from server: %w", err)}
	}
	resp, err := p.fromCompletion(&c, model)
	if err != nil {
		return llm.Response{}, &llm.Error{Provider: p.name, Status: res.StatusCode, Err: err}
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

	res, err := p.api.post(callCtx, "chat/completions", body)
	if err != nil {
		return llm.Response{}, p.classify(ctx, callCtx, res, err)
	}
	defer res.Body.Close()
	events := newEventReader(limitEvents(res.Body, p.maxReply), p.maxReply)
	acc := accumulator{model: model, budget: llm.NewReplyBudget(p.maxReply)}
	for {
		data, err := events.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return llm.Response{}, p.classify(ctx, callCtx, res, err)
		}
		if bytes.HasPrefix(data, []byte("[DONE]")) {
			break
		}
		c, err := decodeChunk(data)
		if err != nil {
			return llm.Response{}, p.classify(ctx, callCtx, res, err)
		}
		idle.Reset(p.timeout)
		if acc.add(c, onDelta) {
			return acc.response(p.name)
		}
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
