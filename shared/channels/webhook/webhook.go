// Package webhook delivers the answers of scheduled check-ins to an HTTP
// endpoint (the delivery target webhook:<url>): one JSON POST per
// answer, through a client with web_fetch's protection against
// server-side request forgery.
package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
)

// Payload is the JSON body of a delivery. IdempotencyKey repeats the
// Idempotency-Key header: the run id, the same if a delivery is retried,
// so a receiver can drop a repeat.
type Payload struct {
	Type           string    `json:"type"` // "check_in"
	JobID          string    `json:"job_id"`
	JobName        string    `json:"job_name,omitempty"`
	Agent          string    `json:"agent"`
	ScheduledAt    time.Time `json:"scheduled_at"`
	RunID          string    `json:"run_id"`
	SessionID      string    `json:"session_id"`
	Content        string    `json:"content"`
	Error          string    `json:"error,omitempty"`
	TotalTokens    int       `json:"total_tokens"`
	IdempotencyKey string    `json:"idempotency_key"`
}

// maxAnswerRead is how much of a receiver's answer is read, to reuse the
// connection; the rest is dropped.
const maxAnswerRead = 4 << 10

// Delivery returns the delivery of webhook targets, POSTing with client,
// which should be a webfetch.Client. Redirects are not followed: a
// webhook answers 2xx, or the delivery failed.
func Delivery(client *http.Client) schedule.Delivery {
	client = noRedirects(client)
	return func(ctx context.Context, a schedule.Answer) error {
		return post(ctx, client, a.Job.Deliver.To, a.Run.RunID, Payload{
			Type: "check_in", JobID: a.Job.ID, JobName: a.Job.Name, Agent: a.Job.Agent,
			ScheduledAt: a.Firing.At.UTC(), RunID: a.Run.RunID, SessionID: a.Run.SessionID,
			Content: scrub.Scrub(a.Result.Content), Error: a.Result.Error, TotalTokens: a.Run.Usage.TotalTokens,
			IdempotencyKey: a.Run.RunID,
		})
	}
}

// BudgetPayload is the JSON body of a budget notice (BudgetNotifier).
type BudgetPayload struct {
	Type  string `json:"type"` // "budget_low"
	Scope string `json:"scope"`
	// Window is the budget's period: a day (2026-12-07) or a month.
	Window         string `json:"window"`
	Spent          int64  `json:"spent"`
	Limit          int64  `json:"limit"`
	Text           string `json:"text"`
	IdempotencyKey string `json:"idempotency_key"`
}

// BudgetNotifier POSTs notices of budgets running low to URL
// (agent.BudgetNotifier), with Client as Delivery does.
type BudgetNotifier struct {
	Client *http.Client
	URL    string
}

// BudgetLow implements agent.BudgetNotifier.
func (b BudgetNotifier) BudgetLow(ctx context.Context, n agent.BudgetNotice) error {
	key := "budget-" + n.Scope + "-" + n.Window
	return post(ctx, noRedirects(b.Client), b.URL, key, BudgetPayload{Type: "budget_low", Scope: n.Scope, Window: n.Window,
		Spent: n.Spent, Limit: n.Limit, Text: n.Text(), IdempotencyKey: key})
}

// noRedirects returns client that follows no redirects.
func noRedirects(client *http.Client) *http.Client {
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// post POSTs payload as JSON to target with the idempotency key key.
func post(ctx context.Context, client *http.Client, target, key string, payload any) error {
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("webhook URL: %w", err)
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("encode webhook body: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "lambdaclaw-webhook/1")
	req.Header.Set("Idempotency-Key", key)
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("POST %s: %w", u.Redacted(), err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerRead))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("POST %s: the webhook answered %s", u.Redacted(), resp.Status)
	}
	return nil
}
