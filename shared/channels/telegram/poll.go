package telegram

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
)

// KeyOffset is the state key of the long-polling offset.
const KeyOffset = "offset"

// updateSource is what long polling needs of the Bot API (Client).
type updateSource interface {
	GetUpdates(ctx context.Context, offset int64, timeout time.Duration) ([]Update, error)
}

// offsetStore keeps the polling offset (store.Channel).
type offsetStore interface {
	State(ctx context.Context, key string) (string, error)
	SetState(ctx context.Context, key, value string) error
}

// poller long-polls getUpdates and hands each update to handle.
type poller struct {
	source updateSource
	store  offsetStore
	// handle processes an update; an error means it should be retried.
	handle  func(context.Context, Update) error
	timeout time.Duration
	log     *slog.Logger
}

// run polls until ctx ends. The offset is saved only after every update
// before it was handled, so a restart repeats nothing handled and loses
// nothing unhandled (a repeat is skipped by Channel.Handle anyway).
func (p *poller) run(ctx context.Context) {
	var offset int64
	for {
		v, err := p.store.State(ctx, KeyOffset)
		if err == nil {
			offset, _ = strconv.ParseInt(v, 10, 64)
			break
		}
		p.log.Error("read polling offset", "error", err)
		if !sleepCtx(ctx, 5*time.Second) {
			return
		}
	}
	p.log.Info("telegram long polling started", "offset", offset)
	for ctx.Err() == nil {
		updates, err := p.source.GetUpdates(ctx, offset, p.timeout)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			wait := 5 * time.Second
			var ae *channel.Error
			if errors.As(err, &ae) {
				switch {
				case ae.RetryAfter > 0:
					wait = ae.RetryAfter
				case ae.Status == 409:
					p.log.Error("getUpdates conflicts with a webhook or another poller; run `lambdaclaw telegram setup` for webhook mode or stop the other poller", "error", err)
					wait = 10 * time.Second
				case ae.Status == 401 || ae.Status == 404:
					p.log.Error("telegram rejected the bot token", "error", err)
					wait = 10 * time.Second
				}
			}
			p.log.Warn("getUpdates failed", "error", err, "retry_in", wait.String())
			if !sleepCtx(ctx, wait) {
				return
			}
			continue
		}
		for _, u := range updates {
			for attempt := 1; ; attempt++ {
				err := p.handle(ctx, u)
				if err == nil {
					break
				}
				if ctx.Err() != nil {
					return
				}
				p.log.Error("handle update", "update_id", u.UpdateID, "attempt", attempt, "error", err)
				if !sleepCtx(ctx, min(time.Duration(attempt)*time.Second, 30*time.Second)) {
					return
				}
			}
			offset = u.UpdateID + 1
			for p.store.SetState(ctx, KeyOffset, strconv.FormatInt(offset, 10)) != nil {
				if !sleepCtx(ctx, time.Second) {
					return
				}
			}
		}
	}
}

// sleepCtx waits d and reports whether ctx is still alive.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	return ctx.Err() == nil
}
