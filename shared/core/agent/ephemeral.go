package agent

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// EphemeralPrefix starts the ids of ephemeral sessions: those of stateless
// requests, whose history is the client's and need not outlive the request.
const EphemeralPrefix = "e-"

// WithEphemeral returns a Store that keeps ephemeral sessions in mem and
// every other session in durable. Stateless requests then cost no durable
// writes; after a crash their client is gone, so nothing is lost.
func WithEphemeral(durable, mem Store) Store { return split{durable: durable, mem: mem} }

type split struct{ durable, mem Store }

func (s split) pick(sessionID string) Store {
	if strings.HasPrefix(sessionID, EphemeralPrefix) {
		return s.mem
	}
	return s.durable
}

func (s split) CreateSession(ctx context.Context, x store.Session) error {
	return s.pick(x.ID).CreateSession(ctx, x)
}
func (s split) GetSession(ctx context.Context, id string) (store.Session, error) {
	return s.pick(id).GetSession(ctx, id)
}
func (s split) DeleteSession(ctx context.Context, id string) error {
	return s.pick(id).DeleteSession(ctx, id)
}

// PIITokens and AddPII are the picked store's, when it is a
// store.PIIVault.
func (s split) PIITokens(ctx context.Context, id string) ([]store.PIIToken, error) {
	v, ok := s.pick(id).(store.PIIVault)
	if !ok {
		return nil, errNoVault
	}
	return v.PIITokens(ctx, id)
}
func (s split) AddPII(ctx context.Context, id string, values []store.PIIToken) ([]store.PIIToken, error) {
	v, ok := s.pick(id).(store.PIIVault)
	if !ok {
		return nil, errNoVault
	}
	return v.AddPII(ctx, id, values)
}

// errNoVault is the error of a store that keeps no personal data tokens.
var errNoVault = errors.New("the store keeps no personal data tokens")

func (s split) AppendMessage(ctx context.Context, m store.Message) (bool, error) {
	return s.pick(m.SessionID).AppendMessage(ctx, m)
}
func (s split) GetMessage(ctx context.Context, sessionID, key string) (store.Message, error) {
	return s.pick(sessionID).GetMessage(ctx, sessionID, key)
}
func (s split) Messages(ctx context.Context, sessionID string) ([]store.Message, error) {
	return s.pick(sessionID).Messages(ctx, sessionID)
}
func (s split) RunMessages(ctx context.Context, sessionID string, seq int64) ([]store.Message, error) {
	return s.pick(sessionID).RunMessages(ctx, sessionID, seq)
}
func (s split) DeleteMessages(ctx context.Context, sessionID string, keys []string) error {
	return s.pick(sessionID).DeleteMessages(ctx, sessionID, keys)
}
func (s split) EnqueueRun(ctx context.Context, n store.NewRun) (store.Run, bool, error) {
	return s.pick(n.Session.ID).EnqueueRun(ctx, n)
}
func (s split) GetRun(ctx context.Context, id string) (store.Run, error) {
	r, err := s.mem.GetRun(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return s.durable.GetRun(ctx, id)
	}
	return r, err
}
func (s split) CommitRun(ctx context.Context, c store.Commit) error {
	return s.pick(c.Run.SessionID).CommitRun(ctx, c)
}
func (s split) PendingCalls(ctx context.Context, runID string) ([]chat.ToolCall, error) {
	c, err := s.mem.PendingCalls(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return s.durable.PendingCalls(ctx, runID)
	}
	return c, err
}
func (s split) StartCall(ctx context.Context, runID, callID string) error {
	err := s.mem.StartCall(ctx, runID, callID)
	if errors.Is(err, store.ErrNotFound) {
		return s.durable.StartCall(ctx, runID, callID)
	}
	return err
}

// Jobs and DeleteJobs reach the durable store: ephemeral runs queue no
// jobs.
func (s split) Jobs(ctx context.Context, kind string, limit int) ([]store.Job, error) {
	return s.durable.Jobs(ctx, kind, limit)
}
func (s split) DeleteJobs(ctx context.Context, kind string, ids ...string) error {
	return s.durable.DeleteJobs(ctx, kind, ids...)
}
func (s split) NextRun(ctx context.Context, sessionID string) (store.Run, error) {
	return s.pick(sessionID).NextRun(ctx, sessionID)
}

// UnfinishedSessions lists durable sessions only: ephemeral ones do not
// survive a restart.
func (s split) UnfinishedSessions(ctx context.Context) ([]string, error) {
	return s.durable.UnfinishedSessions(ctx)
}

func (s split) AllowTool(ctx context.Context, sessionID, tool string) error {
	return s.pick(sessionID).AllowTool(ctx, sessionID, tool)
}
func (s split) CreateApproval(ctx context.Context, a store.Approval) error {
	return s.pick(a.SessionID).CreateApproval(ctx, a)
}
func (s split) GetApproval(ctx context.Context, id string) (store.Approval, error) {
	a, err := s.mem.GetApproval(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return s.durable.GetApproval(ctx, id)
	}
	return a, err
}
func (s split) PendingApproval(ctx context.Context, sessionID string) (store.Approval, error) {
	return s.pick(sessionID).PendingApproval(ctx, sessionID)
}
func (s split) ResolveApproval(ctx context.Context, id string, status store.ApprovalStatus, decision string, at time.Time) (store.Approval, error) {
	a, err := s.mem.ResolveApproval(ctx, id, status, decision, at)
	if errors.Is(err, store.ErrNotFound) {
		return s.durable.ResolveApproval(ctx, id, status, decision, at)
	}
	return a, err
}
func (s split) SetApprovalToken(ctx context.Context, id, token string) error {
	err := s.mem.SetApprovalToken(ctx, id, token)
	if errors.Is(err, store.ErrNotFound) {
		return s.durable.SetApprovalToken(ctx, id, token)
	}
	return err
}
