package store

import (
	"context"
	"time"
)

// Outbox statuses of a channel's message.
const (
	OutboxPending = "pending"
	OutboxSent    = "sent"
	OutboxFailed  = "failed"
)

// OutboxMessage is one message of a channel's outbox: a reply's part, an
// approval's prompt.
type OutboxMessage struct {
	// ID is deterministic (the run id and part number), so storing the
	// same reply twice keeps one copy; it is unique within its Channel.
	ID string
	// Channel is the channel that sends it (Channel's name: "tg",
	// "slack", …); To its address there, which only the channel reads.
	Channel string
	To      string
	Text    string
	// Buttons are the choices shown with the message.
	Buttons  []Button
	Status   string
	Attempts int
	NextAt   time.Time
	// MessageID is the platform's id of the sent message.
	MessageID string
	LastError string
	CreatedAt time.Time
	// ClaimedUntil is when the claim of a sender (Channel.ClaimOutbox)
	// lapses; zero when none was made since the last attempt.
	ClaimedUntil time.Time
}

// OutboxStats counts a channel's outbox by status.
type OutboxStats struct {
	Pending, Sent, Failed int
}

// CodeTries is a conversation's record of the access codes it tried,
// which a channel keeps to lock it out after too many wrong codes.
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

// Button is one choice shown with an outbox message (an approval's
// answers); a pressed one comes back to the channel as its Value.
type Button struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// Channel stores the durable state of one messaging channel
// (shared/core/channel; Telegram, Slack, Discord, WhatsApp): small
// values, the deliveries it handled, the users access codes let in, the
// tries of codes and the outbox of replies. Each channel's state is its
// own: the adapters bind a Channel to a channel's name (sqlite's
// DB.Channel, dynamo's Store.Channel), and the messages it adds to the
// outbox carry that name. The sqlite and dynamo adapters pass the
// conformance suite storetest.RunChannel.
type Channel interface {
	// State and SetState keep small values, such as a polling offset
	// or a webhook secret's hash. A missing key is "".
	State(ctx context.Context, key string) (string, error)
	SetState(ctx context.Context, key, value string) error
	// Seen reports whether a delivery was already handled; MarkSeen
	// records it; PruneSeen forgets deliveries seen before t.
	Seen(ctx context.Context, id string) (bool, error)
	MarkSeen(ctx context.Context, id string, at time.Time) error
	PruneSeen(ctx context.Context, before time.Time) error
	// AllowedUser reports whether a user was let in by an access code;
	// RedeemCode lets user in with the code whose hash is given, unless
	// that code was used already (then it reports false).
	AllowedUser(ctx context.Context, user string) (bool, error)
	RedeemCode(ctx context.Context, codeHash, user string, at time.Time) (bool, error)
	// CodeTries returns the record of codes tried from a conversation
	// (Version 0 when there is none). SetCodeTries stores next as its
	// record, with the version after prev's, only if the stored record
	// is still at version prev (none stored, for 0), and reports whether
	// it did: two processes counting a try at once cannot both win.
	CodeTries(ctx context.Context, from string) (CodeTries, error)
	SetCodeTries(ctx context.Context, from string, prev int64, next CodeTries) (bool, error)
	// AddOutbox stores messages as pending, keeping existing ids as they
	// are; each message's Channel is the store's.
	AddOutbox(ctx context.Context, msgs []OutboxMessage) error
	// UnsentOutbox returns the channel's pending messages, oldest first.
	UnsentOutbox(ctx context.Context, limit int) ([]OutboxMessage, error)
	// ClaimOutbox claims the message id for one send, under the claim id
	// claim until until: only if the message is pending, due (NextAt not
	// after now) and not claimed by a claim that lasts past now. It
	// returns the message as claimed and whether it claimed it; of two
	// senders claiming at once, one wins. A sender sends only what it
	// claimed, so a message is sent twice only when its sender died (or
	// outlived until) between the platform taking it and MarkSent: a
	// claim that lapsed lets another sender claim it again.
	ClaimOutbox(ctx context.Context, id, claim string, now, until time.Time) (OutboxMessage, bool, error)
	// MarkSent records the platform's id of a delivered message and ends
	// its claim.
	MarkSent(ctx context.Context, id, messageID string, at time.Time) error
	// MarkRetry records a failed attempt of the claim claim and ends it;
	// failed says to give up. A message no longer pending or claimed by
	// claim is left as it is.
	MarkRetry(ctx context.Context, id, claim string, attempts int, next time.Time, lastErr string, failed bool) error
	OutboxStats(ctx context.Context) (OutboxStats, error)
}
