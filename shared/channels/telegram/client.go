// Package telegram is lambdaclaw's Telegram channel (DESIGN.md §5): a Bot
// API client (client.go); a Replier, the sending half, which shows what
// runs stream as drafts (draft.go) and delivers their replies through a
// durable outbox (outbox.go); and a Channel, which adds the receiving
// half: it takes updates from long polling (poll.go) or from a webhook
// (webhook.go), gates them by allowlist and one-time access codes (seed
// 002 §4.7) and hands them to agent runs (channel.go). Both are wired by
// one Config (config.go); the state is kept by a store.Channel. Replies
// are plain text (no parse_mode), so nothing needs escaping.
package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
)

// DefaultAPIBase is the public Bot API server.
const DefaultAPIBase = "https://api.telegram.org"

// Client calls the Bot API. The token is part of every URL, so errors are
// scrubbed of it before they are returned.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// NewClient returns a client for base (DefaultAPIBase when empty).
func NewClient(base, token string) *Client {
	if base == "" {
		base = DefaultAPIBase
	}
	return &Client{base: strings.TrimRight(base, "/"), token: token, http: &http.Client{Timeout: 90 * time.Second}}
}

// APIError is an unsuccessful Bot API answer (ok false).
type APIError struct {
	Method      string
	Code        int
	Description string
	// RetryAfter is parameters.retry_after: how long to wait after a 429.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	return fmt.Sprintf("telegram %s: %d %s", e.Method, e.Code, e.Description)
}

// NotModified reports whether err is editMessageText's "message is not
// modified", which means the edit is already in place.
func NotModified(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == 400 && strings.Contains(ae.Description, "message is not modified")
}

// Permanent reports whether err will not go away by retrying the same
// request (a bad request, or a bot blocked or kicked from the chat).
func Permanent(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && (ae.Code == 400 || ae.Code == 403 || ae.Code == 404)
}

type envelope struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  *struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// Call invokes method with params as JSON and decodes the result into
// result (when not nil).
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	body, err := json.Marshal(params)
	if err != nil {
		return fmt.Errorf("telegram %s: %w", method, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/bot"+c.token+"/"+method, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("telegram %s: %s", method, c.scrub(err.Error()))
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("telegram %s: %w", method, ctx.Err())
		}
		return fmt.Errorf("telegram %s: %s", method, c.scrub(err.Error()))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("telegram %s: read: %s", method, c.scrub(err.Error()))
	}
	var env envelope
	if err := json.Unmarshal(raw, &env); err != nil {
		return &APIError{Method: method, Code: resp.StatusCode, Description: "unexpected response: " + c.scrub(truncate(string(raw), 200))}
	}
	if !env.OK {
		e := &APIError{Method: method, Code: env.ErrorCode, Description: c.scrub(env.Description)}
		if e.Code == 0 {
			e.Code = resp.StatusCode
		}
		if env.Parameters != nil && env.Parameters.RetryAfter > 0 {
			e.RetryAfter = time.Duration(env.Parameters.RetryAfter) * time.Second
		}
		return e
	}
	if result != nil {
		if err := json.Unmarshal(env.Result, result); err != nil {
			return fmt.Errorf("telegram %s: decode result: %w", method, err)
		}
	}
	return nil
}

// scrub removes the token from s.
func (c *Client) scrub(s string) string {
	return scrub.Known(s, c.token)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// User is a Telegram user or bot.
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	Username  string `json:"username,omitempty"`
}

// Chat is a conversation.
type Chat struct {
	ID   int64  `json:"id"`
	Type string `json:"type"` // private, group, supergroup or channel
}

// Entity marks a part of a message's text, such as a mention.
type Entity struct {
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	Length int    `json:"length"`
}

// Message is a message in a chat.
type Message struct {
	MessageID       int64    `json:"message_id"`
	MessageThreadID int64    `json:"message_thread_id,omitempty"`
	From            *User    `json:"from,omitempty"`
	Chat            Chat     `json:"chat"`
	Date            int64    `json:"date"`
	Text            string   `json:"text,omitempty"`
	Entities        []Entity `json:"entities,omitempty"`
	ReplyToMessage  *Message `json:"reply_to_message,omitempty"`
}

// Update is one incoming event.
type Update struct {
	UpdateID int64    `json:"update_id"`
	Message  *Message `json:"message,omitempty"`
}

// GetMe returns the bot's own user.
func (c *Client) GetMe(ctx context.Context) (User, error) {
	var u User
	err := c.Call(ctx, "getMe", struct{}{}, &u)
	return u, err
}

// GetUpdates long-polls for updates from offset on, waiting up to timeout.
func (c *Client) GetUpdates(ctx context.Context, offset int64, timeout time.Duration) ([]Update, error) {
	var us []Update
	err := c.Call(ctx, "getUpdates", map[string]any{
		"offset": offset, "timeout": int(timeout / time.Second), "allowed_updates": []string{"message"},
	}, &us)
	return us, err
}

// SendMessage sends plain text and returns the message id Telegram gave it.
func (c *Client) SendMessage(ctx context.Context, chatID int64, text string) (int64, error) {
	var m Message
	err := c.Call(ctx, "sendMessage", map[string]any{"chat_id": chatID, "text": text}, &m)
	return m.MessageID, err
}

// EditMessageText replaces a message's text; "message is not modified" is
// not an error.
func (c *Client) EditMessageText(ctx context.Context, chatID, messageID int64, text string) error {
	err := c.Call(ctx, "editMessageText", map[string]any{"chat_id": chatID, "message_id": messageID, "text": text}, nil)
	if NotModified(err) {
		return nil
	}
	return err
}

// SendMessageDraft streams a partial message (Bot API 9.x): Telegram shows
// text as an ephemeral draft in a private chat, animating changes of the
// draft with the same non-zero draftID. A draft is not a message; the
// finished reply must still be sent with sendMessage.
func (c *Client) SendMessageDraft(ctx context.Context, chatID, draftID int64, text string) error {
	return c.Call(ctx, "sendMessageDraft", map[string]any{"chat_id": chatID, "draft_id": draftID, "text": text}, nil)
}

// DraftsUnsupported reports whether err from sendMessageDraft says the
// method itself is unknown (404, as an older self-hosted telegram-bot-api
// answers), so no chat can use drafts.
func DraftsUnsupported(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == 404
}

// DraftsRefused reports whether err from sendMessageDraft says drafts are
// not allowed in this chat (400 or 403: not a private chat, say), so the
// chat falls back to an edited message.
func DraftsRefused(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && (ae.Code == 400 || ae.Code == 403)
}

// DeleteMessage deletes a message.
func (c *Client) DeleteMessage(ctx context.Context, chatID, messageID int64) error {
	return c.Call(ctx, "deleteMessage", map[string]any{"chat_id": chatID, "message_id": messageID}, nil)
}

// SendChatAction shows "typing…" in the chat for about five seconds.
func (c *Client) SendChatAction(ctx context.Context, chatID int64, action string) error {
	return c.Call(ctx, "sendChatAction", map[string]any{"chat_id": chatID, "action": action}, nil)
}

// SetWebhook registers url, with secret as the X-Telegram-Bot-Api-Secret-Token
// Telegram sends back.
func (c *Client) SetWebhook(ctx context.Context, url, secret string) error {
	return c.Call(ctx, "setWebhook", map[string]any{"url": url, "secret_token": secret, "allowed_updates": []string{"message"}}, nil)
}

// DeleteWebhook removes the webhook, so getUpdates works again.
func (c *Client) DeleteWebhook(ctx context.Context) error {
	return c.Call(ctx, "deleteWebhook", map[string]any{"drop_pending_updates": false}, nil)
}
