package channel

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// The limit on access codes (issue 23): a direct conversation whose user
// is not let in may try MaxCodeTries codes; the last of them locks it out
// for CodeLockout, each further lockout twice as long as the one before,
// at most MaxCodeLockout. While locked out, nothing it sends is compared
// with a code, not even the right one. The tries are counted in the store
// (store.CodeTries), so a restart or another function instance goes on
// counting.
const (
	MaxCodeTries   = 5
	CodeLockout    = 15 * time.Minute
	MaxCodeLockout = 24 * time.Hour
)

// maxTryConflicts bounds how often counting a try is retried when
// another process counted one of the same conversation meanwhile. Each
// conflict is a try counted elsewhere, and a lockout begins after
// MaxCodeTries of them, which ends the retries: more than that is a store
// that misbehaves.
const maxTryConflicts = 2 * MaxCodeTries

// notCode reports whether text is a command a client sends on its own
// (/start when a chat is opened, /help), which is never a code (codes
// have at least 8 characters) and is not counted as a try.
func notCode(text string) bool {
	switch text {
	case "/start", "/help":
		return true
	}
	return false
}

// tryCode counts a try of text as an access code by the conversation
// from of user, then compares it unless the conversation is locked out,
// and returns the reply: access granted, DeniedText, or when it may try
// again. The try is counted before the code is compared, so that
// messages handled at once, in several processes, compare at most
// MaxCodeTries codes before a lockout. A delivery handled again (when
// marking it handled failed) counts again: a retry errs towards the
// lockout, never past it.
func (c *Channel) tryCode(ctx context.Context, text, from, user string) (string, error) {
	now := c.cfg.Now().UTC()
	lockedUntil, compare, err := c.countTry(ctx, from, now)
	if err != nil {
		return "", err
	}
	if !compare {
		c.log.Info("access code refused: locked out", "user", user, "from", from, "until", lockedUntil)
		return lockedText(lockedUntil, now), nil
	}
	granted, err := c.redeem(ctx, text, user, now)
	if err != nil {
		return "", err
	}
	if granted {
		c.log.Info("access code accepted", "user", user)
		return "Access granted. " + HelpText, nil
	}
	c.log.Info("not authenticated", "user", user, "from", from)
	if !lockedUntil.IsZero() {
		c.log.Warn("locked out after too many wrong access codes", "user", user, "from", from, "until", lockedUntil)
		return lockedText(lockedUntil, now), nil
	}
	return DeniedText, nil
}

// countTry counts one try of a code by from at now. It returns whether
// the code may be compared, and when a lockout ends: the one from is in
// (compare false), or the one this try, the last allowed, began.
func (c *Channel) countTry(ctx context.Context, from string, now time.Time) (lockedUntil time.Time, compare bool, err error) {
	for range maxTryConflicts {
		cur, err := c.cfg.Store.CodeTries(ctx, from)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("count access code try: %w", err)
		}
		if now.Before(cur.LockedUntil) {
			return cur.LockedUntil, false, nil
		}
		next := nextTry(cur, now)
		ok, err := c.cfg.Store.SetCodeTries(ctx, from, cur.Version, next)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("count access code try: %w", err)
		}
		if ok {
			if next.Lockouts > cur.Lockouts {
				return next.LockedUntil, true, nil
			}
			return time.Time{}, true, nil
		}
	}
	return time.Time{}, false, errors.New("count access code try: the conversation's record kept changing meanwhile")
}

// nextTry is the record cur after one more try at now, which is not
// within a lockout: the MaxCodeTries-th try since the last lockout begins
// the next one.
func nextTry(cur store.CodeTries, now time.Time) store.CodeTries {
	next := cur
	next.Tries++
	if next.Tries >= MaxCodeTries {
		next.Tries = 0
		next.LockedUntil = now.Add(lockout(cur.Lockouts))
		next.Lockouts++
	}
	return next
}

// lockout is how long the lockout after n earlier ones lasts: CodeLockout
// doubled n times, at most MaxCodeLockout.
func lockout(n int) time.Duration {
	d := float64(CodeLockout) * math.Pow(2, float64(n))
	if d >= float64(MaxCodeLockout) {
		return MaxCodeLockout
	}
	return time.Duration(d)
}

// lockedText tells a locked-out conversation when it may try again.
func lockedText(until, now time.Time) string {
	// Rounded up to the minute, so that a try at the time said is let
	// through.
	at := until.UTC().Add(time.Minute - time.Nanosecond).Truncate(time.Minute)
	mins := int(math.Ceil(until.Sub(now).Minutes()))
	wait := fmt.Sprintf("%d minutes", mins)
	if mins == 1 {
		wait = "1 minute"
	} else if mins >= 120 {
		wait = fmt.Sprintf("%d hours", int(math.Ceil(float64(mins)/60)))
	}
	return fmt.Sprintf("Too many wrong access codes: this chat is locked out. Try again after %s UTC (in %s); until then no code is checked.",
		at.Format("2006-01-02 15:04"), wait)
}

// redeem lets user in when text is an unused access code. Every code is
// compared, in constant time, whatever matches.
func (c *Channel) redeem(ctx context.Context, text, user string, at time.Time) (bool, error) {
	got := sha256.Sum256([]byte(text))
	match := ""
	for _, code := range c.cfg.AccessCodes {
		want := sha256.Sum256([]byte(code))
		if subtle.ConstantTimeCompare(got[:], want[:]) == 1 && code != "" {
			match = hex.EncodeToString(want[:])
		}
	}
	if match == "" {
		return false, nil
	}
	return c.cfg.Store.RedeemCode(ctx, match, user, at)
}
