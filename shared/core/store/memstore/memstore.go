// Package memstore is a store.Store kept in process memory. It holds what
// need not outlive the process: the ephemeral sessions of stateless
// requests, whose history belongs to the client that sent it. It passes the
// same conformance suite as the durable adapters.
package memstore

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// Store is an in-memory store.Store, safe for concurrent use.
type Store struct {
	mu        sync.Mutex
	sessions  map[string]*session
	runs      map[string]store.Run
	approvals map[string]store.Approval
	keys      map[string]store.APIKey
	// calls are the pending tool calls by run id; jobs the queued jobs by
	// kind and id.
	calls map[string][]chat.ToolCall
	jobs  map[string]map[string]store.Job
	// started are the ids of the pending calls that started, by run id.
	started map[string]map[string]bool
	// responses are the stored responses of the Responses API by id.
	responses map[string]store.Response
	// drafts are the streamed pieces of runs, by run id.
	drafts map[string]map[int]string
	// pii are the sessions' personal data tokens, by session id.
	pii map[string][]store.PIIToken
}

type session struct {
	s       store.Session
	nextSeq int64
	msgs    map[string]store.Message
	runs    []string
	// approvals are the ids of the session's approvals, responses those
	// of its responses.
	approvals []string
	responses []string
}

// New returns an empty store.
func New() *Store {
	return &Store{
		sessions:  map[string]*session{},
		runs:      map[string]store.Run{},
		approvals: map[string]store.Approval{},
		keys:      map[string]store.APIKey{},
		calls:     map[string][]chat.ToolCall{},
		started:   map[string]map[string]bool{},
		jobs:      map[string]map[string]store.Job{},
		responses: map[string]store.Response{},
		drafts:    map[string]map[int]string{},
		pii:       map[string][]store.PIIToken{},
	}
}

var _ store.Drafts = (*Store)(nil)

// AppendDraft implements store.Drafts.
func (m *Store) AppendDraft(_ context.Context, runID string, n int, text string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d := m.drafts[runID]
	if d == nil {
		d = map[int]string{}
		m.drafts[runID] = d
	}
	if _, ok := d[n]; !ok {
		d[n] = text
	}
	return nil
}

// Drafts implements store.Drafts.
func (m *Store) Drafts(_ context.Context, runID string, from int) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for n := max(from, 0); ; n++ {
		text, ok := m.drafts[runID][n]
		if !ok {
			return out, nil
		}
		out = append(out, text)
	}
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		t = time.Now()
	}
	return t.UTC().Truncate(time.Millisecond)
}

// CreateSession implements store.Sessions.
func (m *Store) CreateSession(_ context.Context, s store.Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sessions[s.ID]; ok {
		return fmt.Errorf("session %s: %w", s.ID, store.ErrExists)
	}
	s.CreatedAt, s.UpdatedAt = utc(s.CreatedAt), utc(s.UpdatedAt)
	s.Allowlist = slices.Clone(s.Allowlist)
	m.sessions[s.ID] = &session{s: s, nextSeq: 1, msgs: map[string]store.Message{}}
	return nil
}

// GetSession implements store.Sessions.
func (m *Store) GetSession(_ context.Context, id string) (store.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return store.Session{}, fmt.Errorf("session %s: %w", id, store.ErrNotFound)
	}
	out := s.s
	out.Allowlist = slices.Clone(out.Allowlist)
	return out, nil
}

// DeleteSession implements store.Sessions.
func (m *Store) DeleteSession(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[id]; ok {
		for _, r := range s.runs {
			delete(m.runs, r)
			delete(m.calls, r)
			delete(m.started, r)
		}
		for _, a := range s.approvals {
			delete(m.approvals, a)
		}
		for _, r := range s.responses {
			delete(m.responses, r)
		}
		delete(m.sessions, id)
	}
	delete(m.pii, id)
	return nil
}

// PIITokens implements store.PIIVault.
func (m *Store) PIITokens(_ context.Context, sessionID string) ([]store.PIIToken, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.pii[sessionID]), nil
}

// AddPII implements store.PIIVault.
func (m *Store) AddPII(_ context.Context, sessionID string, values []store.PIIToken) ([]store.PIIToken, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	add, err := store.AssignPII(m.pii[sessionID], values)
	if err != nil {
		return nil, fmt.Errorf("memstore: add pii tokens: %w", err)
	}
	m.pii[sessionID] = append(m.pii[sessionID], add...)
	return slices.Clone(m.pii[sessionID]), nil
}

// AllowTool implements store.Sessions.
func (m *Store) AllowTool(_ context.Context, sessionID, tool string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[sessionID]
	if !ok {
		return fmt.Errorf("allow tool %s in session %s: %w", tool, sessionID, store.ErrNotFound)
	}
	if !slices.Contains(s.s.Allowlist, tool) {
		s.s.Allowlist = append(s.s.Allowlist, tool)
	}
	return nil
}

// AppendMessage implements store.History.
func (m *Store) AppendMessage(_ context.Context, msg store.Message) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.appendMessage(msg)
}

// appendMessage stores msg unless its key exists; m.mu is held.
func (m *Store) appendMessage(msg store.Message) (bool, error) {
	s, ok := m.sessions[msg.SessionID]
	if !ok {
		return false, fmt.Errorf("append to session %s: %w", msg.SessionID, store.ErrNotFound)
	}
	if _, dup := s.msgs[msg.Key]; dup {
		return false, nil
	}
	msg.CreatedAt = utc(msg.CreatedAt)
	msg.ToolCalls = slices.Clone(msg.ToolCalls)
	s.msgs[msg.Key] = msg
	return true, nil
}

// GetMessage implements store.History.
func (m *Store) GetMessage(_ context.Context, sessionID, key string) (store.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[sessionID]; ok {
		if msg, ok := s.msgs[key]; ok {
			msg.ToolCalls = slices.Clone(msg.ToolCalls)
			return msg, nil
		}
	}
	return store.Message{}, fmt.Errorf("message %s/%s: %w", sessionID, key, store.ErrNotFound)
}

// Messages implements store.History.
func (m *Store) Messages(_ context.Context, sessionID string) ([]store.Message, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[sessionID]
	if !ok {
		return nil, nil
	}
	out := make([]store.Message, 0, len(s.msgs))
	for _, msg := range s.msgs {
		msg.ToolCalls = slices.Clone(msg.ToolCalls)
		out = append(out, msg)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// RunMessages implements store.History.
func (m *Store) RunMessages(ctx context.Context, sessionID string, seq int64) ([]store.Message, error) {
	all, err := m.Messages(ctx, sessionID)
	prefix := store.RunPrefix(seq)
	return slices.DeleteFunc(all, func(msg store.Message) bool { return !strings.HasPrefix(msg.Key, prefix) }), err
}

// DeleteMessages implements store.History.
func (m *Store) DeleteMessages(_ context.Context, sessionID string, keys []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[sessionID]; ok {
		for _, k := range keys {
			delete(s.msgs, k)
		}
	}
	return nil
}

// EnqueueRun implements store.Runs.
func (m *Store) EnqueueRun(_ context.Context, n store.NewRun) (store.Run, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := n.Run
	if old, ok := m.runs[r.ID]; ok {
		return cloneRun(old), false, fmt.Errorf("run %s: %w", r.ID, store.ErrExists)
	}
	r.SessionID = n.Session.ID
	s, ok := m.sessions[r.SessionID]
	created := !ok
	if created {
		sess := n.Session
		sess.CreatedAt, sess.UpdatedAt = utc(sess.CreatedAt), utc(sess.UpdatedAt)
		sess.Allowlist = slices.Clone(sess.Allowlist)
		s = &session{s: sess, nextSeq: 1, msgs: map[string]store.Message{}}
		m.sessions[r.SessionID] = s
	} else if s.s.Owner != n.Session.Owner {
		return store.Run{}, false, fmt.Errorf("enqueue in session %s: %w", r.SessionID, store.ErrForbidden)
	}
	r.Seq = s.nextSeq
	s.nextSeq++
	r.Status = store.RunQueued
	r.CreatedAt = utc(r.CreatedAt)
	r.UpdatedAt = r.CreatedAt
	r.State = slices.Clone(r.State)
	r.Options = slices.Clone(r.Options)
	m.runs[r.ID] = r
	s.runs = append(s.runs, r.ID)
	for i, in := range n.Input {
		m.appendMessage(store.Message{SessionID: r.SessionID, Key: store.InputKey(r.Seq, i), RunID: r.ID, Message: in, CreatedAt: r.CreatedAt})
	}
	return cloneRun(r), created, nil
}

func cloneRun(r store.Run) store.Run {
	r.State = slices.Clone(r.State)
	r.Options = slices.Clone(r.Options)
	return r
}

// GetRun implements store.Runs.
func (m *Store) GetRun(_ context.Context, id string) (store.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.runs[id]
	if !ok {
		return store.Run{}, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	return cloneRun(r), nil
}

// CommitRun implements store.Runs.
func (m *Store) CommitRun(_ context.Context, c store.Commit) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.runs[c.Run.ID]
	if !ok {
		return fmt.Errorf("run %s: %w", c.Run.ID, store.ErrNotFound)
	}
	if old.Status.Finished() {
		return fmt.Errorf("commit run %s: %w", c.Run.ID, store.ErrRunFinished)
	}
	if c.Lease != 0 {
		// This store leases no run: no lease holds one.
		return fmt.Errorf("commit run %s: %w", c.Run.ID, store.ErrLeaseLost)
	}
	if len(c.Outbox) > 0 {
		return fmt.Errorf("commit run %s: this store keeps no channel outbox", c.Run.ID)
	}
	for _, msg := range c.Messages {
		if msg.SessionID != old.SessionID {
			return fmt.Errorf("commit run %s: message %s is for session %s", c.Run.ID, msg.Key, msg.SessionID)
		}
	}
	old.Status = c.Run.Status
	old.State = slices.Clone(c.Run.State)
	old.UpdatedAt = utc(time.Time{})
	m.runs[c.Run.ID] = old
	for _, msg := range c.Messages {
		m.appendMessage(msg)
	}
	switch {
	case c.Calls != nil:
		m.calls[c.Run.ID] = slices.Clone(c.Calls)
		delete(m.started, c.Run.ID)
	case c.ClearCalls:
		delete(m.calls, c.Run.ID)
		delete(m.started, c.Run.ID)
	}
	for _, j := range c.Jobs {
		if m.jobs[j.Kind] == nil {
			m.jobs[j.Kind] = map[string]store.Job{}
		}
		j.CreatedAt = utc(j.CreatedAt)
		j.Payload = slices.Clone(j.Payload)
		m.jobs[j.Kind][j.ID] = j
	}
	return nil
}

// PendingCalls implements store.Runs.
func (m *Store) PendingCalls(_ context.Context, runID string) ([]chat.ToolCall, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.runs[runID]; !ok {
		return nil, fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	}
	return slices.Clone(m.calls[runID]), nil
}

// StartCall implements store.Runs.
func (m *Store) StartCall(_ context.Context, runID, callID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.runs[runID]; !ok {
		return fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	} else if r.Status.Finished() {
		return fmt.Errorf("start call %s of run %s: %w", callID, runID, store.ErrRunFinished)
	}
	if m.started[runID][callID] {
		return fmt.Errorf("call %s of run %s started: %w", callID, runID, store.ErrExists)
	}
	if m.started[runID] == nil {
		m.started[runID] = map[string]bool{}
	}
	m.started[runID][callID] = true
	return nil
}

// Jobs implements store.Jobs.
func (m *Store) Jobs(_ context.Context, kind string, limit int) ([]store.Job, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]store.Job, 0, len(m.jobs[kind]))
	for _, j := range m.jobs[kind] {
		j.Payload = slices.Clone(j.Payload)
		out = append(out, j)
	}
	slices.SortFunc(out, func(a, b store.Job) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out[:min(limit, len(out))], nil
}

// DeleteJobs implements store.Jobs.
func (m *Store) DeleteJobs(_ context.Context, kind string, ids ...string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		delete(m.jobs[kind], id)
	}
	return nil
}

// NextRun implements store.Runs.
func (m *Store) NextRun(_ context.Context, sessionID string) (store.Run, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[sessionID]; ok {
		for _, id := range s.runs { // in seq order
			if r := m.runs[id]; !r.Status.Finished() {
				return cloneRun(r), nil
			}
		}
	}
	return store.Run{}, fmt.Errorf("next run of %s: %w", sessionID, store.ErrNotFound)
}

// UnfinishedSessions implements store.Runs.
func (m *Store) UnfinishedSessions(_ context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, r := range m.runs {
		if !r.Status.Finished() && !seen[r.SessionID] {
			seen[r.SessionID] = true
			out = append(out, r.SessionID)
		}
	}
	sort.Strings(out)
	return out, nil
}

// cloneApproval copies the slices and the pointer of a, so the stored
// approval and the caller's never share memory.
func cloneApproval(a store.Approval) store.Approval {
	a.Calls = slices.Clone(a.Calls)
	a.Tools = slices.Clone(a.Tools)
	if a.ResolvedAt != nil {
		t := *a.ResolvedAt
		a.ResolvedAt = &t
	}
	return a
}

// CreateApproval implements store.Approvals. It stores a as pending, with
// no decision; the session must exist.
func (m *Store) CreateApproval(_ context.Context, a store.Approval) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.approvals[a.ID]; ok {
		return fmt.Errorf("approval %s: %w", a.ID, store.ErrExists)
	}
	s, ok := m.sessions[a.SessionID]
	if !ok {
		return fmt.Errorf("approval %s in session %s: %w", a.ID, a.SessionID, store.ErrNotFound)
	}
	a = cloneApproval(a)
	a.Status, a.Decision, a.ResolvedAt = store.ApprovalPending, "", nil
	a.CreatedAt = utc(a.CreatedAt)
	m.approvals[a.ID] = a
	s.approvals = append(s.approvals, a.ID)
	return nil
}

// GetApproval implements store.Approvals.
func (m *Store) GetApproval(_ context.Context, id string) (store.Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[id]
	if !ok {
		return store.Approval{}, fmt.Errorf("approval %s: %w", id, store.ErrNotFound)
	}
	return cloneApproval(a), nil
}

// PendingApproval implements store.Approvals. Of several pending
// approvals it returns the oldest.
func (m *Store) PendingApproval(_ context.Context, sessionID string) (store.Approval, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var found *store.Approval
	if s, ok := m.sessions[sessionID]; ok {
		for _, id := range s.approvals {
			a := m.approvals[id]
			if a.Status != store.ApprovalPending {
				continue
			}
			if found == nil || a.CreatedAt.Before(found.CreatedAt) ||
				(a.CreatedAt.Equal(found.CreatedAt) && a.ID < found.ID) {
				found = &a
			}
		}
	}
	if found == nil {
		return store.Approval{}, fmt.Errorf("pending approval of %s: %w", sessionID, store.ErrNotFound)
	}
	return cloneApproval(*found), nil
}

// ResolveApproval implements store.Approvals.
func (m *Store) ResolveApproval(_ context.Context, id string, status store.ApprovalStatus, decision string, at time.Time) (store.Approval, error) {
	if status != store.ApprovalApproved && status != store.ApprovalDenied {
		return store.Approval{}, fmt.Errorf("resolve approval %s: status %q is not an answer", id, status)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[id]
	if !ok {
		return store.Approval{}, fmt.Errorf("resolve approval %s: %w", id, store.ErrNotFound)
	}
	if a.Status != store.ApprovalPending {
		return cloneApproval(a), fmt.Errorf("resolve approval %s: already %s: %w", id, a.Status, store.ErrConflict)
	}
	t := utc(at)
	a.Status, a.Decision, a.ResolvedAt = status, decision, &t
	m.approvals[id] = a
	return cloneApproval(a), nil
}

// SetApprovalToken implements store.Approvals.
func (m *Store) SetApprovalToken(_ context.Context, id, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.approvals[id]
	if !ok {
		return fmt.Errorf("set approval token %s: %w", id, store.ErrNotFound)
	}
	a.Token = token
	m.approvals[id] = a
	return nil
}

// CreateKey implements store.Keys.
func (m *Store) CreateKey(_ context.Context, k store.APIKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range m.keys {
		if o.ID == k.ID || o.Hash == k.Hash {
			return fmt.Errorf("key %s: %w", k.ID, store.ErrExists)
		}
	}
	k.CreatedAt = utc(k.CreatedAt)
	k.Agents = slices.Clone(k.Agents)
	m.keys[k.ID] = k
	return nil
}

// KeyByHash implements store.Keys.
func (m *Store) KeyByHash(_ context.Context, hash string) (store.APIKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range m.keys {
		if k.Hash == hash {
			k.Agents = slices.Clone(k.Agents)
			return k, nil
		}
	}
	return store.APIKey{}, fmt.Errorf("key: %w", store.ErrNotFound)
}

// ListKeys implements store.Keys.
func (m *Store) ListKeys(_ context.Context) ([]store.APIKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]store.APIKey, 0, len(m.keys))
	for _, k := range m.keys {
		k.Agents = slices.Clone(k.Agents)
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return strings.Compare(out[i].ID, out[j].ID) < 0
	})
	return out, nil
}

// RevokeKey implements store.Keys.
func (m *Store) RevokeKey(_ context.Context, id string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[id]
	if !ok {
		return fmt.Errorf("key %s: %w", id, store.ErrNotFound)
	}
	if k.RevokedAt == nil {
		t := utc(at)
		k.RevokedAt = &t
		m.keys[id] = k
	}
	return nil
}

// CreateResponse implements store.Responses; the session must exist.
func (m *Store) CreateResponse(_ context.Context, r store.Response) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.responses[r.ID]; ok {
		return fmt.Errorf("response %s: %w", r.ID, store.ErrExists)
	}
	s, ok := m.sessions[r.SessionID]
	if !ok {
		return fmt.Errorf("response %s in session %s: %w", r.ID, r.SessionID, store.ErrNotFound)
	}
	r.Request = slices.Clone(r.Request)
	r.CreatedAt = utc(r.CreatedAt)
	m.responses[r.ID] = r
	s.responses = append(s.responses, r.ID)
	return nil
}

// GetResponse implements store.Responses.
func (m *Store) GetResponse(_ context.Context, id string) (store.Response, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.responses[id]
	if !ok {
		return store.Response{}, fmt.Errorf("response %s: %w", id, store.ErrNotFound)
	}
	r.Request = slices.Clone(r.Request)
	return r, nil
}

// DeleteResponse implements store.Responses.
func (m *Store) DeleteResponse(_ context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.responses[id]
	if !ok {
		return fmt.Errorf("delete response %s: %w", id, store.ErrNotFound)
	}
	delete(m.responses, id)
	if s, ok := m.sessions[r.SessionID]; ok {
		s.responses = slices.DeleteFunc(s.responses, func(x string) bool { return x == id })
	}
	return nil
}

// Close implements store.Store; it keeps the data.
func (m *Store) Close() error { return nil }
