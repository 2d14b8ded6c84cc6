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
	noRedirects := *client
	noRedirects.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	client = &noRedirects
	return func(ctx context.Context, a schedule.Answer) error {
		u, err := url.Parse(a.Job.Deliver.To)
		if err != nil {
			return fmt.Errorf("webhook URL: %w", err)
		}
		body, err := json.Marshal(Payload{
			Type: "check_in", JobID: a.Job.ID, JobName: a.Job.Name, Agent: a.Job.Agent,
			ScheduledAt: a.Firing.At.UTC(), RunID: a.Run.RunID, SessionID: a.Run.SessionID,
			Content: scrub.Scrub(a.Result.Content), Error: a.Result.Error, TotalTokens: a.Run.Usage.TotalTokens,
			IdempotencyKey: a.Run.RunID,
		})
		if err != nil {
			return fmt.Errorf("encode webhook body: %w", err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("webhook request: %w", err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "lambdaclaw-webhook/1")
		req.Header.Set("Idempotency-Key", a.Run.RunID)
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
}
