package telegram

import (
	"context"
	"time"
)

// Outbox statuses.
const (
	OutPending = "pending"
	OutSent    = "sent"
	OutFailed  = "failed"
)

// OutMessage is one reply chunk in the outbox.
type OutMessage struct {
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
}

// OutboxStats counts the outbox by status.
type OutboxStats struct {
	Pending, Sent, Failed int
}

// Store is the durable state of the channel.
type Store interface {
	// State and SetState keep small values: the polling offset and the
	// webhook secret's hash. A missing key is "".
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
	// AddOutbox stores messages as pending, keeping existing ids as they are.
	AddOutbox(ctx context.Context, msgs []OutMessage) error
	// UnsentOutbox returns the pending messages, oldest first.
	UnsentOutbox(ctx context.Context, limit int) ([]OutMessage, error)
	// MarkSent records Telegram's message id for a delivered message.
	MarkSent(ctx context.Context, id string, messageID int64, at time.Time) error
	// MarkRetry records a failed attempt; failed says to give up.
	MarkRetry(ctx context.Context, id string, attempts int, next time.Time, lastErr string, failed bool) error
	OutboxStats(ctx context.Context) (OutboxStats, error)
}

// State keys.
const (
	KeyOffset        = "offset"
	KeyWebhookSecret = "webhook_secret_sha256"
)
