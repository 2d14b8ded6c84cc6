package telegram

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
)

// MaxMessageLen is the longest text sendMessage takes, in UTF-16 code units.
const MaxMessageLen = 4096

// Platform is Telegram as the channel engine sends to it: a message, an
// edit, a deletion, "typing…" and sendMessageDraft drafts (channel.Drafter),
// to the address "<chat id>" or, in a forum topic, "<chat id>/<thread id>".
type Platform struct {
	client *Client
	log    *slog.Logger

	mu sync.Mutex
	// noAPI is set once the Bot API server does not know
	// sendMessageDraft; noChats holds the chats that refused drafts.
	// Both fall back to a message edited with editMessageText.
	noAPI   bool
	noChats map[int64]bool
}

var (
	_ channel.Editor  = (*Platform)(nil)
	_ channel.Deleter = (*Platform)(nil)
	_ channel.Typer   = (*Platform)(nil)
	_ channel.Drafter = (*Platform)(nil)
)

// NewPlatform returns the Platform that sends with client.
func NewPlatform(client *Client, log *slog.Logger) *Platform {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Platform{client: client, log: log, noChats: map[int64]bool{}}
}

// Name is the channel's name, "tg".
func (p *Platform) Name() string { return ChannelName }

// MaxLen is MaxMessageLen.
func (p *Platform) MaxLen() int { return MaxMessageLen }

// Address is where the replies to a chat (and a forum topic, when
// threadID is not 0) go: Outgoing.To.
func Address(chatID, threadID int64) string {
	if threadID == 0 {
		return strconv.FormatInt(chatID, 10)
	}
	return fmt.Sprintf("%d/%d", chatID, threadID)
}

// parseAddress reads an Address.
func parseAddress(to string) (chatID, threadID int64, err error) {
	chat, thread, topic := strings.Cut(to, "/")
	if chatID, err = strconv.ParseInt(chat, 10, 64); err != nil || chatID == 0 {
		return 0, 0, fmt.Errorf("telegram: bad address %q", to)
	}
	if topic {
		if threadID, err = strconv.ParseInt(thread, 10, 64); err != nil || threadID <= 0 {
			return 0, 0, fmt.Errorf("telegram: bad address %q", to)
		}
	}
	return chatID, threadID, nil
}

// Send sends msg with sendMessage, its buttons as an inline keyboard.
func (p *Platform) Send(ctx context.Context, msg channel.Outgoing) (string, error) {
	chatID, threadID, err := parseAddress(msg.To)
	if err != nil {
		return "", err
	}
	var buttons []InlineButton
	for _, b := range msg.Buttons {
		buttons = append(buttons, InlineButton{Text: b.Label, CallbackData: b.Value})
	}
	id, err := p.client.SendMessage(ctx, chatID, threadID, msg.Text, buttons)
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(id, 10), nil
}

// SendFile sends f as a photo or a document (Client.SendFile).
func (p *Platform) SendFile(ctx context.Context, to string, f channel.File) (string, error) {
	chatID, threadID, err := parseAddress(to)
	if err != nil {
		return "", err
	}
	id, err := p.client.SendFile(ctx, chatID, threadID, f)
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(id, 10), nil
}

// message reads the chat of the address to and the message id id.
func message(to, id string) (chatID, msgID int64, err error) {
	if chatID, _, err = parseAddress(to); err != nil {
		return 0, 0, err
	}
	if msgID, err = strconv.ParseInt(id, 10, 64); err != nil {
		return 0, 0, fmt.Errorf("telegram: bad message id %q", id)
	}
	return chatID, msgID, nil
}

// Edit replaces a message's text with editMessageText.
func (p *Platform) Edit(ctx context.Context, to, id, text string) error {
	chatID, msgID, err := message(to, id)
	if err != nil {
		return err
	}
	return p.client.EditMessageText(ctx, chatID, msgID, text)
}

// Delete deletes a message with deleteMessage.
func (p *Platform) Delete(ctx context.Context, to, id string) error {
	chatID, msgID, err := message(to, id)
	if err != nil {
		return err
	}
	return p.client.DeleteMessage(ctx, chatID, msgID)
}

// Typing shows "typing…" with sendChatAction.
func (p *Platform) Typing(ctx context.Context, to string) error {
	chatID, threadID, err := parseAddress(to)
	if err != nil {
		return err
	}
	return p.client.SendChatAction(ctx, chatID, threadID, "typing")
}

// Draft shows text as the run's draft with sendMessageDraft, where the
// server and the chat allow it: a private chat (private chat ids are
// positive) that did not refuse drafts, on a server that knows the
// method. Elsewhere it answers channel.ErrNoDraft, and the engine falls
// back to a message edited with editMessageText.
func (p *Platform) Draft(ctx context.Context, to, runID, text string) error {
	chatID, threadID, err := parseAddress(to)
	if err != nil {
		return err
	}
	if !p.drafts(chatID) {
		return channel.ErrNoDraft
	}
	err = p.client.SendMessageDraft(ctx, chatID, threadID, runDraftID(runID), text)
	if err != nil && p.fallback(chatID, err) {
		return fmt.Errorf("%w: %w", channel.ErrNoDraft, err)
	}
	return err
}

// drafts reports whether chatID may get sendMessageDraft drafts.
func (p *Platform) drafts(chatID int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return chatID > 0 && !p.noAPI && !p.noChats[chatID]
}

// fallback records that err from sendMessageDraft rules drafts out, for
// every chat or for chatID, and reports whether it did.
func (p *Platform) fallback(chatID int64, err error) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case DraftsUnsupported(err):
		if !p.noAPI {
			p.log.Info("sendMessageDraft unsupported by the Bot API server; drafts fall back to editMessageText", "error", err)
		}
		p.noAPI = true
	case DraftsRefused(err):
		p.log.Info("drafts refused in chat; falling back to editMessageText", "chat_id", chatID, "error", err)
		p.noChats[chatID] = true
	default:
		return false
	}
	return true
}

// runDraftID derives a non-zero draft_id from a run id, the same for every
// update of the run's draft.
func runDraftID(runID string) int64 {
	h := fnv.New32a()
	h.Write([]byte(runID))
	if id := int64(h.Sum32() & 0x7fffffff); id != 0 {
		return id
	}
	return 1
}
