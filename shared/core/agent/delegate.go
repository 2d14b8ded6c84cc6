package agent

// Delegation between agents: the delegate tool, offered to an agent by
// its configuration's delegate_to, starts a run of another agent in a
// child session of its own and returns that run's answer as the call's
// result.
//
// A child is an ordinary run of the loop, queued by the parent's act step
// under ids derived from the parent's run and the call (childRunID,
// childSessionID), so that an act repeated after a crash finds the child
// it started instead of starting another: the delegate tool is
// idempotent, and a child that finished is never run again. The parent
// then parks as it parks for an approval (store.ApprovalDelegation,
// resolved by no person): a child that ends writes its answer into the
// parent's history (collect), resolves the wait when it was the last, and
// resumes the parent through the driver (Loop.Lanes), which on AWS sends
// the parked execution on; no process waits meanwhile. The parent's wait
// step collects the same way, so a parent woken after a crash finds the
// answers of the children that ended while nobody told it.
//
// A child has the parent's owner, its autonomy and its interactivity; its
// approvals are asked of the person the parent's run answers, on the
// parent's channel (RunState.Delegation.Ask), and answered in the
// parent's session (Loop.PendingApproval looks through a delegation to
// the question of a child). Limits (Loop.Delegation): how deep
// delegations nest, how many one reply starts, how long a child may run.
// A parent that ends early (stopped, failed, expired) stops its children.

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/pii"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// DelegateToolName is the name of the delegate tool.
const DelegateToolName = "delegate"

// CodeDelegationTimeout ends a child run that outlived its delegation's
// time limit (DelegationLimits.Timeout).
const CodeDelegationTimeout = "delegation_timeout"

// DelegateTool is the delegate tool of an agent: it hands a task to one of
// the agents it names. The loop runs its calls (act starts the child
// runs); Call itself only explains that to a caller outside the loop.
type DelegateTool struct {
	targets []string
}

// NewDelegateTool returns the delegate tool offering the agents targets.
func NewDelegateTool(targets []string) *DelegateTool {
	return &DelegateTool{targets: slices.Sorted(slices.Values(targets))}
}

// Definition implements tool.Tool.
func (t *DelegateTool) Definition() chat.ToolDef {
	params, _ := json.Marshal(map[string]any{
		"type": "object",
		"properties": map[string]any{
			"agent":   map[string]any{"type": "string", "enum": t.targets, "description": "the agent to hand the task to"},
			"message": map[string]any{"type": "string", "description": "the task, with everything the agent needs: it sees nothing else of this conversation"},
		},
		"required":             []string{"agent", "message"},
		"additionalProperties": false,
	})
	return chat.ToolDef{Name: DelegateToolName, Parameters: params, Description: "Hand a task to another agent and get its answer. " +
		"The agent works in a conversation of its own and sees only your message. Several delegate calls in one reply run in parallel. " +
		"Agents: " + strings.Join(t.targets, ", ") + "."}
}

// Policy implements tool.Tool: a delegation writes the owner's own
// records (the child's session), and repeating it starts nothing new.
func (t *DelegateTool) Policy() tool.Policy {
	return tool.Policy{Effect: tool.WriteOwn, Idempotent: true}
}

// Call implements tool.Tool. The loop answers the model's calls of the
// tool with child runs; any other caller (a script through the tool
// bridge) is refused.
func (t *DelegateTool) Call(context.Context, tool.Env, json.RawMessage) (string, error) {
	return "", errors.New("delegate can only be called by the agent itself, not from a script: the other agent's answer comes later, from a run of its own")
}

// DelegationLimits bound delegations; zero fields take the defaults.
type DelegationLimits struct {
	// MaxDepth is how deep delegations nest: a run nobody delegated is at
	// depth 0, its children at 1. Zero means 3.
	MaxDepth int
	// MaxFanOut is how many delegate calls one model reply may make; the
	// rest are refused. Zero means 4.
	MaxFanOut int
	// Timeout is how long a child run may take from its start; it fails
	// at its first step after. Zero means 10 minutes.
	Timeout time.Duration
}

func (d DelegationLimits) maxDepth() int          { return cmp.Or(d.MaxDepth, 3) }
func (d DelegationLimits) maxFanOut() int         { return cmp.Or(d.MaxFanOut, 4) }
func (d DelegationLimits) timeout() time.Duration { return cmp.Or(d.Timeout, 10*time.Minute) }

// Lanes is the driver as delegation needs it: to start a child's
// session, resume a parent whose children ended, and stop children.
// agent.Driver and sfn.Driver implement it.
type Lanes interface {
	Lane
	// Stop ends the head run of the session (a child) as cancelled.
	Stop(ctx context.Context, sessionID string) (bool, error)
}

// Delegation places a child run: its parent's run and call, how deep it
// is, until when it may run, and whom its approvals are asked of.
type Delegation struct {
	Parent        string `json:"parent"`
	ParentSession string `json:"parent_session"`
	// ParentAgent is the parent's agent, whose tokens of personal data
	// the child's answer gets in the parent's history.
	ParentAgent string `json:"parent_agent,omitempty"`
	// ParentSeq and ParentIteration place the parent's call in its
	// history; CallID is the call the child answers.
	ParentSeq       int64  `json:"parent_seq"`
	ParentIteration int    `json:"parent_iteration"`
	CallID          string `json:"call_id"`
	// Approval is the parent's wait for its children.
	Approval string    `json:"approval"`
	Depth    int       `json:"depth"`
	Deadline time.Time `json:"deadline"`
	// Ask is the run that answers the person at the top of the tree: a
	// child's approvals are told as that run's, on its channel.
	Ask Asker `json:"ask"`
}

// Asker is the run of a tree of delegations that a person talks to.
type Asker struct {
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id"`
	Agent     string `json:"agent"`
	Reply     Reply  `json:"reply"`
}

// depth is how deep st is in a tree of delegations.
func (s RunState) depth() int {
	if s.Delegation == nil {
		return 0
	}
	return s.Delegation.Depth
}

// asker is the run whose channel st's approvals are told on: st itself,
// or, for a child, the run at the top of its tree.
func (s RunState) asker() RunState {
	d := s.Delegation
	if d == nil {
		return s
	}
	return RunState{RunID: d.Ask.RunID, SessionID: d.Ask.SessionID, Agent: d.Ask.Agent, Owner: s.Owner, Reply: d.Ask.Reply,
		Step: StepWait, Interactive: s.Interactive, Autonomy: s.Autonomy, StartedAt: s.StartedAt}
}

// ChildChannel is the reply channel of child runs: their answers go to
// their parent's history, not to a person.
const ChildChannel = "delegate"

// childRunID and childSessionID name the child run answering call callID
// of run parent, and its session.
func childRunID(parent, callID string) string {
	sum := sha256.Sum256([]byte(parent + "\x00" + callID))
	return hex.EncodeToString(sum[:16])
}

func childSessionID(parent, callID string) string { return "dlg-" + childRunID(parent, callID) }

func delegationApprovalID(st RunState) string { return approvalID(st) + "-delegate" }

// mayDelegate reports whether the run st may start child runs at all:
// where it may not, delegate is not offered (and refused if called).
func (l *Loop) mayDelegate(st RunState) bool {
	return l.Lanes != nil && !strings.HasPrefix(st.SessionID, EphemeralPrefix) && st.depth() < l.Delegation.maxDepth()
}

// delegateArgs are a delegate call's arguments.
type delegateArgs struct {
	Agent   string `json:"agent"`
	Message string `json:"message"`
}

// delegateCall is a delegate call act is to start a child for.
type delegateCall struct {
	call chat.ToolCall
	args delegateArgs
}

// refuseDelegation says why a delegate call, the n-th (from 0) of its
// reply, may not start a child; "" when it may.
func (l *Loop) refuseDelegation(st RunState, t *DelegateTool, c chat.ToolCall, n int) (delegateArgs, string) {
	var args delegateArgs
	dec := json.NewDecoder(strings.NewReader(cmp.Or(strings.TrimSpace(c.Arguments), "{}")))
	dec.DisallowUnknownFields()
	switch {
	case dec.Decode(&args) != nil:
		return args, `error: the arguments must be {"agent": NAME, "message": TEXT}`
	case !slices.Contains(t.targets, args.Agent):
		return args, fmt.Sprintf("error: %q is not an agent you may delegate to; you may delegate to: %s", args.Agent, strings.Join(t.targets, ", "))
	case strings.TrimSpace(args.Message) == "":
		return args, "error: the message is empty; say what the agent is to do"
	case strings.HasPrefix(st.SessionID, EphemeralPrefix):
		return args, "refused: delegation needs a stateful conversation (header X-Lambdaclaw-Session-Key, or a channel); this request is stateless"
	case l.Lanes == nil:
		return args, "refused: delegation is not available in this process"
	case st.depth() >= l.Delegation.maxDepth():
		return args, fmt.Sprintf("refused: delegations nest at most %d deep; answer with what you have", l.Delegation.maxDepth())
	case n >= l.Delegation.maxFanOut():
		return args, fmt.Sprintf("refused: one reply may delegate at most %d tasks; wait for these answers, then delegate the rest", l.Delegation.maxFanOut())
	}
	if _, ok := l.Agents.Agent(args.Agent); !ok {
		return args, fmt.Sprintf("error: the agent %q does not exist", args.Agent)
	}
	return args, ""
}

// startChildren queues the child runs of calls, the delegate calls of
// st's current reply that have no result, kicks their lanes and parks st
// until they end. The wait is created first, so that a child ending at
// once finds it; a child queued already (the act repeated after a crash)
// is the one that answers.
func (l *Loop) startChildren(ctx context.Context, st RunState, calls []delegateCall) (RunState, error) {
	id := delegationApprovalID(st)
	ap := store.Approval{ID: id, SessionID: st.SessionID, RunID: st.RunID, Kind: store.ApprovalDelegation,
		Status: store.ApprovalPending, CreatedAt: l.now().UTC()}
	var agents []string
	for _, c := range calls {
		ap.Calls = append(ap.Calls, c.call.ID)
		ap.Tools = append(ap.Tools, DelegateToolName)
		agents = append(agents, c.args.Agent)
	}
	ap.Prompt = "Waiting for the answers of: " + strings.Join(agents, ", ")
	if err := l.Store.CreateApproval(ctx, ap); err != nil && !errors.Is(err, store.ErrExists) {
		return st, fmt.Errorf("delegate: %w", err)
	}
	ask := Asker{RunID: st.RunID, SessionID: st.SessionID, Agent: st.Agent, Reply: st.Reply}
	if st.Delegation != nil {
		ask = st.Delegation.Ask
	}
	// The child gets the values of the tokens of personal data the
	// parent's model passed, as a tool does (pii.go); it has tokens of its
	// own.
	var value func(string) (string, bool)
	if a, ok := l.Agents.Agent(st.Agent); ok {
		value = l.piiValues(ctx, a, st.SessionID)
	}
	for _, c := range calls {
		message := c.args.Message
		if value != nil {
			message = pii.Reveal(message, value)
		}
		in := Input{
			RunID: childRunID(st.RunID, c.call.ID), SessionID: childSessionID(st.RunID, c.call.ID), Agent: c.args.Agent, Owner: st.Owner,
			Messages: []chat.Message{{Role: chat.User, Content: message}}, Autonomy: st.Autonomy, Interactive: st.Interactive, Key: st.Key,
			Reply: Reply{Channel: ChildChannel, To: st.RunID},
			Delegation: &Delegation{Parent: st.RunID, ParentSession: st.SessionID, ParentAgent: st.Agent, ParentSeq: st.Seq, ParentIteration: st.Iteration,
				CallID: c.call.ID, Approval: id, Depth: st.depth() + 1, Deadline: l.now().UTC().Add(l.Delegation.timeout()), Ask: ask},
		}
		if _, err := l.Enqueue(ctx, in); err != nil {
			return st, fmt.Errorf("delegate to %s: %w", c.args.Agent, err)
		}
	}
	// All are queued before any starts: a child that ends finds its
	// siblings, ended or not, when it looks whether it was the last.
	for _, c := range calls {
		if err := l.Lanes.Kick(ctx, childSessionID(st.RunID, c.call.ID)); err != nil {
			return st, fmt.Errorf("delegate to %s: %w", c.args.Agent, err)
		}
	}
	st.Approval = id
	st.Step = StepWait
	return st, nil
}

// collect writes into the history of ap's run (at seq and iteration), a
// run of agent, the answer of each of its children that ended and is not
// written yet (put-if-absent: a child and its parent may both write it),
// and reports whether all of them ended.
func (l *Loop) collect(ctx context.Context, ap store.Approval, agent string, seq int64, iteration int) (bool, error) {
	a, _ := l.Agents.Agent(agent)
	am, err := l.Store.GetMessage(ctx, ap.SessionID, assistantKey(seq, iteration))
	if err != nil {
		return false, fmt.Errorf("collect answers: %w", err)
	}
	done := true
	for j, c := range am.ToolCalls {
		if !slices.Contains(ap.Calls, c.ID) {
			continue
		}
		key := toolKey(seq, iteration, j)
		if _, err := l.Store.GetMessage(ctx, ap.SessionID, key); err == nil {
			continue
		} else if !errors.Is(err, store.ErrNotFound) {
			return false, fmt.Errorf("collect answers: %w", err)
		}
		out, ended, err := l.childAnswer(ctx, childRunID(ap.RunID, c.ID))
		if err != nil {
			return false, err
		}
		if !ended {
			done = false
			continue
		}
		if _, err := l.Store.AppendMessage(ctx, l.resultMessage(ctx, a, ap.SessionID, ap.RunID, key, c, out)); err != nil {
			return false, fmt.Errorf("collect answers: %w", err)
		}
	}
	return done, nil
}

// childAnswer returns the answer of the child run id once it ended: its
// reply, or why it has none.
func (l *Loop) childAnswer(ctx context.Context, id string) (string, bool, error) {
	run, err := l.Store.GetRun(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", false, nil // not queued yet: the parent's act queues it
	case err != nil:
		return "", false, fmt.Errorf("child run %s: %w", id, err)
	case !run.Status.Finished():
		return "", false, nil
	}
	st, err := DecodeState(run)
	if err != nil {
		return "error: the agent's run cannot be read", true, nil
	}
	res, err := l.Result(ctx, st)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "error: the agent's answer is gone", true, nil
	case err != nil:
		return "", false, err
	case res.Error != "":
		return fmt.Sprintf("error: agent %s did not answer: %s", st.Agent, res.Error), true, nil
	}
	return res.Content, true, nil
}

// delegationWait is the wait step of a run parked for its children: it
// collects their answers and moves on to act once all ended.
func (l *Loop) delegationWait(ctx context.Context, st RunState, ap store.Approval) (RunState, error) {
	if ap.Status == store.ApprovalPending {
		done, err := l.collect(ctx, ap, st.Agent, st.Seq, st.Iteration)
		if err != nil || !done {
			return st, err
		}
		if _, err := l.Store.ResolveApproval(ctx, ap.ID, store.ApprovalApproved, "answered", l.now().UTC()); err != nil && !errors.Is(err, store.ErrConflict) {
			return st, fmt.Errorf("wait: %w", err)
		}
	}
	st.Approval = ""
	st.Step = StepAct
	return st, nil
}

// returnToParent hands the answer of the child run st, which ended, to its
// parent: written into the parent's history, and, once every child of
// the parent's wait ended, the wait resolved and the parent resumed. A
// parent that no longer waits (it ended, or another child resumed it) is
// left alone.
func (l *Loop) returnToParent(ctx context.Context, st RunState) error {
	d := st.Delegation
	if d == nil || l.Lanes == nil {
		return nil
	}
	ctx = WithLease(ctx, 0) // the child's lease fences none of the parent's writes
	ap, err := l.Store.GetApproval(ctx, d.Approval)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("return to run %s: %w", d.Parent, err)
	case ap.Status != store.ApprovalPending:
		return nil
	}
	done, err := l.collect(ctx, ap, d.ParentAgent, d.ParentSeq, d.ParentIteration)
	if err != nil || !done {
		return err
	}
	resolved, err := l.Store.ResolveApproval(ctx, ap.ID, store.ApprovalApproved, "answered", l.now().UTC())
	if errors.Is(err, store.ErrConflict) {
		return nil // another child was last too, and resumed it
	}
	if err != nil {
		return fmt.Errorf("return to run %s: %w", d.Parent, err)
	}
	if err := l.Lanes.Resume(ctx, resolved); err != nil {
		return fmt.Errorf("return to run %s: %w", d.Parent, err)
	}
	return nil
}

// returned is returnToParent for a step that ended st: a failure is
// logged, since the parent's wait collects the answer when it is next
// stepped.
func (l *Loop) returned(ctx context.Context, st RunState) {
	if err := l.returnToParent(ctx, st); err != nil && l.Log != nil {
		l.Log.Warn("child run's answer not handed to its parent", "run_id", st.RunID, "error", scrub.Scrub(err.Error()))
	}
}

// stopChildren stops the children st still waits for, when st ends
// before them.
func (l *Loop) stopChildren(ctx context.Context, st RunState) error {
	if l.Lanes == nil {
		return nil
	}
	ctx = WithLease(ctx, 0) // the parent's lease fences none of its children's writes
	ap, err := l.Store.GetApproval(ctx, delegationApprovalID(st))
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stop children: %w", err)
	}
	var errs []error
	for _, call := range ap.Calls {
		run, err := l.Store.GetRun(ctx, childRunID(st.RunID, call))
		if errors.Is(err, store.ErrNotFound) || err == nil && run.Status.Finished() {
			continue
		}
		if err == nil {
			_, err = l.Lanes.Stop(ctx, run.SessionID)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("stop child run %s: %w", childRunID(st.RunID, call), err))
		}
	}
	return errors.Join(errs...)
}

// pastDeadline reports whether the child run st outlived its time limit.
func (l *Loop) pastDeadline(st RunState) bool {
	d := st.Delegation
	return d != nil && !d.Deadline.IsZero() && !l.now().Before(d.Deadline)
}

// timedOut fails the child run st past its time limit.
func (l *Loop) timedOut(st RunState) RunState {
	return l.fail(st, CodeDelegationTimeout, &publicError{fmt.Sprintf("the delegation's time limit of %s passed before the agent answered", l.Delegation.timeout())})
}

// Child is one run another run delegated to, as the console shows the
// tree of runs.
type Child struct {
	RunID     string          `json:"run_id"`
	SessionID string          `json:"session_id"`
	Agent     string          `json:"agent"`
	CallID    string          `json:"call_id"`
	Status    store.RunStatus `json:"status"`
	Usage     chat.Usage      `json:"usage"`
	Error     string          `json:"error,omitempty"`
	// Children are the runs it delegated to in turn.
	Children []Child `json:"children,omitempty"`
}

// RunReader reads runs and their messages: the store, for Children.
type RunReader interface {
	GetRun(ctx context.Context, id string) (store.Run, error)
	RunMessages(ctx context.Context, sessionID string, seq int64) ([]store.Message, error)
}

// Children returns the tree of runs the run runID delegated to, each with
// its cost (its tokens), in the order of the calls. The parent of a child
// run is stored in its state (RunState.Delegation); its id is derived
// from the parent's run and call.
func Children(ctx context.Context, s RunReader, runID string) ([]Child, error) {
	return children(ctx, s, runID, 0)
}

func children(ctx context.Context, s RunReader, runID string, depth int) ([]Child, error) {
	if depth > 8 {
		return nil, nil // deeper than any limit allows
	}
	run, err := s.GetRun(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("children of run %s: %w", runID, err)
	}
	msgs, err := s.RunMessages(ctx, run.SessionID, run.Seq)
	if err != nil {
		return nil, fmt.Errorf("children of run %s: %w", runID, err)
	}
	out := []Child{}
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if c.Name != DelegateToolName {
				continue
			}
			child, err := s.GetRun(ctx, childRunID(runID, c.ID))
			if errors.Is(err, store.ErrNotFound) {
				continue // refused: no child ran
			}
			if err != nil {
				return nil, fmt.Errorf("children of run %s: %w", runID, err)
			}
			st, err := DecodeState(child)
			if err != nil {
				return nil, err
			}
			kids, err := children(ctx, s, child.ID, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, Child{RunID: child.ID, SessionID: child.SessionID, Agent: st.Agent, CallID: c.ID, Status: child.Status,
				Usage: st.Usage, Error: st.Error, Children: kids})
		}
	}
	return out, nil
}
