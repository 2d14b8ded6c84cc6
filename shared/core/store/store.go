// Package store declares the records lambdaclaw persists and the ports every
// storage adapter implements (sqlite locally, dynamo on AWS): Store, and
// Channel for a messaging channel's state (channel.go). Both adapters
// pass the conformance suites in storetest. A port lives here, never in
// the package that uses it, so that adapters import no channel.
//
// Every write that a retried agent step can repeat is idempotent: messages
// are put-if-absent by (session, key) and runs by id, so a step that crashed
// after writing and runs again finds its work done instead of doing it twice.
package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
)

// ErrNotFound is returned when a record does not exist.
var ErrNotFound = errors.New("not found")

// ErrExists is returned when creating a record whose id is taken.
var ErrExists = errors.New("already exists")

// ErrConflict is returned when a conditional update finds the record in
// another state, for example an approval that was already answered.
var ErrConflict = errors.New("conflict")

// ErrForbidden is returned when a principal acts on a record that belongs
// to another owner, for example a run enqueued into another owner's
// session.
var ErrForbidden = errors.New("belongs to another owner")

// ErrStorageFull is returned when a write fails for want of room: the disk
// is full, or the database has reached its size limit. The write that
// failed changed nothing.
var ErrStorageFull = errors.New("storage is full")

// ErrTooLarge is wrapped by the error for a record larger than the store
// can keep (on DynamoDB, a 400 KB item: a message with large media). The
// write changed nothing.
var ErrTooLarge = errors.New("record too large for the store")

// ErrLeaseLost is returned when a commit carries a lease (Commit.Lease)
// that no longer holds the run: another invocation took the run over, and
// the commit changed nothing. It is final, never worth a retry.
var ErrLeaseLost = errors.New("the run's lease was lost")

// ErrRunFinished is returned when a commit (or a call's start) is for a
// run already done or failed: it ended meanwhile (a user stopped it,
// say), and the write changed nothing. It is final, never worth a retry.
var ErrRunFinished = errors.New("the run is finished")

// Session is one conversation between a user and an agent: the lane that
// runs one run at a time, in order.
type Session struct {
	ID    string `json:"id"`
	Agent string `json:"agent"`
	// Owner is the principal the session belongs to: "key:<api key id>",
	// "tg:<chat id>" or "user:<name>" for a person linked across
	// channels. Only its owner reaches the session, its history and its
	// approvals.
	Owner string `json:"owner,omitempty"`
	// Channel is the channel the session was started on ("http", "ws",
	// "mcp", "tg", "cron", "checkin"), for the web console to show; empty
	// for sessions stored before it was kept.
	Channel string `json:"channel,omitempty"`
	// Ephemeral sessions hold a stateless request and are deleted when
	// their run ends.
	Ephemeral bool `json:"ephemeral,omitempty"`
	// Allowlist names the tools the user approved for the whole session
	// with /always.
	Allowlist []string  `json:"allowlist,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Message is one history entry. Key orders the history of a session and
// makes the write idempotent: writing a key twice keeps the first. The
// keys of a run's messages start with RunPrefix(seq), so a session's
// history is ordered by run.
type Message struct {
	SessionID string `json:"session_id"`
	Key       string `json:"key"`
	RunID     string `json:"run_id"`
	chat.Message
	CreatedAt time.Time `json:"created_at"`
}

// RunStatus is where a run is in its life.
type RunStatus string

// Run statuses. Queued and Running runs are unfinished and are resumed
// after a restart.
const (
	RunQueued  RunStatus = "queued"
	RunRunning RunStatus = "running"
	RunDone    RunStatus = "done"
	RunFailed  RunStatus = "failed"
)

// Finished reports whether the run will not be stepped again.
func (s RunStatus) Finished() bool { return s == RunDone || s == RunFailed }

// RunPrefix starts the history keys of the run with sequence number seq.
func RunPrefix(seq int64) string { return fmt.Sprintf("r%012d#", seq) }

// InputKey is the history key of the i-th input message of the run with
// sequence number seq.
func InputKey(seq int64, i int) string { return fmt.Sprintf("r%012d#a%05d", seq, i) }

// NewRun is a run to queue: the run, the session it joins (created when
// it does not exist yet) and its input messages.
type NewRun struct {
	Session Session
	Run     Run
	// Input is written to the session's history under InputKey(seq, i),
	// atomically with the run, so that no driver ever sees a run without
	// its input.
	Input []chat.Message
}

// Commit is what one step of a run writes, applied atomically: the run's
// new Status and State (Run's ID, SessionID and Seq say which run), the
// history messages the step produced, and the run's pending tool calls.
type Commit struct {
	Run Run
	// Messages are appended to the run's session put-if-absent: a key that
	// exists keeps its first message and the rest of the commit applies.
	Messages []Message
	// Calls, when not nil, replace the run's pending tool calls: the calls
	// it is about to execute with their arguments exactly as the model
	// sent them. History keeps only their scrubbed form, so the tool
	// receives what the model asked for while nothing secret is recorded.
	Calls []chat.ToolCall
	// ClearCalls drops the pending calls, once they have run.
	ClearCalls bool
	// Lease, when not zero, fences the commit: it applies only while the
	// run's lease version is still Lease (the version the committing
	// invocation's claim took; every claim of the run increments it), and
	// is ErrLeaseLost otherwise. A run never claimed has version zero, so
	// on a store without leases any non-zero Lease is ErrLeaseLost. Zero
	// commits unconditionally.
	Lease int64
	// Jobs are queued for work off the request path (see Jobs); a job
	// whose kind and id are queued already is replaced.
	Jobs []Job
	// Outbox are channels' messages to send, each stored pending in its
	// Channel's outbox as Channel.AddOutbox stores them (an id that
	// exists keeps its message): the transactional outbox of a run's
	// reply, kept exactly when the run's state is. A store without
	// channels' outboxes refuses a commit that has any, and a message
	// without a Channel is refused.
	Outbox []OutboxMessage
}

// Job is durable work queued by a commit and done later by a worker, such
// as remembering a finished exchange. A kill -9 loses no job: it is in the
// store from the commit that queued it until DeleteJobs.
type Job struct {
	Kind      string    `json:"kind"`
	ID        string    `json:"id"`
	Payload   []byte    `json:"payload"`
	CreatedAt time.Time `json:"created_at"`
}

// Run is the work for one inbound message. State is the agent loop's
// serialized RunState, opaque to the store.
type Run struct {
	ID        string `json:"id"`
	SessionID string `json:"session_id"`
	// Seq orders the runs of a session; the store assigns it on enqueue.
	Seq    int64     `json:"seq"`
	Status RunStatus `json:"status"`
	State  []byte    `json:"state"`
	// Options are what an API client asked of the run beyond its input
	// (agent.Options, JSON), written when the run is queued; nil for none.
	// Committing a step leaves them as they are.
	Options   []byte    `json:"options,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ApprovalStatus is where an approval request is.
type ApprovalStatus string

// Approval statuses.
const (
	ApprovalPending  ApprovalStatus = "pending"
	ApprovalApproved ApprovalStatus = "approved"
	ApprovalDenied   ApprovalStatus = "denied"
)

// ApprovalClientTools is the Kind of an approval that waits for an API
// client to run its own tools and send their results.
const ApprovalClientTools = "client_tools"

// ApprovalDelegation is the Kind of an approval that waits for the runs
// of other agents a run delegated to (child runs, agent.DelegateTool):
// it is resolved when they have all ended, never by a person.
const ApprovalDelegation = "delegation"

// Approval is what a parked run waits for: a person's answer allowing tool
// calls (Kind ""), or the results of the calls of an API client's own
// tools (Kind ApprovalClientTools). The answer resumes the run.
type Approval struct {
	ID        string `json:"id"`
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id"`
	Kind      string `json:"kind,omitempty"`
	// Calls are the ids of the tool calls awaiting the answer, and Tools
	// their tool names.
	Calls  []string       `json:"calls"`
	Tools  []string       `json:"tools"`
	Prompt string         `json:"prompt"`
	Status ApprovalStatus `json:"status"`
	// Decision is the answer: "yes", "no" or "always".
	Decision string `json:"decision,omitempty"`
	// Token is the Step Functions task token that resumes the run on AWS.
	Token      string     `json:"token,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
}

// APIKey is an operator credential for the HTTP API. Only the SHA-256 hash
// of the secret is stored.
type APIKey struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Hash is the hex SHA-256 of the whole key.
	Hash string `json:"hash"`
	// Prefix is the first characters of the key, shown to tell keys apart.
	Prefix string `json:"prefix"`
	// Agents lists the agents the key may use; empty means all.
	Agents []string `json:"agents,omitempty"`
	// Autonomy is the key's autonomy level name (read_only, supervised, full).
	Autonomy string `json:"autonomy"`
	// RatePerMinute limits requests in any sliding minute; 0 means no limit.
	RatePerMinute int `json:"rate_per_minute"`
	// Admin keys may also list, create and revoke keys through the API
	// (the web console); every other right is the same as any key's.
	Admin     bool       `json:"admin,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// Allows reports whether the key may use the named agent.
func (k APIKey) Allows(agent string) bool {
	return len(k.Agents) == 0 || slices.Contains(k.Agents, agent)
}

// Sessions stores sessions.
type Sessions interface {
	// CreateSession stores s unless its id exists; it returns ErrExists then.
	CreateSession(ctx context.Context, s Session) error
	GetSession(ctx context.Context, id string) (Session, error)
	// DeleteSession removes the session with its history, runs,
	// approvals and responses.
	DeleteSession(ctx context.Context, id string) error
	// AllowTool adds a tool to the session's allowlist; adding one twice
	// keeps one. It is ErrNotFound for an unknown session.
	AllowTool(ctx context.Context, sessionID, tool string) error
}

// OwnerSessions lists the sessions of an owner, for the web console. It
// is not part of Store: stateless requests' stores have no use for it.
type OwnerSessions interface {
	// SessionsOf returns up to limit sessions of owner, ephemeral ones
	// excluded, most recently created first (ties by id). An index may
	// be eventually consistent: a session created a moment ago may be
	// missing.
	SessionsOf(ctx context.Context, owner string, limit int) ([]Session, error)
}

// History stores the messages of sessions.
type History interface {
	// AppendMessage stores m unless its (session, key) exists, and reports
	// whether it wrote.
	AppendMessage(ctx context.Context, m Message) (bool, error)
	// GetMessage returns one message by key.
	GetMessage(ctx context.Context, sessionID, key string) (Message, error)
	// Messages returns the history of a session ordered by key.
	Messages(ctx context.Context, sessionID string) ([]Message, error)
	// RunMessages returns the messages of the session's run with sequence
	// number seq (keys starting with RunPrefix(seq)), ordered by key.
	RunMessages(ctx context.Context, sessionID string, seq int64) ([]Message, error)
	// DeleteMessages removes the given keys; missing keys are ignored.
	DeleteMessages(ctx context.Context, sessionID string, keys []string) error
}

// Runs stores the run queue of each session.
type Runs interface {
	// EnqueueRun creates n.Session unless it exists, stores n.Run as
	// queued with the session's next Seq, and writes n.Input, all in one
	// transaction; it returns the run and whether the session was created.
	// If a run with the id exists it returns that run and ErrExists; if
	// the session exists with another Owner it returns ErrForbidden. Either
	// way nothing is written.
	EnqueueRun(ctx context.Context, n NewRun) (Run, bool, error)
	GetRun(ctx context.Context, id string) (Run, error)
	// CommitRun applies a step's writes atomically. It is ErrNotFound for
	// an unknown run, ErrLeaseLost for a lease that no longer holds the
	// run (Commit.Lease) and ErrRunFinished for a run already done or
	// failed (a finished run is never written again), and then writes
	// nothing.
	CommitRun(ctx context.Context, c Commit) error
	// PendingCalls returns the run's pending tool calls, none when there
	// are none.
	PendingCalls(ctx context.Context, runID string) ([]chat.ToolCall, error)
	// StartCall records, durably, that the run's pending call callID is
	// about to run, and returns ErrExists if that was recorded before:
	// the call started and may have partly run (a crash, a retried or
	// duplicated step), so it must not run again unless it may be
	// retried. It is ErrNotFound for an unknown run.
	//
	// The marker is a field of the run's pending calls rather than a
	// record of its own: a commit that replaces the pending calls (the
	// next model message) or clears them drops it with them, so it
	// needs no cleaning up, and the one conditional write that sets it
	// also tells whether it was set. The loop calls it only for calls that
	// may not be retried (reads cost nothing), and for a compaction's
	// memory flush. It is ErrRunFinished for a run that finished with its
	// pending calls cleared (Commit.ClearCalls), as a stopped run does:
	// no call of it starts after its end.
	StartCall(ctx context.Context, runID, callID string) error
	// NextRun returns the unfinished run with the lowest Seq in a session,
	// or ErrNotFound when there is none.
	NextRun(ctx context.Context, sessionID string) (Run, error)
	// UnfinishedSessions lists the sessions that have unfinished runs.
	UnfinishedSessions(ctx context.Context) ([]string, error)
}

// Approvals stores approval requests.
type Approvals interface {
	// CreateApproval stores a pending approval unless its id exists; it
	// returns ErrExists then.
	CreateApproval(ctx context.Context, a Approval) error
	GetApproval(ctx context.Context, id string) (Approval, error)
	// PendingApproval returns the session's pending approval, or
	// ErrNotFound when there is none.
	PendingApproval(ctx context.Context, sessionID string) (Approval, error)
	// ResolveApproval records the answer to a pending approval and returns
	// the approval as resolved. If it is no longer pending it changes
	// nothing and returns the approval as it is with ErrConflict.
	ResolveApproval(ctx context.Context, id string, status ApprovalStatus, decision string, at time.Time) (Approval, error)
	// SetApprovalToken saves the task token that resumes the run.
	SetApprovalToken(ctx context.Context, id, token string) error
}

// Keys stores API keys.
type Keys interface {
	CreateKey(ctx context.Context, k APIKey) error
	// KeyByHash finds a key by the hash of its secret, revoked or not.
	KeyByHash(ctx context.Context, hash string) (APIKey, error)
	ListKeys(ctx context.Context) ([]APIKey, error)
	// RevokeKey marks a key revoked; it is ErrNotFound for an unknown id.
	RevokeKey(ctx context.Context, id string, at time.Time) error
}

// Jobs is the durable queue of work that commits leave for a worker.
type Jobs interface {
	// Jobs returns up to limit queued jobs of kind, oldest first.
	Jobs(ctx context.Context, kind string, limit int) ([]Job, error)
	// DeleteJobs removes done jobs; missing ones are not an error.
	DeleteJobs(ctx context.Context, kind string, ids ...string) error
}

// Response is a stored response of the Responses API: a pointer to the
// run that answered it, for its owner. Its output is read from the run
// (its state and its messages), so the record stays small.
type Response struct {
	ID string `json:"id"`
	// Owner is the principal that created it; nobody else reads it.
	Owner     string `json:"owner"`
	Agent     string `json:"agent"`
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id"`
	// Seq is the run's seq in its session.
	Seq int64 `json:"seq"`
	// PreviousID is the response it continues, if any.
	PreviousID string `json:"previous_id,omitempty"`
	// Request holds what the response echoes of its request (model,
	// instructions, tools, parameters, metadata), JSON.
	Request   []byte    `json:"request,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// Responses stores the responses of the Responses API.
type Responses interface {
	// CreateResponse stores r; ErrExists if its id is taken, in any
	// session, and ErrNotFound if its session does not exist.
	CreateResponse(ctx context.Context, r Response) error
	// GetResponse returns the response of that id, or ErrNotFound.
	GetResponse(ctx context.Context, id string) (Response, error)
	// DeleteResponse deletes it; ErrNotFound if there is none.
	DeleteResponse(ctx context.Context, id string) error
}

// Drafts hold the text a run streams, in numbered pieces, where another
// process than the one running it can follow it: on AWS the api function
// streams to its client what the step function's model call writes.
// Pieces expire within a day.
type Drafts interface {
	// AppendDraft stores piece n (from 0) of the run's streamed text; a
	// piece stored already keeps its first text.
	AppendDraft(ctx context.Context, runID string, n int, text string) error
	// Drafts returns the run's pieces from n on, in order, up to the
	// first missing one; none when there are none.
	Drafts(ctx context.Context, runID string, from int) ([]string, error)
}

// Store is everything an adapter provides.
type Store interface {
	Sessions
	History
	Runs
	Approvals
	Keys
	Jobs
	Responses
	Close() error
}
