// Package telegram is lambdaclaw's Telegram channel (DESIGN.md §5), an
// adapter of the channel engine (shared/core/channel): a Bot API client
// (client.go); the Platform, which sends, edits and deletes messages,
// shows "typing…" and streams drafts with sendMessageDraft (platform.go);
// and the receiving half, which takes updates from long polling
// (poll.go) or from a webhook (webhook.go) and converts them into the
// engine's Inbound messages (channel.go): messages, forum topics as
// threads, button presses (callback queries), and in groups whether the
// bot was mentioned or replied to. Everything else (access codes, the
// outbox, commands, approvals) is the engine's. Both halves are wired by
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
	"maps"
	"mime/multipart"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
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

// apiError is an unsuccessful Bot API answer (ok false) as the engine's
// *channel.Error: Status is error_code, Message the description,
// RetryAfter parameters.retry_after (a 429), and a bad request, a bot
// blocked or kicked from the chat, or an unknown method is Permanent.
func apiError(method string, code int, description string, retryAfter time.Duration) *channel.Error {
	return &channel.Error{Platform: "telegram", Method: method, Status: code, Message: description,
		RetryAfter: retryAfter, Permanent: code == 400 || code == 403 || code == 404}
}

// NotModified reports whether err is editMessageText's "message is not
// modified", which means the edit is already in place.
func NotModified(err error) bool {
	var ae *channel.Error
	return errors.As(err, &ae) && ae.Status == 400 && strings.Contains(ae.Message, "message is not modified")
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
	return c.do(ctx, method, "application/json", body, result)
}

// Upload invokes method with params and the file f as the field field
// of a multipart form (sendPhoto, sendDocument).
func (c *Client) Upload(ctx context.Context, method string, params map[string]string, field string, f channel.File, result any) error {
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if err := w.WriteField(k, params[k]); err != nil {
			return fmt.Errorf("telegram %s: %w", method, err)
		}
	}
	err := f.WritePart(w, field)
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return fmt.Errorf("telegram %s: %w", method, err)
	}
	return c.do(ctx, method, w.FormDataContentType(), body.Bytes(), result)
}

// do posts body of contentType to method and reads Telegram's envelope.
func (c *Client) do(ctx context.Context, method, contentType string, body []byte, result any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/bot"+c.token+"/"+method, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("telegram %s: %s", method, c.scrub(err.Error()))
	}
	req.Header.Set("Content-Type", contentType)
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
		return apiError(method, resp.StatusCode, "unexpected response: "+c.scrub(channel.Cut(string(raw), 200)), 0)
	}
	if !env.OK {
		code := env.ErrorCode
		if code == 0 {
			code = resp.StatusCode
		}
		var retry time.Duration
		if env.Parameters != nil && env.Parameters.RetryAfter > 0 {
			retry = time.Duration(env.Parameters.RetryAfter) * time.Second
		}
		return apiError(method, code, c.scrub(env.Description), retry)
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
	// IsForum is a supergroup with topics.
	IsForum bool `json:"is_forum,omitempty"`
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
	IsTopicMessage  bool     `json:"is_topic_message,omitempty"`
	From            *User    `json:"from,omitempty"`
	Chat            Chat     `json:"chat"`
	Date            int64    `json:"date"`
	Text            string   `json:"text,omitempty"`
	Entities        []Entity `json:"entities,omitempty"`
	ReplyToMessage  *Message `json:"reply_to_message,omitempty"`
	// Caption is the text of a message with media: Photo (its sizes,
	// smallest first), Document, Voice (a voice note) or Audio.
	Caption  string      `json:"caption,omitempty"`
	Photo    []PhotoSize `json:"photo,omitempty"`
	Document *FileInfo   `json:"document,omitempty"`
	Voice    *FileInfo   `json:"voice,omitempty"`
	Audio    *FileInfo   `json:"audio,omitempty"`
}

// PhotoSize is one size of a photo.
type PhotoSize struct {
	FileID   string `json:"file_id"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
	FileSize int64  `json:"file_size,omitempty"`
}

// FileInfo is a Document, Voice or Audio: a file on Telegram's servers.
type FileInfo struct {
	FileID   string `json:"file_id"`
	FileName string `json:"file_name,omitempty"`
	MimeType string `json:"mime_type,omitempty"`
	FileSize int64  `json:"file_size,omitempty"`
}

// CallbackQuery is the press of an inline keyboard's button.
type CallbackQuery struct {
	ID   string `json:"id"`
	From User   `json:"from"`
	// Message is the message the button was on (absent when it is too
	// old).
	Message *Message `json:"message,omitempty"`
	Data    string   `json:"data,omitempty"`
}

// Update is one incoming event.
type Update struct {
	UpdateID      int64          `json:"update_id"`
	Message       *Message       `json:"message,omitempty"`
	CallbackQuery *CallbackQuery `json:"callback_query,omitempty"`
}

// allowedUpdates are the kinds of update the bot asks for.
var allowedUpdates = []string{"message", "callback_query"}

// MaxDownload is the largest file the Bot API lets a bot download
// (getFile), 20 MB.
const MaxDownload = 20 << 20

// Download returns the bytes of the file fileID: getFile gives its path,
// which is fetched from /file/bot<token>/<path>. A file larger than max
// (as getFile says, or as it arrives) is channel.ErrTooLarge.
func (c *Client) Download(ctx context.Context, fileID string, max int64) ([]byte, error) {
	var f struct {
		FileSize int64  `json:"file_size"`
		FilePath string `json:"file_path"`
	}
	if err := c.Call(ctx, "getFile", map[string]any{"file_id": fileID}, &f); err != nil {
		return nil, err
	}
	switch {
	case f.FileSize > max:
		return nil, channel.ErrTooLarge
	case f.FilePath == "":
		return nil, apiError("getFile", 400, "no file_path: the file is too big to download", 0)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/file/bot"+c.token+"/"+f.FilePath, nil)
	if err != nil {
		return nil, fmt.Errorf("telegram download: %s", c.scrub(err.Error()))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("telegram download: %s", c.scrub(err.Error()))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, apiError("download", resp.StatusCode, resp.Status, 0)
	}
	data, err := channel.ReadAtMost(resp.Body, max)
	if err != nil && !errors.Is(err, channel.ErrTooLarge) {
		return nil, fmt.Errorf("telegram download: %s", c.scrub(err.Error()))
	}
	return data, err
}

// MaxPhoto is the largest photo sendPhoto takes, 10 MB; a larger image
// goes as a document (up to 50 MB).
const MaxPhoto = 10 << 20

// SendFile sends f to chatID (in the forum topic threadID, when not 0):
// a PNG, JPEG or WebP image within MaxPhoto with sendPhoto, anything else
// with sendDocument; the caption cut to Telegram's 1024 characters.
func (c *Client) SendFile(ctx context.Context, chatID, threadID int64, f channel.File) (int64, error) {
	p := map[string]string{"chat_id": strconv.FormatInt(chatID, 10)}
	if threadID != 0 {
		p["message_thread_id"] = strconv.FormatInt(threadID, 10)
	}
	if f.Caption != "" {
		p["caption"] = channel.Cut(f.Caption, 1024)
	}
	method, field := "sendDocument", "document"
	switch f.MediaType {
	case "image/png", "image/jpeg", "image/webp":
		if len(f.Data) <= MaxPhoto {
			method, field = "sendPhoto", "photo"
		}
	}
	var m Message
	err := c.Upload(ctx, method, p, field, f, &m)
	return m.MessageID, err
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
		"offset": offset, "timeout": int(timeout / time.Second), "allowed_updates": allowedUpdates,
	}, &us)
	return us, err
}

// InlineButton is a button of an inline keyboard.
type InlineButton struct {
	Text         string `json:"text"`
	CallbackData string `json:"callback_data"`
}

// SendMessage sends plain text to chatID (in the forum topic threadID,
// when not 0), with buttons in one row of an inline keyboard, and
// returns the message id Telegram gave it.
func (c *Client) SendMessage(ctx context.Context, chatID, threadID int64, text string, buttons []InlineButton) (int64, error) {
	p := map[string]any{"chat_id": chatID, "text": text}
	if threadID != 0 {
		p["message_thread_id"] = threadID
	}
	if len(buttons) > 0 {
		p["reply_markup"] = map[string]any{"inline_keyboard": [][]InlineButton{buttons}}
	}
	var m Message
	err := c.Call(ctx, "sendMessage", p, &m)
	return m.MessageID, err
}

// AnswerCallbackQuery tells Telegram a button press was received, which
// ends the client's progress indicator.
func (c *Client) AnswerCallbackQuery(ctx context.Context, id string) error {
	return c.Call(ctx, "answerCallbackQuery", map[string]any{"callback_query_id": id}, nil)
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
func (c *Client) SendMessageDraft(ctx context.Context, chatID, threadID, draftID int64, text string) error {
	p := map[string]any{"chat_id": chatID, "draft_id": draftID, "text": text}
	if threadID != 0 {
		p["message_thread_id"] = threadID
	}
	return c.Call(ctx, "sendMessageDraft", p, nil)
}

// DraftsUnsupported reports whether err from sendMessageDraft says the
// method itself is unknown (404, as an older self-hosted telegram-bot-api
// answers), so no chat can use drafts.
func DraftsUnsupported(err error) bool {
	var ae *channel.Error
	return errors.As(err, &ae) && ae.Status == 404
}

// DraftsRefused reports whether err from sendMessageDraft says drafts are
// not allowed in this chat (400 or 403: not a private chat, say), so the
// chat falls back to an edited message.
func DraftsRefused(err error) bool {
	var ae *channel.Error
	return errors.As(err, &ae) && (ae.Status == 400 || ae.Status == 403)
}

// DeleteMessage deletes a message.
func (c *Client) DeleteMessage(ctx context.Context, chatID, messageID int64) error {
	return c.Call(ctx, "deleteMessage", map[string]any{"chat_id": chatID, "message_id": messageID}, nil)
}

// SendChatAction shows "typing…" in the chat (in the forum topic
// threadID, when not 0) for about five seconds.
func (c *Client) SendChatAction(ctx context.Context, chatID, threadID int64, action string) error {
	p := map[string]any{"chat_id": chatID, "action": action}
	if threadID != 0 {
		p["message_thread_id"] = threadID
	}
	return c.Call(ctx, "sendChatAction", p, nil)
}

// SetWebhook registers url, with secret as the X-Telegram-Bot-Api-Secret-Token
// Telegram sends back.
func (c *Client) SetWebhook(ctx context.Context, url, secret string) error {
	return c.Call(ctx, "setWebhook", map[string]any{"url": url, "secret_token": secret, "allowed_updates": allowedUpdates}, nil)
}

// DeleteWebhook removes the webhook, so getUpdates works again.
func (c *Client) DeleteWebhook(ctx context.Context) error {
	return c.Call(ctx, "deleteWebhook", map[string]any{"drop_pending_updates": false}, nil)
}
