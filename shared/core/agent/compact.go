package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/toolparse"
)

// SummaryPrefix starts the system message that replaces compacted history.
const SummaryPrefix = "[Conversation summary]: "

// FlushPrompt opens the hidden turn that lets the model save memories
// before older messages are summarized away.
const FlushPrompt = "[Memory flush] The older part of this conversation is about to be summarized, and its details will be lost. " +
	"If it holds anything worth remembering beyond this conversation (facts about the user, decisions, open tasks), save it now with your memory tools. " +
	"Do not answer the user. If there is nothing to save, reply NO_REPLY."

const summaryPrompt = "You compact conversations. Summarize the conversation below concisely and factually for the assistant that continues it: " +
	"who the user is, what was asked and decided, facts learned, results of tool calls that still matter, and open tasks. " +
	"Write plain prose or short bullet points; do not address the user."

// memoryTools are the tools the flush turn may offer.
var memoryTools = []string{"workspace_memory", "memory_store"}

// maxTranscript caps the text of old messages sent to the summarizer.
const maxTranscript = 120_000

// compact replaces the older part of the history with a summary (seed 001
// "Context Compaction"). It keeps at least the last Target messages
// verbatim, starting at a user message, so nothing the user said among
// them is lost and no tool call is split from its result. It is
// idempotent: the summary's key is derived from the first kept message, so
// a retry finds its summary and only finishes deleting.
func (l *Loop) compact(ctx context.Context, st RunState) (RunState, error) {
	a, ok := l.Agents.Agent(st.Agent)
	if !ok {
		return l.fail(st, CodeInternal, unknownAgent(st.Agent)), nil
	}
	hist, err := l.history(ctx, st)
	if err != nil {
		return st, fmt.Errorf("compact: %w", err)
	}
	forced := st.ForceCompact
	st.Compacted, st.ForceCompact, st.Step = true, false, StepThink
	target := a.Compaction.Target
	if forced {
		target = min(target, len(hist)/2)
	}
	from := keepFrom(hist, target)
	if from == 0 {
		if forced {
			return l.fail(st, CodeUpstream, errTooLong), nil
		}
		return st, nil
	}
	old := hist[:from]
	key := summaryKey(hist[from].Key)
	if _, err := l.Store.GetMessage(ctx, st.SessionID, key); errors.Is(err, store.ErrNotFound) {
		// The flush and the summary hold to the step's bound (Bound).
		cctx := ctx
		total, flush, bounded := l.compactBound(a, st)
		if bounded {
			var cancel context.CancelFunc
			cctx, cancel = context.WithTimeout(ctx, total)
			defer cancel()
		}
		if a.Compaction.Flush {
			fctx := cctx
			if bounded && flush > 0 {
				var cancel context.CancelFunc
				fctx, cancel = context.WithTimeout(cctx, flush)
				defer cancel()
			}
			l.flush(fctx, a, st, hist)
		}
		summary, err := l.summarize(cctx, a, st, old)
		if err != nil {
			if ctx.Err() != nil {
				return st, fmt.Errorf("compact: %w", ctx.Err())
			}
			if l.Log != nil {
				l.Log.Warn("compaction summary failed; trimming instead", "session_id", st.SessionID, "error", scrub.Scrub(err.Error()))
			}
		} else {
			m := store.Message{SessionID: st.SessionID, Key: key, RunID: st.RunID, CreatedAt: l.now().UTC(),
				Message: chat.Message{Role: chat.System, Content: SummaryPrefix + summary}}
			if _, err := l.Store.AppendMessage(ctx, m); err != nil {
				return st, fmt.Errorf("compact: %w", err)
			}
		}
	} else if err != nil {
		return st, fmt.Errorf("compact: %w", err)
	}
	keys := make([]string, 0, len(old))
	for _, m := range old {
		if m.Key != key {
			keys = append(keys, m.Key)
		}
	}
	if err := l.Store.DeleteMessages(ctx, st.SessionID, keys); err != nil {
		return st, fmt.Errorf("compact: %w", err)
	}
	after, err := l.history(ctx, st)
	if err != nil {
		return st, fmt.Errorf("compact: %w", err)
	}
	l.emit(obs.Event{Type: obs.CompactionComplete, SessionID: st.SessionID, RunID: st.RunID, Attrs: []slog.Attr{
		slog.Int("before", len(hist)), slog.Int("after", len(after)), slog.Bool("forced", forced)}})
	return st, nil
}

// keepFrom returns the index of the first message to keep: at least the
// last target messages, moved back to a user message. Zero means nothing
// can be dropped.
func keepFrom(hist []store.Message, target int) int {
	i := len(hist) - max(target, 1)
	if i <= 0 {
		return 0
	}
	for i > 0 && hist[i].Role != chat.User {
		i--
	}
	return i
}

// summaryKey sorts just before the first kept message's run, and names
// that message, so that each compaction has its own summary key.
func summaryKey(firstKept string) string {
	run, _, _ := strings.Cut(firstKept, "#")
	return run + "#0s" + firstKept
}

// flushCall is the id under which a run marks its memory flush started
// (store.Runs.StartCall); a run compacts at most once.
const flushCall = "memory-flush"

// flush is the hidden memory-flush turn: the model sees the conversation
// and may call memory tools; nothing of it enters the history. Nobody can
// be asked in it, so it offers only the memory tools with a write that the
// run's autonomy lets run without asking (flushTools), and is skipped when
// there are none: a read_only run saves nothing, a supervised one only the
// owner's own memories (memory_store), never the shared MEMORY.md. Each call
// is judged as any other (decide): one the policy would ask about is
// refused.
func (l *Loop) flush(ctx context.Context, a *Agent, st RunState, hist []store.Message) {
	defs := flushTools(a.Registry(), st.Autonomy)
	if len(defs) == 0 {
		return
	}
	// A compaction run again (a crash, a retried step before its summary
	// was written) does not flush again: the memory tools' writes would be
	// repeated. The flush is best effort, so a store that cannot mark it
	// skips it.
	if err := l.Store.StartCall(ctx, st.RunID, flushCall); err != nil {
		if l.Log != nil && !errors.Is(err, store.ErrExists) {
			l.Log.Warn("memory flush skipped", "session_id", st.SessionID, "run_id", st.RunID, "error", scrub.Scrub(err.Error()))
		}
		return
	}
	msgs, err := l.prompt(ctx, a, false)
	if err != nil {
		return
	}
	for _, m := range hist {
		msgs = append(msgs, m.Message)
	}
	msgs = append(l.loadParts(ctx, st.Owner, msgs), chat.Message{Role: chat.System, Content: FlushPrompt})
	resp, err := l.generate(ctx, a, st, llm.Request{Model: a.Model, Messages: msgs, Tools: defs}, nil)
	saved := 0
	if err == nil {
		sess, _ := l.Store.GetSession(ctx, st.SessionID)
		var calls []chat.ToolCall
		var writers []string
		for _, c := range toolparse.Parse(resp.Message, fmt.Sprintf("flush_%.8s", st.RunID)) {
			if !slices.ContainsFunc(defs, func(d chat.ToolDef) bool { return d.Name == c.Name }) {
				continue
			}
			calls = append(calls, c)
			if mayWriteWorkspace(a, c) {
				writers = append(writers, c.Name)
			}
		}
		changed := l.watchBootstrap(ctx, a, st, writers)
		for _, c := range calls {
			l.callTool(ctx, a, st, sess, c, scrub.Scrub(c.Arguments), decide(a, st, sess, store.Approval{}, c), nil)
			l.promptStale(a)
			saved++
		}
		changed()
	}
	if l.Log != nil {
		attrs := []any{"session_id", st.SessionID, "run_id", st.RunID, "tool_calls", saved}
		if err != nil {
			attrs = append(attrs, "error", scrub.Scrub(err.Error()))
		}
		l.Log.Info("memory flush", attrs...)
	}
}

// flushTools returns the definitions of the memory tools of r that have a
// write (of any of their actions) which autonomy runs without asking.
func flushTools(r *tool.Registry, autonomy tool.Autonomy) []chat.ToolDef {
	var defs []chat.ToolDef
	for _, n := range memoryTools {
		t, ok := r.Get(n)
		if !ok {
			continue
		}
		p := t.Policy()
		effects := append([]tool.Effect{p.Effect}, slices.Collect(maps.Values(p.Actions))...)
		if slices.ContainsFunc(effects, func(e tool.Effect) bool { return e != tool.Read && tool.Judge(e, autonomy) == tool.Allow }) {
			defs = append(defs, t.Definition())
		}
	}
	return defs
}

// summarize asks the model for a summary of old messages, sent as a
// transcript so that tool calls need no pairing.
func (l *Loop) summarize(ctx context.Context, a *Agent, st RunState, old []store.Message) (string, error) {
	var b strings.Builder
	// The latest images the model takes are shown to it, to be put in
	// words; the others are named.
	shown := 0
	for _, m := range old {
		for _, p := range m.Parts {
			if p.Type == chat.PartImage && takes(a, p) {
				shown++
			}
		}
	}
	skip := max(shown-maxSummaryImages, 0)
	var images []chat.Part
	for _, m := range old {
		text := m.Content
		if len(m.Parts) > 0 {
			text = partNotes(a, m.Message, &skip, &images) + text
		}
		switch {
		case m.Role == chat.Tool:
			fmt.Fprintf(&b, "[result of %s]: %s\n\n", m.Name, truncate(text, 2000))
		case len(m.ToolCalls) > 0:
			for _, c := range m.ToolCalls {
				fmt.Fprintf(&b, "[assistant called %s %s]\n", c.Name, truncate(c.Arguments, 500))
			}
			if text != "" {
				fmt.Fprintf(&b, "assistant: %s\n\n", text)
			}
		default:
			fmt.Fprintf(&b, "%s: %s\n\n", m.Role, text)
		}
	}
	transcript := b.String()
	if len(transcript) > maxTranscript {
		transcript = "[earlier part omitted]\n" + transcript[len(transcript)-maxTranscript:]
	}
	prompt := summaryPrompt
	if len(images) > 0 {
		prompt += " Describe in words what the attached images show that matters to the conversation: they are not kept."
	}
	resp, err := l.generate(ctx, a, st, llm.Request{Model: a.Model, Messages: l.loadParts(ctx, st.Owner, []chat.Message{
		{Role: chat.System, Content: prompt},
		{Role: chat.User, Content: transcript, Parts: images},
	})}, nil)
	if err != nil {
		return "", err
	}
	summary := strings.TrimSpace(scrub.Scrub(resp.Message.Content))
	if summary == "" {
		return "", errors.New("the model returned an empty summary")
	}
	return summary, nil
}
