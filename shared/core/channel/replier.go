package channel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

var _ agent.Outboxer = (*Replier)(nil)

// Replier is the sending half of a channel: it implements agent.Replier
// and agent.Outboxer for runs whose reply channel is its platform's name,
// and ignores the others. Replies go to the durable outbox, streamed text
// to drafts, and a conversation shows that the agent works while its run
// does. It needs no Runner, so the agent loop can be built with it before
// the runner that receives the messages (NewChannel).
type Replier struct {
	cfg    Config
	name   string
	log    *slog.Logger
	outbox *outbox
	drafts *drafts

	mu sync.Mutex
	// typing holds the typing indicators of runs, by run id.
	typing map[string]typing
}

// typing is the typing indicator of a run in the conversation to.
type typing struct {
	to     string
	cancel context.CancelFunc
}

// NewReplier returns the sending half of the channel of cfg, which needs
// Platform and Store; cfg.Runner is not used.
func NewReplier(cfg Config) (*Replier, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	name := cfg.Platform.Name()
	log := cfg.Log.With("channel", name)
	return &Replier{cfg: cfg, name: name, log: log, outbox: newOutbox(cfg.Store, cfg.Platform, log),
		drafts: newDrafts(cfg.Platform, cfg.DraftInterval, log), typing: map[string]typing{}}, nil
}

// Name is the channel's name (Platform.Name).
func (r *Replier) Name() string { return r.name }

// reply stores text for to in the outbox and wakes the sender.
func (r *Replier) reply(ctx context.Context, id, to, text string) error {
	msgs := r.messages(id, to, text, nil)
	if len(msgs) == 0 {
		return nil
	}
	return r.outbox.add(ctx, msgs)
}

// ErrNoFiles is the error of SendFile on a platform that sends no files.
var ErrNoFiles = errors.New("this channel cannot send files")

// SendFile sends f to the conversation to at once (a tool's call, which
// the loop runs at most once, so no outbox keeps it).
func (r *Replier) SendFile(ctx context.Context, to string, f File) (string, error) {
	fs, ok := r.cfg.Platform.(FileSender)
	if !ok {
		return "", ErrNoFiles
	}
	r.log.Info("file", "to", to, "media_type", f.MediaType, "bytes", len(f.Data))
	return fs.SendFile(ctx, to, f)
}

// MaxParts bounds the messages one reply is sent as: a longer reply is
// cut, and says so. It keeps a reply's outbox within what one store
// transaction holds beside the run (store.Commit.Outbox).
const MaxParts = 64

// messages are the outbox messages of a reply text to to: its parts,
// with ids id#0, id#1, …, so that storing the same reply twice keeps one
// copy; the last part carries buttons.
func (r *Replier) messages(id, to, text string, buttons []Button) []store.OutboxMessage {
	limit := r.cfg.Platform.MaxLen()
	parts := Split(text, limit)
	if len(parts) > MaxParts {
		const note = "\n[the reply was cut: too long for one message]"
		parts = parts[:MaxParts]
		parts[MaxParts-1] = Split(parts[MaxParts-1], limit-utf16Len(note))[0] + note
	}
	now := time.Now().UTC()
	msgs := make([]store.OutboxMessage, 0, len(parts))
	for i, part := range parts {
		msgs = append(msgs, store.OutboxMessage{ID: fmt.Sprintf("%s#%d", id, i), Channel: r.name, To: to, Text: part,
			Status: store.OutboxPending, NextAt: now, CreatedAt: now})
	}
	if len(msgs) > 0 {
		msgs[len(msgs)-1].Buttons = buttons
	}
	return msgs
}

// to returns where a run replies, if on this channel.
func (r *Replier) to(run agent.RunState) (string, bool) {
	if run.Reply.Channel != r.name || run.Reply.To == "" {
		return "", false
	}
	return run.Reply.To, true
}

// Delta implements agent.Replier: the streamed text is shown as a draft
// at most once per DraftInterval, where the platform can show one.
func (r *Replier) Delta(run agent.RunState, text string) {
	to, ok := r.to(run)
	if !ok || r.cfg.Serverless || r.drafts == nil {
		return
	}
	r.drafts.write(run.RunID, to, text)
}

// Approval implements agent.Replier: the loop tells it once the commit
// that parks the run, which holds the prompt (ApprovalOutbox), succeeded;
// the sender is woken (a serverless process delivers it now).
func (r *Replier) Approval(run agent.RunState, _ store.Approval) { r.committed(run) }

// ApprovalOutbox implements agent.Outboxer: the outbox messages of an
// approval's prompt to the run's conversation, for the commit that parks
// the run, with the answers as buttons (ApprovalButtons).
func (r *Replier) ApprovalOutbox(run agent.RunState, a store.Approval) []store.OutboxMessage {
	to, ok := r.to(run)
	if !ok {
		return nil
	}
	return r.messages("ap-"+a.ID, to, a.Prompt, ApprovalButtons(a.ID))
}

// ApprovalButtons are the buttons of an approval's prompt: Yes, No and
// Always, whose Values "ap:<approval id>:<answer>" answer it; none when
// such a Value would be longer than 64 bytes (the text commands /yes,
// /no and /always still answer it).
func ApprovalButtons(approvalID string) []Button {
	if len("ap:"+approvalID+":always") > 64 {
		return nil
	}
	return []Button{
		{Label: "Yes", Value: "ap:" + approvalID + ":yes"},
		{Label: "No", Value: "ap:" + approvalID + ":no"},
		{Label: "Always", Value: "ap:" + approvalID + ":always"},
	}
}

// parseAction reads a button's Value as an approval's answer.
func parseAction(v string) (approvalID string, d agent.Decision, ok bool) {
	rest, found := strings.CutPrefix(v, "ap:")
	if !found {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, ':')
	if i <= 0 {
		return "", "", false
	}
	switch d := agent.Decision(rest[i+1:]); d {
	case agent.Yes, agent.No, agent.Always:
		return rest[:i], d, true
	}
	return "", "", false
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
// outbox before Finish returns. A check-in delivered to a conversation
// (schedule.Via) is told so; the loop's own runs give their reply to the
// commit that ends them instead (Outbox, Committed).
func (r *Replier) Finish(run agent.RunState, res agent.Result) {
	to, ok := r.to(run)
	if !ok {
		return
	}
	var err error
	for attempt := range 5 {
		if err = r.reply(context.Background(), "run-"+run.RunID, to, finalText(res)); err == nil {
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

// Outbox implements agent.Outboxer: the outbox messages of a run's reply,
// for the commit that ends the run.
func (r *Replier) Outbox(run agent.RunState, res agent.Result) []store.OutboxMessage {
	to, ok := r.to(run)
	if !ok {
		return nil
	}
	return r.messages("run-"+run.RunID, to, finalText(res), nil)
}

// Committed implements agent.Outboxer: the run's reply is in the outbox,
// committed with the run; the sender is woken (a serverless process
// delivers it now).
func (r *Replier) Committed(run agent.RunState, _ agent.Result) { r.committed(run) }

// committed wakes the sender of what the loop committed to the outbox
// for run, and ends its typing indicator and draft.
func (r *Replier) committed(run agent.RunState) {
	if _, ok := r.to(run); !ok {
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
	if t, ok := r.typing[runID]; ok {
		t.cancel()
		delete(r.typing, runID)
	}
	r.mu.Unlock()
	if r.drafts != nil {
		r.drafts.stop(runID)
	}
}

// stopTo ends the typing indicators and drafts of the runs replying to
// to (their run was stopped, and tells nothing more).
func (r *Replier) stopTo(to string) {
	var runs []string
	r.mu.Lock()
	for id, t := range r.typing {
		if t.to == to {
			runs = append(runs, id)
		}
	}
	r.mu.Unlock()
	if r.drafts != nil {
		runs = append(runs, r.drafts.runsTo(to)...)
	}
	for _, id := range runs {
		r.stopRun(id)
	}
}

// startTyping shows that the agent works in to until the run replies (at
// most ten minutes), where the platform can (Typer).
func (r *Replier) startTyping(runID, to string) {
	typer, ok := r.cfg.Platform.(Typer)
	if !ok {
		return
	}
	if r.cfg.Serverless {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := typer.Typing(ctx, to); err != nil {
			r.log.Debug("typing indicator", "error", err)
		}
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	r.mu.Lock()
	if old, ok := r.typing[runID]; ok {
		old.cancel()
	}
	r.typing[runID] = typing{to: to, cancel: cancel}
	r.mu.Unlock()
	go func() {
		defer cancel()
		t := time.NewTicker(4 * time.Second)
		defer t.Stop()
		for {
			if err := typer.Typing(ctx, to); err != nil && ctx.Err() == nil {
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

// idPart makes a delivery id safe and short for a run's or a reply's id:
// an id of letters, digits, '-' and '_' up to 64 bytes is kept, any other
// is hashed.
func idPart(id string) string {
	if len(id) <= 64 && strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.") == "" {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "h" + hex.EncodeToString(sum[:12])
}
