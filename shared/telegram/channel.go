package telegram

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/store"
	"github.com/lambdaclaw/lambdaclaw/shared/tool"
)

// ChannelName is the channel of Telegram runs and the prefix of Telegram
// user ids ("tg:12345").
const ChannelName = "tg"

// DeniedText is the one reply every unauthenticated message gets, a wrong
// access code included, so that it tells nothing about codes (seed 002).
const DeniedText = "Send the access code to use this bot."

const helpText = `I am an AI agent. Write to me and I answer.
/new — start a new conversation
/status — show this conversation's state
/yes, /no, /always — answer an approval request
/help — this help`

// Runner hands messages to the agent loop (agent.Driver implements it).
type Runner interface {
	Deliver(ctx context.Context, in agent.Input, subscribe func(runID string)) (agent.RunState, error)
	Reset(ctx context.Context, sessionID string) error
}

// Config wires a Channel.
type Config struct {
	Client *Client
	Store  Store
	Runner Runner
	// Agent answers the bot's chats.
	Agent    string
	Identity agent.Identity
	Autonomy tool.Autonomy
	// AllowedUsers may use the bot; others need an access code.
	AllowedUsers []int64
	// AccessCodes each let one user in, once.
	AccessCodes []string
	Log         *slog.Logger
	// PollTimeout is getUpdates' long-poll timeout (default 30 s).
	PollTimeout time.Duration
	// DraftInterval is the least time between two updates of a streamed
	// draft, by sendMessageDraft or editMessageText (default 1 s).
	DraftInterval time.Duration
	// SeenTTL is how long handled update ids are remembered (default 48 h).
	SeenTTL time.Duration
	// Serverless is for a process that is frozen between requests (a
	// Lambda function), where Run is not used: no streamed drafts, one
	// typing action instead of a repeating one, and Finish and Approval
	// deliver the outbox themselves (Flush, waiting up to FlushWait for
	// retries) before they return.
	Serverless bool
	// FlushWait bounds the retries of a serverless Flush (default 10 s).
	FlushWait time.Duration
}

// Channel is the Telegram channel. It implements agent.Replier for runs
// whose reply channel is "tg", and ignores the others.
type Channel struct {
	cfg  Config
	log  *slog.Logger
	kick chan struct{}

	meMu sync.Mutex
	me   *User

	mu     sync.Mutex
	typing map[string]context.CancelFunc
	drafts map[string]*draft
	wg     sync.WaitGroup

	// noDraftAPI is set once the Bot API server does not know
	// sendMessageDraft; noDraftChats holds the chats that refused drafts.
	// Both fall back to a message edited with editMessageText.
	noDraftAPI   bool
	noDraftChats map[int64]bool
}

// New returns a channel; Run starts its background work.
func New(cfg Config) (*Channel, error) {
	if cfg.Client == nil || cfg.Store == nil || cfg.Runner == nil || cfg.Agent == "" {
		return nil, errors.New("telegram: Client, Store, Runner and Agent are required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.PollTimeout <= 0 {
		cfg.PollTimeout = 30 * time.Second
	}
	if cfg.DraftInterval <= 0 {
		cfg.DraftInterval = time.Second
	}
	if cfg.SeenTTL <= 0 {
		cfg.SeenTTL = 48 * time.Hour
	}
	if cfg.FlushWait <= 0 {
		cfg.FlushWait = 10 * time.Second
	}
	return &Channel{cfg: cfg, log: cfg.Log.With("channel", ChannelName), kick: make(chan struct{}, 1),
		typing: map[string]context.CancelFunc{}, drafts: map[string]*draft{}, noDraftChats: map[int64]bool{}}, nil
}

// Run delivers the outbox and, with poll set, long-polls for updates,
// until ctx ends.
func (c *Channel) Run(ctx context.Context, poll bool) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.sendLoop(ctx)
	}()
	if poll {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.pollLoop(ctx)
		}()
	}
}

// Wait blocks until the goroutines Run started have stopped.
func (c *Channel) Wait() { c.wg.Wait() }

// Handle processes one update at most once: an update already handled is
// skipped, and an update is recorded as handled only after it reached a
// run or the outbox. An error means nothing durable happened that a retry
// would repeat, so the update should be retried.
func (c *Channel) Handle(ctx context.Context, u Update) error {
	seen, err := c.cfg.Store.Seen(ctx, u.UpdateID)
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
	if err := c.cfg.Store.MarkSeen(ctx, u.UpdateID, time.Now().UTC()); err != nil {
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
		if private {
			granted, err := c.redeem(ctx, strings.TrimSpace(text), m.From.ID)
			if err != nil {
				return err
			}
			if granted {
				c.log.Info("auth code accepted", "user_id", m.From.ID)
				return c.reply(ctx, replyID, m.Chat.ID, "Access granted. "+helpText)
			}
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
		if err := c.cfg.Runner.Reset(ctx, session); errors.Is(err, agent.ErrBusy) {
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
	st, err := c.cfg.Runner.Deliver(ctx, in, func(string) {})
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
	return c.cfg.Store.AllowedUser(ctx, userID)
}

// redeem lets userID in when text is an unused access code. Every code is
// compared, in constant time, whatever matches.
func (c *Channel) redeem(ctx context.Context, text string, userID int64) (bool, error) {
	got := sha256.Sum256([]byte(text))
	match := ""
	for _, code := range c.cfg.AccessCodes {
		want := sha256.Sum256([]byte(code))
		if subtle.ConstantTimeCompare(got[:], want[:]) == 1 && code != "" {
			match = hex.EncodeToString(want[:])
		}
	}
	if match == "" {
		return false, nil
	}
	return c.cfg.Store.RedeemCode(ctx, match, userID, time.Now().UTC())
}

// reply stores text for chatID in the outbox and wakes the sender.
func (c *Channel) reply(ctx context.Context, id string, chatID int64, text string) error {
	var msgs []OutMessage
	now := time.Now().UTC()
	for i, part := range Split(text, MaxMessageLen) {
		msgs = append(msgs, OutMessage{ID: fmt.Sprintf("%s#%d", id, i), ChatID: chatID, Text: part, Status: OutPending, NextAt: now, CreatedAt: now})
	}
	if len(msgs) == 0 {
		return nil
	}
	if err := c.cfg.Store.AddOutbox(ctx, msgs); err != nil {
		return err
	}
	c.wake()
	return nil
}

func (c *Channel) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// chatOf returns the chat a run replies to.
func chatOf(r agent.RunState) (int64, bool) {
	if r.Reply.Channel != ChannelName {
		return 0, false
	}
	id, err := strconv.ParseInt(r.Reply.To, 10, 64)
	return id, err == nil
}

// Delta implements agent.Replier: the streamed text is shown at most once
// per DraftInterval, with sendMessageDraft where the server and the chat
// allow it, else as a message edited with editMessageText.
func (c *Channel) Delta(r agent.RunState, text string) {
	chatID, ok := chatOf(r)
	if !ok || c.cfg.Serverless {
		return
	}
	c.mu.Lock()
	d := c.drafts[r.RunID]
	if d == nil {
		d = &draft{chatID: chatID, id: draftID(r.RunID), stop: make(chan struct{}), done: make(chan struct{})}
		c.drafts[r.RunID] = d
		go c.draftLoop(d)
	}
	c.mu.Unlock()
	d.mu.Lock()
	d.text.WriteString(text)
	d.mu.Unlock()
}

// Approval implements agent.Replier.
func (c *Channel) Approval(r agent.RunState, a store.Approval) {
	chatID, ok := chatOf(r)
	if !ok {
		return
	}
	c.stopRun(r.RunID)
	if err := c.reply(context.Background(), "ap-"+a.ID, chatID, a.Prompt); err != nil {
		c.log.Error("store approval prompt", "run_id", r.RunID, "error", err)
	}
	c.flushServerless()
}

// flushServerless delivers the outbox before a serverless process is
// frozen; what stays pending is retried by the next flush.
func (c *Channel) flushServerless() {
	if !c.cfg.Serverless {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.FlushWait+30*time.Second)
	defer cancel()
	if n, err := c.Flush(ctx, c.cfg.FlushWait); err != nil || n > 0 {
		c.log.Warn("outbox not fully delivered; the next flush retries", "pending", n, "error", err)
	}
}

// Finish implements agent.Replier: the answer is split and stored in the
// outbox before Finish returns, so a run marked done has its reply queued.
func (c *Channel) Finish(r agent.RunState, res agent.Result) {
	chatID, ok := chatOf(r)
	if !ok {
		return
	}
	text := res.Content
	if res.Error != "" {
		text = "Sorry, I could not answer: " + res.Error
	} else if strings.TrimSpace(text) == "" {
		text = "(empty reply)"
	}
	var err error
	for attempt := range 5 {
		if err = c.reply(context.Background(), "run-"+r.RunID, chatID, text); err == nil {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	if err != nil {
		c.log.Error("store reply", "run_id", r.RunID, "error", err)
	}
	c.stopRun(r.RunID)
	c.flushServerless()
}

// stopRun ends the typing indicator and the draft of a run; a draft
// message (the editMessageText fallback) is deleted, as the final reply
// replaces it, and a sendMessageDraft draft is left to expire.
func (c *Channel) stopRun(runID string) {
	c.mu.Lock()
	if cancel := c.typing[runID]; cancel != nil {
		cancel()
		delete(c.typing, runID)
	}
	d := c.drafts[runID]
	delete(c.drafts, runID)
	c.mu.Unlock()
	if d != nil {
		close(d.stop)
	}
}

// startTyping shows "typing…" in the chat until the run replies (at most
// ten minutes).
func (c *Channel) startTyping(runID string, chatID int64) {
	if c.cfg.Serverless {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.cfg.Client.SendChatAction(ctx, chatID, "typing"); err != nil {
			c.log.Debug("typing indicator", "error", err)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	c.mu.Lock()
	if old := c.typing[runID]; old != nil {
		old()
	}
	c.typing[runID] = cancel
	c.mu.Unlock()
	go func() {
		defer cancel()
		t := time.NewTicker(4 * time.Second)
		defer t.Stop()
		for {
			if err := c.cfg.Client.SendChatAction(ctx, chatID, "typing"); err != nil && ctx.Err() == nil {
				c.log.Debug("typing indicator", "error", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}

// draft is the streamed reply of a run while it is written.
type draft struct {
	chatID int64
	// id is the run's sendMessageDraft draft_id (non-zero).
	id   int64
	stop chan struct{}
	done chan struct{}

	mu   sync.Mutex
	text strings.Builder
}

// draftID derives a non-zero draft_id from a run id, the same for every
// update of the run's draft.
func draftID(runID string) int64 {
	h := fnv.New32a()
	h.Write([]byte(runID))
	if id := int64(h.Sum32() & 0x7fffffff); id != 0 {
		return id
	}
	return 1
}

// useDrafts reports whether chatID may get sendMessageDraft drafts: the
// server knows the method, the chat did not refuse it, and the chat is
// private (private chat ids are positive; groups and channels are not).
func (c *Channel) useDrafts(chatID int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return chatID > 0 && !c.noDraftAPI && !c.noDraftChats[chatID]
}

// draftFallback records that err from sendMessageDraft rules drafts out,
// for every chat or for chatID, and reports whether it did.
func (c *Channel) draftFallback(chatID int64, err error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case DraftsUnsupported(err):
		if !c.noDraftAPI {
			c.log.Info("sendMessageDraft unsupported by the Bot API server; drafts fall back to editMessageText", "error", err)
		}
		c.noDraftAPI = true
	case DraftsRefused(err):
		c.log.Info("drafts refused in chat; falling back to editMessageText", "chat_id", chatID, "error", err)
		c.noDraftChats[chatID] = true
	default:
		return false
	}
	return true
}

func (c *Channel) draftLoop(d *draft) {
	defer close(d.done)
	var msgID int64
	var shown string
	t := time.NewTicker(c.cfg.DraftInterval)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			if msgID != 0 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := c.cfg.Client.DeleteMessage(ctx, d.chatID, msgID); err != nil {
					c.log.Debug("delete draft", "error", err)
				}
				cancel()
			}
			return
		case <-t.C:
		}
		d.mu.Lock()
		text := d.text.String()
		d.mu.Unlock()
		if n := prefixWithin(text, MaxMessageLen-1); n < len(text) {
			text = text[:n] + "…"
		}
		if strings.TrimSpace(text) == "" || text == shown {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var err error
		if msgID == 0 && c.useDrafts(d.chatID) {
			err = c.cfg.Client.SendMessageDraft(ctx, d.chatID, d.id, text)
			if err != nil && c.draftFallback(d.chatID, err) {
				// Show it at once as a message instead.
				msgID, err = c.cfg.Client.SendMessage(ctx, d.chatID, text)
			}
		} else if msgID == 0 {
			msgID, err = c.cfg.Client.SendMessage(ctx, d.chatID, text)
		} else {
			err = c.cfg.Client.EditMessageText(ctx, d.chatID, msgID, text)
		}
		cancel()
		var ae *APIError
		switch {
		case err == nil:
			shown = text
		case errors.As(err, &ae) && ae.RetryAfter > 0:
			sleepOrStop(d.stop, ae.RetryAfter)
		default:
			c.log.Debug("draft update", "error", err)
		}
	}
}

func sleepOrStop(stop <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
	case <-t.C:
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
