// Package store declares the records lambdaclaw persists and the port every
// storage adapter implements (sqlite locally, dynamo on AWS). Both adapters
// pass the one conformance suite in storetest.
//
// Every write that a retried agent step can repeat is idempotent: messages
// are put-if-absent by (session, key) and runs by id, so a step that crashed
// after writing and runs again finds its work done instead of doing it twice.
package store

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/chat"
)

// ErrNotFound is returned when a record does not exist.
var ErrNotFound = errors.New("not found")

// ErrExists is returned when creating a record whose id is taken.
var ErrExists = errors.New("already exists")

// ErrConflict is returned when a conditional update finds the record in
// another state, for example an approval that was already answered.
var ErrConflict = errors.New("conflict")

// Session is one conversation between a user and an agent: the lane that
// runs one run at a time, in order.
type Session struct {
	ID    string `json:"id"`
	Agent string `json:"agent"`
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
// makes the write idempotent: writing a key twice keeps the first.
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

// Run is the work for one inbound message. State is the agent loop's
// serialized RunState, opaque to the store.
type Run struct {
	ID        string `json:"id"`
	SessionID string `json:"session_id"`
	// Seq orders the runs of a session; the store assigns it on enqueue.
	Seq       int64     `json:"seq"`
	Status    RunStatus `json:"status"`
	State     []byte    `json:"state"`
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

// Approval is a run's request for a person to allow tool calls. A run
// parks while its approval is pending; the answer resumes it.
type Approval struct {
	ID        string `json:"id"`
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id"`
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
	RatePerMinute int        `json:"rate_per_minute"`
	CreatedAt     time.Time  `json:"created_at"`
	RevokedAt     *time.Time `json:"revoked_at,omitempty"`
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
	// DeleteSession removes the session with its history, runs and
	// approvals.
	DeleteSession(ctx context.Context, id string) error
	// AllowTool adds a tool to the session's allowlist; adding one twice
	// keeps one. It is ErrNotFound for an unknown session.
	AllowTool(ctx context.Context, sessionID, tool string) error
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
	// DeleteMessages removes the given keys; missing keys are ignored.
	DeleteMessages(ctx context.Context, sessionID string, keys []string) error
}

// Runs stores the run queue of each session.
type Runs interface {
	// EnqueueRun stores r as queued with the session's next Seq and returns
	// it. If a run with r.ID exists it returns that run and ErrExists.
	EnqueueRun(ctx context.Context, r Run) (Run, error)
	GetRun(ctx context.Context, id string) (Run, error)
	// UpdateRun saves r's Status and State.
	UpdateRun(ctx context.Context, r Run) error
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

// Store is everything an adapter provides.
type Store interface {
	Sessions
	History
	Runs
	Approvals
	Keys
	Close() error
}
