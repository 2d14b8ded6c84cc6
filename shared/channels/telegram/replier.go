package telegram

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

var _ agent.Outboxer = (*Replier)(nil)

// Replier is the sending half of the channel: it implements agent.Replier
// for runs whose reply channel is "tg", and ignores the others. Replies go
// to a durable outbox, streamed text to drafts, and a chat shows "typing…"
// while its run works. It needs no Runner, so the agent loop can be built
// with it before the runner that receives the updates (NewChannel).
type Replier struct {
	cfg    Config
	log    *slog.Logger
	outbox *outbox
	drafts *drafts

	mu     sync.Mutex
	typing map[string]context.CancelFunc
}

// NewReplier returns the sending half of the channel of cfg, which needs
// Client and Store; cfg.Runner is not used.
func NewReplier(cfg Config) (*Replier, error) {
	if cfg.Client == nil || cfg.Store == nil {
		return nil, errors.New("telegram: Client and Store are required")
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
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	log := cfg.Log.With("channel", ChannelName)
	return &Replier{cfg: cfg, log: log, outbox: newOutbox(cfg.Store, cfg.Client, log),
		drafts: newDrafts(cfg.Client, cfg.DraftInterval, log), typing: map[string]context.CancelFunc{}}, nil
}

// reply stores text for chatID in the outbox and wakes the sender.
func (r *Replier) reply(ctx context.Context, id string, chatID int64, text string) error {
	msgs := outboxMessages(id, chatID, text)
	if len(msgs) == 0 {
		return nil
	}
	return r.outbox.add(ctx, msgs)
}

// maxReplyParts bounds the messages one reply is sent as: a longer reply
// is cut, and says so. It keeps a reply's outbox within what one store
// transaction holds beside the run (store.Commit.Outbox).
const maxReplyParts = 64

// outboxMessages are the outbox messages of a reply text to chatID: its
// parts, with ids id#0, id#1, …, so that storing the same reply twice
// keeps one copy.
func outboxMessages(id string, chatID int64, text string) []store.OutboxMessage {
	parts := Split(text, MaxMessageLen)
	if len(parts) > maxReplyParts {
		const note = "\n[the reply was cut: too long for Telegram]"
		parts = parts[:maxReplyParts]
		last := parts[maxReplyParts-1]
		parts[maxReplyParts-1] = Split(last, MaxMessageLen-len(note))[0] + note
	}
	now := time.Now().UTC()
	msgs := make([]store.OutboxMessage, 0, len(parts))
	for i, part := range parts {
		msgs = append(msgs, store.OutboxMessage{ID: fmt.Sprintf("%s#%d", id, i), Channel: ChannelName, To: strconv.FormatInt(chatID, 10), Text: part, Status: store.OutboxPending, NextAt: now, CreatedAt: now})
	}
	return msgs
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
func (r *Replier) Delta(run agent.RunState, text string) {
	chatID, ok := chatOf(run)
	if !ok || r.cfg.Serverless {
		return
	}
	r.drafts.write(run.RunID, chatID, text)
}

// Approval implements agent.Replier: the loop tells it once the commit
// that parks the run, which holds the prompt (ApprovalOutbox), succeeded;
// the sender is woken (a serverless process delivers it now).
func (r *Replier) Approval(run agent.RunState, _ store.Approval) { r.committed(run) }

// ApprovalOutbox implements agent.Outboxer: the outbox messages of an
// approval's prompt to the run's chat, for the commit that parks the run.
func (r *Replier) ApprovalOutbox(run agent.RunState, a store.Approval) []store.OutboxMessage {
	chatID, ok := chatOf(run)
	if !ok {
		return nil
	}
	return outboxMessages("ap-"+a.ID, chatID, a.Prompt)
}

// finalText is the text a run's outcome is sent as.
func finalText(res agent.Result) string {
	switch {
	case res.Error != "":
		return "Sorry, I could not answer: " + res.Error
	case strings.TrimSpace(res.Content) == "":
		return "(empty reply)"
	}
	return res.Content
}

// Finish implements agent.Replier: the answer is split and stored in the
// outbox before Finish returns. A check-in delivered to a chat
// (schedule.Via) is told so; the loop's own runs give their reply to the
// commit that ends them instead (Outbox, Committed).
func (r *Replier) Finish(run agent.RunState, res agent.Result) {
	chatID, ok := chatOf(run)
	if !ok {
		return
	}
	var err error
	for attempt := range 5 {
		if err = r.reply(context.Background(), "run-"+run.RunID, chatID, finalText(res)); err == nil {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 200 * time.Millisecond)
	}
	if err != nil {
		r.log.Error("store reply", "run_id", run.RunID, "error", err)
	}
	r.stopRun(run.RunID)
	r.flushServerless()
}

// Outbox implements agent.Outboxer: the outbox messages of a run's reply
// to its chat, for the commit that ends the run.
func (r *Replier) Outbox(run agent.RunState, res agent.Result) []store.OutboxMessage {
	chatID, ok := chatOf(run)
	if !ok {
		return nil
	}
	return outboxMessages("run-"+run.RunID, chatID, finalText(res))
}

// Committed implements agent.Outboxer: the run's reply is in the outbox,
// committed with the run; the sender is woken (a serverless process
// delivers it now).
func (r *Replier) Committed(run agent.RunState, _ agent.Result) { r.committed(run) }

// committed wakes the sender of what the loop committed to the outbox
// for run, and ends its typing indicator and draft.
func (r *Replier) committed(run agent.RunState) {
	if _, ok := chatOf(run); !ok {
		return
	}
	r.outbox.wake()
	r.stopRun(run.RunID)
	r.flushServerless()
}

// Flush delivers the outbox now, for a process that cannot keep
// Channel.Run going (a Lambda function): it makes passes over the outbox
// while messages are waiting for a retry due within wait, and returns how
// many messages are still pending when it gives up. Those are retried by
// the next Flush or Run, whichever process runs it.
func (r *Replier) Flush(ctx context.Context, wait time.Duration) (pending int, err error) {
	return r.outbox.flush(ctx, wait)
}

// flushServerless delivers the outbox before a serverless process is
// frozen; what stays pending is retried by the next flush.
func (r *Replier) flushServerless() {
	if !r.cfg.Serverless {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.FlushWait+30*time.Second)
	defer cancel()
	if n, err := r.Flush(ctx, r.cfg.FlushWait); err != nil || n > 0 {
		r.log.Warn("outbox not fully delivered; the next flush retries", "pending", n, "error", err)
	}
}

// stopRun ends the typing indicator and the draft of a run.
func (r *Replier) stopRun(runID string) {
	r.mu.Lock()
	if cancel := r.typing[runID]; cancel != nil {
		cancel()
		delete(r.typing, runID)
	}
	r.mu.Unlock()
	r.drafts.stop(runID)
}

// startTyping shows "typing…" in the chat until the run replies (at most
// ten minutes).
func (r *Replier) startTyping(runID string, chatID int64) {
	if r.cfg.Serverless {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := r.cfg.Client.SendChatAction(ctx, chatID, "typing"); err != nil {
			r.log.Debug("typing indicator", "error", err)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	r.mu.Lock()
	if old := r.typing[runID]; old != nil {
		old()
	}
	r.typing[runID] = cancel
	r.mu.Unlock()
	go func() {
		defer cancel()
		t := time.NewTicker(4 * time.Second)
		defer t.Stop()
		for {
			if err := r.cfg.Client.SendChatAction(ctx, chatID, "typing"); err != nil && ctx.Err() == nil {
				r.log.Debug("typing indicator", "error", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
}
