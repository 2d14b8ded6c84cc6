package channel

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// maxAttempts is how often a message is tried before it is marked failed;
// permanent errors (Error.Permanent) give up after permanentAttempts.
const (
	maxAttempts       = 30
	permanentAttempts = 3
)

// markTimeout bounds recording a delivered message, which outlives a
// cancelled context.
const markTimeout = 5 * time.Second

// sendTimeout bounds one send of the outbox, which shutdown does not cut
// short.
const sendTimeout = 10 * time.Second

// claimLease is how long a sender's claim of a message lasts: its send
// and recording it, with a margin for the clocks of other processes.
// Another sender claims the message again only after it, so the message
// is sent twice only when its sender died (or stalled past the lease)
// between the platform taking it and MarkSent; that is the one resend an
// outbox cannot rule out.
const claimLease = sendTimeout + markTimeout + 20*time.Second

// claimPoll is how often a pass looks again at a message another sender
// holds: its claim ends as soon as that sender marks it sent or due for
// a retry, long before the lease lapses.
const claimPoll = time.Second

// outboxStore is what the outbox needs of the store (store.Channel).
type outboxStore interface {
	AddOutbox(ctx context.Context, msgs []store.OutboxMessage) error
	UnsentOutbox(ctx context.Context, limit int) ([]store.OutboxMessage, error)
	ClaimOutbox(ctx context.Context, id, claim string, now, until time.Time) (store.OutboxMessage, bool, error)
	MarkSent(ctx context.Context, id, messageID string, at time.Time) error
	MarkRetry(ctx context.Context, id, claim string, attempts int, next time.Time, lastErr string, failed bool) error
}

// sender sends one message and returns its id (Platform).
type sender interface {
	Send(ctx context.Context, msg Outgoing) (string, error)
}

// outbox delivers replies durably: add stores them, and loop or flush
// sends them, in order per conversation, retrying failures.
type outbox struct {
	store  outboxStore
	sender sender
	log    *slog.Logger
	// kick wakes loop when messages were added.
	kick chan struct{}
	// now is the clock of pass and flush, and sleep its wait (time.Now
	// and sleepCtx; tests set their own).
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) bool
}

func newOutbox(st outboxStore, s sender, log *slog.Logger) *outbox {
	return &outbox{store: st, sender: s, log: log, kick: make(chan struct{}, 1), now: time.Now, sleep: sleepCtx}
}

// add stores msgs as pending and wakes loop.
func (o *outbox) add(ctx context.Context, msgs []store.OutboxMessage) error {
	if err := o.store.AddOutbox(ctx, msgs); err != nil {
		return err
	}
	o.wake()
	return nil
}

// wake tells loop that messages were added (by add, or by the commit of
// a run).
func (o *outbox) wake() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// loop delivers the outbox until ctx ends; see pass.
func (o *outbox) loop(ctx context.Context) {
	for ctx.Err() == nil {
		next, _ := o.pass(ctx)
		if later := time.Now().Add(5 * time.Second); next.After(later) {
			next = later
		}
		t := time.NewTimer(max(time.Until(next), 10*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-o.kick:
		case <-t.C:
		}
		t.Stop()
	}
}

// flush makes passes over the outbox while messages are waiting for a
// retry due within wait, or held by another sender (looked at again every
// claimPoll, since the claim ends when that sender marks its send), and
// returns how many messages are still pending when it gives up.
func (o *outbox) flush(ctx context.Context, wait time.Duration) (pending int, err error) {
	deadline := o.now().Add(wait)
	for {
		next, n := o.pass(ctx)
		if n == 0 || ctx.Err() != nil || next.After(deadline) {
			if ctx.Err() != nil {
				return n, ctx.Err()
			}
			return n, nil
		}
		if !o.sleep(ctx, max(next.Sub(o.now()), 10*time.Millisecond)) {
			return n, ctx.Err()
		}
	}
}

// pass makes one pass over the outbox: in order per conversation (To), a
// message is claimed (store.Channel.ClaimOutbox), so that passes running
// at once, in this process or others, send it once, and marked sent only
// with the id the platform answered; a failure blocks its conversation's
// later messages until a retry, after the platform's RetryAfter or an
// exponential backoff otherwise, and so does a message another sender
// holds, looked at again after claimPoll. It returns when the next
// message is due (a far time when none is) and how many are left pending.
func (o *outbox) pass(ctx context.Context) (next time.Time, pending int) {
	next = o.now().Add(24 * time.Hour)
	msgs, err := o.store.UnsentOutbox(ctx, 500)
	if err != nil {
		if ctx.Err() == nil {
			o.log.Error("read outbox", "error", err)
		}
		return o.now().Add(5 * time.Second), 1
	}
	blocked := map[string]bool{}
	for _, m := range msgs {
		if ctx.Err() != nil {
			return next, len(msgs)
		}
		if blocked[m.To] {
			pending++
			continue
		}
		now := o.now()
		due := m.NextAt
		if m.ClaimedUntil.After(now) {
			// Another sender holds it; its claim ends when it marks the
			// message, likely long before the lease lapses.
			due = later(due, earlier(m.ClaimedUntil, now.Add(claimPoll)))
		}
		if due.After(now) {
			blocked[m.To] = true
			pending++
			if due.Before(next) {
				next = due
			}
			continue
		}
		claim := rand.Text()
		claimed, ok, err := o.store.ClaimOutbox(ctx, m.ID, claim, now.UTC(), now.Add(claimLease).UTC())
		if err != nil || !ok {
			// Sent or claimed by another sender since it was read.
			if err != nil && ctx.Err() == nil {
				o.log.Error("claim reply", "outbox_id", m.ID, "error", err)
			}
			blocked[m.To] = true
			pending++
			next = earlier(next, now.Add(claimPoll))
			continue
		}
		m = claimed
		// A send once started is finished even when shutting down: a
		// request cut off after the platform took the message would
		// leave it unmarked, and the restarted server would send it
		// again.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sendTimeout)
		id, err := o.sender.Send(sctx, Outgoing{To: m.To, Text: m.Text, Buttons: m.Buttons})
		cancel()
		if err == nil {
			// The platform has the message: record that even when
			// shutting down, or the restarted server would send it again.
			mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
			err := o.store.MarkSent(mctx, m.ID, id, o.now().UTC())
			cancel()
			if err != nil {
				o.log.Error("mark reply sent", "outbox_id", m.ID, "error", err)
			}
			continue
		}
		if ctx.Err() != nil {
			return next, len(msgs)
		}
		blocked[m.To] = true
		attempts := m.Attempts + 1
		delay := min(500*time.Millisecond<<min(attempts-1, 20), 5*time.Minute)
		var pe *Error
		isPE := errors.As(err, &pe)
		if isPE && pe.RetryAfter > 0 {
			delay = pe.RetryAfter
		}
		failed := attempts >= maxAttempts || isPE && pe.Permanent && attempts >= permanentAttempts
		at := o.now().Add(delay)
		if err := o.store.MarkRetry(ctx, m.ID, claim, attempts, at.UTC(), err.Error(), failed); err != nil {
			o.log.Error("mark reply retry", "outbox_id", m.ID, "error", err)
		}
		if failed {
			o.log.Error("reply not delivered; giving up", "outbox_id", m.ID, "attempts", attempts, "error", err)
			continue
		}
		pending++
		o.log.Warn("reply not delivered; will retry", "outbox_id", m.ID, "attempt", attempts, "retry_in", delay.String(), "error", err)
		if at.Before(next) {
			next = at
		}
	}
	return next, pending
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// earlier returns the earlier of a and b.
func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// sleepCtx waits d and reports whether ctx is still alive.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	return ctx.Err() == nil
}
