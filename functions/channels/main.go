// Command channels is the Lambda function of the messaging channels'
// webhooks (Slack, Discord, WhatsApp), behind API Gateway's routes under
// /channels/<name>/ (REST proxy event, payload 1.0, buffered). It builds
// each channel whose secret has a value (shared/wiring/cloud,
// channels.go), hands a request to the handler of its route — which
// checks the platform's signature and gives what was delivered to the
// engine, which starts its run through the state machine — then sends
// the replies the channel queued itself (access denied, /help, …) within
// FlushTime, and answers; Discord's interactions get those replies in
// the answer instead. Slack and Discord want their answer within 3
// seconds: the run happens in the step function, never here. A channel whose secret
// has no value yet answers 503.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/channelset"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
)

// FlushTime bounds the delivery of queued replies before answering, well
// within the 3 seconds Discord and Slack wait.
const FlushTime = 1500 * time.Millisecond

func main() {
	h, err := handler(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "channels:", scrub.Scrub(err.Error()))
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}

// Webhooks is the function's handler.
type Webhooks struct {
	// Routes are the channels' handlers by path, Repliers their senders
	// by channel name.
	Routes   map[string]http.Handler
	Repliers map[string]*channel.Replier
	// Off says why each channel named but left out is off.
	Off map[string]string
	// Late, when set, builds a channel of Off whose secret has a value
	// now (cloud.Root.LateChannel), else nil.
	Late  func(ctx context.Context, name string) *channelset.Channel
	Log   *slog.Logger
	Flush func(context.Context)
}

// add serves the channel c.
func (h *Webhooks) add(c *channelset.Channel) {
	h.Repliers[c.Name] = c.Replier
	for path, rh := range c.Routes {
		h.Routes[path] = rh
	}
}

// handler builds the function's handler from the environment.
func handler(ctx context.Context) (*Webhooks, error) {
	root, err := cloud.New(ctx)
	if err != nil {
		return nil, err
	}
	h := &Webhooks{Routes: map[string]http.Handler{}, Repliers: map[string]*channel.Replier{}, Off: root.ChannelsOff, Late: root.LateChannel,
		Log: root.Log, Flush: root.Flush}
	for _, c := range root.Channels {
		h.add(c)
	}
	return h, nil
}

// Handle answers one webhook call: the route's handler's answer, 503 for
// a channel not configured yet, 404 for another path.
func (h *Webhooks) Handle(ctx context.Context, ev events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	if h.Flush != nil {
		defer h.Flush(ctx)
	}
	name := channelOf(ev.Path)
	rh, ok := h.Routes[ev.Path]
	if _, off := h.Off[name]; !ok && off && h.Late != nil {
		// Its secret may have been set since this instance started.
		if c := h.Late(ctx, name); c != nil {
			delete(h.Off, name)
			h.add(c)
			rh, ok = h.Routes[ev.Path]
		}
	}
	if !ok {
		if why, off := h.Off[name]; off {
			h.Log.Error("webhook of a channel not configured", "channel", name, "reason", why)
			return text(http.StatusServiceUnavailable, "channel "+name+" is not configured yet"), nil
		}
		return text(http.StatusNotFound, "not found"), nil
	}
	var acc core.RequestAccessor
	req, err := acc.EventToRequestWithContext(ctx, ev)
	if err != nil {
		return text(http.StatusBadRequest, "bad request"), nil
	}
	w := core.NewProxyResponseWriter()
	rh.ServeHTTP(w, req)
	resp, err := w.GetProxyResponse()
	if err != nil {
		return events.APIGatewayProxyResponse{}, fmt.Errorf("channels: %s %s: %w", ev.HTTPMethod, ev.Path, err)
	}
	// Replies the channel queued (and older ones waiting for a retry) are
	// sent now; what fails stays in the outbox for the next invocation.
	// (Discord answers the channel's own replies to an interaction in the
	// response, since a follow-up is refused until Discord has it.)
	if r := h.Repliers[name]; r != nil {
		fctx, cancel := context.WithTimeout(ctx, FlushTime)
		defer cancel()
		if n, err := r.Flush(fctx, 0); err != nil || n > 0 {
			h.Log.Warn("outbox not fully delivered; the next invocation retries", "channel", name, "pending", n, "error", err)
		}
	}
	return resp, nil
}

// channelOf is the channel of a path /channels/<name>/…, "" for another.
func channelOf(path string) string {
	rest, ok := strings.CutPrefix(path, "/channels/")
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, "/")
	return name
}

func text(code int, body string) events.APIGatewayProxyResponse {
	return events.APIGatewayProxyResponse{StatusCode: code, Body: body + "\n", Headers: map[string]string{"Content-Type": "text/plain; charset=utf-8"}}
}
