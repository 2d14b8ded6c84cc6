package channel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// DeniedText is the one reply every unauthenticated message gets, a wrong
// access code included, so that it tells nothing about codes (seed 002);
// only a conversation locked out for too many wrong codes is told so
// (codes.go).
const DeniedText = "Send the access code to use this bot."

// HelpText answers /help (and /start).
const HelpText = `I am an AI agent. Write to me and I answer.
/new or /reset — start a new conversation
/stop — stop the reply I am working on
/status — show this conversation's state
/yes, /no, /always — answer an approval request (or press its button)
/help — this help`

// MaxText bounds, in bytes, the text of a message the channel takes: a
// longer one is refused, with a reply that says so.
const MaxText = 64 << 10

// Channel is a messaging channel: its Replier, and the receiving half that
// takes the Inbound messages its adapter parsed, handles each once, gates
// them by allowlist and access codes and hands them to the Runner.
type Channel struct {
	*Replier
	runner Runner
	wg     sync.WaitGroup
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
// messages it receives to runner; r's config must name the Agent. A
// replier belongs to one channel, whose Run delivers its outbox.
func NewChannel(r *Replier, runner Runner) (*Channel, error) {
	if runner == nil || r.cfg.Agent == "" {
		return nil, fmt.Errorf("channel %s: Runner and Agent are required", r.name)
	}
	return &Channel{Replier: r, runner: runner}, nil
}

// Run delivers the outbox and forgets old handled deliveries until ctx
// ends.
func (c *Channel) Run(ctx context.Context) {
	c.wg.Go(func() { c.outbox.loop(ctx) })
	c.wg.Go(func() { c.pruneLoop(ctx) })
}

// Wait blocks until the goroutines Run started have stopped.
func (c *Channel) Wait() { c.wg.Wait() }

// pruneLoop forgets the deliveries handled more than SeenTTL ago, at once
// and then hourly, until ctx ends.
func (c *Channel) pruneLoop(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if err := c.cfg.Store.PruneSeen(ctx, time.Now().Add(-c.cfg.SeenTTL)); err != nil && ctx.Err() == nil {
			c.log.Warn("prune seen deliveries", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Handle processes one delivery at most once: a delivery already handled
// is skipped, and one is recorded as handled only after it reached a run
// or the outbox. An error means nothing durable happened that a retry
// would repeat, so the delivery should be retried.
func (c *Channel) Handle(ctx context.Context, in Inbound) error {
	if in.ID == "" || in.To == "" {
		return fmt.Errorf("channel %s: a delivery needs an ID and a To", c.name)
	}
	seen, err := c.cfg.Store.Seen(ctx, in.ID)
	if err != nil {
		return fmt.Errorf("channel %s: delivery %s: %w", c.name, in.ID, err)
	}
	if seen {
		c.log.Debug("duplicate delivery skipped", "id", in.ID)
		return nil
	}
	text, err := c.process(ctx, in)
	if err == nil && text != "" {
		err = c.answer(ctx, in, text)
	}
	if err != nil {
		return fmt.Errorf("channel %s: delivery %s: %w", c.name, in.ID, err)
	}
	if err := c.cfg.Store.MarkSeen(ctx, in.ID, time.Now().UTC()); err != nil {
		return fmt.Errorf("channel %s: delivery %s: %w", c.name, in.ID, err)
	}
	return nil
}

// answer sends text, the channel's own reply to in: in the adapter's
// answer to the delivery when it takes it (Inbound.Answer) and text fits
// one message, else through the outbox under an id derived from the
// delivery.
func (c *Channel) answer(ctx context.Context, in Inbound, text string) error {
	if in.Answer != nil && utf16Len(text) <= c.cfg.Platform.MaxLen() && in.Answer(text) {
		return nil
	}
	return c.reply(ctx, "m"+idPart(in.ID), in.To, text)
}

// principal is the user of the session's owner within the channel: the
// Principal, qualified by its workspace, if any ("T123:U456").
func principal(in Inbound) string {
	if in.Workspace == "" {
		return in.Principal
	}
	return in.Workspace + ":" + in.Principal
}

// user is the sender, qualified by the workspace, as access codes let
// users in.
func user(in Inbound) string {
	if in.Workspace == "" {
		return in.User
	}
	return in.Workspace + ":" + in.User
}

// session returns the owner and the session of in's conversation: the
// owner "<name>:<workspace>:<principal>" ("<name>:<principal>" without a
// workspace, as Telegram's "tg:<chat id>"), and a session of its own for
// each Thread.
func (c *Channel) session(in Inbound) (owner, session string) {
	p := principal(in)
	owner, session = c.cfg.Identity.Session(c.cfg.Agent, c.name, "", p)
	if in.Thread != "" {
		_, session = c.cfg.Identity.Session(c.cfg.Agent, c.name, "", p+"/"+in.Thread)
	}
	return owner, session
}

// process acts on one delivery and returns the channel's own reply to it
// ("" for none: a run replies by itself). Every effect is idempotent:
// runs get ids derived from the delivery, as the reply's outbox messages
// do, so handling the same delivery twice acts once.
func (c *Channel) process(ctx context.Context, in Inbound) (reply string, err error) {
	text := strings.TrimSpace(in.Text)
	if text == "" && in.Action == "" && len(in.Attachments) == 0 {
		return "", nil
	}
	ok, err := c.authorized(ctx, in)
	if err != nil {
		return "", err
	}
	if in.Action == "" && in.Group && !in.Addressed && c.cfg.Groups.Respond != "all" {
		if !ok {
			return "", nil // what a person not let in says is kept nowhere (seed 002)
		}
		return "", c.remember(ctx, in)
	}
	if !ok {
		// Nothing of the text is logged, stored or sent on (seed 002).
		if !in.Group && in.Action == "" && len(c.cfg.AccessCodes) > 0 && !notCode(text) {
			return c.tryCode(ctx, text, principal(in), user(in))
		}
		c.log.Info("not authenticated", "user", user(in), "to", in.To)
		return DeniedText, nil
	}
	if len(text) > MaxText {
		return fmt.Sprintf("Your message is too long: %d bytes, of at most %d. Nothing of it was kept.", len(text), MaxText), nil
	}
	owner, session := c.session(in)
	runID := c.name + "-" + idPart(in.ID)
	input := agent.Input{
		RunID: runID, SessionID: session, Agent: c.cfg.Agent, Owner: owner, Autonomy: c.cfg.Autonomy,
		Stream: true, Interactive: true, Reply: agent.Reply{Channel: c.name, To: in.To},
	}
	if in.Action != "" {
		id, d, ok := parseAction(in.Action)
		if !ok {
			return "This button does nothing any more.", nil
		}
		input.Approval, text = id, "/"+string(d)
	}
	c.log.Info("message", "user", user(in), "to", in.To, "id", in.ID, "chars", len(text))
	switch command(text) {
	case "/start", "/help":
		return HelpText, nil
	case "/new", "/reset":
		msg := "Started a new conversation."
		if err := c.runner.Reset(ctx, session); errors.Is(err, agent.ErrBusy) {
			msg = "Cannot start over yet: " + err.Error()
		} else if err != nil {
			return "", err
		}
		return msg, nil
	case "/stop":
		return c.stop(ctx, in.To, session)
	case "/status":
		stats, err := c.cfg.Store.OutboxStats(ctx)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("Agent: %s\nSession: %s\nYour user id: %s:%s\nReplies waiting to be delivered: %d",
			c.cfg.Agent, session, c.name, user(in), stats.Pending), nil
	case "/yes", "/no", "/always":
		text = command(text)
	default:
		if in.Group {
			if text, err = c.withContext(ctx, in, text); err != nil {
				return "", err
			}
		}
	}
	var parts []chat.Part
	if len(in.Attachments) > 0 && input.Approval == "" {
		var r *refusal
		if parts, text, err = c.attach(ctx, in, text); errors.As(err, &r) {
			return r.msg, nil
		} else if err != nil {
			return "", err
		}
	}
	input.Messages = []chat.Message{{Role: chat.User, Content: text, Parts: parts}}
	st, err := c.runner.Deliver(ctx, input, func(string) {})
	var inputErr *agent.InputError
	switch {
	case errors.As(err, &inputErr):
		return "Not taken: " + inputErr.Message, nil
	case errors.Is(err, store.ErrTooLarge):
		return "Your message is too large to keep here: " + err.Error() + ". Nothing of it was kept.", nil
	case errors.Is(err, agent.ErrUnknownAgent):
		return "This bot's agent is not configured: " + err.Error(), nil
	case errors.Is(err, agent.ErrMayNotApprove):
		return "Not approved: " + err.Error(), nil
	case errors.Is(err, agent.ErrStaleApproval):
		return "That approval request is no longer waiting for an answer: nothing was changed.", nil
	case err != nil:
		return "", err
	}
	if in.Group {
		if err := c.forget(ctx, in); err != nil {
			return "", err
		}
	}
	if st.Step != agent.StepDone {
		c.startTyping(st.RunID, in.To)
	}
	return "", nil
}

// stop cancels the run the session works on (/stop) and returns what
// the person is told.
func (c *Channel) stop(ctx context.Context, to, session string) (string, error) {
	s, ok := c.runner.(Stopper)
	if !ok {
		return "Stopping a reply is not possible here.", nil
	}
	stopped, err := s.Stop(ctx, session)
	if err != nil {
		return "", err
	}
	if !stopped {
		return "Nothing to stop.", nil
	}
	c.stopTo(to)
	return "Stopped.", nil
}

// command returns the command text starts with, lowercased and without
// an @botname suffix, or "".
func command(text string) string {
	if !strings.HasPrefix(text, "/") {
		return ""
	}
	cmd, _, _ := strings.Cut(text, " ")
	cmd, _, _ = strings.Cut(cmd, "@")
	return strings.ToLower(cmd)
}

// authorized reports whether in's sender may use the channel.
func (c *Channel) authorized(ctx context.Context, in Inbound) (bool, error) {
	if in.User == "" {
		return false, nil
	}
	if slices.Contains(c.cfg.AllowedUsers, in.User) || slices.Contains(c.cfg.AllowedUsers, user(in)) {
		return true, nil
	}
	return c.cfg.Store.AllowedUser(ctx, user(in))
}
