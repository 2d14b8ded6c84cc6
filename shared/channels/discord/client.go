// Package discord is lambdaclaw's Discord channel, an adapter of the
// channel port (shared/core/channel): a REST client that is the port's
// Platform (client.go; messages with buttons, edits, deletes, typing, and
// the follow-ups of interactions), the Interactions endpoint that
// Discord calls over HTTP, its Ed25519 signature checked (interactions.go),
// the Gateway WebSocket for plain messages in direct messages and
// mentions where the server runs locally (gateway.go), the conversion of
// both into the port's Inbound (inbound.go) and the slash commands the
// application registers (commands.go). README.md walks through setting a
// bot up.
package discord

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
)

// DefaultAPIBase is Discord's HTTP API, version 10.
const DefaultAPIBase = "https://discord.com/api/v10"

// Name is the channel's name: the prefix of its owners
// ("discord:<guild>:<user>") and the reply channel of its runs.
const Name = "discord"

// MaxLen is the longest content of a message (2,000 characters).
const MaxLen = 2000

// maxCustomID is the longest custom_id of a button.
const maxCustomID = 100

// Discord's JSON error codes that the client acts on.
const (
	codeUnknownWebhook      = 10015
	codeInvalidWebhookToken = 50027
)

// Client calls Discord's HTTP API as the application's bot. It is the
// channel's Platform (and Editor, Deleter, Typer). An Outgoing's To is
// an address made by ChannelAddress or InteractionAddress.
type Client struct {
	base  string
	token string
	app   string
	http  *http.Client
}

// NewClient returns a client of base (DefaultAPIBase when empty) for the
// application appID, whose bot token is token.
func NewClient(base, token, appID string) *Client {
	if base == "" {
		base = DefaultAPIBase
	}
	return &Client{base: strings.TrimRight(base, "/"), token: token, app: appID, http: &http.Client{Timeout: 30 * time.Second}}
}

// Name is Name.
func (c *Client) Name() string { return Name }

// MaxLen is MaxLen.
func (c *Client) MaxLen() int { return MaxLen }

// ApplicationID is the application the client acts for.
func (c *Client) ApplicationID() string { return c.app }

// An address (Outgoing.To) is where a reply goes: "c/<channel id>" posts
// in a channel as the bot; "i/<channel id>/<interaction token>" answers an
// interaction by a follow-up message (which also ends a deferred
// command's "thinking…"), falling back to the channel once the token,
// valid for 15 minutes, has expired.

// ChannelAddress is the address of a channel (a DM, a guild channel or a
// thread).
func ChannelAddress(channelID string) string { return "c/" + channelID }

// InteractionAddress is the address of an interaction's follow-ups.
func InteractionAddress(channelID, token string) string { return "i/" + channelID + "/" + token }

// address is a parsed Outgoing.To; token is empty for a channel.
type address struct {
	channel, token string
}

func parseAddress(to string) (address, error) {
	kind, rest, _ := strings.Cut(to, "/")
	switch kind {
	case "c":
		if validID(rest) {
			return address{channel: rest}, nil
		}
	case "i":
		ch, token, _ := strings.Cut(rest, "/")
		if validID(ch) && token != "" && !strings.ContainsAny(token, "/?#") {
			return address{channel: ch, token: token}, nil
		}
	}
	return address{}, fmt.Errorf("discord: %q is not an address (c/<channel id> or i/<channel id>/<token>)", channel.Cut(to, 40))
}

// validID reports whether s is a snowflake (a decimal id).
func validID(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}

// Message is a message as Discord returns and delivers it (the fields
// the channel reads).
type Message struct {
	ID        string `json:"id"`
	ChannelID string `json:"channel_id"`
	GuildID   string `json:"guild_id,omitempty"`
	Author    User   `json:"author"`
	Content   string `json:"content"`
	Timestamp string `json:"timestamp,omitempty"`
	// Type is 0 for a message, 19 for a reply.
	Type             int               `json:"type"`
	Mentions         []User            `json:"mentions,omitempty"`
	MessageReference *MessageReference `json:"message_reference,omitempty"`
	// ReferencedMessage is the message a reply answers.
	ReferencedMessage *Message `json:"referenced_message,omitempty"`
	WebhookID         string   `json:"webhook_id,omitempty"`
	// Attachments are the message's files; Flags has IsVoiceMessage for
	// a voice message (an audio/ogg attachment).
	Attachments []Attachment `json:"attachments,omitempty"`
	Flags       int          `json:"flags,omitempty"`
}

// IsVoiceMessage is the flag of a voice message.
const IsVoiceMessage = 1 << 13

// Attachment is a file of a message, on Discord's CDN (a signed URL).
type Attachment struct {
	ID          string `json:"id"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type,omitempty"`
	Size        int64  `json:"size"`
	URL         string `json:"url"`
}

// MessageReference points at the message a reply answers.
type MessageReference struct {
	MessageID string `json:"message_id,omitempty"`
	ChannelID string `json:"channel_id,omitempty"`
	GuildID   string `json:"guild_id,omitempty"`
}

// User is a Discord user or bot.
type User struct {
	ID         string `json:"id"`
	Username   string `json:"username"`
	GlobalName string `json:"global_name,omitempty"`
	Bot        bool   `json:"bot,omitempty"`
}

// Channel is a channel (the fields the channel reads).
type Channel struct {
	ID       string `json:"id"`
	Type     int    `json:"type"`
	GuildID  string `json:"guild_id,omitempty"`
	ParentID string `json:"parent_id,omitempty"`
}

// Thread channel types: announcement, public and private threads.
const (
	channelAnnouncementThread = 10
	channelPublicThread       = 11
	channelPrivateThread      = 12
)

// IsThread reports whether the channel is a thread.
func (ch Channel) IsThread() bool {
	return ch.Type == channelAnnouncementThread || ch.Type == channelPublicThread || ch.Type == channelPrivateThread
}

// Application is the application of the bot token (GET /applications/@me).
type Application struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// VerifyKey is the hex Ed25519 public key interactions are signed for.
	VerifyKey string `json:"verify_key"`
	Bot       *User  `json:"bot,omitempty"`
}

// messageBody is a message to create or edit. Content is always sent, so
// that an edit to "" is an error Discord reports rather than a no-op.
type messageBody struct {
	Content         string          `json:"content"`
	Components      []component     `json:"components,omitempty"`
	AllowedMentions allowedMentions `json:"allowed_mentions"`
}

// allowedMentions with no parse list pings nobody: a model's reply that
// says @everyone stays text.
type allowedMentions struct {
	Parse []string `json:"parse"`
}

// component is an action row (type 1) or a button (type 2) in it.
type component struct {
	Type       int         `json:"type"`
	Style      int         `json:"style,omitempty"`
	Label      string      `json:"label,omitempty"`
	CustomID   string      `json:"custom_id,omitempty"`
	Components []component `json:"components,omitempty"`
}

// Button styles: primary (blurple) and danger (red).
const (
	stylePrimary = 1
	styleDanger  = 4
)

// maxButtons is how many buttons fit in one action row.
const maxButtons = 5

// components makes an action row of buttons; a Value that ends in ":no"
// (an approval's refusal) is red.
func components(bs []channel.Button) ([]component, error) {
	if len(bs) == 0 {
		return nil, nil
	}
	if len(bs) > maxButtons {
		return nil, fmt.Errorf("discord: %d buttons; a row holds at most %d", len(bs), maxButtons)
	}
	row := component{Type: 1}
	for _, b := range bs {
		if b.Value == "" || len(b.Value) > maxCustomID {
			return nil, fmt.Errorf("discord: a button's value must be 1 to %d characters", maxCustomID)
		}
		style := stylePrimary
		if strings.HasSuffix(b.Value, ":no") {
			style = styleDanger
		}
		row.Components = append(row.Components, component{Type: 2, Style: style, Label: channel.Cut(b.Label, 80), CustomID: b.Value})
	}
	return []component{row}, nil
}

// Send posts msg: as a follow-up of its interaction, or in its channel.
func (c *Client) Send(ctx context.Context, msg channel.Outgoing) (string, error) {
	a, err := parseAddress(msg.To)
	if err != nil {
		return "", err
	}
	comps, err := components(msg.Buttons)
	if err != nil {
		return "", err
	}
	return c.post(ctx, a, messageBody{Content: msg.Text, Components: comps, AllowedMentions: allowedMentions{Parse: []string{}}})
}

// post creates the message body at a: as a follow-up of its interaction,
// or in its channel once the interaction's token expired (or without
// one).
func (c *Client) post(ctx context.Context, a address, body any) (string, error) {
	var m Message
	if a.token != "" {
		// wait=true makes Discord return the message, with its id.
		err := c.do(ctx, http.MethodPost, "execute webhook", c.webhook(a.token, "")+"?wait=true", false, body, &m)
		if !expired(err) {
			return m.ID, err
		}
	}
	err := c.do(ctx, http.MethodPost, "create message", "/channels/"+a.channel+"/messages", true, body, &m)
	return m.ID, err
}

// Edit replaces the text of the message id, sent to to.
func (c *Client) Edit(ctx context.Context, to, id, text string) error {
	a, err := parseAddress(to)
	if err != nil {
		return err
	}
	if !validID(id) {
		return fmt.Errorf("discord: %q is not a message id", channel.Cut(id, 40))
	}
	body := messageBody{Content: text, AllowedMentions: allowedMentions{Parse: []string{}}}
	if a.token != "" {
		err = c.do(ctx, http.MethodPatch, "edit webhook message", c.webhook(a.token, id), false, body, nil)
		if !expired(err) {
			return err
		}
	}
	return c.do(ctx, http.MethodPatch, "edit message", "/channels/"+a.channel+"/messages/"+id, true, body, nil)
}

// Delete deletes the message id, sent to to.
func (c *Client) Delete(ctx context.Context, to, id string) error {
	a, err := parseAddress(to)
	if err != nil {
		return err
	}
	if !validID(id) {
		return fmt.Errorf("discord: %q is not a message id", channel.Cut(id, 40))
	}
	if a.token != "" {
		err = c.do(ctx, http.MethodDelete, "delete webhook message", c.webhook(a.token, id), false, nil, nil)
		if !expired(err) {
			return err
		}
	}
	return c.do(ctx, http.MethodDelete, "delete message", "/channels/"+a.channel+"/messages/"+id, true, nil, nil)
}

// Typing shows "<bot> is typing…" in the channel of to for about ten
// seconds.
func (c *Client) Typing(ctx context.Context, to string) error {
	a, err := parseAddress(to)
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodPost, "trigger typing", "/channels/"+a.channel+"/typing", true, nil, nil)
}

// Application returns the bot token's application.
func (c *Client) Application(ctx context.Context) (Application, error) {
	var app Application
	err := c.do(ctx, http.MethodGet, "get current application", "/applications/@me", true, nil, &app)
	return app, err
}

// Channel returns a channel.
func (c *Client) Channel(ctx context.Context, id string) (Channel, error) {
	if !validID(id) {
		return Channel{}, fmt.Errorf("discord: %q is not a channel id", channel.Cut(id, 40))
	}
	var ch Channel
	err := c.do(ctx, http.MethodGet, "get channel", "/channels/"+id, true, nil, &ch)
	return ch, err
}

// GatewayURL returns the WebSocket URL the bot connects to (GET
// /gateway/bot).
func (c *Client) GatewayURL(ctx context.Context) (string, error) {
	var g struct {
		URL string `json:"url"`
	}
	if err := c.do(ctx, http.MethodGet, "get gateway bot", "/gateway/bot", true, nil, &g); err != nil {
		return "", err
	}
	if g.URL == "" {
		return "", errors.New("discord get gateway bot: no url")
	}
	return g.URL, nil
}

// respond answers an interaction that the Gateway delivered (one posted
// to the Interactions endpoint is answered in the HTTP response).
func (c *Client) respond(ctx context.Context, id, token string, response any) error {
	return c.do(ctx, http.MethodPost, "create interaction response", "/interactions/"+url.PathEscape(id)+"/"+url.PathEscape(token)+"/callback", false, response, nil)
}

func (c *Client) webhook(token, messageID string) string {
	p := "/webhooks/" + c.app + "/" + url.PathEscape(token)
	if messageID != "" {
		p += "/messages/" + messageID
	}
	return p
}

// expired reports whether err says an interaction's token is no longer
// valid (15 minutes after the interaction).
func expired(err error) bool {
	var e *channel.Error
	return errors.As(err, &e) && e.Code == strconv.Itoa(codeInvalidWebhookToken)
}

// apiError is Discord's JSON error body; a 429 has retry_after (seconds)
// and global.
type apiError struct {
	Code       int     `json:"code"`
	Message    string  `json:"message"`
	RetryAfter float64 `json:"retry_after"`
	Global     bool    `json:"global"`
}

// do calls the API: method on path (below the base) with in as JSON,
// decoding the answer into out when not nil. auth sends the bot token
// (webhook and interaction routes are authorized by the token in their
// path instead). Every unsuccessful answer is a *channel.Error.
func (c *Client) do(ctx context.Context, method, name, path string, auth bool, in, out any) error {
	var body io.Reader
	ctype := "application/json"
	if u, ok := in.(upload); ok {
		body, ctype = bytes.NewReader(u.body), u.contentType
	} else if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("discord %s: %w", name, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("discord %s: %s", name, c.scrub(err.Error(), path))
	}
	if in != nil {
		req.Header.Set("Content-Type", ctype)
	}
	if auth {
		req.Header.Set("Authorization", "Bot "+c.token)
	}
	req.Header.Set("User-Agent", "DiscordBot (https://github.com/lambdaclaw/lambdaclaw, 1)")
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("discord %s: %w", name, ctx.Err())
		}
		return fmt.Errorf("discord %s: %s", name, c.scrub(err.Error(), path))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("discord %s: read: %s", name, c.scrub(err.Error(), path))
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if out == nil || resp.StatusCode == http.StatusNoContent {
			return nil
		}
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("discord %s: decode: %w", name, err)
		}
		return nil
	}
	return c.apiErr(name, path, resp, raw)
}

// apiErr turns an unsuccessful answer into a *channel.Error.
func (c *Client) apiErr(name, path string, resp *http.Response, raw []byte) error {
	e := &channel.Error{Platform: Name, Method: name, Status: resp.StatusCode}
	var ae apiError
	if json.Unmarshal(raw, &ae) == nil && (ae.Message != "" || ae.Code != 0) {
		e.Message = c.scrub(ae.Message, path)
		if ae.Code != 0 {
			e.Code = strconv.Itoa(ae.Code)
		}
	} else {
		e.Message = "unexpected response: " + c.scrub(channel.Cut(string(raw), 200), path)
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		e.RetryAfter = time.Duration(ae.RetryAfter * float64(time.Second))
		if e.RetryAfter <= 0 {
			if s, err := strconv.ParseFloat(resp.Header.Get("Retry-After"), 64); err == nil {
				e.RetryAfter = time.Duration(s * float64(time.Second))
			}
		}
		if e.RetryAfter <= 0 {
			e.RetryAfter = time.Second
		}
		if ae.Global {
			e.Message += " (global)"
		}
	case ae.Code == codeUnknownWebhook:
		// A follow-up that overtook the interaction's deferred response:
		// the interaction becomes known a moment later.
	case resp.StatusCode >= 400 && resp.StatusCode < 500:
		e.Permanent = true
	}
	return e
}

// scrub removes the bot token, and the interaction token of path, from s.
func (c *Client) scrub(s, path string) string {
	s = scrub.Known(s, c.token)
	if rest, ok := strings.CutPrefix(path, "/webhooks/"+c.app+"/"); ok {
		token, _, _ := strings.Cut(rest, "/")
		token, _, _ = strings.Cut(token, "?")
		s = scrub.Known(s, token)
	}
	if rest, ok := strings.CutPrefix(path, "/interactions/"); ok {
		parts := strings.Split(rest, "/")
		if len(parts) > 1 {
			s = scrub.Known(s, parts[1])
		}
	}
	return s
}
