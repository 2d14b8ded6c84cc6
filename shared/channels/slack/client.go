// Package slack is lambdaclaw's Slack channel, an adapter of the channel
// port (shared/core/channel): a Web API client that sends, edits and
// deletes the bot's messages (client.go, the channel.Platform), the
// receivers of what Slack delivers — the Events API and interactivity
// endpoints, signed with the app's signing secret (webhook.go), or a
// Socket Mode connection for an install without a public URL
// (socket.go) — and the parsing of events and button presses into
// channel.Inbound (inbound.go). Everything platform-independent (access
// control, sessions, the outbox, approvals) is the engine's.
package slack

import (
	"bytes"
	"context"
	"encoding/json"
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

// Name is the channel's name: its runs' reply channel and the prefix of
// its owners ("slack:T123:U456").
const Name = "slack"

// DefaultAPIBase is Slack's Web API.
const DefaultAPIBase = "https://slack.com/api"

// MaxLen is the longest text the client sends in one message: Slack
// recommends keeping a message's text under 4,000 characters (it
// truncates at 40,000).
const MaxLen = 4000

// Block Kit's limits (api.slack.com/reference/block-kit): a section's text
// holds at most 3,000 characters, a message at most 50 blocks and an
// actions block at most 25 elements.
const (
	maxSectionText = 3000
	maxBlocks      = 50
	maxButtons     = 25
)

// actionsBlockID marks the actions block of a message with buttons, so a
// press can replace it with the choice made.
const actionsBlockID = "lc_actions"

// Client calls Slack's Web API with a bot token (xoxb-). It is the
// channel's channel.Platform, Editor and Deleter.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// NewClient returns a client of base (DefaultAPIBase when empty) that
// authenticates with the bot token.
func NewClient(base, token string) *Client {
	if base == "" {
		base = DefaultAPIBase
	}
	return &Client{base: strings.TrimRight(base, "/"), token: token, http: &http.Client{Timeout: 30 * time.Second}}
}

// Name is "slack".
func (c *Client) Name() string { return Name }

// MaxLen is MaxLen.
func (c *Client) MaxLen() int { return MaxLen }

// permanent are the errors of the methods the client calls that the
// same request cannot outgrow (api.slack.com/methods/chat.postMessage
// and its siblings); any other answer may be retried.
var permanent = map[string]bool{
	"channel_not_found": true, "not_in_channel": true, "is_archived": true, "msg_too_long": true,
	"no_text": true, "too_many_attachments": true, "restricted_action": true,
	"restricted_action_read_only_channel": true, "restricted_action_thread_only_channel": true,
	"restricted_action_non_threadable_channel": true, "cannot_reply_to_message": true,
	"invalid_blocks": true, "invalid_blocks_format": true, "invalid_arguments": true,
	"invalid_arg_name": true, "invalid_array_arg": true, "invalid_charset": true,
	"invalid_form_data": true, "invalid_post_type": true, "missing_post_type": true,
	"message_not_found": true, "cant_update_message": true, "cant_delete_message": true,
	"edit_window_closed": true, "compliance_exports_prevent_deletion": true,
	"not_authed": true, "invalid_auth": true, "account_inactive": true, "token_revoked": true,
	"token_expired": true, "no_permission": true, "missing_scope": true, "not_allowed_token_type": true,
	"org_login_required": true, "ekm_access_denied": true, "team_access_not_granted": true,
	"two_factor_setup_required": true, "invalid_metadata_format": true, "metadata_too_large": true,
}

// envelope is every Web API answer: ok, and error when not.
type envelope struct {
	OK       bool   `json:"ok"`
	Error    string `json:"error"`
	Warning  string `json:"warning"`
	Needed   string `json:"needed"`
	Provided string `json:"provided"`
}

// Call invokes method with params as JSON (nil for none), authenticated
// with token, and decodes the answer into result (when not nil). An
// answer that is not ok is a *channel.Error.
func (c *Client) Call(ctx context.Context, method, token string, params, result any) error {
	var body io.Reader
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return fmt.Errorf("slack %s: %w", method, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/"+method, body)
	if err != nil {
		return fmt.Errorf("slack %s: %w", method, err)
	}
	if params != nil {
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
	}
	return c.do(ctx, req, method, token, result)
}

// callForm invokes method with form, authenticated with the bot token:
// the files methods take their arguments form-encoded.
func (c *Client) callForm(ctx context.Context, method string, form url.Values, result any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/"+method, strings.NewReader(form.Encode()))
	if err != nil {
		return fmt.Errorf("slack %s: %w", method, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return c.do(ctx, req, method, c.token, result)
}

// do sends req and reads Slack's answer into result.
func (c *Client) do(ctx context.Context, req *http.Request, method, token string, result any) error {
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("slack %s: %w", method, ctx.Err())
		}
		return fmt.Errorf("slack %s: %s", method, scrub.Known(err.Error(), token))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("slack %s: read: %w", method, err)
	}
	var env envelope
	jerr := json.Unmarshal(raw, &env)
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 300 || jerr != nil || !env.OK {
		return apiError(method, resp, env, jerr, raw, token)
	}
	if result != nil {
		if err := json.Unmarshal(raw, result); err != nil {
			return fmt.Errorf("slack %s: decode: %w", method, err)
		}
	}
	return nil
}

// apiError is the *channel.Error of an unsuccessful answer: a 429's
// Retry-After (seconds) is its RetryAfter; Slack's error code, when
// known to be final, makes it Permanent, as does a 4xx other than 429.
func apiError(method string, resp *http.Response, env envelope, jerr error, raw []byte, token string) *channel.Error {
	e := &channel.Error{Platform: Name, Method: method, Status: resp.StatusCode, Code: env.Error}
	switch {
	case jerr != nil:
		e.Message = "unexpected answer: " + channel.Cut(scrub.Known(string(raw), token), 200)
	case env.Needed != "":
		e.Message = "needs scope " + env.Needed
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		e.RetryAfter = time.Second
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			e.RetryAfter = time.Duration(s) * time.Second
		}
		return e
	}
	e.Permanent = permanent[env.Error] || (resp.StatusCode >= 400 && resp.StatusCode < 500)
	return e
}

// Auth is what auth.test says of a token: the bot's user and its
// workspace.
type Auth struct {
	URL    string `json:"url"`
	Team   string `json:"team"`
	User   string `json:"user"`
	TeamID string `json:"team_id"`
	UserID string `json:"user_id"`
	BotID  string `json:"bot_id"`
}

// AuthTest checks the bot token and says whose it is.
func (c *Client) AuthTest(ctx context.Context) (Auth, error) {
	var a Auth
	err := c.Call(ctx, "auth.test", c.token, nil, &a)
	return a, err
}

// OpenConnection asks apps.connections.open, with the app-level token
// (xapp-), for a Socket Mode WebSocket URL.
func (c *Client) OpenConnection(ctx context.Context, appToken string) (string, error) {
	var r struct {
		URL string `json:"url"`
	}
	if err := c.Call(ctx, "apps.connections.open", appToken, nil, &r); err != nil {
		return "", err
	}
	if r.URL == "" {
		return "", fmt.Errorf("slack apps.connections.open: no url in the answer")
	}
	return r.URL, nil
}

// Address is where a message goes: a conversation and, in a thread, the
// thread's parent ts. Its string form is channel.Outgoing.To:
// "C123" or "C123/1700000000.000100".
type Address struct {
	Channel, Thread string
}

func (a Address) String() string {
	if a.Thread == "" {
		return a.Channel
	}
	return a.Channel + "/" + a.Thread
}

// ParseAddress reads an Outgoing.To.
func ParseAddress(to string) (Address, error) {
	ch, thread, _ := strings.Cut(to, "/")
	if ch == "" || strings.ContainsAny(ch, " /") || strings.Contains(thread, "/") {
		return Address{}, &channel.Error{Platform: Name, Method: "address", Message: fmt.Sprintf("bad address %q", to), Permanent: true}
	}
	return Address{Channel: ch, Thread: thread}, nil
}

// Escape makes text plain in a message's text: Slack reads &, < and > as
// the start of entities, links and mentions (<!channel> would notify a
// whole channel), so they are sent as entities.
func Escape(text string) string {
	return escaper.Replace(text)
}

var (
	escaper   = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	unescaper = strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">")
)

// message is the body of chat.postMessage and chat.update.
type message struct {
	Channel  string  `json:"channel"`
	TS       string  `json:"ts,omitempty"`
	ThreadTS string  `json:"thread_ts,omitempty"`
	Text     string  `json:"text"`
	Blocks   []block `json:"blocks,omitempty"`
	// Unfurl is false: an agent's links are not previewed.
	UnfurlLinks *bool `json:"unfurl_links,omitempty"`
	UnfurlMedia *bool `json:"unfurl_media,omitempty"`
}

// block is a Block Kit block of the kinds the client sends.
type block struct {
	Type     string    `json:"type"`
	BlockID  string    `json:"block_id,omitempty"`
	Text     *textObj  `json:"text,omitempty"`
	Elements []element `json:"elements,omitempty"`
}

type textObj struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	Emoji bool   `json:"emoji,omitempty"`
}

type element struct {
	Type     string   `json:"type"`
	Text     *textObj `json:"text,omitempty"`
	ActionID string   `json:"action_id,omitempty"`
	Value    string   `json:"value,omitempty"`
	Style    string   `json:"style,omitempty"`
}

// blocks shows text with buttons: with blocks, a message's text is only
// the notification's fallback, so the text is also shown in sections
// (plain text, at most 3,000 characters each) above an actions block.
func blocks(text string, buttons []channel.Button) ([]block, error) {
	if len(buttons) > maxButtons {
		return nil, &channel.Error{Platform: Name, Method: "chat.postMessage", Message: fmt.Sprintf("%d buttons; Slack shows at most %d", len(buttons), maxButtons), Permanent: true}
	}
	var bs []block
	for _, part := range chunks(text, maxSectionText) {
		bs = append(bs, block{Type: "section", Text: &textObj{Type: "plain_text", Text: part, Emoji: true}})
	}
	if len(bs) >= maxBlocks {
		return nil, &channel.Error{Platform: Name, Method: "chat.postMessage", Message: "text too long for blocks", Permanent: true}
	}
	act := block{Type: "actions", BlockID: actionsBlockID}
	for i, b := range buttons {
		act.Elements = append(act.Elements, element{
			Type: "button", Text: &textObj{Type: "plain_text", Text: b.Label, Emoji: true},
			ActionID: "lc_" + strconv.Itoa(i), Value: b.Value,
		})
	}
	return append(bs, act), nil
}

// chunks cuts s into pieces of at most n characters.
func chunks(s string, n int) []string {
	var out []string
	r := []rune(s)
	for len(r) > n {
		out = append(out, string(r[:n]))
		r = r[n:]
	}
	if len(r) > 0 {
		out = append(out, string(r))
	}
	return out
}

// Send posts msg (chat.postMessage), in its thread when To names one,
// and returns the message's ts, its id in the conversation.
func (c *Client) Send(ctx context.Context, msg channel.Outgoing) (string, error) {
	to, err := ParseAddress(msg.To)
	if err != nil {
		return "", err
	}
	no := false
	body := message{Channel: to.Channel, ThreadTS: to.Thread, Text: Escape(msg.Text), UnfurlLinks: &no, UnfurlMedia: &no}
	if len(msg.Buttons) > 0 {
		if body.Blocks, err = blocks(msg.Text, msg.Buttons); err != nil {
			return "", err
		}
	}
	var r struct {
		TS string `json:"ts"`
	}
	if err := c.Call(ctx, "chat.postMessage", c.token, body, &r); err != nil {
		return "", err
	}
	if r.TS == "" {
		return "", fmt.Errorf("slack chat.postMessage: no ts in the answer")
	}
	return r.TS, nil
}

// Edit replaces the text of the bot's message id (its ts) in to's
// conversation (chat.update).
func (c *Client) Edit(ctx context.Context, to, id, text string) error {
	a, err := ParseAddress(to)
	if err != nil {
		return err
	}
	return c.Call(ctx, "chat.update", c.token, message{Channel: a.Channel, TS: id, Text: Escape(text)}, nil)
}

// Delete deletes the bot's message id (chat.delete).
func (c *Client) Delete(ctx context.Context, to, id string) error {
	a, err := ParseAddress(to)
	if err != nil {
		return err
	}
	return c.Call(ctx, "chat.delete", c.token, map[string]string{"channel": a.Channel, "ts": id}, nil)
}

// Answered shows the choice made on a message with buttons: its actions
// block is replaced by a line saying who chose what, so that the buttons
// cannot be pressed again. blocks are the message's blocks as the press
// delivered them.
func (c *Client) Answered(ctx context.Context, channelID, ts, fallback string, blocks []json.RawMessage, choice string) error {
	var kept []json.RawMessage
	for _, b := range blocks {
		var head struct {
			Type    string `json:"type"`
			BlockID string `json:"block_id"`
		}
		if json.Unmarshal(b, &head) == nil && head.Type == "actions" && head.BlockID == actionsBlockID {
			continue
		}
		kept = append(kept, b)
	}
	line, err := json.Marshal(map[string]any{"type": "context", "elements": []any{map[string]string{"type": "mrkdwn", "text": choice}}})
	if err != nil {
		return err
	}
	kept = append(kept, line)
	return c.Call(ctx, "chat.update", c.token, map[string]any{"channel": channelID, "ts": ts, "text": fallback, "blocks": kept}, nil)
}
