package telegram

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
)

// Replier is the sending half of the Telegram channel: the engine's
// Replier for runs whose reply channel is "tg", with the config the
// receiving half is built from (NewChannel).
type Replier struct {
	*channel.Replier
	cfg Config
}

// NewReplier returns the sending half of the channel of cfg, which needs
// Client and Store; cfg.Runner is not used.
func NewReplier(cfg Config) (*Replier, error) {
	ec, err := cfg.engine()
	if err != nil {
		return nil, err
	}
	r, err := channel.NewReplier(ec)
	if err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = 30 * time.Second
	}
	return &Replier{Replier: r, cfg: cfg}, nil
}

// Channel is the Telegram channel: the engine's channel, with the
// Receiver that hands it Telegram's updates from long polling or the
// webhook.
type Channel struct {
	*channel.Channel
	rx *Receiver
	wg sync.WaitGroup
}

// New returns the channel of cfg, whose Runner exists already. Where the
// runner is built on an agent loop that replies through the channel,
// build the Replier first (NewReplier) and the channel after the runner
// (NewChannel).
func New(cfg Config) (*Channel, error) {
	r, err := NewReplier(cfg)
	if err != nil {
		return nil, err
	}
	return NewChannel(r, cfg.Runner)
}

// NewChannel returns the channel that replies with r and hands the
// updates it receives to runner; r's config must name the Agent.
func NewChannel(r *Replier, runner channel.Runner) (*Channel, error) {
	ch, err := channel.NewChannel(r.Replier, runner)
	if err != nil {
		return nil, err
	}
	rx := NewReceiver(r.cfg.Client, r.cfg.Store, ch.Handle, r.cfg.Log)
	rx.pollTimeout = r.cfg.PollTimeout
	return &Channel{Channel: ch, rx: rx}, nil
}

// Run delivers the outbox, forgets old handled updates and, with poll
// set, long-polls for updates, until ctx ends.
func (c *Channel) Run(ctx context.Context, poll bool) {
	c.Channel.Run(ctx)
	if poll {
		c.wg.Go(func() { c.rx.Poll(ctx) })
	}
}

// Wait blocks until the goroutines Run started have stopped.
func (c *Channel) Wait() {
	c.wg.Wait()
	c.Channel.Wait()
}

// ServeHTTP is the webhook endpoint (Receiver.ServeHTTP).
func (c *Channel) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.rx.ServeHTTP(w, r) }

// Handle hands one update to the engine (Receiver.Handle); an error
// means it should be retried.
func (c *Channel) Handle(ctx context.Context, u Update) error { return c.rx.Handle(ctx, u) }

// stateStore keeps the receiver's state: the polling offset and the
// webhook secret's hash (store.Channel).
type stateStore interface {
	State(ctx context.Context, key string) (string, error)
	SetState(ctx context.Context, key, value string) error
}

// Receiver takes Telegram's updates, from the webhook (ServeHTTP) or long
// polling (Poll), converts them into the engine's Inbound messages and
// hands them to handle (channel.Channel.Handle): messages, forum topics
// as threads, button presses (callback queries), and in groups whether
// the bot was mentioned or replied to.
type Receiver struct {
	client      *Client
	store       stateStore
	handle      func(context.Context, channel.Inbound) error
	log         *slog.Logger
	pollTimeout time.Duration

	meMu sync.Mutex
	me   *User
}

// NewReceiver returns the receiver that hands updates to handle, keeping
// its state in st.
func NewReceiver(client *Client, st stateStore, handle func(context.Context, channel.Inbound) error, log *slog.Logger) *Receiver {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Receiver{client: client, store: st, handle: handle, log: log.With("channel", ChannelName), pollTimeout: 30 * time.Second}
}

// ServeHTTP is the webhook endpoint. It checks the secret header in
// constant time (401 when missing, 403 when wrong), hands the update to
// Handle and answers 200 once the update is durably handed off; a failure
// answers 500 so that Telegram delivers the update again.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	webhook{store: r.store, handle: r.Handle, log: r.log}.ServeHTTP(w, req)
}

// Poll long-polls getUpdates until ctx ends (poll.go).
func (r *Receiver) Poll(ctx context.Context) {
	p := poller{source: r.client, store: r.store, handle: r.Handle, timeout: r.pollTimeout, log: r.log}
	p.run(ctx)
}

// Handle hands one update to the engine, which handles it at most once;
// an error means it should be retried. A button press is acknowledged to
// Telegram (answerCallbackQuery) once handed off.
func (r *Receiver) Handle(ctx context.Context, u Update) error {
	in, ok, err := r.inbound(ctx, u)
	if err != nil {
		return fmt.Errorf("telegram: update %d: %w", u.UpdateID, err)
	}
	if !ok {
		return nil
	}
	if err := r.handle(ctx, in); err != nil {
		return err
	}
	if q := u.CallbackQuery; q != nil {
		if err := r.client.AnswerCallbackQuery(ctx, q.ID); err != nil {
			r.log.Debug("answer callback query", "error", err)
		}
	}
	return nil
}

func (r *Receiver) self(ctx context.Context) (User, error) {
	r.meMu.Lock()
	defer r.meMu.Unlock()
	if r.me != nil {
		return *r.me, nil
	}
	u, err := r.client.GetMe(ctx)
	if err != nil {
		return User{}, err
	}
	r.me = &u
	return u, nil
}

// inbound converts an update into the engine's Inbound: a text message
// or a button press of a person (not a bot). The delivery's ID is the
// update_id; the chat is the Principal (a group's members share it); a
// forum topic is a Thread; in a group, a message is Addressed when it
// mentions the bot (@username, removed from the text) or replies to one
// of its messages. ok is false for an update that is none of these.
func (r *Receiver) inbound(ctx context.Context, u Update) (in channel.Inbound, ok bool, err error) {
	id := strconv.FormatInt(u.UpdateID, 10)
	if q := u.CallbackQuery; q != nil {
		m := q.Message
		if m == nil || q.From.IsBot || q.Data == "" {
			return in, false, nil
		}
		in = from(id, m, q.From)
		// A press has no date of its own; m's is the message's.
		in.Addressed, in.Action, in.At = true, q.Data, time.Time{}
		return in, true, nil
	}
	m := u.Message
	if m == nil || m.From == nil || m.From.IsBot {
		return in, false, nil
	}
	in = from(id, m, *m.From)
	in.Text, in.Addressed, in.Attachments = cmp.Or(m.Text, m.Caption), !in.Group, r.attachments(m)
	if in.Text == "" && len(in.Attachments) == 0 {
		return in, false, nil
	}
	if in.Group {
		me, err := r.self(ctx)
		if err != nil {
			return in, false, err
		}
		mention := "@" + strings.ToLower(me.Username)
		replied := m.ReplyToMessage != nil && m.ReplyToMessage.From != nil && m.ReplyToMessage.From.ID == me.ID
		mentioned := me.Username != "" && strings.Contains(strings.ToLower(in.Text), mention)
		in.Addressed = replied || mentioned
		if mentioned {
			in.Text = strings.TrimSpace(replaceFold(in.Text, mention, ""))
		}
	}
	return in, true, nil
}

// attachments are m's photo (its largest size), document, voice note
// or audio, fetched with getFile when the engine asks.
func (r *Receiver) attachments(m *Message) []channel.Attachment {
	file := func(kind channel.AttachmentKind, id, name, mediaType string, size int64) []channel.Attachment {
		return []channel.Attachment{{Kind: kind, Name: name, MediaType: mediaType, Size: size,
			Fetch: func(ctx context.Context, max int64) ([]byte, error) {
				return r.client.Download(ctx, id, min(max, MaxDownload))
			}}}
	}
	switch {
	case len(m.Photo) > 0:
		p := m.Photo[len(m.Photo)-1]
		return file(channel.AttachImage, p.FileID, "", "image/jpeg", p.FileSize)
	case m.Document != nil:
		d := m.Document
		return file(channel.AttachFile, d.FileID, d.FileName, d.MimeType, d.FileSize)
	case m.Voice != nil:
		v := m.Voice
		return file(channel.AttachVoice, v.FileID, "voice.ogg", cmp.Or(v.MimeType, "audio/ogg"), v.FileSize)
	case m.Audio != nil:
		a := m.Audio
		return file(channel.AttachVoice, a.FileID, a.FileName, a.MimeType, a.FileSize)
	}
	return nil
}

// from is the Inbound of delivery id in m's chat by user.
func from(id string, m *Message, user User) channel.Inbound {
	var thread int64
	if m.Chat.IsForum && m.IsTopicMessage {
		thread = m.MessageThreadID
	}
	in := channel.Inbound{ID: id, User: strconv.FormatInt(user.ID, 10), Name: user.FirstName,
		Principal: strconv.FormatInt(m.Chat.ID, 10), To: Address(m.Chat.ID, thread), Group: m.Chat.Type != "private"}
	if thread != 0 {
		in.Thread = strconv.FormatInt(thread, 10)
	}
	if m.Date > 0 {
		in.At = time.Unix(m.Date, 0).UTC()
	}
	return in
}

// replaceFold replaces the first old in s, whatever its case, by repl.
func replaceFold(s, old, repl string) string {
	i := strings.Index(strings.ToLower(s), old)
	if i < 0 || len(strings.ToLower(s)) != len(s) {
		return strings.ReplaceAll(s, old, repl)
	}
	return s[:i] + repl + s[i+len(old):]
}
