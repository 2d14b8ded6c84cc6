// Package channel is the port of the messaging channels (DESIGN.md §9):
// Telegram, Slack, Discord and WhatsApp are its adapters. An adapter
// knows its platform's wire format: it verifies and parses what the
// platform delivers into an Inbound, and sends an Outgoing as the
// platform's message (Platform). Everything else is the same on every
// platform and lives here, once: a delivery handled at most once, the
// sender's identity as the session's owner, access control (allowlist,
// one-time access codes with a lockout), groups (answer when addressed,
// earlier messages as context), the commands /help, /reset, /stop,
// /status and the approval answers, and the replies: through the one
// durable outbox of the store (store.Channel), split at the platform's
// limit, retried with its rate-limit answers honoured, sent once across
// a restart, streamed drafts edited in place where the platform can, and
// approvals as buttons.
package channel

import (
	"cmp"
	"context"
	"fmt"
	"mime/multipart"
	"net/textproto"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// Platform is a messaging platform's adapter: the sending half the
// engine needs. Optional abilities are the interfaces Editor, Deleter and
// Typer.
type Platform interface {
	// Name is the channel's name ("tg", "slack", "discord", "whatsapp"):
	// the reply channel of its runs (agent.Reply.Channel), the prefix of
	// its owners ("slack:T123:U456") and the store's name for its state.
	Name() string
	// MaxLen is the longest text one message may hold, in UTF-16 code
	// units (Split's unit, which is never fewer than the characters a
	// platform counts).
	MaxLen() int
	// Send posts msg and returns the platform's id of the message. An
	// error the platform answered is an *Error.
	Send(ctx context.Context, msg Outgoing) (id string, err error)
}

// Editor is a Platform that can replace the text of a message it sent:
// streamed replies are shown as a draft message edited in place.
type Editor interface {
	Edit(ctx context.Context, to, id, text string) error
}

// Deleter is a Platform that can delete a message it sent: the draft,
// once the final reply is in the outbox.
type Deleter interface {
	Delete(ctx context.Context, to, id string) error
}

// Typer is a Platform that can show that the agent is working (Telegram's
// "typing…").
type Typer interface {
	Typing(ctx context.Context, to string) error
}

// FileSender is a Platform that can send a file: a photo, where the
// platform shows images as such, else a document.
type FileSender interface {
	SendFile(ctx context.Context, to string, f File) (id string, err error)
}

// File is a file to send, with a caption (within the platform's limit
// of one, which the adapter cuts to).
type File struct {
	Name, MediaType string
	Data            []byte
	Caption         string
}

// WritePart writes f as the file field of the multipart form w, with its
// name and media type.
func (f File) WritePart(w *multipart.Writer, field string) error {
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", multipart.FileContentDisposition(field, f.Name))
	h.Set("Content-Type", cmp.Or(f.MediaType, "application/octet-stream"))
	part, err := w.CreatePart(h)
	if err == nil {
		_, err = part.Write(f.Data)
	}
	return err
}

// Outgoing is one message to send.
type Outgoing struct {
	// To is the conversation's address, as its Inbound.To gave it: a
	// chat, a channel and thread, a phone number, an interaction's
	// follow-up. The adapter alone reads it.
	To string
	// Text is plain text within the platform's MaxLen.
	Text string
	// Buttons are choices shown with the message (an approval's
	// answers); a pressed one comes back as an Inbound whose Action is
	// its Value.
	Buttons []Button
}

// Button is one choice shown with a message (store.Button, as the outbox
// keeps it): a pressed one comes back as an Inbound whose Action is its
// Value, at most 64 bytes (Telegram's callback data).
type Button = store.Button

// Inbound is one message (or button press) a platform delivered, verified
// and parsed by its adapter.
type Inbound struct {
	// ID identifies the delivery on its platform (an update id, an
	// event id, a message id): a second delivery of the same ID is
	// dropped, and the run it starts has an id derived from it.
	ID string
	// Workspace is where the platform's users live: a Slack team, a
	// Discord guild (empty in a direct message), a WhatsApp business
	// phone number id; empty for Telegram.
	Workspace string
	// User is the sender's id on the platform; Name how to call them.
	User, Name string
	// Principal owns the session within the workspace: the user in a
	// direct message; in a group the group ("#" and its id), so that its
	// members share the conversation. Telegram keeps its chat id.
	Principal string
	// To is where replies go (Outgoing.To).
	To string
	// Thread tells the conversations of one Principal apart (a thread, a
	// forum topic); each is its own session. Empty for the main one.
	Thread string
	// StartsThread says the message was posted in the main conversation
	// and Thread is the one it starts (a Slack channel message, answered
	// in a thread under it): its group context is the main
	// conversation's earlier messages, and, not addressed to the bot, it
	// is context of both the main conversation and its thread.
	StartsThread bool
	// Group is a message in a group, channel or server rather than a
	// direct message; Addressed says it mentions the bot or replies to
	// it (a direct message is always addressed).
	Group, Addressed bool
	// Text is the message's text, the bot's mention removed.
	Text string
	// Action is the Value of a pressed Button (Text is then empty).
	Action string
	// Attachments are the files the message carries (photos, documents,
	// voice notes); Text is then their caption, if any.
	Attachments []Attachment
	// At is when the platform says the message was sent; zero if it
	// does not.
	At time.Time
	// Answer, when set, takes the reply the channel makes by itself to
	// this delivery (a command's answer, a refusal; never a run's reply)
	// into the adapter's answer to the platform's request, where a
	// message sent separately could not come first (a Discord
	// interaction's response). Handle calls it at most once, before it
	// returns, with a text within MaxLen; once it returns true the
	// reply is not queued in the outbox, so the adapter must answer with
	// it.
	Answer func(text string) bool
}

// Error is an unsuccessful answer of a platform's API.
type Error struct {
	// Platform and Method name the call ("slack", "chat.postMessage").
	Platform, Method string
	// Status is the HTTP status; Code the platform's error code, if any.
	Status int
	Code   string
	// Message is the platform's description, scrubbed of secrets.
	Message string
	// RetryAfter is how long the platform asked to wait (a rate limit).
	RetryAfter time.Duration
	// Permanent says a retry of the same request cannot succeed (a bad
	// request, a bot removed from the conversation).
	Permanent bool
}

func (e *Error) Error() string {
	code := e.Code
	if code != "" {
		code = " " + code
	}
	return fmt.Sprintf("%s %s: %d%s %s", e.Platform, e.Method, e.Status, code, e.Message)
}
