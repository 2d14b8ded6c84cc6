package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lambdaclaw/lambdaclaw/shared/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/store"
	"github.com/lambdaclaw/lambdaclaw/shared/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/toolparse"
)

// maxToolResult caps one tool result in history (bytes).
const maxToolResult = 100 << 10

// defaultMaxToolIterations applies when an agent sets no limit.
const defaultMaxToolIterations = 10

func (l *Loop) begin(ctx context.Context, st RunState) (RunState, error) {
	if _, err := l.Store.GetMessage(ctx, st.SessionID, inputKey(st.Seq, 0)); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			// Enqueue stopped between queuing the run and writing its input.
			return l.fail(st, CodeInternal, errors.New("the run's input was lost before it started; send the message again")), nil
		}
		return st, fmt.Errorf("begin: %w", err)
	}
	l.emit(obs.Event{Type: obs.AgentStart, SessionID: st.SessionID, RunID: st.RunID, Attrs: []slog.Attr{
		slog.String("agent", st.Agent), slog.String("channel", st.Reply.Channel)}})
	st.Step = StepThink
	return st, nil
}

func (l *Loop) think(ctx context.Context, st RunState) (RunState, error) {
	a, ok := l.Agents.Agent(st.Agent)
	if !ok {
		return l.fail(st, CodeInternal, fmt.Errorf("%w %q", ErrUnknownAgent, st.Agent)), nil
	}
	key := assistantKey(st.Seq, st.Iteration)
	if done, err := l.Store.GetMessage(ctx, st.SessionID, key); err == nil {
		return afterThink(st, done.Message), nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return st, fmt.Errorf("think: %w", err)
	}
	hist, err := l.history(ctx, st)
	if err != nil {
		return st, fmt.Errorf("think: %w", err)
	}
	if c := a.Compaction; !st.Compacted && c.Threshold > 0 && c.Threshold > c.Target && len(hist) > c.Threshold {
		st.Step = StepCompact
		return st, nil
	}
	msgs, err := l.prompt(ctx, a)
	if err != nil {
		return st, fmt.Errorf("think: %w", err)
	}
	for _, m := range hist {
		msgs = append(msgs, m.Message)
	}
	req := llm.Request{Model: a.Model, Messages: msgs}
	if !st.NoTools && a.Tools != nil {
		req.Tools = a.Tools.Definitions()
	}
	attrs := []slog.Attr{slog.Int("message_count", len(msgs)), slog.Int("iteration", st.Iteration), slog.String("provider", a.Provider.Name())}
	if a.Model != "" {
		attrs = append(attrs, slog.String("model", a.Model))
	}
	l.emit(obs.Event{Type: obs.LLMRequest, SessionID: st.SessionID, RunID: st.RunID, Attrs: attrs})

	var onDelta llm.OnDelta
	var stream *scrub.Stream
	if st.Stream && l.Replier != nil {
		stream = scrub.NewStream(func(text string) { l.Replier.Delta(st, text) })
		onDelta = stream.Write
	}
	start := l.now()
	resp, err := a.Provider.Generate(ctx, req, onDelta)
	attrs = []slog.Attr{slog.Int64("duration_ms", l.now().Sub(start).Milliseconds()), slog.Bool("success", err == nil)}
	if err != nil {
		attrs = append(attrs, slog.String("error", scrub.Scrub(err.Error())))
	} else {
		attrs = append(attrs, slog.String("provider", resp.Provider), slog.Int("completion_tokens", resp.Usage.CompletionTokens))
	}
	l.emit(obs.Event{Type: obs.LLMResponse, SessionID: st.SessionID, RunID: st.RunID, Attrs: attrs})
	if err != nil {
		if ctx.Err() != nil {
			return st, fmt.Errorf("think: %w", ctx.Err())
		}
		var le *llm.Error
		if errors.As(err, &le) && le.ContextOverflow && !st.Compacted {
			// Providers refuse an oversized context before streaming
			// anything: compact, then think again once.
			st.ForceCompact, st.Step = true, StepCompact
			return st, nil
		}
		code := CodeUpstream
		if errors.Is(err, llm.ErrNoProvider) {
			code = CodeNoProvider
		}
		return l.fail(st, code, err), nil
	}
	if stream != nil {
		stream.Flush()
	}

	m := resp.Message
	m.Role = chat.Assistant
	m.ToolCalls = nil
	if !st.NoTools {
		m.ToolCalls = toolparse.Parse(resp.Message, fmt.Sprintf("call_%.8s_%d", st.RunID, st.Iteration))
	}
	m.Content = scrub.Scrub(m.Content)
	for i := range m.ToolCalls {
		m.ToolCalls[i].Arguments = scrub.Scrub(m.ToolCalls[i].Arguments)
	}
	st.Usage = st.Usage.Add(resp.Usage)
	if _, err := l.Store.AppendMessage(ctx, store.Message{SessionID: st.SessionID, Key: key, RunID: st.RunID, Message: m, CreatedAt: l.now().UTC()}); err != nil {
		return st, fmt.Errorf("think: %w", err)
	}
	return afterThink(st, m), nil
}

func afterThink(st RunState, m chat.Message) RunState {
	st.Calls = st.Calls[:0]
	for _, c := range m.ToolCalls {
		st.Calls = append(st.Calls, c.ID)
	}
	if len(st.Calls) == 0 {
		st.Calls = nil
		st.Step = StepFinish
	} else {
		st.Step = StepApprove
	}
	return st
}

func (l *Loop) act(ctx context.Context, st RunState) (RunState, error) {
	a, ok := l.Agents.Agent(st.Agent)
	if !ok {
		return l.fail(st, CodeInternal, fmt.Errorf("%w %q", ErrUnknownAgent, st.Agent)), nil
	}
	if err := l.runCalls(ctx, a, st, ""); err != nil {
		return st, fmt.Errorf("act: %w", err)
	}
	st.Calls = nil
	st.Iteration++
	max := a.MaxToolIterations
	if max <= 0 {
		max = defaultMaxToolIterations
	}
	if st.Iteration >= max {
		st.NoTools = true
	}
	st.Step = StepThink
	return st, nil
}

// ActCall runs one tool call of the run's act step. Drivers that fan calls
// out in parallel (the Step Functions Map) call it once per call id, then
// step act, which finds the results and moves on. It is idempotent.
func (l *Loop) ActCall(ctx context.Context, st RunState, callID string) error {
	a, ok := l.Agents.Agent(st.Agent)
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownAgent, st.Agent)
	}
	if callID == "" {
		return errors.New("act call: no call id")
	}
	return l.runCalls(ctx, a, st, callID)
}

// runCalls runs the calls of the run's current assistant message that have
// no result yet, in parallel, or only the call with id only when it is
// set. Each result is written under its own key, so a retry skips what is
// done.
func (l *Loop) runCalls(ctx context.Context, a *Agent, st RunState, only string) error {
	am, err := l.Store.GetMessage(ctx, st.SessionID, assistantKey(st.Seq, st.Iteration))
	if err != nil {
		return fmt.Errorf("load assistant message: %w", err)
	}
	sess, err := l.Store.GetSession(ctx, st.SessionID)
	if err != nil {
		return err
	}
	ap, err := l.Store.GetApproval(ctx, approvalID(st))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for j, c := range am.ToolCalls {
		if only != "" && c.ID != only {
			continue
		}
		key := toolKey(st.Seq, st.Iteration, j)
		if _, err := l.Store.GetMessage(ctx, st.SessionID, key); err == nil {
			continue // answered before a crash or retry
		} else if !errors.Is(err, store.ErrNotFound) {
			return err
		}
		wg.Go(func() {
			out := l.callTool(ctx, a, st, c, decide(a, st, sess, ap, c))
			if ctx.Err() != nil {
				return // shutting down: the call runs again after the restart
			}
			m := store.Message{SessionID: st.SessionID, Key: key, RunID: st.RunID, CreatedAt: l.now().UTC(),
				Message: chat.Message{Role: chat.Tool, Content: out, ToolCallID: c.ID, Name: c.Name}}
			if _, err := l.Store.AppendMessage(ctx, m); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

// decide settles one call in act: the policy's verdict, with a person's
// answer standing in for "ask".
func decide(a *Agent, st RunState, sess store.Session, ap store.Approval, c chat.ToolCall) string {
	v, reason := judge(a, st, sess, c)
	if v != ask {
		return reason
	}
	if ap.Status == store.ApprovalApproved && slices.Contains(ap.Calls, c.ID) {
		return ""
	}
	if ap.Status == store.ApprovalDenied && slices.Contains(ap.Calls, c.ID) {
		return fmt.Sprintf("denied: the user did not approve this %s call; do not retry it, ask the user how to go on", c.Name)
	}
	return fmt.Sprintf("refused: %s was not approved", c.Name)
}

// callTool runs one tool call unless refusal is set, and returns the text
// the model sees: the tool's output, or why it did not run.
func (l *Loop) callTool(ctx context.Context, a *Agent, st RunState, c chat.ToolCall, refusal string) string {
	if refusal != "" {
		return refusal
	}
	t, _ := a.Tools.Get(c.Name)
	args := strings.TrimSpace(c.Arguments)
	if args == "" {
		args = "{}"
	}
	if !json.Valid([]byte(args)) {
		return "error: the arguments are not valid JSON (a credential in them may have been redacted); call the tool again with a JSON object"
	}
	l.emit(obs.Event{Type: obs.ToolCallStart, SessionID: st.SessionID, RunID: st.RunID, Attrs: []slog.Attr{
		slog.String("tool_name", c.Name), slog.String("args", args)}})
	timeout := l.ToolTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := l.now()
	out, err := t.Call(cctx, tool.Env{Agent: a.Name, SessionID: st.SessionID, Workspace: a.Workspace}, json.RawMessage(args))
	l.emit(obs.Event{Type: obs.ToolCallResult, SessionID: st.SessionID, RunID: st.RunID, Attrs: []slog.Attr{
		slog.String("tool_name", c.Name), slog.Int64("duration_ms", l.now().Sub(start).Milliseconds()), slog.Bool("success", err == nil)}})
	if err != nil {
		if cctx.Err() == context.DeadlineExceeded {
			out = fmt.Sprintf("error: %s did not finish within %s", c.Name, timeout)
		} else {
			out = "error: " + err.Error()
		}
	}
	return truncate(scrub.Scrub(out), maxToolResult)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n[output truncated: %d of %d bytes shown]", cut, len(s))
}

func (l *Loop) finish(ctx context.Context, st RunState) (RunState, error) {
	sess, err := l.Store.GetSession(ctx, st.SessionID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return st, fmt.Errorf("finish: %w", err)
	}
	res, err := l.Result(ctx, st)
	if err != nil {
		return st, fmt.Errorf("finish: %w", err)
	}
	switch {
	case sess.Ephemeral:
		if err := l.Store.DeleteSession(ctx, st.SessionID); err != nil {
			return st, fmt.Errorf("finish: %w", err)
		}
		l.emit(obs.Event{Type: obs.SessionEnd, SessionID: st.SessionID})
	case st.Failed():
		if err := l.closeCalls(ctx, st); err != nil {
			return st, fmt.Errorf("finish: %w", err)
		}
		if err := l.rollbackInput(ctx, st); err != nil {
			return st, fmt.Errorf("finish: %w", err)
		}
	}
	l.emit(obs.Event{Type: obs.TurnComplete, SessionID: st.SessionID, RunID: st.RunID, Attrs: []slog.Attr{
		slog.Int64("total_duration_ms", l.now().Sub(st.StartedAt).Milliseconds()),
		slog.Int("iterations", st.Iteration), slog.Bool("success", !st.Failed()),
		slog.Int("prompt_tokens", st.Usage.PromptTokens), slog.Int("completion_tokens", st.Usage.CompletionTokens)}})
	if l.Replier != nil {
		l.Replier.Finish(st, res)
	}
	l.record(ctx, st, sess, res)
	st.Step = StepDone
	return st, nil
}

// Result is the outcome of a run that reached its finish step, as the
// replier is told: the failure, or the answer read from the store. A
// driver that did not see the run finish (the api function waiting for a
// run of the state machine) reads the outcome with it. The answer of an
// ephemeral session is gone once its run is done.
func (l *Loop) Result(ctx context.Context, st RunState) (Result, error) {
	res := Result{Usage: st.Usage, Error: st.Error, ErrorCode: st.ErrorCode}
	if st.Failed() {
		return res, nil
	}
	m, err := l.Store.GetMessage(ctx, st.SessionID, assistantKey(st.Seq, st.Iteration))
	if err != nil {
		return res, fmt.Errorf("load answer of run %s: %w", st.RunID, err)
	}
	res.Content = toolparse.StripCalls(m.Content)
	return res, nil
}

// closeCalls answers the tool calls a failed run left without a result,
// so the history stays a valid conversation for the next run: providers
// refuse an assistant tool call that has no result after it.
func (l *Loop) closeCalls(ctx context.Context, st RunState) error {
	am, err := l.Store.GetMessage(ctx, st.SessionID, assistantKey(st.Seq, st.Iteration))
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for j, c := range am.ToolCalls {
		m := store.Message{SessionID: st.SessionID, Key: toolKey(st.Seq, st.Iteration, j), RunID: st.RunID, CreatedAt: l.now().UTC(),
			Message: chat.Message{Role: chat.Tool, Content: "error: the run failed before this call finished; it did not run to completion", ToolCallID: c.ID, Name: c.Name}}
		if _, err := l.Store.AppendMessage(ctx, m); err != nil { // keeps a result already written
			return err
		}
	}
	return nil
}

// rollbackInput removes a failed run's input when the run left nothing
// else in history, so that the user can simply send the message again.
func (l *Loop) rollbackInput(ctx context.Context, st RunState) error {
	msgs, err := l.Store.Messages(ctx, st.SessionID)
	if err != nil {
		return err
	}
	prefix := runPrefix(st.Seq)
	var keys []string
	for _, m := range msgs {
		if !strings.HasPrefix(m.Key, prefix) {
			continue
		}
		if !strings.HasPrefix(m.Key, prefix+"a") {
			return nil // the run produced output; keep its record
		}
		keys = append(keys, m.Key)
	}
	return l.Store.DeleteMessages(ctx, st.SessionID, keys)
}

// Fail ends a run with an internal error the user is told about; the next
// step is finish. Drivers call it when a step keeps failing.
func (l *Loop) Fail(st RunState, err error) RunState { return l.fail(st, CodeInternal, err) }

// fail ends a run with an error the user is told about.
func (l *Loop) fail(st RunState, code string, err error) RunState {
	st.ErrorCode = code
	st.Error = scrub.Scrub(err.Error())
	st.Calls = nil
	st.Step = StepFinish
	if l.Log != nil {
		l.Log.Warn("run failed", "run_id", st.RunID, "session_id", st.SessionID, "code", code, "error", st.Error)
	}
	return st
}

// prompt returns the system messages that open a model request.
func (l *Loop) prompt(ctx context.Context, a *Agent) ([]chat.Message, error) {
	if l.Prompter == nil {
		return nil, nil
	}
	msgs, err := l.Prompter.SystemPrompt(ctx, a)
	if err != nil {
		return nil, fmt.Errorf("system prompt: %w", err)
	}
	return msgs, nil
}

// history returns the session's messages up to and including this run's.
func (l *Loop) history(ctx context.Context, st RunState) ([]store.Message, error) {
	all, err := l.Store.Messages(ctx, st.SessionID)
	if err != nil {
		return nil, err
	}
	limit := runPrefix(st.Seq + 1)
	n := 0
	for _, m := range all {
		if m.Key < limit {
			all[n] = m
			n++
		}
	}
	return all[:n], nil
}
