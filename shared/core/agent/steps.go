package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/toolparse"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
)

// defaultMaxToolIterations applies when an agent sets no limit.
const defaultMaxToolIterations = 10

// maxEventArgs caps the tool arguments an event carries.
const maxEventArgs = 1 << 10

func (l *Loop) begin(st RunState) RunState {
	l.emit(obs.Event{Type: obs.AgentStart, SessionID: st.SessionID, RunID: st.RunID, Attrs: []slog.Attr{
		slog.String("agent", st.Agent), slog.String("channel", st.Reply.Channel)}})
	st.Step = StepThink
	return st
}

// think asks the model for the next message. The message enters history
// scrubbed of credentials; the tool calls it makes are kept as the model
// sent them in the run's pending calls, for act to execute.
func (l *Loop) think(ctx context.Context, st RunState, c *store.Commit, t **told) (RunState, error) {
	a, ok := l.Agents.Agent(st.Agent)
	if !ok {
		return l.fail(st, CodeInternal, unknownAgent(st.Agent)), nil
	}
	key := assistantKey(st.Seq, st.Iteration)
	hist, err := l.history(ctx, st)
	if err != nil {
		return st, fmt.Errorf("think: %w", err)
	}
	opts, err := l.options(ctx, st)
	if err != nil {
		return st, fmt.Errorf("think: %w", err)
	}
	if i := slices.IndexFunc(hist, func(m store.Message) bool { return m.Key == key }); i >= 0 {
		// The message was committed with the state that followed it: a
		// repeated think returns that state. One that finished the run
		// tells the answer again, which a crash after the commit may have
		// kept from the replier (channels de-duplicate by run id), and
		// says so (errFinished: nothing to commit, no turn to count).
		if run, err := l.Store.GetRun(ctx, st.RunID); err == nil {
			if saved, err := DecodeState(run); err == nil && saved.Iteration == st.Iteration && saved.Step != StepThink && saved.Step != StepBegin {
				if saved.Step != StepDone {
					return saved, nil
				}
				if err := l.Retell(ctx, run); err != nil && l.Log != nil {
					l.Log.Warn("finished run not told again", "run_id", st.RunID, "error", scrub.Scrub(err.Error()))
				}
				return saved, errFinished
			}
		}
		return afterThink(st, hist[i].Message, opts), nil
	}
	if cc := a.Compaction; !st.Compacted && cc.Threshold > 0 && cc.Threshold > cc.Target && len(hist) > cc.Threshold {
		st.Step = StepCompact
		return st, nil
	}
	if b := opts.TokenBudget; b > 0 && st.Usage.TotalTokens >= b {
		return l.fail(st, CodeBudget, &publicError{fmt.Sprintf("this run has spent its budget of %d tokens (%d used)", b, st.Usage.TotalTokens)}), nil
	}
	stateless := strings.HasPrefix(st.SessionID, EphemeralPrefix)
	var msgs []chat.Message
	if !a.ReplaceSystem || !clientSystem(opts, hist, stateless) {
		// A child run is no conversation with a person either: its
		// prompt leaves out the first-run ritual too.
		if msgs, err = l.prompt(ctx, a, stateless || st.Delegation != nil); err != nil {
			return st, fmt.Errorf("think: %w", err)
		}
	}
	msgs = append(msgs, opts.System...)
	// The system prompt holds workspace files (MEMORY.md), which a tool
	// may have written a value into (pii.go).
	msgs = l.hideSystem(ctx, a, st.SessionID, msgs)
	for _, m := range hist {
		msgs = append(msgs, m.Message)
	}
	msgs = l.loadParts(ctx, st.Owner, closeOpenCalls(msgs))
	req := l.request(a, st, msgs, opts)
	attrs := []slog.Attr{slog.Int("message_count", len(msgs)), slog.Int("iteration", st.Iteration), slog.String("provider", a.Provider.Name())}
	if a.Model != "" {
		attrs = append(attrs, slog.String("model", a.Model))
	}
	l.emit(obs.Event{Type: obs.LLMRequest, SessionID: st.SessionID, RunID: st.RunID, Attrs: attrs})

	var onDelta llm.OnDelta
	var stream *scrub.Stream
	revealFlush := func() {}
	if st.Stream && l.Replier != nil {
		// Scrubbed, then with its tokens of personal data revealed for
		// the owner (pii.go).
		var reveal func(string)
		reveal, revealFlush = l.revealStream(ctx, a, st.SessionID, func(text string) { l.Replier.Delta(st, text) })
		stream = scrub.NewStream(reveal)
		budget := l.Limits.reply()
		onDelta = func(text string) {
			// Deltas stop at the reply limit, as the reply does.
			if len(text) > budget {
				text = cutUTF8(text, budget)
			}
			budget -= len(text)
			if text != "" {
				stream.Write(text)
			}
		}
	}
	start := l.now()
	resp, err := l.generate(ctx, a, st, req, onDelta)
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
		if be := (*store.BudgetError)(nil); errors.As(err, &be) {
			return l.exhausted(st, be), nil
		}
		var le *llm.Error
		if errors.As(err, &le) && le.ContextOverflow {
			if !st.Compacted {
				// Providers refuse an oversized context before streaming
				// anything: compact, then think again once.
				st.ForceCompact, st.Step = true, StepCompact
				return st, nil
			}
			return l.fail(st, CodeUpstream, errTooLong), nil
		}
		code := CodeUpstream
		if errors.Is(err, llm.ErrNoProvider) {
			code = CodeNoProvider
		}
		return l.fail(st, code, err), nil
	}
	if stream != nil {
		stream.Flush()
		revealFlush()
		if f, ok := l.Replier.(deltaFlusher); ok {
			f.FlushDeltas(st)
		}
	}

	st.FinishReason = cmp.Or(resp.FinishReason, "stop")
	raw := resp.Message
	if len(raw.Content) > l.Limits.reply() {
		raw.Content = cutUTF8(raw.Content, l.Limits.reply())
		st.FinishReason = "length"
	}
	var calls []chat.ToolCall
	if len(req.Tools) > 0 && (req.ToolChoice == nil || req.ToolChoice.Mode != llm.ToolsNone) {
		calls = toolparse.Parse(raw, fmt.Sprintf("call_%.8s_%d", st.RunID, st.Iteration), quotable(hist)...)
	}
	m := chat.Message{Role: chat.Assistant, Content: scrub.Scrub(raw.Content)}
	for _, tc := range calls {
		tc.Arguments = scrub.Scrub(tc.Arguments)
		m.ToolCalls = append(m.ToolCalls, tc)
	}
	st.Usage = st.Usage.Add(resp.Usage)
	c.Messages = append(c.Messages, store.Message{SessionID: st.SessionID, Key: key, RunID: st.RunID, Message: m, CreatedAt: l.now().UTC()})
	switch {
	case len(calls) > 0:
		c.Calls = calls
	case st.ClearCalls:
		c.ClearCalls = true
	}
	st.ClearCalls, st.Forced = false, false
	st = afterThink(st, m, opts)
	if st.Step == StepFinish {
		// An answer without tool calls: think finishes the run in the
		// same commit, with the run's messages it holds. The answer is
		// told once the commit succeeded (Step), so that a commit refused
		// (a lease lost to another invocation) tells nothing; a step
		// retried after a crash in between tells it again (above).
		run := append(runMessages(hist, st.Seq), c.Messages...)
		res, err := l.result(ctx, st, run)
		if err != nil {
			return st, fmt.Errorf("think: %w", err)
		}
		shown := l.revealResult(ctx, st, res)
		*t = &told{st: st, res: shown}
		return l.finishWith(ctx, st, c, res, shown, run)
	}
	return st, nil
}

// runMessages returns the messages of hist of the run with sequence
// number seq.
func runMessages(hist []store.Message, seq int64) []store.Message {
	prefix := store.RunPrefix(seq)
	i := slices.IndexFunc(hist, func(m store.Message) bool { return strings.HasPrefix(m.Key, prefix) })
	if i < 0 {
		return nil
	}
	return slices.Clone(hist[i:])
}

// request is the model request of a think step: the agent's tools and the
// client's, unless the run is past its tool iterations, and the client's
// parameters, with a forced tool choice only while it still applies.
func (l *Loop) request(a *Agent, st RunState, msgs []chat.Message, opts Options) llm.Request {
	req := llm.Request{Model: a.Model, Messages: msgs, Params: opts.Params}
	if !st.NoTools {
		if reg := a.Registry(); reg != nil {
			req.Tools = offered(reg, st.Autonomy)
			if !l.mayDelegate(st) {
				req.Tools = slices.DeleteFunc(slices.Clone(req.Tools), func(d chat.ToolDef) bool { return d.Name == DelegateToolName })
			}
		}
		if len(opts.Tools) > 0 {
			req.Tools = slices.Concat(req.Tools, opts.Tools)
		}
	}
	if b := opts.TokenBudget; b > 0 {
		if left := b - st.Usage.TotalTokens; req.MaxTokens == 0 || left < req.MaxTokens {
			req.MaxTokens = left
		}
	}
	if forcing(req.ToolChoice) && !st.Forced {
		req.ToolChoice = nil
	}
	if len(req.Tools) == 0 {
		req.ToolChoice, req.ParallelToolCalls = nil, nil
	}
	return req
}

// offered returns the definitions of the tools a run at autonomy may use:
// a tool none of whose actions that autonomy may take is not offered (and
// refused if called anyway), nor one that is unavailable
// (tool.Availability). It is the registry's own slice when all are
// offered.
func offered(r *tool.Registry, autonomy tool.Autonomy) []chat.ToolDef {
	defs := r.Definitions()
	keep := func(d chat.ToolDef) bool {
		t, ok := r.Get(d.Name)
		if a, can := t.(tool.Availability); can && a.Unavailable() != nil {
			return false
		}
		return ok && tool.Judge(t.Policy().Least(), autonomy) != tool.Deny
	}
	for i, d := range defs {
		if !keep(d) {
			out := slices.Clone(defs[:i])
			for _, d := range defs[i+1:] {
				if keep(d) {
					out = append(out, d)
				}
			}
			return out
		}
	}
	return defs
}

// quotable returns the texts the model was shown and could quote: what
// users said and what tools returned.
func quotable(hist []store.Message) []string {
	var out []string
	for _, m := range hist {
		if (m.Role == chat.User || m.Role == chat.Tool) && m.Content != "" {
			out = append(out, m.Content)
		}
	}
	return out
}

// afterThink sets the step after the model's message m: finish for an
// answer, approve for tool calls, which it sorts into the agent's (Calls)
// and the client's (ClientCalls).
func afterThink(st RunState, m chat.Message, opts Options) RunState {
	st.Calls, st.ClientCalls = nil, nil
	for _, c := range m.ToolCalls {
		if opts.client(c.Name) {
			st.ClientCalls = append(st.ClientCalls, c.ID)
		} else {
			st.Calls = append(st.Calls, c.ID)
		}
	}
	if len(m.ToolCalls) == 0 {
		st.Step = StepFinish
	} else {
		st.Step = StepApprove
	}
	return st
}

func (l *Loop) act(ctx context.Context, st RunState, c *store.Commit) (RunState, error) {
	a, ok := l.Agents.Agent(st.Agent)
	if !ok {
		return l.fail(st, CodeInternal, unknownAgent(st.Agent)), nil
	}
	if len(st.Calls) > 0 {
		delegations, err := l.runCalls(ctx, a, st, "")
		l.promptStale(a)
		if err != nil {
			return st, fmt.Errorf("act: %w", err)
		}
		if len(delegations) > 0 {
			// The calls of other agents are answered by their runs: the
			// run waits for them.
			next, err := l.startChildren(ctx, st, delegations)
			if err != nil {
				return st, fmt.Errorf("act: %w", err)
			}
			return next, nil
		}
	}
	if len(st.ClientCalls) > 0 {
		next, err := l.toClient(ctx, st)
		if err != nil {
			return st, fmt.Errorf("act: %w", err)
		}
		return next, nil
	}
	c.ClearCalls = true
	st.Calls = nil
	return nextIteration(a, st), nil
}

// nextIteration moves a run on to think after its tool calls were
// answered; past the agent's iteration limit the model answers without
// tools.
func nextIteration(a *Agent, st RunState) RunState {
	st.Iteration++
	max := a.MaxToolIterations
	if max <= 0 {
		max = defaultMaxToolIterations
	}
	if st.Iteration >= max {
		st.NoTools = true
	}
	st.Step = StepThink
	return st
}

// ActCall runs one tool call of the run's act step. Drivers that fan calls
// out in parallel (the Step Functions Map) call it once per call id, then
// step act, which finds the results and moves on. It is idempotent.
func (l *Loop) ActCall(ctx context.Context, st RunState, callID string) error {
	a, ok := l.Agents.Agent(st.Agent)
	if !ok {
		return unknownAgent(st.Agent)
	}
	if callID == "" {
		return errors.New("act call: no call id")
	}
	defer l.promptStale(a)
	_, err := l.runCalls(ctx, a, st, callID)
	return err
}

// runCalls runs the calls of the run's current assistant message that have
// no result yet, in parallel, or only the call with id only when it is
// set. Each runs with its arguments as the model sent them (the run's
// pending calls), and its result is written under its own key as soon as
// it is known, so a retry skips what is done. A call that may not be
// retried (tool.Policy.Retryable) is marked started in the store before it
// runs (store.Runs.StartCall); one found started with no result (the
// process died, or the step was retried or delivered twice, while it ran)
// does not run again: its result says it was interrupted. So no side
// effect is ever repeated; reads run again.
//
// The calls of the delegate tool that may go ahead are not run: they are
// returned, for act to start the child runs that answer them.
func (l *Loop) runCalls(ctx context.Context, a *Agent, st RunState, only string) ([]delegateCall, error) {
	am, err := l.Store.GetMessage(ctx, st.SessionID, assistantKey(st.Seq, st.Iteration))
	if err != nil {
		return nil, fmt.Errorf("load assistant message: %w", err)
	}
	pending, err := l.Store.PendingCalls(ctx, st.RunID)
	if err != nil {
		return nil, fmt.Errorf("load pending calls: %w", err)
	}
	sess, err := l.Store.GetSession(ctx, st.SessionID)
	if err != nil {
		return nil, err
	}
	ap, err := l.Store.GetApproval(ctx, approvalID(st))
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	type job struct {
		key         string
		call, shown chat.ToolCall
		refusal     string
	}
	var jobs []job
	var writers []string
	var delegations []delegateCall
	n := 0 // delegate calls of the reply so far
	for j, shown := range am.ToolCalls {
		t, _ := a.Registry().Get(shown.Name)
		dt, delegating := t.(*DelegateTool)
		if delegating && slices.Contains(st.Calls, shown.ID) {
			n++
		}
		if (only != "" && shown.ID != only) || !slices.Contains(st.Calls, shown.ID) {
			continue // the client runs its own tools
		}
		key := toolKey(st.Seq, st.Iteration, j)
		if _, err := l.Store.GetMessage(ctx, st.SessionID, key); err == nil {
			continue // answered before a crash or retry
		} else if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		call := shown
		if i := slices.IndexFunc(pending, func(p chat.ToolCall) bool { return p.ID == shown.ID }); i >= 0 {
			call = pending[i]
		}
		jb := job{key, call, shown, decide(a, st, sess, ap, shown)}
		if delegating && jb.refusal == "" {
			args, refusal := l.refuseDelegation(st, dt, call, n-1)
			if refusal == "" {
				delegations = append(delegations, delegateCall{call: call, args: args})
				continue
			}
			jb.refusal = refusal
		}
		if jb.refusal == "" && mayWriteWorkspace(a, call) {
			writers = append(writers, call.Name)
		}
		jobs = append(jobs, jb)
	}
	defer l.watchBootstrap(ctx, a, st, writers)()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, jb := range jobs {
		wg.Go(func() {
			start := func(p tool.Policy, args json.RawMessage) (bool, error) {
				return l.startCall(ctx, st, jb.call, p, args)
			}
			out, err := l.callTool(ctx, a, st, sess, jb.call, jb.shown.Arguments, jb.refusal, start)
			if err == nil && ctx.Err() != nil {
				// Shutting down: after the restart a read runs again, and
				// anything else is reported interrupted.
				return
			}
			if err == nil {
				l.hidePII(ctx, a, st.SessionID, &out)
				_, err = l.Store.AppendMessage(ctx, store.Message{SessionID: st.SessionID, Key: jb.key, RunID: st.RunID, CreatedAt: l.now().UTC(),
					Message: chat.Message{Role: chat.Tool, Content: out, ToolCallID: jb.shown.ID, Name: jb.shown.Name}})
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return delegations, ctx.Err()
}

// Interrupted is the result of a call that started and has no result when
// its step runs again, and whose tool may not be retried.
const Interrupted = "error: interrupted by a restart before it finished; it may have partly run. Check what it did before you run it again."

// startCall marks call started before it runs, unless its tool may be
// retried, and reports whether it may run: false when it had started
// already, which it events and answers with Interrupted.
func (l *Loop) startCall(ctx context.Context, st RunState, call chat.ToolCall, p tool.Policy, args json.RawMessage) (bool, error) {
	if p.Retryable(args) {
		return true, nil
	}
	err := l.Store.StartCall(ctx, st.RunID, call.ID)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrExists):
		l.emit(obs.Event{Type: obs.ToolCallInterrupted, SessionID: st.SessionID, RunID: st.RunID, Attrs: []slog.Attr{
			slog.String("tool_name", call.Name), slog.String("call_id", call.ID)}})
		return false, nil
	}
	return false, fmt.Errorf("start %s call %s: %w", call.Name, call.ID, err)
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
// the model sees: the tool's output, or why it did not run. c carries the
// arguments exactly as the model sent them, which the tool receives;
// shown is their scrubbed form, the only one events carry. start, when
// set, is asked just before the tool runs whether it may (startCall); its
// error is the only error callTool returns.
func (l *Loop) callTool(ctx context.Context, a *Agent, st RunState, sess store.Session, c chat.ToolCall, shown, refusal string,
	start func(tool.Policy, json.RawMessage) (bool, error)) (string, error) {
	if blocked := l.blocked(a, st, c); blocked != "" {
		return blocked, nil
	}
	if refusal != "" {
		return refusal, nil
	}
	t, ok := a.Registry().Get(c.Name)
	if !ok {
		// A live tool (an MCP server's) gone since the call was judged.
		return fmt.Sprintf("error: the tool %q is no longer available", c.Name), nil
	}
	args := strings.TrimSpace(c.Arguments)
	if args == "" {
		args = "{}"
	}
	if len(args) > l.Limits.toolArgs() {
		return fmt.Sprintf("error: the arguments are %d bytes, over the limit of %d bytes per call; split the work into smaller calls", len(args), l.Limits.toolArgs()), nil
	}
	if !json.Valid([]byte(args)) {
		return "error: the arguments are not valid JSON; call the tool again with a JSON object", nil
	}
	if start != nil {
		switch run, err := start(t.Policy(), json.RawMessage(args)); {
		case err != nil:
			return "", err
		case !run:
			return Interrupted, nil
		}
	}
	l.emit(obs.Event{Type: obs.ToolCallStart, SessionID: st.SessionID, RunID: st.RunID, Attrs: []slog.Attr{
		slog.String("tool_name", c.Name), slog.String("args", truncate(shown, maxEventArgs))}})
	timeout := l.toolTimeout(t)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	began := l.now()
	env := tool.Env{Agent: a.Name, SessionID: st.SessionID, Owner: st.Owner, Workspace: a.Workspace, Channel: st.Reply.Channel, ReplyTo: st.Reply.To,
		Tools: &bridge{l: l, a: a, st: st, sess: sess, from: c.Name}}
	// The tool gets the values of the tokens of personal data the model
	// passed (pii.go).
	args = l.revealArgs(cctx, a, st.SessionID, args)
	out, err := t.Call(cctx, env, json.RawMessage(args))
	l.emit(obs.Event{Type: obs.ToolCallResult, SessionID: st.SessionID, RunID: st.RunID, Attrs: []slog.Attr{
		slog.String("tool_name", c.Name), slog.Int64("duration_ms", l.now().Sub(began).Milliseconds()), slog.Bool("success", err == nil)}})
	if err != nil {
		if cctx.Err() == context.DeadlineExceeded {
			out = fmt.Sprintf("error: %s did not finish within %s", c.Name, timeout)
		} else {
			out = "error: " + err.Error()
		}
	}
	return l.boundResult(out), nil
}

// boundResult is a tool's result out as history keeps it: scrubbed
// before the final cut to the limit, so that a credential is never half
// kept (the first cut only bounds the scrubber's work).
func (l *Loop) boundResult(out string) string {
	limit := l.Limits.toolResult()
	return truncate(scrub.Scrub(cutUTF8(out, 4*limit)), limit)
}

// resultMessage is the history message, under key in session sid of run
// runID, of out, the result of call c that did not go through callTool
// (a client's tool, a delegated run): like the agent's own tools'
// results, its personal data hidden when a tokenizes it (pii.go), then
// bounded.
func (l *Loop) resultMessage(ctx context.Context, a *Agent, sid, runID, key string, c chat.ToolCall, out string) store.Message {
	if a != nil {
		l.hidePII(ctx, a, sid, &out)
	}
	return store.Message{SessionID: sid, Key: key, RunID: runID, CreatedAt: l.now().UTC(),
		Message: chat.Message{Role: chat.Tool, Content: l.boundResult(out), ToolCallID: c.ID, Name: c.Name}}
}

// mayWriteWorkspace says whether call may change a's workspace: its
// effect is a shared write, or an external side effect (exec's commands
// write the workspace's directory directly).
func mayWriteWorkspace(a *Agent, call chat.ToolCall) bool {
	t, ok := a.Registry().Get(call.Name)
	if !ok || a.Workspace == nil {
		return false
	}
	e := t.Policy().EffectOf(json.RawMessage(call.Arguments))
	return e == tool.WriteShared || e == tool.External
}

// watchBootstrap notes the versions of a's bootstrap files (those of every
// user's system prompt, workspace.Files) before the tool calls named
// writers run, when there are any (mayWriteWorkspace), and returns what
// to call after them: it emits a bootstrap_changed event for each file
// created, changed or deleted meanwhile, naming the run's owner (the key
// whose run made the change) and the tools that may have made it. Being
// around every call the loop runs, whichever the tool, it also sees what
// a command writes behind the file store's back. A file that another run
// changed at the same moment is reported here too, as if these calls had.
func (l *Loop) watchBootstrap(ctx context.Context, a *Agent, st RunState, writers []string) func() {
	if l.Events == nil || a.Workspace == nil || len(writers) == 0 {
		return func() {}
	}
	before, err := workspace.FileVersions(ctx, a.Workspace)
	if err != nil {
		return func() {}
	}
	slices.Sort(writers)
	tools := strings.Join(slices.Compact(writers), ",")
	return func() {
		after, err := workspace.FileVersions(context.WithoutCancel(ctx), a.Workspace)
		if err != nil {
			if l.Log != nil {
				l.Log.Warn("bootstrap files not checked after tool calls", "session_id", st.SessionID, "tool_name", tools, "error", scrub.Scrub(err.Error()))
			}
			return
		}
		for _, file := range workspace.Files() {
			was, had := before[file]
			now, has := after[file]
			var change string
			switch {
			case !had && has:
				change = "created"
			case had && !has:
				change = "deleted"
			case had && was != now:
				change = "changed"
			default:
				continue
			}
			l.emit(obs.Event{Type: obs.BootstrapChanged, SessionID: st.SessionID, RunID: st.RunID, Attrs: []slog.Attr{
				slog.String("agent", a.Name), slog.String("file", file), slog.String("change", change),
				slog.String("owner", st.Owner), slog.String("autonomy", st.Autonomy.String()), slog.String("tool_name", tools)}})
		}
	}
}

// cutUTF8 returns at most n bytes of s, cut at a rune boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// truncate cuts s to at most n bytes and says so.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := cutUTF8(s, n)
	return cut + fmt.Sprintf("\n[output truncated: %d of %d bytes shown]", len(cut), len(s))
}

func (l *Loop) finish(ctx context.Context, st RunState, c *store.Commit, t **told) (RunState, error) {
	run, err := l.Store.RunMessages(ctx, st.SessionID, st.Seq)
	if err != nil {
		return st, fmt.Errorf("finish: %w", err)
	}
	res, err := l.result(ctx, st, run)
	if err != nil {
		return st, fmt.Errorf("finish: %w", err)
	}
	shown := l.revealResult(ctx, st, res)
	*t = &told{st: st, res: shown}
	return l.finishWith(ctx, st, c, res, shown, run)
}

// told is what a step tells its replier once its commit succeeded: the
// run's outcome res, or the approval ap it parked for.
type told struct {
	st  RunState
	res Result
	ap  *store.Approval
}

// tell tells the replier t, if any: the approval, or the outcome:
// Committed, when the replier keeps replies in the commit (Outboxer),
// else Finish.
func (l *Loop) tell(t *told) {
	switch {
	case t == nil || l.Replier == nil:
	case t.ap != nil:
		l.Replier.Approval(t.st.asker(), *t.ap)
	default:
		committed(l.Replier, t.st, t.res)
	}
}

// Retell tells the replier again what the last step of run told, for a
// driver that finds the run further than it was asked to take it: the
// step may have died between its commit and the telling (a crash, a
// Lambda invocation retried). A finished run's outcome is read from the
// saved state and the history (Result) and told as the step tells it
// (Committed for an Outboxer, whose reply the commit holds: its sender
// is woken); a run parked for a person's answer has its approval told
// again (an Outboxer's prompt is in the store). A run that ended without
// telling anyone (Silent), whose state cannot be read or whose answer is
// gone with a reset of its session is told nothing, nor one at another
// step. Channels drop a repeat by the run's id.
func (l *Loop) Retell(ctx context.Context, run store.Run) error {
	st, err := DecodeState(run)
	if err == nil && run.Status.Finished() {
		// A child's answer may not have reached its parent either.
		if err := l.returnToParent(ctx, st); err != nil {
			return fmt.Errorf("retell: %w", err)
		}
	}
	if l.Replier == nil {
		return nil
	}
	switch {
	case err != nil || st.Silent:
		return nil
	case st.Parked() && !run.Status.Finished():
		return l.retellApproval(ctx, st)
	case !run.Status.Finished() || st.Step != StepDone:
		return nil
	}
	res, err := l.Result(ctx, st)
	if errors.Is(err, store.ErrNotFound) {
		return nil // the session was reset since: nothing is left to tell
	}
	if err != nil {
		return fmt.Errorf("retell: %w", err)
	}
	l.tell(&told{st: st, res: res})
	return nil
}

// retellApproval tells the approval the parked run st waits for again,
// while it is pending and a person's to answer.
func (l *Loop) retellApproval(ctx context.Context, st RunState) error {
	ap, err := l.Store.GetApproval(ctx, st.Approval)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("retell: %w", err)
	case ap.Status != store.ApprovalPending || ap.Kind != "":
		return nil
	}
	l.tell(&told{st: st, ap: &ap})
	return nil
}

// finishWith finishes the run st, whose messages are run and whose
// outcome is res (as the owner is shown it: shown, its tokens of personal
// data revealed, pii.go), adding to c: it marks the run done, with the job for
// the Recorder and the reply's outbox (Outboxer). The finish step and a
// think that got an answer without tool calls end a run with it; both
// tell the replier res once their commit succeeded (Step): a refused
// commit (a lease lost to another invocation) tells nothing, and a
// channel that delivers from the store loses nothing to a crash between
// the commit and the telling.
func (l *Loop) finishWith(ctx context.Context, st RunState, c *store.Commit, res, shown Result, run []store.Message) (RunState, error) {
	ephemeral := strings.HasPrefix(st.SessionID, EphemeralPrefix)
	c.ClearCalls = c.ClearCalls || st.ClearCalls && !ephemeral
	switch {
	case ephemeral:
		if err := l.Store.DeleteSession(ctx, st.SessionID); err != nil {
			return st, fmt.Errorf("finish: %w", err)
		}
		// Nothing of the session is kept: the commit only ends the run.
		c.Messages, c.Calls, c.ClearCalls = nil, nil, false
		l.emit(obs.Event{Type: obs.SessionEnd, SessionID: st.SessionID})
	case st.Failed():
		c.Messages = append(c.Messages, l.closeCalls(st, run)...)
		c.ClearCalls = true
		if err := l.rollbackInput(ctx, st, run); err != nil {
			return st, fmt.Errorf("finish: %w", err)
		}
		if err := l.dropApproval(ctx, st, decisionAbandoned); err != nil {
			return st, fmt.Errorf("finish: %w", err)
		}
		if err := l.stopChildren(ctx, st); err != nil {
			return st, fmt.Errorf("finish: %w", err)
		}
	}
	if o, ok := l.Replier.(Outboxer); ok && !ephemeral {
		// The reply to a channel that delivers from the store is kept by
		// the commit that ends the run, and sent once it is committed.
		c.Outbox = append(c.Outbox, o.Outbox(st, shown)...)
	}
	if job, ok, err := l.recordJob(st, ephemeral, res, run); err != nil {
		l.logRecord(st, err)
	} else if ok {
		c.Jobs = append(c.Jobs, job)
	}
	st.Step = StepDone
	return st, nil
}

// turnComplete emits the end of the run st, once the commit that
// finishes it succeeded (Step): a finish retried after its commit failed
// counts the turn once.
func (l *Loop) turnComplete(st RunState) {
	l.emit(obs.Event{Type: obs.TurnComplete, SessionID: st.SessionID, RunID: st.RunID, Attrs: []slog.Attr{
		slog.Int64("total_duration_ms", l.now().Sub(st.StartedAt).Milliseconds()),
		slog.Int("iterations", st.Iteration), slog.Bool("success", !st.Failed()),
		slog.Int("prompt_tokens", st.Usage.PromptTokens), slog.Int("completion_tokens", st.Usage.CompletionTokens)}})
}

// Result is the outcome of a run that reached its finish step, as the
// replier is told: the failure, or the answer read from the store. A
// driver that did not see the run finish (the api function waiting for a
// run of the state machine) reads the outcome with it. The answer of an
// ephemeral session is gone once its run is done.
//
// A run that handed its client calls of the client's tools, parked for
// the results or done, has them as its outcome.
func (l *Loop) Result(ctx context.Context, st RunState) (Result, error) {
	if st.Failed() {
		return l.result(ctx, st, nil)
	}
	run, err := l.Store.RunMessages(ctx, st.SessionID, st.Seq)
	if err != nil {
		return Result{}, fmt.Errorf("load answer of run %s: %w", st.RunID, err)
	}
	res, err := l.result(ctx, st, run)
	if err != nil {
		return res, err
	}
	return l.revealResult(ctx, st, res), nil
}

// result is the outcome of st, whose messages are run.
func (l *Loop) result(ctx context.Context, st RunState, run []store.Message) (Result, error) {
	res := Result{Usage: st.Usage.Sub(st.Reported), FinishReason: cmp.Or(st.FinishReason, "stop"), Error: st.Error, ErrorCode: st.ErrorCode}
	if st.Failed() {
		return res, nil
	}
	if len(st.ClientCalls) > 0 {
		// The run handed its client calls: waiting for the results, or
		// done with them (stateless, or Options.EndWithClientCalls).
		calls, content, err := l.clientCalls(ctx, st)
		if err != nil {
			return res, fmt.Errorf("load answer of run %s: %w", st.RunID, err)
		}
		return clientResult(st, content, calls), nil
	}
	m, ok := find(run, assistantKey(st.Seq, st.Iteration))
	if !ok {
		return res, fmt.Errorf("load answer of run %s: %w", st.RunID, store.ErrNotFound)
	}
	res.Content = toolparse.StripCalls(m.Content)
	return res, nil
}

// find returns the message of msgs with key.
func find(msgs []store.Message, key string) (store.Message, bool) {
	i := slices.IndexFunc(msgs, func(m store.Message) bool { return m.Key == key })
	if i < 0 {
		return store.Message{}, false
	}
	return msgs[i], true
}

// closeCalls returns answers for the tool calls a failed run left without
// a result, so the history stays a valid conversation for the next run:
// providers refuse an assistant tool call that has no result after it.
// Results already written are kept by the put-if-absent commit.
func (l *Loop) closeCalls(st RunState, run []store.Message) []store.Message {
	am, ok := find(run, assistantKey(st.Seq, st.Iteration))
	if !ok {
		return nil
	}
	text := "error: the run failed before this call finished; it did not run to completion"
	if st.ErrorCode == CodeApprovalExpired {
		text = "error: not run: no answer came in time"
	}
	var out []store.Message
	for j, c := range am.ToolCalls {
		out = append(out, store.Message{SessionID: st.SessionID, Key: toolKey(st.Seq, st.Iteration, j), RunID: st.RunID, CreatedAt: l.now().UTC(),
			Message: chat.Message{Role: chat.Tool, Content: text, ToolCallID: c.ID, Name: c.Name}})
	}
	return out
}

// Decisions recorded on approvals nobody answered.
const (
	// decisionExpired: the driver's deadline for the answer passed.
	decisionExpired = "expired"
	// decisionAbandoned: the run failed while it waited.
	decisionAbandoned = "abandoned"
)

// dropApproval resolves the approval st waits for, if any is still
// pending, as denied with decision, so that the session keeps no question
// that no run will act on.
func (l *Loop) dropApproval(ctx context.Context, st RunState, decision string) error {
	if st.Approval == "" {
		return nil
	}
	ap, err := l.Store.ResolveApproval(ctx, st.Approval, store.ApprovalDenied, decision, l.now().UTC())
	switch {
	case errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("drop approval %s: %w", st.Approval, err)
	}
	l.emitResolved(ap, decision)
	return nil
}

// Expire ends the wait of a parked run whose approval was not answered
// before the driver's deadline (on AWS, the state machine's timeout of
// the approval task): the approval is resolved as denied with the
// decision "expired", and the run fails with CodeApprovalExpired and a
// message for the user, its calls not run; its next step, finish, tells
// the user and frees the session. If an answer won the race, st is
// returned as it is: the wait step then reads the answer.
func (l *Loop) Expire(ctx context.Context, st RunState) (RunState, error) {
	if !st.Parked() {
		return st, nil
	}
	ap, err := l.Store.GetApproval(ctx, st.Approval)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return st, fmt.Errorf("expire approval %s: %w", st.Approval, err)
	}
	if err == nil && ap.Status != store.ApprovalPending {
		return st, nil
	}
	resolved, err := l.Store.ResolveApproval(ctx, st.Approval, store.ApprovalDenied, decisionExpired, l.now().UTC())
	switch {
	case errors.Is(err, store.ErrConflict):
		return st, nil
	case err == nil:
		l.emitResolved(resolved, decisionExpired)
	case !errors.Is(err, store.ErrNotFound):
		return st, fmt.Errorf("expire approval %s: %w", st.Approval, err)
	}
	msg := "nobody answered the approval request in time, so the tool calls were not run; ask again if they are still wanted"
	switch ap.Kind {
	case store.ApprovalClientTools:
		msg = "the results of the client's tool calls did not come in time, so the run ended"
	case store.ApprovalDelegation:
		msg = "the agents this run delegated to did not answer in time, so the run ended"
	}
	return l.fail(st, CodeApprovalExpired, &publicError{msg}), nil
}

// Abandon records a run as failed without telling anyone, for a driver
// that could not record the failure the usual way (Fail, then the finish
// step, which tells the user): the calls the run left open get an error
// result, its approval is dropped, and the run is saved as done and
// failed, so that its session moves on. err says why, for the log. A run
// the store has as finished, or no longer has, is left as it is.
func (l *Loop) Abandon(ctx context.Context, st RunState, err error) (RunState, error) {
	return l.abandon(ctx, st, CodeInternal, err)
}

// Cancel ends a run its user stopped, as Abandon does, with CodeCancelled:
// nothing more of it is told (the one who stopped it is answered by
// whoever stopped it). A run already finished is left as it is.
func (l *Loop) Cancel(ctx context.Context, st RunState) (RunState, error) {
	return l.abandon(ctx, st, CodeCancelled, &publicError{"stopped at the user's request"})
}

func (l *Loop) abandon(ctx context.Context, st RunState, code string, err error) (RunState, error) {
	if saved, _, finished, err := l.finished(ctx, st); err != nil || finished {
		return saved, err
	}
	st = l.fail(st, code, err)
	st.Step, st.Silent = StepDone, true
	if err := l.dropApproval(ctx, st, decisionAbandoned); err != nil {
		return st, fmt.Errorf("abandon run %s: %w", st.RunID, err)
	}
	if err := l.stopChildren(ctx, st); err != nil {
		return st, fmt.Errorf("abandon run %s: %w", st.RunID, err)
	}
	var c store.Commit
	if msgs, err := l.Store.RunMessages(ctx, st.SessionID, st.Seq); err == nil {
		c.Messages = l.closeCalls(st, msgs)
	}
	c.ClearCalls = true
	err = l.commit(ctx, st, c)
	if err != nil && !errors.Is(err, store.ErrRunFinished) && !errors.Is(err, store.ErrLeaseLost) {
		// What the messages hold may be what fails: the run moves on
		// without them.
		err = l.commit(ctx, st, store.Commit{ClearCalls: true})
	}
	if errors.Is(err, store.ErrRunFinished) {
		// It ended meanwhile: as it ended stands.
		saved, _, _, err := l.finished(ctx, st)
		return saved, err
	}
	if err != nil {
		return st, fmt.Errorf("abandon run %s: %w", st.RunID, err)
	}
	l.returned(ctx, st)
	return st, nil
}

// finished reports whether the run of st is finished in the store (or
// gone with its session), and then returns its saved state (st at done
// when it cannot be read) and the run.
func (l *Loop) finished(ctx context.Context, st RunState) (RunState, store.Run, bool, error) {
	run, err := l.Store.GetRun(ctx, st.RunID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		st.Step = StepDone
		return st, run, true, nil
	case err != nil:
		return st, run, false, fmt.Errorf("run %s: %w", st.RunID, err)
	case !run.Status.Finished():
		return st, run, false, nil
	}
	saved, err := DecodeState(run)
	if err != nil {
		st.Step = StepDone
		return st, run, true, nil
	}
	return saved, run, true, nil
}

// ended returns the run of st as it ended, for a step whose writes were
// refused because the run finished meanwhile (store.ErrRunFinished: a
// user stopped it, or the step is a retry of the one that finished it):
// what the end told is told again (Retell; nothing for a run that ended
// silently, as a stopped one does), and nothing of the step.
func (l *Loop) ended(ctx context.Context, st RunState) (RunState, error) {
	saved, run, finished, err := l.finished(ctx, st)
	switch {
	case err != nil:
		return st, err
	case !finished:
		return st, fmt.Errorf("run %s: %w, yet the store has it at %s", st.RunID, store.ErrRunFinished, run.Status)
	case run.ID != "":
		if err := l.Retell(ctx, run); err != nil {
			return st, err
		}
	}
	return saved, nil
}

// rollbackInput removes a failed run's input when the run left nothing
// else in history, so that the user can simply send the message again.
func (l *Loop) rollbackInput(ctx context.Context, st RunState, run []store.Message) error {
	inputs := store.RunPrefix(st.Seq) + "a"
	var keys []string
	for _, m := range run {
		if !strings.HasPrefix(m.Key, inputs) {
			return nil // the run produced output; keep its record
		}
		keys = append(keys, m.Key)
	}
	return l.Store.DeleteMessages(ctx, st.SessionID, keys)
}

// Fail ends a run with an internal error the user is told about; the next
// step is finish. Drivers call it when a step keeps failing.
func (l *Loop) Fail(st RunState, err error) RunState { return l.fail(st, CodeInternal, err) }

// publicError is an error whose text is written for the user: it names no
// server, path or credential, and is shown as it is.
type publicError struct{ msg string }

func (e *publicError) Error() string { return e.msg }

// errTooLong tells the user why a conversation cannot go on.
var errTooLong = &publicError{"the conversation is too long for the model's context window, even after compaction; start a new one with /new"}

func unknownAgent(name string) error {
	return &publicError{fmt.Sprintf("%s %q", ErrUnknownAgent, name)}
}

// fail ends a run with an error the user is told about. The user sees a
// generic message naming the run, unless err was written for them; the
// error itself goes to the log, scrubbed, since a provider's or the
// store's error text can name hosts, paths and keys.
func (l *Loop) fail(st RunState, code string, err error) RunState {
	var pe *publicError
	switch {
	case errors.As(err, &pe):
		st.Error = pe.msg
	case code == CodeNoProvider:
		st.Error = llm.ErrNoProvider.Error()
	case code == CodeUpstream:
		st.Error = fmt.Sprintf("the model provider failed to answer; try again in a moment (run %s)", st.RunID)
	default:
		st.Error = fmt.Sprintf("an internal error stopped this reply (run %s)", st.RunID)
	}
	st.ErrorCode = code
	st.Calls = nil
	st.Step = StepFinish
	l.logFailure(st, err)
	return st
}

// logFailure logs why a run failed, scrubbed.
func (l *Loop) logFailure(st RunState, err error) {
	if l.Log != nil {
		l.Log.Warn("run failed", "run_id", st.RunID, "session_id", st.SessionID, "code", st.ErrorCode, "error", scrub.Scrub(err.Error()))
	}
}

// clientSystem reports whether the client sent system messages: with the
// run's options, or in a stateless request's history.
func clientSystem(opts Options, hist []store.Message, stateless bool) bool {
	return len(opts.System) > 0 ||
		stateless && slices.ContainsFunc(hist, func(m store.Message) bool { return m.Role == chat.System })
}

// prompt returns the system messages that open a model request.
func (l *Loop) prompt(ctx context.Context, a *Agent, stateless bool) ([]chat.Message, error) {
	if l.Prompter == nil {
		return nil, nil
	}
	msgs, err := l.Prompter.SystemPrompt(ctx, a, stateless)
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
	limit := store.RunPrefix(st.Seq + 1)
	n := 0
	for _, m := range all {
		if m.Key < limit {
			all[n] = m
			n++
		}
	}
	return all[:n], nil
}

// errFinished tells Step that the run was found finished already: a
// think repeated after the commit that finished the run. Step returns
// the saved state and commits nothing.
var errFinished = errors.New("the run is finished")
