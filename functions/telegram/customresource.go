package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/cfn"
	"github.com/aws/aws-lambda-go/events"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
)

// Registering the webhook. The stack's custom resource Custom::TelegramWebhook
// (infra/stack.go, telegramWebhook) names this function as its
// ServiceToken, so CloudFormation invokes it with a custom resource event
// (RequestType, ResponseURL, StackId, ResourceProperties.Url) and waits
// for the answer PUT to ResponseURL:
//
//   - Create, Update: setWebhook(Url, the webhook secret, the update types
//     the channel handles, pending updates kept). A refusal answers FAILED
//     with Telegram's description, which fails the deployment.
//   - Delete: deleteWebhook; failures are logged and ignored, so deleting
//     the stack never sticks on Telegram.
//
// The physical id is one constant, so an Update never replaces the
// resource (a replacement's Delete would remove the new webhook). Neither
// the token nor the secret is in the event, the answer or the log.

// WebhookResourceID is the physical id of the webhook registration.
const WebhookResourceID = "lambdaclaw-telegram-webhook"

// registerTimeout bounds the Bot API call, leaving the function's 30 s
// room to answer CloudFormation.
const registerTimeout = 15 * time.Second

// isCustomResource tells a CloudFormation custom resource event from API
// Gateway's proxy event by shape: only the former has RequestType,
// ResponseURL and StackId.
func isCustomResource(raw json.RawMessage) bool {
	var probe struct {
		RequestType string `json:"RequestType"`
		ResponseURL string `json:"ResponseURL"`
		StackID     string `json:"StackId"`
	}
	return json.Unmarshal(raw, &probe) == nil && probe.RequestType != "" && probe.ResponseURL != "" && probe.StackID != ""
}

// Invoke is the function's entry point: a custom resource event registers
// or removes the webhook, anything else is a webhook call from API Gateway.
func (h *Webhook) Invoke(ctx context.Context, raw json.RawMessage) (any, error) {
	if h.Flush != nil {
		defer h.Flush(ctx)
	}
	if isCustomResource(raw) {
		var ev cfn.Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("custom resource event: %w", err)
		}
		return nil, h.CustomResource(ctx, ev)
	}
	if h.initErr != nil {
		return nil, h.initErr
	}
	var req events.APIGatewayProxyRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return respond(400, `{"error":"bad request"}`), nil
	}
	return h.Handle(ctx, req)
}

// CustomResource handles one CloudFormation custom resource event and
// answers it at ResponseURL. The error is only the answer's delivery
// failing (Lambda then retries the event; setWebhook and deleteWebhook
// may be repeated).
func (h *Webhook) CustomResource(ctx context.Context, ev cfn.Event) error {
	r := cfn.NewResponse(&ev)
	r.PhysicalResourceID = ev.PhysicalResourceID
	if r.PhysicalResourceID == "" {
		r.PhysicalResourceID = WebhookResourceID
	}
	r.Status = cfn.StatusSuccess
	if err := h.register(ctx, ev); err != nil {
		r.Status = cfn.StatusFailed
		r.Reason = truncate(err.Error(), 1000)
		h.Log.Error("webhook registration failed", "request", ev.RequestType, "error", err)
	}
	if err := r.Send(); err != nil {
		h.Log.Error("answer CloudFormation", "request", ev.RequestType, "error", err)
		return fmt.Errorf("answer CloudFormation: %w", err)
	}
	return nil
}

func (h *Webhook) register(ctx context.Context, ev cfn.Event) error {
	switch ev.RequestType {
	case cfn.RequestCreate, cfn.RequestUpdate:
		if h.initErr != nil {
			return fmt.Errorf("telegram function cannot start (is the bot token stored in the Secrets Manager secret %q? shared/channels/telegram/README.md, On AWS): %w",
				os.Getenv("TELEGRAM_BOT_TOKEN_SECRET_ARN"), h.initErr)
		}
		url, _ := ev.ResourceProperties["Url"].(string)
		if url == "" {
			return errors.New("the custom resource has no Url property")
		}
		secret, err := h.Secret(ctx)
		if err != nil {
			return fmt.Errorf("read the webhook secret: %w", err)
		}
		if secret == "" {
			return errors.New("the webhook secret is empty")
		}
		cctx, cancel := context.WithTimeout(ctx, registerTimeout)
		defer cancel()
		if err := h.Client.SetWebhook(cctx, url, secret); err != nil {
			var ae *channel.Error
			if errors.As(err, &ae) {
				return fmt.Errorf("setWebhook for %s: Telegram refused it: %s (%d)", url, ae.Message, ae.Status)
			}
			return fmt.Errorf("setWebhook for %s: %w", url, err)
		}
		h.Log.Info("webhook registered", "request", ev.RequestType, "url", url)
		return nil
	case cfn.RequestDelete:
		if h.initErr != nil {
			h.Log.Warn("webhook not removed: the function cannot start; ignored", "error", h.initErr)
			return nil
		}
		cctx, cancel := context.WithTimeout(ctx, registerTimeout)
		defer cancel()
		if err := h.Client.DeleteWebhook(cctx); err != nil {
			h.Log.Warn("deleteWebhook failed; ignored", "error", err)
			return nil
		}
		h.Log.Info("webhook removed")
		return nil
	default:
		return fmt.Errorf("unknown custom resource request type %q", ev.RequestType)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
