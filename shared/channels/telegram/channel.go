package telegram

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
)

// DeniedText is the one reply every unauthenticated message gets, a wrong
// access code included, so that it tells nothing about codes (seed 002);
// only a chat locked out for too many wrong codes is told so (codes.go).
const DeniedText = "Send the access code to use this bot."

const helpText = `I am an AI agent. Write to me and I answer.
/new — start a new conversation
/status — show this conversation's state
/yes, /no, /always — answer an approval request
/help — this help`

// Channel is the Telegram channel: its Replier, and the receiving half
// that takes updates from long polling or the webhook, gates them by
// allowlist and access codes and hands them to the Runner.
type Channel struct {
	*Replier
	runner  Runner
	webhook webhook
	poller  poller

	meMu sync.Mutex
	me   *User

	wg sync.WaitGroup
}

// New returns the channel of cfg, whose Runner exists already. Where the
// runner is built on an agent loop that replies through the channel,
// build the Replier first (NewReplier) and the channel after the runner
// (NewChannel).
func New(cfg Config) (*Channel, error) {
	if cfg.Client == nil || cfg.Store == nil || cfg.Runner == nil || cfg.Agent == "" {
		return nil, errors.New("telegram: Client, Store, Runner and Agent are required")
	}
	r, err := NewReplier(cfg)
	if err != nil {
		return nil, err
	}
	return NewChannel(r, cfg.Runner)
}

// NewChannel returns the channel that replies with r and hands the
// updates it receives to runner; r's config must name the Agent. A
// replier belongs to one channel, whose Run delivers its outbox.
func NewChannel(r *Replier, runner Runner) (*Channel, error) {
	if runner == nil || r.cfg.Agent == "" {
		return nil, errors.New("telegram: Runner and Agent are required")
	}
	c := &Channel{Replier: r, runner: runner}
	c.webhook = webhook{store: r.cfg.Store, handle: c.Handle, log: r.log}
	c.poller = poller{source: r.cfg.Client, store: r.cfg.Store, handle: c.Handle, timeout: r.cfg.PollTimeout, log: r.log}
	return c, nil
}

// Run delivers the outbox, forgets old handled updates and, with poll
// set, long-polls for updates, until ctx ends.
func (c *Channel) Run(ctx context.Context, poll bool) {
	c.wg.Go(func() { c.outbox.loop(ctx) })
	c.wg.Go(func() { c.pruneLoop(ctx) })
	if poll {
		c.wg.Go(func() { c.poller.run(ctx) })
	}
}

// Wait blocks until the goroutines Run started have stopped.
func (c *Channel) Wait() { c.wg.Wait() }

// ServeHTTP is the webhook endpoint. It checks the secret header in
// constant time (401 when missing, 403 when wrong), hands the update to
// Handle and answers 200 once the update is durably handed off; a failure
// answers 500 so that Telegram delivers the update again.
func (c *Channel) ServeHTTP(w http.ResponseWriter, r *http.Request) { c.webhook.ServeHTTP(w, r) }

// pruneLoop forgets the updates handled more than SeenTTL ago, at once
// and then hourly, until ctx ends.
func (c *Channel) pruneLoop(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if err := c.cfg.Store.PruneSeen(ctx, time.Now().Add(-c.cfg.SeenTTL)); err != nil && ctx.Err() == nil {
			c.log.Warn("prune seen updates", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Handle processes one update at most once: an update already handled is
// skipped, and an update is recorded as handled only after it reached a
// run or the outbox. An error means nothing durable happened that a retry
// would repeat, so the update should be retried.
func (c *Channel) Handle(ctx context.Context, u Update) error {
	seen, err := c.cfg.Store.Seen(ctx, strconv.FormatInt(u.UpdateID, 10))
	if err != nil {
		return fmt.Errorf("telegram: update %d: %w", u.UpdateID, err)
	}
	if seen {
		c.log.Debug("duplicate update skipped", "update_id", u.UpdateID)
		return nil
	}
	if err := c.process(ctx, u); err != nil {
		return fmt.Errorf("telegram: update %d: %w", u.UpdateID, err)
	}
	if err := c.cfg.Store.MarkSeen(ctx, strconv.FormatInt(u.UpdateID, 10), time.Now().UTC()); err != nil {
		return fmt.Errorf("telegram: update %d: %w", u.UpdateID, err)
	}
	return nil
}

func (c *Channel) self(ctx context.Context) (User, error) {
	c.meMu.Lock()
	defer c.meMu.Unlock()
	if c.me != nil {
		return *c.me, nil
	}
	u, err := c.cfg.Client.GetMe(ctx)
	if err != nil {
		return User{}, err
	}
	c.me = &u
	return u, nil
}

// process acts on one update. Every effect is idempotent: replies go to
// the outbox under ids derived from the message, runs get ids derived from
// it too, so handling the same update twice acts once.
func (c *Channel) process(ctx context.Context, u Update) error {
	m := u.Message
	if m == nil || m.From == nil || m.From.IsBot || m.Text == "" {
		return nil
	}
	text := m.Text
	private := m.Chat.Type == "private"
	if !private {
		me, err := c.self(ctx)
		if err != nil {
			return err
		}
		mention := "@" + strings.ToLower(me.Username)
		replied := m.ReplyToMessage != nil && m.ReplyToMessage.From != nil && m.ReplyToMessage.From.ID == me.ID
		if !replied && (me.Username == "" || !strings.Contains(strings.ToLower(text), mention)) {
			return nil // not addressed to the bot
		}
		if me.Username != "" {
			text = strings.TrimSpace(replaceFold(text, mention, ""))
		}
	}
	ok, err := c.authorized(ctx, m.From.ID)
	if err != nil {
		return err
	}
	replyID := fmt.Sprintf("m%d-%d", m.Chat.ID, m.MessageID)
	if !ok {
		// Nothing of the text is logged, stored or sent on (seed 002).
		if private && len(c.cfg.AccessCodes) > 0 && !notCode(text) {
			msg, err := c.tryCode(ctx, strings.TrimSpace(text), m.Chat.ID, m.From.ID)
			if err != nil {
				return err
			}
			return c.reply(ctx, replyID, m.Chat.ID, msg)
		}
		c.log.Info("not authenticated", "user_id", m.From.ID, "chat_id", m.Chat.ID)
		return c.reply(ctx, replyID, m.Chat.ID, DeniedText)
	}
	c.log.Info("telegram message", "user_id", m.From.ID, "chat_id", m.Chat.ID, "update_id", u.UpdateID, "chars", len(text))
	owner, session := c.cfg.Identity.Session(c.cfg.Agent, ChannelName, "", strconv.FormatInt(m.Chat.ID, 10))
	switch command(text) {
	case "/start", "/help":
		return c.reply(ctx, replyID, m.Chat.ID, helpText)
	case "/new", "/reset":
		msg := "Started a new conversation."
		if err := c.runner.Reset(ctx, session); errors.Is(err, agent.ErrBusy) {
			msg = "Cannot start over yet: " + err.Error()
		} else if err != nil {
			return err
		}
		return c.reply(ctx, replyID, m.Chat.ID, msg)
	case "/status":
		stats, err := c.cfg.Store.OutboxStats(ctx)
		if err != nil {
			return err
		}
		return c.reply(ctx, replyID, m.Chat.ID, fmt.Sprintf("Agent: %s\nSession: %s\nYour user id: tg:%d\nReplies waiting to be delivered: %d",
			c.cfg.Agent, session, m.From.ID, stats.Pending))
	case "/yes", "/no", "/always":
		text = command(text)
	}
	in := agent.Input{
		RunID: fmt.Sprintf("tg-%d-%d", m.Chat.ID, m.MessageID), SessionID: session, Agent: c.cfg.Agent, Owner: owner,
		Messages: []chat.Message{{Role: chat.User, Content: text}}, Autonomy: c.cfg.Autonomy,
		Stream: true, Interactive: true, Reply: agent.Reply{Channel: ChannelName, To: strconv.FormatInt(m.Chat.ID, 10)},
	}
	st, err := c.runner.Deliver(ctx, in, func(string) {})
	if errors.Is(err, agent.ErrUnknownAgent) {
		return c.reply(ctx, replyID, m.Chat.ID, "This bot's agent is not configured: "+err.Error())
	}
	if errors.Is(err, agent.ErrMayNotApprove) {
		return c.reply(ctx, replyID, m.Chat.ID, "Not approved: "+err.Error())
	}
	if err != nil {
		return err
	}
	if st.Step != agent.StepDone {
		c.startTyping(st.RunID, m.Chat.ID)
	}
	return nil
}

// command returns the bot command text starts with, lowercased and
// without an @botname suffix, or "".
func command(text string) string {
	if !strings.HasPrefix(text, "/") {
		return ""
	}
	cmd, _, _ := strings.Cut(text, " ")
	cmd, _, _ = strings.Cut(cmd, "@")
	return strings.ToLower(cmd)
}

func replaceFold(s, old, repl string) string {
	i := strings.Index(strings.ToLower(s), old)
	if i < 0 || len(strings.ToLower(s)) != len(s) {
		return strings.ReplaceAll(s, old, repl)
	}
	return s[:i] + repl + s[i+len(old):]
}

func (c *Channel) authorized(ctx context.Context, userID int64) (bool, error) {
	if slices.Contains(c.cfg.AllowedUsers, userID) {
		return true, nil
	}
	return c.cfg.Store.AllowedUser(ctx, strconv.FormatInt(userID, 10))
}
