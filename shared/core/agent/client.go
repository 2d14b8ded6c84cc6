package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/toolparse"
)

// Options are what an API client asks of a run beyond its input: tools of
// its own, the settings of the model calls, and system messages. They are
// stored with the run and apply to each of its steps; a run continued with
// the client's tool results keeps the options it was queued with.
type Options struct {
	// Tools are the client's own tools, offered to the model next to the
	// agent's. The server never runs them: when the model calls one, the
	// run returns the call to the client and waits for its result.
	Tools []chat.ToolDef `json:"tools,omitempty"`
	// Params are the settings of the model calls. A tool choice that
	// forces a call (required, or a named function) applies to the run's
	// first model call only: after the agent's own tools ran, the model
	// answers freely, so a forced choice cannot loop.
	Params llm.Params `json:"params"`
	// System are the client's system messages, placed after the agent's
	// system prompt.
	System []chat.Message `json:"system,omitempty"`
	// EndWithClientCalls ends the run when it hands the client calls of
	// its tools, instead of waiting for their results: the results come
	// as the input of the session's next run (the Responses API).
	EndWithClientCalls bool `json:"end_with_client_calls,omitempty"`
	// TokenBudget caps the tokens (prompt and completion) of all the
	// run's model calls when positive: each reply's completion is capped
	// to what is left, and a run that has spent its budget ends with an
	// error instead of calling the model again.
	TokenBudget int `json:"token_budget,omitempty"`
}

// encode validates o for agent a and returns it as stored with a run: nil
// when the client asked for nothing.
func (o Options) encode(a *Agent) ([]byte, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("encode options: %w", err)
	}
	if string(b) == `{"params":{}}` {
		return nil, nil
	}
	if err := checkOptions(a, o); err != nil {
		return nil, err
	}
	return b, nil
}

// client reports whether name is one of the client's tools.
func (o Options) client(name string) bool {
	return slices.ContainsFunc(o.Tools, func(t chat.ToolDef) bool { return t.Name == name })
}

// InputError is a mistake in what a client sent, found before anything
// changed; the HTTP API answers it with 400.
type InputError struct{ Message string }

func (e *InputError) Error() string { return e.Message }

func inputErrorf(format string, args ...any) error {
	return &InputError{fmt.Sprintf(format, args...)}
}

// checkOptions validates o for agent a: client tools have names of their
// own, a forced tool exists, and the provider can honour the parameters.
func checkOptions(a *Agent, o Options) error {
	if o.TokenBudget < 0 {
		return inputErrorf("token budget is %d; want 0 (none) or more", o.TokenBudget)
	}
	seen := map[string]bool{}
	for i, t := range o.Tools {
		switch {
		case t.Name == "":
			return inputErrorf("tools[%d].function.name is required", i)
		case seen[t.Name]:
			return inputErrorf("tools[%d]: the tool name %q is used twice", i, t.Name)
		}
		if reg := a.Registry(); reg != nil {
			if _, ok := reg.Get(t.Name); ok {
				return inputErrorf("tools[%d]: %q is the name of a tool of agent %q; give your tool another name", i, t.Name, a.Name)
			}
		}
		seen[t.Name] = true
	}
	var offered []chat.ToolDef
	if reg := a.Registry(); reg != nil {
		offered = reg.Definitions()
	}
	if err := o.Params.ToolChoice.Check(slices.Concat(offered, o.Tools)); err != nil {
		return &InputError{err.Error()}
	}
	if err := llm.CheckParams(a.Provider, o.Params); err != nil {
		var u *llm.UnsupportedError
		if errors.As(err, &u) {
			return &InputError{u.Error()}
		}
		return fmt.Errorf("check parameters: %w", err)
	}
	return nil
}

// checkParts refuses the parts of msgs (images, audio, files) that agent
// a's model cannot take, naming the part and the agent.
func checkParts(a *Agent, msgs []chat.Message) error {
	err := llm.CheckParts(a.Provider, msgs)
	var u *llm.UnsupportedError
	if errors.As(err, &u) {
		model := ""
		if a.Model != "" {
			model = fmt.Sprintf(" (model %s)", a.Model)
		}
		return inputErrorf("agent %q%s cannot take this input: %s", a.Name, model, u.Error())
	}
	if err != nil {
		return fmt.Errorf("check parts: %w", err)
	}
	return nil
}

// forcing reports whether a tool choice makes the model call a tool.
func forcing(tc *llm.ToolChoice) bool {
	return tc != nil && (tc.Mode == llm.ToolsRequired || tc.Mode == llm.ToolsFunction)
}

// options reads the options the run was queued with.
func (l *Loop) options(ctx context.Context, st RunState) (Options, error) {
	var o Options
	if !st.Options {
		return o, nil
	}
	run, err := l.Store.GetRun(ctx, st.RunID)
	if err != nil {
		return o, fmt.Errorf("load options: %w", err)
	}
	if err := json.Unmarshal(run.Options, &o); err != nil {
		return o, fmt.Errorf("run %s: decode options: %w", st.RunID, err)
	}
	return o, nil
}

// clientApprovalID names the wait of a run for its client's tool results;
// a person's approval of the same iteration has approvalID.
func clientApprovalID(st RunState) string { return approvalID(st) + "-client" }

// toClient hands the client calls of the current iteration to the client,
// once the agent's own calls ran. A stateless run ends with them, and so
// does one whose options say so; another stateful run says so to its
// replier and parks until the results come.
// The calls stay pending, as the model sent them, until the results come.
func (l *Loop) toClient(ctx context.Context, st RunState) (RunState, error) {
	st.Calls = nil
	st.ClearCalls = true
	st.FinishReason = "tool_calls"
	opts, err := l.options(ctx, st)
	if err != nil {
		return st, err
	}
	if strings.HasPrefix(st.SessionID, EphemeralPrefix) || opts.EndWithClientCalls {
		st.Step = StepFinish
		return st, nil
	}
	id := clientApprovalID(st)
	ap := store.Approval{ID: id, SessionID: st.SessionID, RunID: st.RunID, Kind: store.ApprovalClientTools,
		Status: store.ApprovalPending, CreatedAt: l.now().UTC()}
	calls, content, err := l.clientCalls(ctx, st)
	if err != nil {
		return st, err
	}
	for _, c := range calls {
		ap.Calls = append(ap.Calls, c.ID)
		ap.Tools = append(ap.Tools, c.Name)
	}
	if err := l.Store.CreateApproval(ctx, ap); err != nil && !errors.Is(err, store.ErrExists) {
		return st, fmt.Errorf("wait for client tools: %w", err)
	}
	st.Approval = id
	st.Step = StepWait
	if l.Replier != nil {
		l.Replier.Finish(st, clientResult(st, content, calls))
	}
	return st, nil
}

// clientCalls returns the client calls of the run's current iteration,
// with their arguments as the model sent them, and the text that came
// with them.
func (l *Loop) clientCalls(ctx context.Context, st RunState) ([]chat.ToolCall, string, error) {
	am, err := l.Store.GetMessage(ctx, st.SessionID, assistantKey(st.Seq, st.Iteration))
	if err != nil {
		return nil, "", fmt.Errorf("load client calls: %w", err)
	}
	pending, err := l.Store.PendingCalls(ctx, st.RunID)
	if err != nil {
		return nil, "", fmt.Errorf("load client calls: %w", err)
	}
	var out []chat.ToolCall
	for _, shown := range am.ToolCalls {
		if !slices.Contains(st.ClientCalls, shown.ID) {
			continue
		}
		c := shown
		if i := slices.IndexFunc(pending, func(p chat.ToolCall) bool { return p.ID == shown.ID }); i >= 0 {
			c = pending[i]
		}
		out = append(out, c)
	}
	return out, toolparse.StripCalls(am.Content), nil
}

// clientResult is what a run tells its client when it hands it calls.
func clientResult(st RunState, content string, calls []chat.ToolCall) Result {
	return Result{Content: content, ToolCalls: calls, Usage: st.Usage.Sub(st.Reported), FinishReason: "tool_calls"}
}

// waitingForClient reports whether st is parked for its client's tool
// results.
func (s RunState) waitingForClient() bool { return s.Parked() && len(s.ClientCalls) > 0 }

var errNothingPending = &InputError{"no tool calls of this conversation wait for results"}

// deliverResults hands the client's tool results, which open in.Messages,
// to the session. A run waiting for them resumes (resumed): the results
// must be all of in.Messages and answer exactly the calls it returned.
// Otherwise they must answer exactly the calls left open at the end of
// the session's history by a run that ended with them
// (Options.EndWithClientCalls), and start the next run with whatever
// follows them.
func (l *Loop) deliverResults(ctx context.Context, in Input, lane Lane, subscribe func(runID string)) (st RunState, resumed bool, err error) {
	sess, err := l.Store.GetSession(ctx, in.SessionID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return st, false, errNothingPending
	case err != nil:
		return st, false, fmt.Errorf("deliver tool results: %w", err)
	case sess.Owner != in.Owner:
		return st, false, fmt.Errorf("deliver tool results: %w", store.ErrForbidden)
	}
	ap, err := l.PendingApproval(ctx, in.SessionID)
	switch {
	case errors.Is(err, ErrNoPendingApproval):
		return st, false, l.checkOpenCalls(ctx, in)
	case err != nil:
		return st, false, fmt.Errorf("deliver tool results: %w", err)
	case ap.Kind != store.ApprovalClientTools:
		return st, false, errNothingPending
	}
	for i, m := range in.Messages {
		if m.Role != chat.Tool {
			return st, false, inputErrorf("messages[%d]: after tool results only more tool results may follow in a stateful session", i)
		}
	}
	if err := answersExactly(ap.Calls, in.Messages); err != nil {
		return st, false, err
	}
	if st, err = l.runState(ctx, ap.RunID); err != nil {
		return st, false, fmt.Errorf("deliver tool results: %w", err)
	}
	results := map[string]string{}
	for _, m := range in.Messages {
		results[m.ToolCallID] = m.Content
	}
	if err := l.writeClientResults(ctx, st, results); err != nil {
		return st, false, fmt.Errorf("deliver tool results: %w", err)
	}
	subscribe(ap.RunID)
	st, err = l.resumeClient(ctx, ap, store.ApprovalApproved, lane)
	return st, true, err
}

// answersExactly checks that the tool results leading msgs answer exactly
// the calls of ids, each once.
func answersExactly(ids []string, msgs []chat.Message) error {
	var got []string
	for _, m := range msgs {
		if m.Role != chat.Tool {
			break
		}
		if slices.Contains(got, m.ToolCallID) {
			return inputErrorf("two tool results answer the call %q", m.ToolCallID)
		}
		got = append(got, m.ToolCallID)
	}
	if missing, extra := setDiff(ids, got), setDiff(got, ids); len(missing) > 0 || len(extra) > 0 {
		return inputErrorf("the tool results must answer exactly the pending calls %s; unknown: %s, missing: %s",
			orNone(ids), orNone(extra), orNone(missing))
	}
	return nil
}

// checkOpenCalls checks that the tool results leading in.Messages answer
// exactly the calls the session's history leaves open.
func (l *Loop) checkOpenCalls(ctx context.Context, in Input) error {
	hist, err := l.Store.Messages(ctx, in.SessionID)
	if err != nil {
		return fmt.Errorf("deliver tool results: %w", err)
	}
	msgs := make([]chat.Message, len(hist))
	for i, m := range hist {
		msgs[i] = m.Message
	}
	open := openCalls(msgs)
	if len(open) == 0 {
		return errNothingPending
	}
	return answersExactly(open, in.Messages)
}

// openCalls returns the ids of the calls of the last assistant message
// of msgs that no tool result after it answers.
func openCalls(msgs []chat.Message) []string {
	last := -1
	for i, m := range msgs {
		if m.Role == chat.Assistant {
			last = i
		}
	}
	if last < 0 {
		return nil
	}
	var open []string
	for _, c := range msgs[last].ToolCalls {
		if !slices.ContainsFunc(msgs[last+1:], func(m chat.Message) bool { return m.Role == chat.Tool && m.ToolCallID == c.ID }) {
			open = append(open, c.ID)
		}
	}
	return open
}

// hasOpenCalls reports whether a call of msgs has no tool result before
// the next user or assistant message (or the end).
func hasOpenCalls(msgs []chat.Message) bool {
	var open []chat.ToolCall // a copy: DeleteFunc below changes it
	for _, m := range msgs {
		switch m.Role {
		case chat.Tool:
			open = slices.DeleteFunc(open, func(c chat.ToolCall) bool { return c.ID == m.ToolCallID })
		case chat.User, chat.Assistant:
			if len(open) > 0 {
				return true
			}
			open = append(open[:0], m.ToolCalls...)
		}
	}
	return len(open) > 0
}

// closeOpenCalls answers, as not run, every call of msgs that no tool result
// answers before the next message of another kind, so that the
// conversation is one a provider accepts.
func closeOpenCalls(msgs []chat.Message) []chat.Message {
	if !hasOpenCalls(msgs) {
		return msgs
	}
	var out []chat.Message
	var open []chat.ToolCall
	flush := func() {
		for _, c := range open {
			out = append(out, chat.Message{Role: chat.Tool, ToolCallID: c.ID, Name: c.Name, Content: "error: no result was given for this call; it did not run"})
		}
		open = nil
	}
	for _, m := range msgs {
		switch m.Role {
		case chat.Tool:
			open = slices.DeleteFunc(open, func(c chat.ToolCall) bool { return c.ID == m.ToolCallID })
		case chat.User, chat.Assistant:
			flush()
		}
		out = append(out, m)
		if m.Role == chat.Assistant {
			open = slices.Clone(m.ToolCalls)
		}
	}
	flush()
	return out
}

// abandonClient ends the wait of a run whose client sent a new message
// instead of its tool results: the calls are answered as not run, and
// the run finishes.
func (l *Loop) abandonClient(ctx context.Context, ap store.Approval, lane Lane) error {
	st, err := l.runState(ctx, ap.RunID)
	if err != nil {
		return fmt.Errorf("abandon tool calls: %w", err)
	}
	results := map[string]string{}
	for _, id := range ap.Calls {
		results[id] = "error: the client did not run this call; the user sent a new message instead"
	}
	if err := l.writeClientResults(ctx, st, results); err != nil {
		return fmt.Errorf("abandon tool calls: %w", err)
	}
	_, err = l.resumeClient(ctx, ap, store.ApprovalDenied, lane)
	return err
}

// writeClientResults writes the results of the client calls of st, by
// call id, under the keys of its current iteration: put-if-absent, so a
// repeated delivery keeps the first. Like the agent's own tool results
// they are scrubbed and cut to the limit.
func (l *Loop) writeClientResults(ctx context.Context, st RunState, results map[string]string) error {
	am, err := l.Store.GetMessage(ctx, st.SessionID, assistantKey(st.Seq, st.Iteration))
	if err != nil {
		return err
	}
	a, _ := l.Agents.Agent(st.Agent)
	for j, c := range am.ToolCalls {
		out, ok := results[c.ID]
		if !ok {
			continue
		}
		if _, err := l.Store.AppendMessage(ctx, l.resultMessage(ctx, a, st.SessionID, st.RunID, toolKey(st.Seq, st.Iteration, j), c, out)); err != nil {
			return err
		}
	}
	return nil
}

// resumeClient resolves a client wait and resumes its run. A wait
// resolved already (a repeated delivery) is left as it is.
func (l *Loop) resumeClient(ctx context.Context, ap store.Approval, status store.ApprovalStatus, lane Lane) (RunState, error) {
	_, err := l.Store.ResolveApproval(ctx, ap.ID, status, string(status), l.now().UTC())
	if err != nil && !errors.Is(err, store.ErrConflict) {
		return RunState{}, fmt.Errorf("resume run %s: %w", ap.RunID, err)
	}
	if err == nil {
		if err := lane.Resume(ctx, ap); err != nil {
			return RunState{}, fmt.Errorf("resume run %s: %w", ap.RunID, err)
		}
	}
	return l.runState(ctx, ap.RunID)
}

func (l *Loop) runState(ctx context.Context, runID string) (RunState, error) {
	run, err := l.Store.GetRun(ctx, runID)
	if err != nil {
		return RunState{}, err
	}
	return DecodeState(run)
}

// setDiff returns the elements of a not in b.
func setDiff(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			out = append(out, s)
		}
	}
	return out
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
