package store

import (
	"context"
	"time"
)

// Outbox statuses of a Telegram reply chunk.
const (
	OutboxPending = "pending"
	OutboxSent    = "sent"
	OutboxFailed  = "failed"
)

// OutboxMessage is one chunk of a Telegram reply in the outbox.
type OutboxMessage struct {
	// ID is deterministic (the run id and chunk number), so storing the
	// same reply twice keeps one copy.
	ID        string
	ChatID    int64
	Text      string
	Status    string
	Attempts  int
	NextAt    time.Time
	MessageID int64
	LastError string
	CreatedAt time.Time
	// ClaimedUntil is when the claim of a sender (Telegram.ClaimOutbox)
	// lapses; zero when none was made since the last attempt.
	ClaimedUntil time.Time
}

// OutboxStats counts the Telegram outbox by status.
type OutboxStats struct {
	Pending, Sent, Failed int
}

// CodeTries is a chat's record of the access codes it tried, which the
// Telegram channel keeps to lock a chat out after too many wrong codes.
type CodeTries struct {
	// Tries counts the codes tried since the last lockout.
	Tries int
	// Lockouts counts the chat's lockouts so far; each lasts longer.
	Lockouts int
	// LockedUntil is when the current lockout ends; zero if none began.
	LockedUntil time.Time
	// Version is the stored record's version, which SetCodeTries
	// compares; 0 means none is stored.
	Version int64
}

// Telegram stores the durable state of the Telegram channel (shared/channels/telegram):
// small values, the updates it handled, the users access codes let in,
// the chats' tries of codes and the outbox of replies. The sqlite and dynamo adapters implement it and
// pass the conformance suite storetest.RunTelegram.
type Telegram interface {
	// State and SetState keep small values, such as the polling offset
	// and the webhook secret's hash. A missing key is "".
	State(ctx context.Context, key string) (string, error)
	SetState(ctx context.Context, key, value string) error
	// Seen reports whether an update was already handled; MarkSeen records
	// it; PruneSeen forgets updates seen before t.
	Seen(ctx context.Context, updateID int64) (bool, error)
	MarkSeen(ctx context.Context, updateID int64, at time.Time) error
	PruneSeen(ctx context.Context, before time.Time) error
	// AllowedUser reports whether a user was let in by an access code;
	// RedeemCode lets userID in with the code whose hash is given, unless
	// that code was used already (then it reports false).
	AllowedUser(ctx context.Context, userID int64) (bool, error)
	RedeemCode(ctx context.Context, codeHash string, userID int64, at time.Time) (bool, error)
	// CodeTries returns the chat's record of codes tried (Version 0 when
	// there is none). SetCodeTries stores next as the chat's record, with
	// the version after prev's, only if the stored record is still at
	// version prev (none stored, for 0), and reports whether it did: two
	// processes counting a try at once cannot both win.
	CodeTries(ctx context.Context, chatID int64) (CodeTries, error)
	SetCodeTries(ctx context.Context, chatID int64, prev int64, next CodeTries) (bool, error)
	// AddOutbox stores messages as pending, keeping existing ids as they are.
	AddOutbox(ctx context.Context, msgs []OutboxMessage) error
	// UnsentOutbox returns the pending messages, oldest first.
	UnsentOutbox(ctx context.Context, limit int) ([]OutboxMessage, error)
	// ClaimOutbox claims the message id for one send, under the claim id
	// claim until until: only if the message is pending, due (NextAt not
	// after now) and not claimed by a claim that lasts past now. It
	// returns the message as claimed and whether it claimed it; of two
	// senders claiming at once, one wins. A sender sends only what it
	// claimed, so a message is sent twice only when its sender died (or
	// outlived until) between Telegram taking it and MarkSent: a claim
	// that lapsed lets another sender claim it again.
	ClaimOutbox(ctx context.Context, id, claim string, now, until time.Time) (OutboxMessage, bool, error)
	// MarkSent records Telegram's message id for a delivered message and
	// ends its claim.
	MarkSent(ctx context.Context, id string, messageID int64, at time.Time) error
	// MarkRetry records a failed attempt of the claim claim and ends it;
	// failed says to give up. A message no longer pending or claimed by
	// claim is left as it is.
	MarkRetry(ctx context.Context, id, claim string, attempts int, next time.Time, lastErr string, failed bool) error
	OutboxStats(ctx context.Context) (OutboxStats, error)
}
