package awsapi

import (
	"context"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// BedrockRuntime is the Bedrock Runtime API (restJson1): Converse,
// ConverseStream and InvokeModel.
type BedrockRuntime struct{ c *Client }

var bedrockRuntime = Service{Name: "Bedrock Runtime", Prefix: "bedrock-runtime", Signing: "bedrock", protocol: restJSON}

// NewBedrockRuntime returns a Bedrock Runtime client of cfg; endpoint,
// when not empty, overrides the Region's. maxBody, when positive, bounds
// an answer's body and each message of a stream; MaxBody when not.
func NewBedrockRuntime(cfg aws.Config, endpoint string, maxBody int64) (*BedrockRuntime, error) {
	c, err := newClient(cfg, bedrockRuntime, endpoint)
	if c != nil && maxBody > 0 {
		c.maxBody = maxBody
	}
	return &BedrockRuntime{c}, err
}

// Converse calls Converse on model with body, the members of
// ConverseRequest but modelId as JSON, and returns the answer's JSON.
func (b *BedrockRuntime) Converse(ctx context.Context, model string, body []byte) ([]byte, error) {
	res, err := b.c.do(ctx, b.modelCall("Converse", model, "/converse", "application/json", "application/json", body, false))
	if err != nil {
		return nil, err
	}
	return res.body, nil
}

// ConverseStream calls ConverseStream on model with body (as Converse
// takes it) and returns the answer's events, each message bounded as an
// answer's body is; the caller closes it.
func (b *BedrockRuntime) ConverseStream(ctx context.Context, model string, body []byte) (*EventStream, error) {
	const op = "ConverseStream"
	res, err := b.c.do(ctx, b.modelCall(op, model, "/converse-stream", "application/json", "application/vnd.amazon.eventstream", body, true))
	if err != nil {
		return nil, err
	}
	s := newEventStream(b.c.svc, op, res.stream)
	s.maxLen = min(b.c.maxBody, MaxEventLen)
	return s, nil
}

// InvokeModel calls InvokeModel on model with body, of contentType, and
// returns the answer's body, of the type accept asks for.
func (b *BedrockRuntime) InvokeModel(ctx context.Context, model, contentType, accept string, body []byte) ([]byte, error) {
	res, err := b.c.do(ctx, b.modelCall("InvokeModel", model, "/invoke", contentType, accept, body, false))
	if err != nil {
		return nil, err
	}
	return res.body, nil
}

// modelCall is a POST of body to /model/{modelId}<suffix>.
func (b *BedrockRuntime) modelCall(op, model, suffix, contentType, accept string, body []byte, stream bool) request {
	h := http.Header{}
	h.Set("Content-Type", contentType)
	h.Set("Accept", accept)
	return request{op: op, method: http.MethodPost, path: "/model/" + escapeLabel(model) + suffix, header: h, body: body, stream: stream}
}
