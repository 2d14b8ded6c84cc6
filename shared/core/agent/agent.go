// Package agent is the agent loop, built as explicit steps (DESIGN.md §4).
//
// A run is the work for one inbound message. Its RunState is small JSON that
// names the next step; history, tool results and drafts live in the store.
// Loop.Step runs the named step and sets the next one. Every step is
// idempotent given the store: messages are written under deterministic keys
// with put-if-absent, so a step retried after a crash finds its work done.
// The inline Driver loops over Step locally; on AWS, Step Functions drives the
// same Step from a Lambda task.
package agent

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/pii"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// The steps of a run.
const (
	StepBegin   = "begin"
	StepCompact = "compact"
	StepThink   = "think"
	StepApprove = "approve"
	// StepWait parks a run until its approval is answered; stepping it
	// again moves on only once the answer is in the store.
	StepWait   = "wait"
	StepAct    = "act"
	StepFinish = "finish"
	// StepDone marks a run with nothing left to do.
	StepDone = "done"
)

// Error codes a failed run reports; the HTTP API maps them to statuses.
const (
	CodeNoProvider = "provider_not_configured"
	CodeUpstream   = "upstream_error"
	CodeInternal   = "internal_error"
	// CodeApprovalExpired ends a run whose approval (or client tool
	// results) did not come before the driver's deadline.
	CodeApprovalExpired = "approval_expired"
	// CodeBudget ends a run that spent its token budget (Options).
	CodeBudget = "token_budget_exhausted"
	// CodeStorageFull refuses a message the store had no room for
	// (store.ErrStorageFull): no run started and nothing of it was kept.
	CodeStorageFull = "storage_full"
	// CodeCancelled ends a run its user stopped (Driver.Stop).
	CodeCancelled = "cancelled"
)

// StorageFullMessage tells a client why its message was refused with
// CodeStorageFull.
const StorageFullMessage = "the server's storage is full: the message was not saved and no run started; try again once disk space has been freed"

// RunState is the small, serializable state of one run. It never holds
// history or tool output: those live in the store.
type RunState struct {
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id"`
	Agent     string `json:"agent"`
	Seq       int64  `json:"seq"`
	// Owner is the principal the session belongs to (store.Session.Owner);
	// tools scope what they see to it.
	Owner     string        `json:"owner,omitempty"`
	Step      string        `json:"step"`
	Iteration int           `json:"iteration"`
	Autonomy  tool.Autonomy `json:"autonomy"`
	// Stream asks the think step to stream content deltas to the replier.
	Stream bool `json:"stream,omitempty"`
	// Interactive runs can ask a person to approve tool calls; others deny
	// the calls that need approval.
	Interactive bool `json:"interactive,omitempty"`
	// Approval is the id of the approval the run waits for.
	Approval string `json:"approval,omitempty"`
	// Compacted is set once the run compacted the history; ForceCompact
	// asks for compaction after the provider said the context overflowed.
	Compacted    bool `json:"compacted,omitempty"`
	ForceCompact bool `json:"force_compact,omitempty"`
	// Calls are the tool call ids the act step must answer.
	Calls []string `json:"calls,omitempty"`
	// ClientCalls are the ids of the current iteration's calls of the API
	// client's own tools (Options.Tools), which the client answers.
	ClientCalls []string `json:"client_calls,omitempty"`
	// ClearCalls says the run's pending calls were handed to the client
	// and are to be dropped by the next step that saves the run.
	ClearCalls bool `json:"clear_calls,omitempty"`
	// Options says the run was queued with Options (store.Run.Options);
	// Forced says its tool choice still forces the next model call.
	Options bool `json:"options,omitempty"`
	Forced  bool `json:"forced,omitempty"`
	// NoTools is set for the last think after the tool iteration limit.
	NoTools bool       `json:"no_tools,omitempty"`
	Usage   chat.Usage `json:"usage"`
	// Reported is the usage reported to the client before the run last
	// handed it calls of its tools; what the run reports since counts
	// only the usage after it.
	Reported chat.Usage `json:"reported,omitzero"`
	// FinishReason is why the last model reply ended: "stop", or "length"
	// when it was cut at a size limit.
	FinishReason string `json:"finish_reason,omitempty"`
	// Error and ErrorCode describe a failed run to the user.
	Error     string `json:"error,omitempty"`
	ErrorCode string `json:"error_code,omitempty"`
	// Silent marks a run that ended without telling anyone (Abandon):
	// Retell tells it nothing either.
	Silent bool  `json:"silent,omitempty"`
	Reply  Reply `json:"reply"`
	// Delegation places a child run in its tree (delegate.go); nil for a
	// run nobody delegated.
	Delegation *Delegation `json:"delegation,omitempty"`
	StartedAt  time.Time   `json:"started_at"`
	// Key holds the budget and denied tools of the API key the run was
	// made with, if it has any.
	Key *KeyRules `json:"key,omitempty"`
}

// Reply says where a run's answer goes.
type Reply struct {
	Channel string `json:"channel"`
	To      string `json:"to,omitempty"`
}

// Failed reports whether the run ended in an error.
func (s RunState) Failed() bool { return s.ErrorCode != "" }

// Parked reports whether the run waits for a person's answer or for its
// client's tool results.
func (s RunState) Parked() bool { return s.Step == StepWait }

// Agent is what the loop needs to know about one agent.
type Agent struct {
	Name     string
	Provider llm.Provider
	// Model overrides the provider's model when set.
	Model             string
	Tools             *tool.Registry
	MaxToolIterations int
	// LiveTools, when set, replaces Tools with a set that follows tools
	// appearing and going while the process runs (those of MCP servers):
	// every step resolves it afresh (Agent.Registry).
	LiveTools tool.Live
	// Workspace is the agent's workspace, nil when it has none.
	Workspace  filestore.FS
	Compaction Compaction
	// ReplaceSystem makes an API client's system messages replace the
	// agent's system prompt; by default they follow it.
	ReplaceSystem bool
	// PII, when set, keeps the personal data it finds from the model:
	// tokens in its place (pii.go).
	PII *pii.Scanner
	// Budget limits the tokens the agent's model calls spend (Loop.Budgets).
	Budget Budget
	// Guardrails are checked before every call of the agent's tools.
	Guardrails *Guardrails
}

// Registry returns the agent's tools as they are now: LiveTools' current
// set when there is one, else Tools.
func (a *Agent) Registry() *tool.Registry {
	if a.LiveTools != nil {
		return a.LiveTools.Current()
	}
	return a.Tools
}

// Compaction says when and how far the loop compacts a session's history
// (seed 001 "Context Compaction").
type Compaction struct {
	// Threshold is the history length above which a run compacts first;
	// zero turns threshold compaction off.
	Threshold int
	// Target is how many recent messages are kept verbatim.
	Target int
	// Flush runs a hidden turn that lets the model save memories before
	// older messages are summarized.
	Flush bool
}

// Agents finds agents by name.
type Agents interface {
	Agent(name string) (*Agent, bool)
}

// Prompter builds the system messages that open every model request.
type Prompter interface {
	// SystemPrompt returns them for agent a. A stateless request (an API
	// call that holds its own history) is no conversation with a person:
	// its prompt leaves out the first-run ritual.
	SystemPrompt(ctx context.Context, a *Agent, stateless bool) ([]chat.Message, error)
}

// stalePrompter is a Prompter that reuses what it built: the loop tells it
// when an agent's tools ran, as they may have changed the files the
// prompt is built from.
type stalePrompter interface {
	Stale(a *Agent)
}

// promptStale tells the Prompter that a's tools ran.
func (l *Loop) promptStale(a *Agent) {
	if p, ok := l.Prompter.(stalePrompter); ok {
		p.Stale(a)
	}
}

// deltaFlusher is a Replier that holds streamed text back (BatchDeltas):
// think tells it when the model's reply has ended.
type deltaFlusher interface {
	FlushDeltas(r RunState)
}

// Result is the outcome of a run, as told to the replier.
type Result struct {
	Content string
	// ToolCalls are calls of the client's own tools, which the client is
	// to run and answer (FinishReason "tool_calls"), with their arguments
	// as the model sent them.
	ToolCalls []chat.ToolCall
	// Usage counts the tokens since the client was last told.
	Usage chat.Usage
	// FinishReason is "length" when the answer was cut at a size limit,
	// "tool_calls" when it hands the client calls, "stop" otherwise.
	FinishReason string
	Error        string
	ErrorCode    string
}

// Replier receives what a run tells its reply channel: streamed content,
// approval requests and the result. Calls must not block for long.
type Replier interface {
	Delta(r RunState, text string)
	Approval(r RunState, a store.Approval)
	Finish(r RunState, res Result)
}

// Outboxer is a Replier whose channel delivers from the store (a Telegram
// chat's outbox). The commit that finishes a run holds the messages
// Outbox returns (store.Commit.Outbox), so the reply is kept exactly when
// the run is saved done: a crash after the commit loses nothing, and a
// refused commit keeps nothing. Once that commit succeeded the loop
// tells Committed instead of Finish: the messages are in the store, to
// be sent. An approval's prompt is kept the same way by the commit that
// parks the run (ApprovalOutbox), and Approval is told after it: the
// prompt is in the store.
type Outboxer interface {
	Replier
	Outbox(r RunState, res Result) []store.OutboxMessage
	Committed(r RunState, res Result)
	ApprovalOutbox(r RunState, a store.Approval) []store.OutboxMessage
}

// Store is the part of the store the loop uses.
type Store interface {
	store.Sessions
	store.History
	store.Runs
	store.Approvals
	store.Jobs
}

// Emitter receives observability events.
type Emitter interface {
	Emit(ev obs.Event)
}

// Loop runs the steps of runs.
type Loop struct {
	Store    Store
	Agents   Agents
	Prompter Prompter
	Replier  Replier
	Events   Emitter
	// Recorder, when set, is told of each successful run of a durable
	// session after its answer is sent (past conversations become
	// memories). Its failures are logged and never fail the run.
	Recorder Recorder
	// Media, when set, keeps the bytes of messages' parts beside their
	// session (media.go): history holds references, read back for the
	// model, and a reset deletes them with the session.
	Media Media
	Log   *slog.Logger
	// ToolTimeout bounds one tool call whose tool's policy sets no
	// timeout; zero means 60 s.
	ToolTimeout time.Duration
	// MaxStep, when positive, is the longest a step may take: what the
	// driver can give one (on AWS, a Lambda invocation). Model calls are
	// cut at it; a tool whose calls may take longer fails CheckFits.
	// Bound tells how long each step may take.
	MaxStep time.Duration
	// Limits bound model replies and tool calls; zero fields take the
	// defaults.
	Limits Limits
	// Lanes is the driver child runs of delegations go through
	// (delegate.go); without it nothing is delegated.
	Lanes Lanes
	// Delegation bounds delegations; zero fields take the defaults.
	Delegation DelegationLimits
	// Now returns the time; nil means time.Now.
	Now func() time.Time
	// Budgets, when set, hold model calls to agents' and keys' token
	// budgets.
	Budgets *Budgets
}

func (l *Loop) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// Step runs the step st names and returns the state with the next step
// set, saved in the store together with what the step wrote, in one
// transaction. An error means the step could not complete (for example the
// store was unreachable) and may be retried with the same st.
func (l *Loop) Step(ctx context.Context, st RunState) (RunState, error) {
	if st.Delegation != nil && st.Step != StepDone && st.Step != StepFinish {
		// A child run is held to its delegation's time limit.
		if l.pastDeadline(st) {
			st = l.timedOut(st)
		} else {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, st.Delegation.Deadline.Sub(l.now()))
			defer cancel()
		}
	}
	var c store.Commit
	var next RunState
	var t *told
	var err error
	switch st.Step {
	case StepBegin:
		// begin writes nothing and goes straight on to think: the run's
		// saved state stays "begin" until think commits, and a begin
		// repeated after a crash costs nothing.
		next, err = l.think(ctx, l.begin(st), &c, &t)
	case StepCompact:
		next, err = l.compact(ctx, st)
	case StepThink:
		next, err = l.think(ctx, st, &c, &t)
	case StepApprove:
		next, err = l.approve(ctx, st, &c, &t)
	case StepWait:
		// wait writes nothing either: it only reads the approval's answer,
		// which a repeated wait reads again.
		return l.wait(ctx, st)
	case StepAct:
		next, err = l.act(ctx, st, &c)
	case StepFinish:
		next, err = l.finish(ctx, st, &c, &t)
	case StepDone:
		return st, nil
	default:
		return st, fmt.Errorf("run %s: unknown step %q", st.RunID, st.Step)
	}
	if errors.Is(err, errFinished) {
		// A think retried after the commit that finished the run, whose
		// success this process may not have seen (a reply lost, a crash):
		// the turn is counted as the commit's retry would count it.
		l.turnComplete(next)
		return next, nil
	}
	if err == nil {
		next, err = l.commitStep(ctx, st, next, c, t)
	}
	if errors.Is(err, store.ErrRunFinished) {
		// The run ended meanwhile (a user stopped it): the step's writes
		// were refused, and nothing of it is told.
		return l.ended(ctx, st)
	}
	if err != nil {
		return st, err
	}
	return next, nil
}

// commitStep commits the step that took st to next with its writes c,
// then tells t, if any, and emits turn_complete once the commit that
// finishes the run succeeded, so a step retried after a failed commit
// counts its turn once. A failed commit tells nothing: the driver runs
// the step again.
func (l *Loop) commitStep(ctx context.Context, st, next RunState, c store.Commit, t *told) (RunState, error) {
	if err := l.commit(ctx, next, c); err != nil {
		return st, err
	}
	l.tell(t)
	if next.Step == StepDone {
		l.returned(ctx, next)
		l.turnComplete(next)
	}
	return next, nil
}

// Limits bound what a run keeps of model replies and tool calls.
type Limits struct {
	// MaxReplyBytes caps the content of one model reply; a longer one is
	// cut and its finish reason is "length". Zero means 1 MiB.
	MaxReplyBytes int
	// MaxToolArgsBytes caps the arguments of one tool call; a larger call
	// does not run and the model is told why. Zero means 1 MiB.
	MaxToolArgsBytes int
	// MaxToolResultBytes caps one tool result kept in history. Zero means
	// 100 KiB.
	MaxToolResultBytes int
}

func (l Limits) reply() int      { return cmp.Or(l.MaxReplyBytes, 1<<20) }
func (l Limits) toolArgs() int   { return cmp.Or(l.MaxToolArgsBytes, 1<<20) }
func (l Limits) toolResult() int { return cmp.Or(l.MaxToolResultBytes, 100<<10) }

// Input is a new message for an agent.
type Input struct {
	// RunID is optional; it is generated when empty. Repeating an id
	// enqueues nothing new.
	RunID     string
	SessionID string
	Agent     string
	// Owner is the principal the session belongs to; enqueuing into a
	// session of another owner fails with store.ErrForbidden.
	Owner string
	// Ephemeral creates a session of its own, named after the run, that is
	// deleted when the run ends (SessionID is ignored).
	Ephemeral bool
	// Messages are written to history before the run starts: the new user
	// message, or a whole stateless conversation.
	Messages []chat.Message
	Autonomy tool.Autonomy
	Stream   bool
	// Interactive says a person reads the reply channel and can answer
	// approval prompts.
	Interactive bool
	Reply       Reply
	// Channel names the channel a new session is started on, as the web
	// console shows it (store.Session.Channel); Reply.Channel when empty.
	Channel string
	// Options are what an API client asks of the run beyond its input.
	Options Options
	// Key is the budget and denied tools of the API key the message came
	// with (RulesOf).
	Key *KeyRules
	// Delegation, when set, makes the run a child of another's delegate
	// call (delegate.go).
	Delegation *Delegation
	// Approval, when set, is the id of the approval the message answers
	// (a channel's button): Deliver refuses it with ErrStaleApproval,
	// changing nothing, unless that approval is the one the session
	// waits for.
	Approval string
}

// ErrUnknownAgent is returned for an agent that does not exist.
var ErrUnknownAgent = errors.New("unknown agent")

// Enqueue creates the session if needed, queues a run for in and writes its
// input to history. The run waits in the session's lane until a driver
// steps it.
func (l *Loop) Enqueue(ctx context.Context, in Input) (RunState, error) {
	a, ok := l.Agents.Agent(in.Agent)
	if !ok {
		return RunState{}, fmt.Errorf("%w %q", ErrUnknownAgent, in.Agent)
	}
	if len(in.Messages) == 0 {
		return RunState{}, errors.New("enqueue: no input messages")
	}
	options, err := in.Options.encode(a)
	if err != nil {
		return RunState{}, err
	}
	if err := checkParts(a, in.Messages); err != nil {
		return RunState{}, err
	}
	if in.RunID == "" {
		in.RunID = NewID()
	}
	if in.Ephemeral {
		in.SessionID = EphemeralPrefix + in.RunID
	} else if in.Messages, err = l.keepParts(ctx, in.Owner, in.SessionID, in.Messages); err != nil {
		return RunState{}, fmt.Errorf("enqueue: %w", err)
	}
	now := l.now().UTC()
	created := false
	if a.PII != nil {
		// History keeps tokens of the personal data (pii.go).
		if created, err = l.prepareTokens(ctx, a, in, now); err != nil {
			return RunState{}, fmt.Errorf("enqueue: %w", err)
		}
		in.Messages = l.hideMessages(ctx, a, in.SessionID, in.Messages)
	}
	st := RunState{
		RunID: in.RunID, SessionID: in.SessionID, Agent: in.Agent, Owner: in.Owner, Step: StepBegin,
		Autonomy: in.Autonomy, Stream: in.Stream, Interactive: in.Interactive && !in.Ephemeral,
		Reply: in.Reply, StartedAt: now, Key: in.Key,
		Options: options != nil, Forced: forcing(in.Options.Params.ToolChoice), Delegation: in.Delegation,
	}
	state, err := json.Marshal(st)
	if err != nil {
		return RunState{}, fmt.Errorf("enqueue: %w", err)
	}
	run, made, err := l.Store.EnqueueRun(ctx, store.NewRun{
		Session: store.Session{ID: in.SessionID, Agent: in.Agent, Owner: in.Owner, Channel: cmp.Or(in.Channel, in.Reply.Channel),
			Ephemeral: in.Ephemeral, CreatedAt: now, UpdatedAt: now},
		Run:   store.Run{ID: in.RunID, State: state, Options: options, CreatedAt: now},
		Input: in.Messages,
	})
	if errors.Is(err, store.ErrExists) {
		return DecodeState(run)
	}
	if err != nil {
		return RunState{}, fmt.Errorf("enqueue: %w", err)
	}
	if created || made {
		l.emit(obs.Event{Type: obs.SessionStart, SessionID: in.SessionID, Attrs: []slog.Attr{slog.String("agent", in.Agent)}})
	}
	// The seq is known only now; DecodeState restores it from the run.
	st.Seq = run.Seq
	return st, nil
}

// ErrBusy is returned when a session cannot be reset while it has work.
var ErrBusy = errors.New("the conversation is busy: wait for the current reply or answer the pending approval first")

// Reset starts a session afresh: its history is deleted. A session with a
// queued, running or parked run is not reset (ErrBusy). A run that is not
// parked may be about to end (a client may have seen its answer streamed
// before the step that ends it committed): Reset waits a moment for it,
// so that such a client can reset at once.
func (l *Loop) Reset(ctx context.Context, sessionID string) error {
	wait := time.Millisecond
	for {
		run, err := l.Store.NextRun(ctx, sessionID)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return fmt.Errorf("reset: %w", err)
		}
		if st, err := DecodeState(run); err != nil || st.Parked() || wait > time.Second {
			return ErrBusy
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("reset: %w", ctx.Err())
		case <-t.C:
		}
		wait *= 2
	}
	if err := l.Store.DeleteSession(ctx, sessionID); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	if l.Media != nil {
		if err := l.Media.DeleteSession(ctx, sessionID); err != nil && l.Log != nil {
			l.Log.Warn("reset: the session's files were not deleted", "session_id", sessionID, "error", scrub.Scrub(err.Error()))
		}
	}
	l.emit(obs.Event{Type: obs.SessionEnd, SessionID: sessionID, Attrs: []slog.Attr{slog.String("reason", "reset")}})
	return nil
}

type leaseKey struct{}

// WithLease returns ctx carrying lease, the version of the lease its
// caller holds on the run it steps (sfn.Inline): every step Step commits
// with ctx is then fenced by it (store.Commit.Lease), and fails with
// store.ErrLeaseLost, writing nothing, once another holder took the run
// over.
func WithLease(ctx context.Context, lease int64) context.Context {
	return context.WithValue(ctx, leaseKey{}, lease)
}

// commit saves st in its run, with the status it implies, together with
// the step's writes in c, so the store always tells where every run is;
// fenced by the lease of ctx (WithLease), if any.
func (l *Loop) commit(ctx context.Context, st RunState, c store.Commit) error {
	state, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("save run %s: %w", st.RunID, err)
	}
	c.Lease, _ = ctx.Value(leaseKey{}).(int64)
	c.Run = store.Run{ID: st.RunID, SessionID: st.SessionID, Seq: st.Seq, State: state, Status: store.RunRunning}
	switch {
	case st.Step != StepDone:
	case st.Failed():
		c.Run.Status = store.RunFailed
	default:
		c.Run.Status = store.RunDone
	}
	err = l.Store.CommitRun(ctx, c)
	if st.Step == StepDone && errors.Is(err, store.ErrNotFound) {
		return nil // an ephemeral session was deleted with its run
	}
	if err != nil {
		return fmt.Errorf("save run %s: %w", st.RunID, err)
	}
	return nil
}

// MarkFailed records a run whose state cannot be read as failed, so that
// its session's lane moves on.
func (l *Loop) MarkFailed(ctx context.Context, r store.Run) error {
	r.Status = store.RunFailed
	return l.Store.CommitRun(ctx, store.Commit{Run: r, ClearCalls: true})
}

// DecodeState reads the RunState saved in a run.
func DecodeState(r store.Run) (RunState, error) {
	var st RunState
	if err := json.Unmarshal(r.State, &st); err != nil {
		return RunState{}, fmt.Errorf("run %s: decode state: %w", r.ID, err)
	}
	st.Seq = r.Seq
	return st, nil
}

// SessionID derives the session of a user with an agent (seed 004): the
// same user and agent always meet in the same session.
func SessionID(agent, userID string) string {
	sum := sha256.Sum256([]byte(agent + "\x00" + userID))
	return "s-" + hex.EncodeToString(sum[:16])
}

// NewID returns a random 128-bit hex id.
func NewID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // never fails on supported platforms
	}
	return hex.EncodeToString(b[:])
}

func (l *Loop) emit(ev obs.Event) {
	if l.Events != nil {
		l.Events.Emit(ev)
	}
}

// Message keys order a session's history: by run seq (store.RunPrefix),
// then inputs (store.InputKey), then each iteration's assistant message
// followed by its tool results.
func assistantKey(seq int64, it int) string {
	return fmt.Sprintf("%sb%03d.a", store.RunPrefix(seq), it)
}
func toolKey(seq int64, it, j int) string {
	return fmt.Sprintf("%sb%03d.t%03d", store.RunPrefix(seq), it, j)
}

// Registry is a fixed set of agents by name.
type Registry map[string]*Agent

// Agent implements Agents.
func (r Registry) Agent(name string) (*Agent, bool) {
	a, ok := r[name]
	return a, ok
}

// Names returns the agent names, sorted.
func (r Registry) Names() []string {
	names := make([]string, 0, len(r))
	for n := range r {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
