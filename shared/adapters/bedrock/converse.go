package bedrock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// DefaultConverseTimeout bounds a Converse call when ConverseConfig.Timeout
// is not set.
const DefaultConverseTimeout = 120 * time.Second

// ConverseConfig describes a model reached through Bedrock's Converse API.
type ConverseConfig struct {
	// Name identifies the provider in errors and responses; "bedrock" when
	// empty.
	Name string
	// Region is the Bedrock region. When empty, the region comes from the
	// AWS configuration (AWS_REGION, the shared config file). Unused with
	// AWS.
	Region string
	// Model is the model id, inference profile id or ARN used when a
	// request does not name one, such as
	// "anthropic.claude-3-5-haiku-20241022-v1:0". Required.
	Model string
	// Timeout bounds a non-streaming call, and for a streaming call the wait
	// for the response and for each following event.
	// DefaultConverseTimeout when zero.
	Timeout time.Duration
	// AWS is the configuration of the calls: Region (Region, when set,
	// replaces it), credentials, HTTP client and attempts
	// (RetryMaxAttempts; the SDK's 3 when zero). When nil, it is the
	// environment's (awsapi.EnvConfig: a Lambda function's credentials)
	// with one attempt a call; the CLI passes the SDK's default chain's.
	AWS *aws.Config
	// Endpoint replaces the regional endpoint: a VPC endpoint, or a test
	// server.
	Endpoint string
	// MaxReplyBytes caps one reply: its text and tool calls. A longer
	// reply is cut and ends with finish reason "length"; a response body
	// (or one event-stream message) too large to read within
	// llm.ReplyBodyBound of it fails. llm.DefaultMaxReplyBytes when zero.
	MaxReplyBytes int
	// Input are the kinds of parts the model takes besides text
	// (chat.PartImage, chat.PartFile); nil means DefaultInput. Audio is
	// never sent.
	Input llm.Accepts
	// Images, when set, fetches the images messages give by https URL,
	// since Converse takes only an image's bytes: it should refuse
	// private addresses (webfetch.Client). Nil refuses images by URL.
	Images *http.Client
}

// Converse is the llm.Provider on Amazon Bedrock's Converse and
// ConverseStream APIs. Retrying, circuit breaking and fallback belong to the
// llm package's wrappers, which rely on the classified *llm.Error every
// failure here returns. It is safe for concurrent use.
type Converse struct {
	name    string
	model   string
	timeout time.Duration
	// maxReply caps a reply's bytes; a longer one is cut.
	maxReply int
	// input are the kinds of parts the model takes besides text.
	input llm.Accepts
	// images fetches images given by URL; nil when none are taken.
	images *http.Client
	// client reads an answer's body, and each message of a stream, up
	// to llm.ReplyBodyBound(maxReply).
	client *awsapi.BedrockRuntime
	// now is the clock used to read Retry-After dates, and afterFunc
	// starts the timeout's timer; tests replace them.
	now       func() time.Time
	afterFunc func(time.Duration, func()) timer
}

var _ llm.Provider = (*Converse)(nil)

// NewConverse returns a Converse provider for cfg. Without cfg.AWS it
// reads the environment's AWS configuration; it makes no call.
func NewConverse(ctx context.Context, cfg ConverseConfig) (*Converse, error) {
	c := &Converse{name: cfg.Name, model: cfg.Model, timeout: cfg.Timeout, maxReply: cfg.MaxReplyBytes, input: cfg.Input, images: cfg.Images, now: time.Now, afterFunc: afterFunc}
	if c.input == nil {
		c.input = DefaultInput
	}
	if c.name == "" {
		c.name = "bedrock"
	}
	if c.timeout == 0 {
		c.timeout = DefaultConverseTimeout
	}
	if c.maxReply == 0 {
		c.maxReply = llm.DefaultMaxReplyBytes
	}
	switch {
	case c.model == "":
		return nil, fmt.Errorf("bedrock provider %s: model is required", c.name)
	case c.timeout < 0:
		return nil, fmt.Errorf("bedrock provider %s: negative timeout %s", c.name, c.timeout)
	case c.maxReply < 0:
		return nil, fmt.Errorf("bedrock provider %s: negative reply limit %d", c.name, c.maxReply)
	}
	if cfg.Endpoint != "" {
		if u, err := url.Parse(cfg.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("bedrock provider %s: endpoint %q is not an http(s) URL", c.name, cfg.Endpoint)
		}
	}
	var awsCfg aws.Config
	if cfg.AWS != nil {
		awsCfg = *cfg.AWS
	} else {
		loaded, err := awsapi.EnvConfig(os.Getenv)
		if err != nil {
			return nil, fmt.Errorf("bedrock provider %s: %w", c.name, err)
		}
		awsCfg = loaded
		awsCfg.RetryMaxAttempts = 1
	}
	if cfg.Region != "" {
		awsCfg.Region = cfg.Region
	}
	if awsCfg.Region == "" {
		return nil, fmt.Errorf("bedrock provider %s: no region: set region in the config or AWS_REGION", c.name)
	}
	client, err := awsapi.NewBedrockRuntime(awsCfg, cfg.Endpoint, llm.ReplyBodyBound(c.maxReply))
	if err != nil {
		return nil, fmt.Errorf("bedrock provider %s: %w", c.name, err)
	}
	c.client = client
	return c, nil
}

// Name returns the configured provider name.
func (c *Converse) Name() string { return c.name }

// Bound implements llm.Bounded: the timeout bounds a call that does not
// stream (a streamed one, only the wait for each event).
func (c *Converse) Bound() (time.Duration, bool) { return c.timeout, true }

// timer is the part of *time.Timer the providers use, so that tests can
// decide when a timeout fires.
type timer interface {
	Reset(d time.Duration) bool
	Stop() bool
}

// afterFunc is time.AfterFunc returning a timer.
func afterFunc(d time.Duration, f func()) timer { return time.AfterFunc(d, f) }

// errConverseTimedOut is the cause of a call context that the provider's
// own timeout ended.
var errConverseTimedOut = errors.New("timed out")

// Generate sends req with Converse, or with ConverseStream when onDelta is
// non-nil, in which case onDelta gets each piece of text in order. A reply
// longer than the configured limit is cut there, on a rune boundary, and
// ends with finish reason "length". Parameters CheckParams refuses fail
// the call before it is made. Every failure is an *llm.Error.
func (c *Converse) Generate(ctx context.Context, req llm.Request, onDelta llm.OnDelta) (llm.Response, error) {
	if err := c.CheckParams(req.Params); err != nil {
		return llm.Response{}, &llm.Error{Provider: c.name, Err: err}
	}
	if err := llm.CheckParts(c, req.Messages); err != nil {
		return llm.Response{}, &llm.Error{Provider: c.name, Err: err}
	}
	msgs, err := c.fetchImages(ctx, req.Messages)
	if err != nil {
		return llm.Response{}, &llm.Error{Provider: c.name, Err: err}
	}
	req.Messages = msgs
	model := req.Model
	if model == "" {
		model = c.model
	}
	in, err := converseInput(req)
	if err != nil {
		return llm.Response{}, &llm.Error{Provider: c.name, Err: err}
	}
	body, err := marshalRequest(in)
	if err != nil {
		return llm.Response{}, &llm.Error{Provider: c.name, Err: err}
	}
	var resp llm.Response
	if onDelta == nil {
		resp, err = c.converse(ctx, model, body)
	} else {
		resp, err = c.converseStream(ctx, model, body, onDelta)
	}
	if err != nil {
		return llm.Response{}, err
	}
	keepCalls(&resp, in, req.Params)
	return resp, nil
}

// converse makes a non-streaming call of model with body.
func (c *Converse) converse(ctx context.Context, model string, body []byte) (llm.Response, error) {
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timeout := c.afterFunc(c.timeout, func() { cancel(errConverseTimedOut) })
	defer timeout.Stop()
	out, err := c.client.Converse(callCtx, model, body)
	if err != nil {
		return llm.Response{}, c.classify(ctx, callCtx, err, false)
	}
	resp, err := fromConverseOutput(out)
	if err != nil {
		return llm.Response{}, &llm.Error{Provider: c.name, Status: http.StatusOK, Err: err}
	}
	if llm.CapReply(&resp.Message, c.maxReply) {
		resp.FinishReason = llm.FinishLength
	}
	resp.Model, resp.Provider = model, c.name
	return resp, nil
}

// converseStream makes a streaming call of model with body. The call fails when the response or
// any following event takes longer than the timeout to arrive, and when the
// stream ends before messageStop. It stops reading, closing the stream,
// once the reply reaches its limit.
func (c *Converse) converseStream(ctx context.Context, model string, body []byte, onDelta llm.OnDelta) (llm.Response, error) {
	callCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := c.afterFunc(c.timeout, func() { cancel(errConverseTimedOut) })
	defer idle.Stop()

	stream, err := c.client.ConverseStream(callCtx, model, body)
	if err != nil {
		return llm.Response{}, c.classify(ctx, callCtx, err, false)
	}
	defer stream.Close()
	acc := newStreamAccumulator(c.maxReply)
	for {
		ev, err := stream.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return llm.Response{}, c.classify(ctx, callCtx, err, true)
		}
		idle.Reset(c.timeout)
		full, err := acc.add(ev, onDelta)
		if err != nil {
			return llm.Response{}, c.classify(ctx, callCtx, err, true)
		}
		if full {
			return c.streamResponse(acc, model)
		}
	}
	if callCtx.Err() != nil {
		return llm.Response{}, c.classify(ctx, callCtx, context.Cause(callCtx), true)
	}
	if acc.stopReason == "" {
		return llm.Response{}, &llm.Error{
			Provider:  c.name,
			Status:    http.StatusOK,
			Retryable: true,
			Err:       errors.New("stream cut off before the model finished its answer (no messageStop)"),
		}
	}
	return c.streamResponse(acc, model)
}

// streamResponse returns the answer acc assembled from model.
func (c *Converse) streamResponse(acc *streamAccumulator, model string) (llm.Response, error) {
	resp, err := acc.response()
	if err != nil {
		return llm.Response{}, &llm.Error{Provider: c.name, Status: http.StatusOK, Err: err}
	}
	resp.Model, resp.Provider = model, c.name
	return resp, nil
}

// finishReason maps Bedrock's stop reason to the OpenAI vocabulary the rest
// of lambdaclaw speaks; reasons without an equivalent pass through.
func finishReason(r string) string {
	switch r {
	case "end_turn", "stop_sequence":
		return "stop"
	case "tool_use":
		return "tool_calls"
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "guardrail_intervened", "content_filtered":
		return "content_filter"
	}
	return r
}
