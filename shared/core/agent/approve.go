package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// Decision is a person's answer to an approval prompt.
type Decision string

// The answers of seed 001's approval workflow.
const (
	Yes    Decision = "yes"
	No     Decision = "no"
	Always Decision = "always"
)

// ParseDecision reads an answer: /yes, /no or /always, with or without the
// slash, in any case. Anything else is not an answer.
func ParseDecision(text string) (Decision, bool) {
	t := strings.ToLower(strings.TrimSpace(text))
	t = strings.TrimPrefix(t, "/")
	switch t {
	case "yes", "y":
		return Yes, true
	case "no", "n":
		return No, true
	case "always":
		return Always, true
	}
	return "", false
}

// ErrNoPendingApproval is returned when an answer finds nothing to answer.
var ErrNoPendingApproval = errors.New("no approval is pending")

// ErrStaleApproval is returned when a message answers an approval
// (Input.Approval) that its session no longer waits for, or never did.
var ErrStaleApproval = errors.New("that approval is not pending in this conversation")

// ErrMayNotApprove is returned when a message approves tool calls that the
// sender's autonomy does not allow; the approval stays pending.
var ErrMayNotApprove = errors.New("your autonomy level does not allow approving this")

func approvalID(st RunState) string { return fmt.Sprintf("%s-%d", st.RunID, st.Iteration) }

// Verdicts of the policy, as the loop names them.
const (
	allow = tool.Allow
	deny  = tool.Deny
	ask   = tool.Ask
)

// judge applies the approval workflow of seed 001 to one call, by the
// effect its tool declares for it (tool.Judge): what the run's autonomy
// allows runs, what it forbids is refused, and the rest is approved by
// the session's allowlist or asked of a person. Calls to unknown tools
// are denied with the reason.
func judge(a *Agent, st RunState, sess store.Session, c chat.ToolCall) (tool.Verdict, string) {
	t, ok := a.Registry().Get(c.Name)
	if !ok {
		return deny, fmt.Sprintf("error: there is no tool named %q", c.Name)
	}
	effect := t.Policy().EffectOf(json.RawMessage(c.Arguments))
	switch tool.Judge(effect, st.Autonomy) {
	case allow:
		return allow, ""
	case deny:
		return deny, fmt.Sprintf("refused: this %s call is a %s, which a conversation at autonomy %s may not make", c.Name, effectPhrase(effect), st.Autonomy)
	}
	switch {
	case slices.Contains(sess.Allowlist, c.Name):
		return allow, ""
	case !st.Interactive:
		return deny, fmt.Sprintf("refused: %s needs a person's approval, and nobody can be asked in this run (a stateless API request or a scheduled check-in); "+
			"tell the user, who can use a stateful session (header X-Lambdaclaw-Session-Key) to be asked, or autonomy full", c.Name)
	}
	return ask, ""
}

// effectPhrase names an effect for the model and the person.
func effectPhrase(e tool.Effect) string {
	switch e {
	case tool.WriteShared:
		return "write to the agent's shared workspace"
	case tool.WriteOwn:
		return "write to the owner's own records"
	case tool.Read:
		return "read"
	}
	return "side effect outside lambdaclaw"
}

// approve asks a person about the calls that need it, parking the run, or
// goes straight on to act when none does. The prompt is told once the
// commit that parks the run succeeded (Step); a channel that delivers
// from the store has it in that commit (Outboxer), so it lands exactly
// when the run parks.
func (l *Loop) approve(ctx context.Context, st RunState, c *store.Commit, t **told) (RunState, error) {
	a, ok := l.Agents.Agent(st.Agent)
	if !ok {
		return l.fail(st, CodeInternal, unknownAgent(st.Agent)), nil
	}
	am, err := l.Store.GetMessage(ctx, st.SessionID, assistantKey(st.Seq, st.Iteration))
	if err != nil {
		return st, fmt.Errorf("approve: %w", err)
	}
	sess, err := l.Store.GetSession(ctx, st.SessionID)
	if err != nil {
		return st, fmt.Errorf("approve: %w", err)
	}
	var calls []chat.ToolCall
	for _, c := range am.ToolCalls {
		if !slices.Contains(st.Calls, c.ID) {
			continue // a call of the client's own tools
		}
		if v, _ := judge(a, st, sess, c); v == ask {
			calls = append(calls, c)
		}
	}
	st.Step = StepAct
	if len(calls) == 0 {
		return st, nil
	}
	id := approvalID(st)
	ap, err := l.Store.GetApproval(ctx, id)
	switch {
	case err == nil && ap.Status != store.ApprovalPending:
		return st, nil // answered before this step was retried
	case errors.Is(err, store.ErrNotFound):
		ap = store.Approval{ID: id, SessionID: st.SessionID, RunID: st.RunID, Prompt: approvalPrompt(calls),
			Status: store.ApprovalPending, CreatedAt: l.now().UTC()}
		for _, c := range calls {
			ap.Calls = append(ap.Calls, c.ID)
			ap.Tools = append(ap.Tools, c.Name)
		}
		if err := l.Store.CreateApproval(ctx, ap); err != nil && !errors.Is(err, store.ErrExists) {
			return st, fmt.Errorf("approve: %w", err)
		}
		for _, c := range calls {
			l.emit(obs.Event{Type: obs.ApprovalRequested, SessionID: st.SessionID, RunID: st.RunID, Attrs: []slog.Attr{
				slog.String("approval_id", id), slog.String("tool_name", c.Name), slog.String("args", c.Arguments)}})
		}
	case err != nil:
		return st, fmt.Errorf("approve: %w", err)
	}
	st.Approval = id
	st.Step = StepWait
	if o, ok := l.Replier.(Outboxer); ok {
		c.Outbox = append(c.Outbox, o.ApprovalOutbox(st.asker(), ap)...)
	}
	*t = &told{st: st, ap: &ap}
	return st, nil
}

// wait keeps the run parked until its approval is answered.
func (l *Loop) wait(ctx context.Context, st RunState) (RunState, error) {
	ap, err := l.Store.GetApproval(ctx, st.Approval)
	if err != nil {
		return st, fmt.Errorf("wait: %w", err)
	}
	if ap.Kind == store.ApprovalDelegation {
		return l.delegationWait(ctx, st, ap)
	}
	if ap.Status == store.ApprovalPending {
		return st, nil
	}
	st.Approval = ""
	if ap.Kind != store.ApprovalClientTools {
		st.Step = StepAct
		return st, nil
	}
	// The client answered its calls (or sent a new message instead, which
	// ends the run); the usage so far was reported with the calls.
	st.ClientCalls = nil
	st.Reported = st.Usage
	if ap.Status == store.ApprovalDenied {
		st.FinishReason = "stop"
		st.Step = StepFinish
		return st, nil
	}
	a, ok := l.Agents.Agent(st.Agent)
	if !ok {
		return l.fail(st, CodeInternal, unknownAgent(st.Agent)), nil
	}
	return nextIteration(a, st), nil
}

// approvalPrompt is the question sent to the run's reply channel.
func approvalPrompt(calls []chat.ToolCall) string {
	var b strings.Builder
	b.WriteString("Approval needed. The agent wants to run:\n")
	names := make([]string, 0, len(calls))
	for _, c := range calls {
		args := c.Arguments
		if len(args) > 300 {
			args = truncate(args, 300)
		}
		fmt.Fprintf(&b, "- %s %s\n", c.Name, args)
		if !slices.Contains(names, c.Name) {
			names = append(names, c.Name)
		}
	}
	fmt.Fprintf(&b, "Reply /yes to allow, /no to deny, or /always to allow %s for the rest of this conversation.", strings.Join(names, ", "))
	return b.String()
}

// Answer records a person's decision on a pending approval: /always also
// adds its tools to the session's allowlist. The parked run moves on the
// next time it is stepped. A second answer to the same approval returns
// store.ErrConflict and changes nothing.
func (l *Loop) Answer(ctx context.Context, ap store.Approval, d Decision) error {
	switch ap.Kind {
	case store.ApprovalClientTools:
		return fmt.Errorf("answer approval %s: %w: the run waits for its client's tool results", ap.ID, ErrNoPendingApproval)
	case store.ApprovalDelegation:
		return fmt.Errorf("answer approval %s: %w: the run waits for the agents it delegated to", ap.ID, ErrNoPendingApproval)
	}
	status := store.ApprovalApproved
	if d == No {
		status = store.ApprovalDenied
	}
	ap, err := l.Store.ResolveApproval(ctx, ap.ID, status, string(d), l.now().UTC())
	if err != nil {
		return fmt.Errorf("answer approval: %w", err)
	}
	if d == Always {
		for _, t := range ap.Tools {
			if err := l.Store.AllowTool(ctx, ap.SessionID, t); err != nil {
				return fmt.Errorf("answer approval: %w", err)
			}
		}
	}
	l.emitResolved(ap, string(d))
	return nil
}

// emitResolved tells the events that ap was resolved with decision, one
// event per tool it asked about.
func (l *Loop) emitResolved(ap store.Approval, decision string) {
	for _, t := range ap.Tools {
		l.emit(obs.Event{Type: obs.ApprovalResolved, SessionID: ap.SessionID, RunID: ap.RunID, Attrs: []slog.Attr{
			slog.String("approval_id", ap.ID), slog.String("tool_name", t), slog.String("decision", decision)}})
	}
}

// PendingApproval returns the approval a session waits for, or
// ErrNoPendingApproval.
//
// While the session's run waits for the agents it delegated to, the
// approval is the first question one of them (or theirs, in turn) asks:
// a child's approvals are asked of the person its tree answers.
func (l *Loop) PendingApproval(ctx context.Context, sessionID string) (store.Approval, error) {
	ap, _, err := l.asked(ctx, sessionID)
	return ap, err
}

// asked returns the approval a session waits for (PendingApproval) and
// the run of the session that waits for it: the run whose answer a
// person's reply to the approval leads to.
func (l *Loop) asked(ctx context.Context, sessionID string) (store.Approval, string, error) {
	ap, err := l.pendingIn(ctx, sessionID, 0)
	if err != nil {
		return ap, "", err
	}
	top, err := l.Store.PendingApproval(ctx, sessionID)
	if err != nil {
		return ap, "", err
	}
	return ap, top.RunID, nil
}

// pendingIn is the approval to answer in the session, depth delegations
// down from the session a person talks in.
func (l *Loop) pendingIn(ctx context.Context, sessionID string, depth int) (store.Approval, error) {
	ap, err := l.Store.PendingApproval(ctx, sessionID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return ap, ErrNoPendingApproval
	case err != nil || ap.Kind != store.ApprovalDelegation:
		return ap, err
	case depth > l.Delegation.maxDepth():
		return ap, ErrNoPendingApproval
	}
	for _, call := range ap.Calls {
		child, err := l.pendingIn(ctx, childSessionID(ap.RunID, call), depth+1)
		if !errors.Is(err, ErrNoPendingApproval) {
			return child, err
		}
	}
	return store.Approval{}, ErrNoPendingApproval
}

// mayApprove checks that in's sender may allow the calls ap asks about:
// a read-only sender never may, nor one whose autonomy is below what a
// tool needs. The session is the sender's own (session ids derive from
// their owner), so only the autonomy is left to check.
//
// The tools are the agent's whose run asks: in.Agent's, or, for the
// question of a run it delegated to, that run's agent's.
func (l *Loop) mayApprove(ctx context.Context, ap store.Approval, in Input) error {
	if in.Autonomy <= tool.ReadOnly {
		return fmt.Errorf("%w: it is read_only; answer /no, or use a key with autonomy supervised or full", ErrMayNotApprove)
	}
	name := in.Agent
	if ap.SessionID != in.SessionID {
		st, err := l.runState(ctx, ap.RunID)
		if err != nil {
			return fmt.Errorf("approve: %w", err)
		}
		name = st.Agent
	}
	a, ok := l.Agents.Agent(name)
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownAgent, name)
	}
	for _, name := range ap.Tools {
		if t, ok := a.Registry().Get(name); ok && tool.Judge(t.Policy().Effect, in.Autonomy) == deny {
			return fmt.Errorf("%w: %s is a %s, and your autonomy is %s", ErrMayNotApprove, name, effectPhrase(t.Policy().Effect), in.Autonomy)
		}
	}
	return nil
}

// Lane is how a driver works through a session's runs.
type Lane interface {
	// Resume continues the parked run of an approval just answered.
	Resume(ctx context.Context, ap store.Approval) error
	// Kick makes sure the session's next queued run is being worked on.
	Kick(ctx context.Context, sessionID string) error
}

// Deliver hands a user's message to its session. If the session waits for
// an approval, an answer (/yes, /no, /always) resumes the parked run, and
// any other message denies the approval and is queued as a new run behind
// it. If the session waits for its client's tool results, tool messages
// answering exactly the pending calls resume the run (anything else is an
// *InputError), and a new user message ends the wait as the calls not
// run. Tool messages answering exactly the calls a run ended with
// (Options.EndWithClientCalls) start the next run. subscribe is called with the id of the run that will answer,
// before that run can report anything.
func (l *Loop) Deliver(ctx context.Context, in Input, lane Lane, subscribe func(runID string)) (RunState, error) {
	if !in.Ephemeral && len(in.Messages) > 0 && in.Messages[0].Role == chat.Tool {
		if st, resumed, err := l.deliverResults(ctx, in, lane, subscribe); err != nil || resumed {
			return st, err
		}
		// The results answer a run that ended with the calls: with what
		// follows them they are the next run's input.
	}
	if !in.Ephemeral && len(in.Messages) == 1 && in.Messages[0].Role == chat.User {
		ap, answers, err := l.asked(ctx, in.SessionID)
		switch {
		case in.Approval != "" && (errors.Is(err, ErrNoPendingApproval) || err == nil && (ap.ID != in.Approval || ap.Kind == store.ApprovalClientTools)):
			return RunState{}, ErrStaleApproval
		case err == nil && ap.Kind == store.ApprovalClientTools:
			// The client sent a new message instead of its tool results.
			if err := l.abandonClient(ctx, ap, lane); err != nil {
				return RunState{}, fmt.Errorf("deliver: %w", err)
			}
		case err == nil:
			dec, isAnswer := ParseDecision(in.Messages[0].Content)
			if isAnswer && dec != No {
				if err := l.mayApprove(ctx, ap, in); err != nil {
					return RunState{}, err
				}
			}
			if !isAnswer {
				dec = No
			} else {
				subscribe(answers)
			}
			err := l.Answer(ctx, ap, dec)
			if err != nil && !errors.Is(err, store.ErrConflict) {
				return RunState{}, err
			}
			if err == nil {
				if err := lane.Resume(ctx, ap); err != nil {
					return RunState{}, fmt.Errorf("deliver: %w", err)
				}
				if isAnswer {
					run, err := l.Store.GetRun(ctx, answers)
					if err != nil {
						return RunState{}, fmt.Errorf("deliver: %w", err)
					}
					return DecodeState(run)
				}
			}
		case !errors.Is(err, ErrNoPendingApproval):
			return RunState{}, fmt.Errorf("deliver: %w", err)
		}
	}
	if in.RunID == "" {
		in.RunID = NewID()
	}
	subscribe(in.RunID)
	st, err := l.Enqueue(ctx, in)
	if err != nil {
		return st, err
	}
	return st, lane.Kick(ctx, st.SessionID)
}
