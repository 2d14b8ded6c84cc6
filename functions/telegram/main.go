// Command telegram is the Lambda function of the Telegram webhook, behind
// API Gateway's POST /telegram/webhook (REST proxy event, payload 1.0,
// buffered). It checks the X-Telegram-Bot-Api-Secret-Token header against
// the secret TELEGRAM_WEBHOOK_SECRET_ARN names (read once per container)
// in constant time, hands the update to the Telegram channel, which starts
// its run through the state machine, sends the replies the channel
// queued itself (access denied, /help, …) and answers 200. The channel's
// environment is in shared/wiring/cloud (telegram.go).
//
// The same function serves the stack's custom resource that registers the
// webhook during the deployment (customresource.go); Invoke tells the two
// events apart by shape.
package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/apigw"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/telegram"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
)

func main() {
	h, err := handler(context.Background())
	if err != nil {
		// The function still starts, so that CloudFormation gets an
		// answer: a deployment fails with the reason, a deletion goes
		// through. Webhook calls fail with the error.
		fmt.Fprintln(os.Stderr, "telegram:", scrub.Scrub(err.Error()))
		h = &Webhook{Log: slog.New(scrub.NewHandler(slog.Default().Handler())), initErr: err}
	}
	lambda.Start(h.Invoke)
}

// Webhook is the function's handler.
type Webhook struct {
	Channel *telegram.Channel
	// Secret returns the webhook's secret_token.
	Secret func(ctx context.Context) (string, error)
	Log    *slog.Logger
	// FlushTime bounds the delivery of queued replies before answering.
	FlushTime time.Duration
	// Client calls the Bot API with the bot token, for setWebhook and
	// deleteWebhook.
	Client *telegram.Client
	// Flush, when set, writes the events an invocation emitted before
	// Invoke returns (cloud.Root.Flush).
	Flush func(context.Context)

	// initErr is why the handler could not be built; only custom resource
	// events are answered then.
	initErr error
}

// handler builds the function's handler from the environment.
func handler(ctx context.Context) (*Webhook, error) {
	root, err := cloud.New(ctx)
	if err != nil {
		return nil, err
	}
	if root.Telegram == nil {
		return nil, errors.New("no bot token: set TELEGRAM_BOT_TOKEN_SECRET_ARN")
	}
	secret := func(ctx context.Context) (string, error) {
		if v := os.Getenv("TELEGRAM_WEBHOOK_SECRET"); v != "" {
			return v, nil
		}
		arn := os.Getenv("TELEGRAM_WEBHOOK_SECRET_ARN")
		if arn == "" {
			return "", errors.New("TELEGRAM_WEBHOOK_SECRET_ARN is not set")
		}
		return root.Secret(ctx, arn)
	}
	token := os.Getenv("TELEGRAM_BOT_TOKEN")
	if token == "" {
		// Read by cloud.New already: served from the cache.
		if token, err = root.Secret(ctx, os.Getenv("TELEGRAM_BOT_TOKEN_SECRET_ARN")); err != nil {
			return nil, fmt.Errorf("bot token: %w", err)
		}
	}
	return &Webhook{Channel: root.Telegram, Secret: secret, Log: root.Log, FlushTime: 5 * time.Second,
		Client: telegram.NewClient(os.Getenv("TELEGRAM_API_BASE"), token), Flush: root.Flush}, nil
}

func respond(code int, body string) events.APIGatewayProxyResponse {
	return events.APIGatewayProxyResponse{StatusCode: code, Body: body + "\n",
		Headers: map[string]string{"Content-Type": "application/json"}}
}

// Handle answers one webhook call: 401 without the secret header, 403 with
// a wrong one, 400 for a body that is no update, 500 when the update could
// not be handed off (Telegram delivers it again; a repeat of an update
// already handled is skipped), 200 otherwise.
func (h *Webhook) Handle(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	if req.HTTPMethod != "" && req.HTTPMethod != http.MethodPost {
		return respond(http.StatusMethodNotAllowed, `{"error":"method not allowed"}`), nil
	}
	got := apigw.Header(req.Headers, req.MultiValueHeaders, telegram.SecretHeader)
	if got == "" {
		return respond(http.StatusUnauthorized, `{"error":"missing secret token"}`), nil
	}
	want, err := h.Secret(ctx)
	if err != nil {
		h.Log.Error("read webhook secret", "error", err)
		return respond(http.StatusInternalServerError, `{"error":"internal error"}`), nil
	}
	// Hashes have one length, so the comparison's time tells nothing.
	gotSum, wantSum := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	if want == "" || subtle.ConstantTimeCompare(gotSum[:], wantSum[:]) != 1 {
		return respond(http.StatusForbidden, `{"error":"bad secret token"}`), nil
	}
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(req.Body); err != nil {
			return respond(http.StatusBadRequest, `{"error":"bad body"}`), nil
		}
	}
	var u telegram.Update
	if err := json.Unmarshal(body, &u); err != nil {
		return respond(http.StatusBadRequest, `{"error":"bad update"}`), nil
	}
	if err := h.Channel.Handle(ctx, u); err != nil {
		h.Log.Error("handle update", "update_id", u.UpdateID, "error", err)
		return respond(http.StatusInternalServerError, `{"error":"internal error"}`), nil
	}
	// Replies the channel queued (and older ones waiting for a retry) are
	// sent now; what fails stays in the outbox for the next invocation.
	fctx, cancel := context.WithTimeout(ctx, h.FlushTime)
	defer cancel()
	if n, err := h.Channel.Flush(fctx, 0); err != nil || n > 0 {
		h.Log.Warn("outbox not fully delivered; the next invocation retries", "pending", n, "error", err)
	}
	return respond(http.StatusOK, `{}`), nil
}
