package telegram

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"
)

// SecretHeader carries the webhook's secret_token on every webhook call.
const SecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// maxAttempts is how often a message is tried before it is marked failed;
// permanent errors (400, 403) give up after permanentAttempts.
const (
	maxAttempts       = 30
	permanentAttempts = 3
)

// sendLoop delivers the outbox until ctx ends, pruning the seen updates
// hourly; see sendPass.
func (c *Channel) sendLoop(ctx context.Context) {
	lastPrune := time.Time{}
	for ctx.Err() == nil {
		if time.Since(lastPrune) > time.Hour {
			if err := c.cfg.Store.PruneSeen(ctx, time.Now().Add(-c.cfg.SeenTTL)); err != nil && ctx.Err() == nil {
				c.log.Warn("prune seen updates", "error", err)
			}
			lastPrune = time.Now()
		}
		next, _ := c.sendPass(ctx)
		if later := time.Now().Add(5 * time.Second); next.After(later) {
			next = later
		}
		t := time.NewTimer(max(time.Until(next), 10*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-c.kick:
		case <-t.C:
		}
		t.Stop()
	}
}

// Flush delivers the outbox now, for a process that cannot keep sendLoop
// running (a Lambda function): it makes passes over the outbox while
// messages are waiting for a retry due within wait, and returns how many
// messages are still pending when it gives up. Those are retried by the
// next Flush or sendLoop, whichever process runs it.
func (c *Channel) Flush(ctx context.Context, wait time.Duration) (pending int, err error) {
	deadline := time.Now().Add(wait)
	for {
		next, n := c.sendPass(ctx)
		if n == 0 || ctx.Err() != nil || next.After(deadline) {
			if ctx.Err() != nil {
				return n, ctx.Err()
			}
			return n, nil
		}
		if !sleepCtx(ctx, max(time.Until(next), 10*time.Millisecond)) {
			return n, ctx.Err()
		}
	}
}

// markTimeout bounds recording a delivered message, which outlives a
// cancelled context.
const markTimeout = 5 * time.Second

// sendPass makes one pass over the outbox: in order per chat, a message
// is marked sent only with the message_id Telegram answered; a failure
// blocks its chat's later messages until a retry, after retry_after on 429
// or an exponential backoff otherwise. It returns when the next message
// is due (a far time when none is) and how many are left pending.
func (c *Channel) sendPass(ctx context.Context) (next time.Time, pending int) {
	next = time.Now().Add(24 * time.Hour)
	msgs, err := c.cfg.Store.UnsentOutbox(ctx, 500)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Error("read outbox", "error", err)
		}
		return time.Now().Add(5 * time.Second), 1
	}
	blocked := map[int64]bool{}
	for _, m := range msgs {
		if ctx.Err() != nil {
			return next, len(msgs)
		}
		if blocked[m.ChatID] {
			pending++
			continue
		}
		if now := time.Now(); m.NextAt.After(now) {
			blocked[m.ChatID] = true
			pending++
			if m.NextAt.Before(next) {
				next = m.NextAt
			}
			continue
		}
		id, err := c.cfg.Client.SendMessage(ctx, m.ChatID, m.Text)
		if err == nil {
			// Telegram has the message: record that even when shutting
			// down, or the restarted server would send it again.
			mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
			err := c.cfg.Store.MarkSent(mctx, m.ID, id, time.Now().UTC())
			cancel()
			if err != nil {
				c.log.Error("mark reply sent", "outbox_id", m.ID, "error", err)
			}
			continue
		}
		if ctx.Err() != nil {
			return next, len(msgs)
		}
		blocked[m.ChatID] = true
		attempts := m.Attempts + 1
		delay := min(500*time.Millisecond<<min(attempts-1, 20), 5*time.Minute)
		var ae *APIError
		if errors.As(err, &ae) && ae.RetryAfter > 0 {
			delay = ae.RetryAfter
		}
		failed := attempts >= maxAttempts || Permanent(err) && attempts >= permanentAttempts
		at := time.Now().Add(delay)
		if err := c.cfg.Store.MarkRetry(ctx, m.ID, attempts, at.UTC(), err.Error(), failed); err != nil {
			c.log.Error("mark reply retry", "outbox_id", m.ID, "error", err)
		}
		if failed {
			c.log.Error("reply not delivered; giving up", "outbox_id", m.ID, "chat_id", m.ChatID, "attempts", attempts, "error", err)
			continue
		}
		pending++
		c.log.Warn("reply not delivered; will retry", "outbox_id", m.ID, "chat_id", m.ChatID, "attempt", attempts, "retry_in", delay.String(), "error", err)
		if at.Before(next) {
			next = at
		}
	}
	return next, pending
}

// pollLoop long-polls getUpdates. The offset is saved only after every
// update before it was handled, so a restart repeats nothing handled and
// loses nothing unhandled (a repeat is skipped by Handle anyway).
func (c *Channel) pollLoop(ctx context.Context) {
	var offset int64
	for {
		v, err := c.cfg.Store.State(ctx, KeyOffset)
		if err == nil {
			offset, _ = strconv.ParseInt(v, 10, 64)
			break
		}
		c.log.Error("read polling offset", "error", err)
		if !sleepCtx(ctx, 5*time.Second) {
			return
		}
	}
	c.log.Info("telegram long polling started", "offset", offset)
	for ctx.Err() == nil {
		updates, err := c.cfg.Client.GetUpdates(ctx, offset, c.cfg.PollTimeout)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			wait := 5 * time.Second
			var ae *APIError
			if errors.As(err, &ae) {
				switch {
				case ae.RetryAfter > 0:
					wait = ae.RetryAfter
				case ae.Code == 409:
					c.log.Error("getUpdates conflicts with a webhook or another poller; run `lambdaclaw telegram setup` for webhook mode or stop the other poller", "error", err)
					wait = 10 * time.Second
				case ae.Code == 401 || ae.Code == 404:
					c.log.Error("telegram rejected the bot token", "error", err)
					wait = 10 * time.Second
				}
			}
			c.log.Warn("getUpdates failed", "error", err, "retry_in", wait.String())
			if !sleepCtx(ctx, wait) {
				return
			}
			continue
		}
		for _, u := range updates {
			for attempt := 1; ; attempt++ {
				err := c.Handle(ctx, u)
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					return
				}
				c.log.Error("handle update", "update_id", u.UpdateID, "attempt", attempt, "error", err)
				if !sleepCtx(ctx, min(time.Duration(attempt)*time.Second, 30*time.Second)) {
					return
				}
			}
			offset = u.UpdateID + 1
			for c.cfg.Store.SetState(ctx, KeyOffset, strconv.FormatInt(offset, 10)) != nil {
				if !sleepCtx(ctx, time.Second) {
					return
				}
			}
		}
	}
}

// NewSecret returns a random webhook secret_token (64 characters from
// Telegram's allowed set) and the hash the channel stores under
// KeyWebhookSecret.
func NewSecret() (secret, hash string) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand: " + err.Error()) // never fails on supported platforms
	}
	secret = hex.EncodeToString(b[:])
	return secret, HashSecret(secret)
}

// HashSecret is the stored form of a webhook secret.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// ServeHTTP is the webhook endpoint. It checks the secret header in
// constant time (401 when missing, 403 when wrong), hands the update to
// Handle and answers 200 once the update is durably handed off; a failure
// answers 500 so that Telegram delivers the update again.
func (c *Channel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	got := r.Header.Get(SecretHeader)
	if got == "" {
		http.Error(w, "missing secret token", http.StatusUnauthorized)
		return
	}
	stored, err := c.cfg.Store.State(r.Context(), KeyWebhookSecret)
	if err != nil {
		c.log.Error("read webhook secret", "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	want, err := hex.DecodeString(stored)
	gotSum := sha256.Sum256([]byte(got))
	if err != nil || len(want) != len(gotSum) || subtle.ConstantTimeCompare(gotSum[:], want) != 1 {
		http.Error(w, "bad secret token", http.StatusForbidden)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	var u Update
	if err := json.Unmarshal(body, &u); err != nil {
		http.Error(w, "bad update", http.StatusBadRequest)
		return
	}
	if err := c.Handle(r.Context(), u); err != nil {
		c.log.Error("handle update", "update_id", u.UpdateID, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte("{}\n"))
}
