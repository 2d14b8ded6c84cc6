package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/skill"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// Limits of the API.
const (
	// MaxBody is the largest request body, in bytes.
	MaxBody = 16 << 10
	// MaxSessions is the most sessions listed, and looked through for
	// pending approvals.
	MaxSessions = 100
	// MaxMessages is the most history messages a session's view shows:
	// its latest.
	MaxMessages = 500
	// MaxFiles is the most workspace files an agent's view lists.
	MaxFiles = 1000
	// MaxFileBytes is the most of a file's text shown.
	MaxFileBytes = 256 << 10
	// DefaultJobs and MaxJobs are the jobs a page of the jobs list holds
	// by default and at most (?limit=).
	DefaultJobs = 50
	MaxJobs     = 200
	// MaxRuns is the most runs of a job shown.
	MaxRuns = 50
	// MaxKeyName bounds a key's name, in characters.
	MaxKeyName = 64
	// MaxQuery bounds a memory or session search, in bytes.
	MaxQuery = 1000
	// MaxTitle and MaxPreview bound, in characters, a session's title
	// (its first user message) and preview (its last message).
	MaxTitle   = 80
	MaxPreview = 160
	// MaxFileBody is the largest body of a file write: a file of
	// files.MaxWrite bytes, escaped as JSON.
	MaxFileBody = 2<<20 + MaxBody
)

// Sessions reads owners' sessions and what they hold: store.Store of
// either adapter.
type Sessions interface {
	store.OwnerSessions
	GetSession(ctx context.Context, id string) (store.Session, error)
	Messages(ctx context.Context, sessionID string) ([]store.Message, error)
	PendingApproval(ctx context.Context, sessionID string) (store.Approval, error)
	// GetRun and RunMessages read the tree of runs a run delegated to
	// (agent.Children).
	agent.RunReader
}

// Jobs is the part of schedule.Engine the console uses.
type Jobs interface {
	Page(ctx context.Context, owner, cursor string, limit int) ([]schedule.Job, string, error)
	Runs(ctx context.Context, owner, id string, limit int) ([]schedule.Run, error)
	SetPaused(ctx context.Context, owner, id string, paused bool) (schedule.Job, error)
	Delete(ctx context.Context, owner, id string) error
	Create(ctx context.Context, j schedule.Job) (schedule.Job, error)
}

// Memory is agent memory (*memory.Memory).
type Memory interface {
	Search(ctx context.Context, agent, owner, query string, o memory.SearchOptions) (memory.Results, error)
	Get(ctx context.Context, agent, owner, key string) (memory.Entry, error)
	Forget(ctx context.Context, agent, owner, key string) error
}

// Config wires the console.
type Config struct {
	Sessions Sessions
	Keys     store.Keys
	// Agents lists the agents served.
	Agents func() []string
	// Workspace returns an agent's workspace; ok is false for an unknown
	// agent or one without a workspace.
	Workspace func(agent string) (ws filestore.FS, ok bool)
	// Tool, when set, returns an agent's tool by name: a workspace file
	// is written through the agent's write_file, held to its policy for
	// the key's autonomy (tool.Judge), as the model's calls are. Without
	// it, or without that tool, files are read-only.
	Tool func(agent, name string) (tool.Tool, bool)
	// Skills, when set, lists the skills an agent sees (skill.Catalog.For).
	Skills func(ctx context.Context, agent string, ws filestore.FS) []skill.Skill
	// Jobs and Memory are optional: without them the console says there
	// are none.
	Jobs   Jobs
	Memory Memory
	// Media, when set, serves the key's stored files (media.go).
	Media Media
	// Operator, when set, is the owner of the jobs the operator makes on
	// the command line (schedule.OperatorOwner): admin keys list and act
	// on its jobs as well as on their own.
	Operator string
	// Channels are the messaging channels ("tg", "slack", …) whose
	// identities' sessions (owner "<channel>:…", which no key owns)
	// admin keys list and read, but do not act in.
	Channels []string
	// Metrics says whether the server serves GET /metrics, which admin
	// keys read (the gateway refuses the others).
	Metrics bool
	// WebSocketURL is where the console chats when it is not /ws of the
	// console's own origin (on AWS, the WebSocket API's wss:// URL); empty
	// means /ws.
	WebSocketURL string
	// DefaultRate is the rate limit of a key created without one.
	DefaultRate int
	// Budgets, when set, returns the token budgets of key k and of the
	// agents it may use, as they stand (agent.Budgets.Of).
	Budgets func(ctx context.Context, k store.APIKey, agents []string) ([]agent.Remaining, error)
	Log     *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Console serves the pages and the API.
type Console struct {
	cfg Config
	mux *http.ServeMux
}

// New returns the console.
func New(cfg Config) (*Console, error) {
	if cfg.Sessions == nil || cfg.Keys == nil || cfg.Agents == nil || cfg.Workspace == nil {
		return nil, errors.New("console: Sessions, Keys, Agents and Workspace are required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Console{cfg: cfg, mux: http.NewServeMux()}
	const p = "/v1/lambdaclaw"
	for pattern, h := range map[string]handler{
		"GET " + p + "/me":                             c.me,
		"GET " + p + "/sessions":                       c.sessions,
		"GET " + p + "/channel-sessions":               c.admin(c.channelSessions),
		"GET " + p + "/sessions/{id}":                  c.session,
		"GET " + p + "/sessions/{id}/runs/{run}":       c.runTree,
		"GET " + p + "/approvals":                      c.approvals,
		"GET " + p + "/media/{session}/{hash}":         c.media,
		"GET " + p + "/jobs":                           c.jobs,
		"GET " + p + "/jobs/{id}/runs":                 c.jobRuns,
		"POST " + p + "/jobs":                          c.createJob,
		"POST " + p + "/jobs/{id}":                     c.pauseJob,
		"DELETE " + p + "/jobs/{id}":                   c.deleteJob,
		"GET " + p + "/agents":                         c.agents,
		"GET " + p + "/budget":                         c.budgets,
		"GET " + p + "/agents/{agent}":                 c.agent,
		"GET " + p + "/agents/{agent}/files/{path...}": c.file,
		"PUT " + p + "/agents/{agent}/files/{path...}": c.writeFile,
		"GET " + p + "/agents/{agent}/memory":          c.searchMemory,
		"GET " + p + "/agents/{agent}/memory/{key}":    c.getMemory,
		"DELETE " + p + "/agents/{agent}/memory/{key}": c.forget,
		"GET " + p + "/keys":                           c.admin(c.listKeys),
		"POST " + p + "/keys":                          c.admin(c.createKey),
		"DELETE " + p + "/keys/{id}":                   c.admin(c.revokeKey),
	} {
		c.mux.Handle(pattern, c.serve(h))
	}
	c.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("unknown endpoint %s %s", r.Method, r.URL.Path))
	})
	return c, nil
}

// ServeHTTP serves the console's pages.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) { pages.ServeHTTP(w, r) }

// ServeAPI answers a request of the API for the key k, which the caller
// has authenticated.
func (c *Console) ServeAPI(w http.ResponseWriter, r *http.Request, k store.APIKey) {
	limit := int64(MaxBody)
	if r.Method == http.MethodPut {
		limit = MaxFileBody
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	c.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyCtx{}, k)))
}

type keyCtx struct{}

// handler is an endpoint: it answers for the key, or returns an error
// that its ServeHTTP turns into the answer.
type handler func(w http.ResponseWriter, r *http.Request, k store.APIKey) error

func (c *Console) admin(h handler) handler {
	return func(w http.ResponseWriter, r *http.Request, k store.APIKey) error {
		if !k.Admin {
			return &apiError{http.StatusForbidden, "admin_required", "only an admin key manages keys and sees the channels' conversations (`lambdaclaw keys create --admin`)"}
		}
		return h(w, r, k)
	}
}

// serve makes h a handler of the mux: an apiError becomes its answer,
// any other error a 500 whose message and log line carry the request id.
func (c *Console) serve(h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k, _ := r.Context().Value(keyCtx{}).(store.APIKey)
		err := h(w, r, k)
		if err == nil {
			return
		}
		var ae *apiError
		if errors.As(err, &ae) {
			writeError(w, ae.status, ae.code, ae.msg)
			return
		}
		c.cfg.Log.Error("console: request failed", "method", r.Method, "path", r.URL.Path, "request_id", w.Header().Get("X-Request-Id"), "key_id", k.ID, "error", err)
		writeError(w, http.StatusInternalServerError, "internal_error", "the request failed; the server's log says why")
	})
}

// apiError is an answer other than 200.
type apiError struct {
	status    int
	code, msg string
}

func (e *apiError) Error() string { return e.msg }

func notFound(what string) error {
	return &apiError{http.StatusNotFound, "not_found", what + " does not exist or belongs to another key"}
}

func badRequest(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, "invalid_request", fmt.Sprintf(format, args...)}
}

// owner is the principal a key acts as.
func owner(k store.APIKey) string { return "key:" + k.ID }

// failed wraps an unexpected error, which serve logs and answers 500.
func failed(what string, err error) error {
	return fmt.Errorf("%s: %w", what, err)
}

type me struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Prefix   string   `json:"prefix"`
	Autonomy string   `json:"autonomy"`
	Admin    bool     `json:"admin"`
	Owner    string   `json:"owner"`
	Agents   []string `json:"agents"`
	Features features `json:"features"`
	// WebSocket is the chat's URL; empty means /ws of this origin.
	WebSocket string `json:"websocket,omitempty"`
}

// features are the views the console shows the key: metrics only to an
// admin key, the only one /metrics answers.
type features struct {
	Jobs    bool `json:"jobs"`
	Memory  bool `json:"memory"`
	Metrics bool `json:"metrics"`
}

func (c *Console) me(w http.ResponseWriter, _ *http.Request, k store.APIKey) error {
	writeJSON(w, http.StatusOK, me{
		ID: k.ID, Name: k.Name, Prefix: k.Prefix, Autonomy: k.Autonomy, Admin: k.Admin, Owner: owner(k),
		Agents:    c.agentsOf(k),
		Features:  features{Jobs: c.cfg.Jobs != nil, Memory: c.cfg.Memory != nil, Metrics: c.cfg.Metrics && k.Admin},
		WebSocket: c.cfg.WebSocketURL,
	})
	return nil
}

// agentsOf returns the agents k may use.
func (c *Console) agentsOf(k store.APIKey) []string {
	out := []string{}
	for _, a := range c.cfg.Agents() {
		if k.Allows(a) {
			out = append(out, a)
		}
	}
	return out
}

// sessionView is a session as the console shows it: its title (the
// first user message), the channel it was started on, its last activity
// and a preview (its last message), shortened.
type sessionView struct {
	store.Session
	Title        string        `json:"title"`
	Preview      string        `json:"preview"`
	LastActivity time.Time     `json:"last_activity"`
	Match        string        `json:"match,omitempty"`
	Pending      *approvalView `json:"pending_approval,omitempty"`
	// ReadOnly is a session of a channel's identity, which an admin key
	// reads but does not act in.
	ReadOnly bool `json:"read_only,omitempty"`
}

type approvalView struct {
	ID        string    `json:"id"`
	SessionID string    `json:"session_id"`
	Agent     string    `json:"agent"`
	Tools     []string  `json:"tools"`
	Prompt    string    `json:"prompt"`
	CreatedAt time.Time `json:"created_at"`
}

// sessions lists the owner's sessions, newest first; with ?q= only
// those whose history holds the words of q (case-insensitively), each
// with the line that matched. Both look at the latest MaxSessions
// sessions and their latest MaxMessages messages.
func (c *Console) sessions(w http.ResponseWriter, r *http.Request, k store.APIKey) error {
	list, err := c.ownSessions(r, k)
	if err != nil {
		return err
	}
	return c.writeSessions(w, r, list)
}

// channelSessions lists to an admin key the sessions of the channels'
// identities (Config.Channels), newest first, at most MaxSessions, each
// with its owner, the identity; ?q= searches them as sessions does.
func (c *Console) channelSessions(w http.ResponseWriter, r *http.Request, _ store.APIKey) error {
	var list []store.Session
	for _, ch := range c.cfg.Channels {
		more, err := c.cfg.Sessions.ChannelSessions(r.Context(), ch, MaxSessions)
		if err != nil {
			return failed("list channel sessions", err)
		}
		list = append(list, more...)
	}
	slices.SortFunc(list, func(a, b store.Session) int {
		if d := b.CreatedAt.Compare(a.CreatedAt); d != 0 {
			return d
		}
		return strings.Compare(b.ID, a.ID)
	})
	return c.writeSessions(w, r, list[:min(len(list), MaxSessions)])
}

// writeSessions answers the views of list, those matching ?q= only.
func (c *Console) writeSessions(w http.ResponseWriter, r *http.Request, list []store.Session) error {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if len(q) > MaxQuery {
		return badRequest("the query is longer than %d bytes", MaxQuery)
	}
	out := make([]sessionView, 0, len(list))
	for _, s := range list {
		msgs, err := c.cfg.Sessions.Messages(r.Context(), s.ID)
		if err != nil {
			return failed("history", err)
		}
		msgs = msgs[max(0, len(msgs)-MaxMessages):]
		v := summarize(s, msgs)
		if q != "" {
			if v.Match = match(msgs, q); v.Match == "" {
				continue
			}
		}
		if v.Pending, err = c.pending(r, s); err != nil {
			return err
		}
		v.ReadOnly = c.ofChannel(s)
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"sessions": out})
	return nil
}

// summarize makes the view of s from its history.
func summarize(s store.Session, msgs []store.Message) sessionView {
	s.Allowlist = nil
	v := sessionView{Session: s, LastActivity: s.UpdatedAt}
	for _, m := range msgs {
		if v.Title == "" && m.Role == chat.User {
			v.Title = shorten(m.Content, MaxTitle)
		}
		if strings.TrimSpace(m.Content) != "" && m.Role != chat.Tool && m.Role != chat.System {
			v.Preview = shorten(m.Content, MaxPreview)
		}
		if m.CreatedAt.After(v.LastActivity) {
			v.LastActivity = m.CreatedAt
		}
	}
	return v
}

// match returns the first message of msgs holding every word of q,
// shortened around the first word, or "" when none does.
func match(msgs []store.Message, q string) string {
	words := strings.Fields(strings.ToLower(q))
	for _, m := range msgs {
		text := strings.ToLower(m.Content)
		if !allIn(text, words) {
			continue
		}
		i := strings.Index(text, words[0])
		// Start a little before the word, at a character boundary of the
		// original (lower-casing may change lengths, so fall back to 0).
		start := 0
		if len(text) == len(m.Content) {
			start = max(0, i-MaxPreview/4)
			for start > 0 && !utf8.RuneStart(m.Content[start]) {
				start--
			}
		}
		out := shorten(m.Content[start:], MaxPreview)
		if start > 0 {
			out = "…" + out
		}
		return out
	}
	return ""
}

func allIn(text string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}

// shorten makes s one line of at most n characters, "…" ending what was
// cut.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

// ofChannel reports whether s is a session of an identity of one of the
// channels (Config.Channels): started on it, its owner "<channel>:…".
func (c *Console) ofChannel(s store.Session) bool {
	return !s.Ephemeral && slices.Contains(c.cfg.Channels, s.Channel) && strings.HasPrefix(s.Owner, s.Channel+":")
}

func (c *Console) ownSessions(r *http.Request, k store.APIKey) ([]store.Session, error) {
	list, err := c.cfg.Sessions.SessionsOf(r.Context(), owner(k), MaxSessions)
	if err != nil {
		return nil, failed("list sessions", err)
	}
	return list, nil
}

// pending returns the session's pending approval, nil when none; a run
// waiting for an API client's own tools waits for no person.
func (c *Console) pending(r *http.Request, s store.Session) (*approvalView, error) {
	a, err := c.cfg.Sessions.PendingApproval(r.Context(), s.ID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (a.Kind == store.ApprovalClientTools || a.Kind == store.ApprovalDelegation)) {
		return nil, nil // nothing for a person to answer here
	}
	if err != nil {
		return nil, failed("pending approval", err)
	}
	return &approvalView{ID: a.ID, SessionID: s.ID, Agent: s.Agent, Tools: a.Tools, Prompt: a.Prompt, CreatedAt: a.CreatedAt}, nil
}

func (c *Console) approvals(w http.ResponseWriter, r *http.Request, k store.APIKey) error {
	list, err := c.ownSessions(r, k)
	if err != nil {
		return err
	}
	out := []approvalView{}
	for _, s := range list {
		ap, err := c.pending(r, s)
		if err != nil {
			return err
		}
		if ap != nil {
			out = append(out, *ap)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"approvals": out})
	return nil
}

// readableSession returns the session id if the key may read it: its
// owner's, or, for an admin key, a channel identity's (ofChannel; read
// only). Another owner's, or an ephemeral one, is not found.
func (c *Console) readableSession(r *http.Request, k store.APIKey, id string) (store.Session, error) {
	s, err := c.cfg.Sessions.GetSession(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && (s.Ephemeral || s.Owner != owner(k) && !(k.Admin && c.ofChannel(s)))):
		return s, notFound("the session " + strconv.Quote(id))
	case err != nil:
		return s, failed("get session", err)
	}
	return s, nil
}

func (c *Console) session(w http.ResponseWriter, r *http.Request, k store.APIKey) error {
	id := r.PathValue("id")
	s, err := c.readableSession(r, k, id)
	if err != nil {
		return err
	}
	msgs, err := c.cfg.Sessions.Messages(r.Context(), id)
	if err != nil {
		return failed("history", err)
	}
	truncated := len(msgs) > MaxMessages
	if truncated {
		msgs = msgs[len(msgs)-MaxMessages:]
	}
	ap, err := c.pending(r, s)
	if err != nil {
		return err
	}
	v := summarize(s, msgs)
	v.Allowlist, v.Pending, v.ReadOnly = s.Allowlist, ap, c.ofChannel(s)
	writeJSON(w, http.StatusOK, map[string]any{"session": v, "messages": msgs, "truncated": truncated})
	return nil
}

// runTree answers a run of one of the key's sessions with the tree of the
// runs it delegated to (agent.Children), each with its tokens: its own
// usage, and its children's.
func (c *Console) runTree(w http.ResponseWriter, r *http.Request, k store.APIKey) error {
	id, runID := r.PathValue("id"), r.PathValue("run")
	if _, err := c.readableSession(r, k, id); err != nil {
		return err
	}
	run, err := c.cfg.Sessions.GetRun(r.Context(), runID)
	switch {
	case errors.Is(err, store.ErrNotFound) || (err == nil && run.SessionID != id):
		return notFound("the run " + strconv.Quote(runID) + " of this session")
	case err != nil:
		return failed("get run", err)
	}
	st, err := agent.DecodeState(run)
	if err != nil {
		return failed("read run", err)
	}
	kids, err := agent.Children(r.Context(), c.cfg.Sessions, runID)
	if err != nil {
		return failed("children", err)
	}
	writeJSON(w, http.StatusOK, map[string]any{"run": agent.Child{RunID: run.ID, SessionID: run.SessionID, Agent: st.Agent,
		Status: run.Status, Usage: st.Usage, Error: st.Error, Children: kids}})
	return nil
}

// noJobs answers when there is no scheduler.
var noJobs = &apiError{http.StatusNotFound, "not_found", "this server has no scheduler"}

// jobPage is a page of the owner's jobs, oldest first; NextCursor, when
// set, is the ?cursor= of the page after it.
type jobPage struct {
	Jobs       []schedule.Job `json:"jobs"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

// jobOwners are the owners whose jobs key k sees: its own and, for an
// admin key, the operator's, the jobs made with `lambdaclaw cron add`.
// Every job says its owner.
func (c *Console) jobOwners(k store.APIKey) []string {
	if k.Admin && c.cfg.Operator != "" {
		return []string{owner(k), c.cfg.Operator}
	}
	return []string{owner(k)}
}

// jobs answers a page of the jobs of the key's owners (jobOwners), one
// owner's after the other's: ?limit= of them (DefaultJobs, at most
// MaxJobs) after ?cursor= (the next_cursor of the page before, which
// names the owner and the engine's cursor in its jobs).
func (c *Console) jobs(w http.ResponseWriter, r *http.Request, k store.APIKey) error {
	q := r.URL.Query()
	limit := DefaultJobs
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxJobs {
			return badRequest("limit %q: want a number from 1 to %d", v, MaxJobs)
		}
		limit = n
	}
	if c.cfg.Jobs == nil {
		writeJSON(w, http.StatusOK, jobPage{Jobs: []schedule.Job{}})
		return nil
	}
	owners := c.jobOwners(k)
	badCursor := badRequest("cursor %q: pass the next_cursor of the page before, or none for the first page", q.Get("cursor"))
	i, cursor := 0, ""
	if v := q.Get("cursor"); v != "" {
		n, inner, ok := strings.Cut(v, ":")
		var err error
		if i, err = strconv.Atoi(n); !ok || err != nil || i < 0 || i >= len(owners) {
			return badCursor
		}
		cursor = inner
	}
	page := jobPage{Jobs: []schedule.Job{}}
	for ; i < len(owners) && len(page.Jobs) < limit; i, cursor = i+1, "" {
		list, next, err := c.cfg.Jobs.Page(r.Context(), owners[i], cursor, limit-len(page.Jobs))
		if errors.Is(err, schedule.ErrCursor) {
			return badCursor
		}
		if err != nil {
			return failed("list jobs", err)
		}
		page.Jobs = append(page.Jobs, list...)
		if next != "" {
			page.NextCursor = strconv.Itoa(i) + ":" + next
			break
		}
	}
	// A full page that ended an owner's jobs has a next page when a later
	// owner has jobs.
	for ; page.NextCursor == "" && i < len(owners); i++ {
		more, _, err := c.cfg.Jobs.Page(r.Context(), owners[i], "", 1)
		if err != nil {
			return failed("list jobs", err)
		}
		if len(more) > 0 {
			page.NextCursor = strconv.Itoa(i) + ":"
		}
	}
	writeJSON(w, http.StatusOK, page)
	return nil
}

// ofJob calls do with the owner of job id among the key's owners
// (jobOwners): the first for which do does not answer
// schedule.ErrNotFound. A job of no owner of the key is 404.
func (c *Console) ofJob(k store.APIKey, id string, do func(owner string) error) error {
	var err error
	for _, o := range c.jobOwners(k) {
		if err = do(o); !errors.Is(err, schedule.ErrNotFound) {
			break
		}
	}
	if errors.Is(err, schedule.ErrNotFound) {
		return notFound("the job " + strconv.Quote(id))
	}
	if err != nil {
		return failed("job "+id, err)
	}
	return nil
}

func (c *Console) jobRuns(w http.ResponseWriter, r *http.Request, k store.APIKey) error {
	if c.cfg.Jobs == nil {
		return noJobs
	}
	id := r.PathValue("id")
	var runs []schedule.Run
	err := c.ofJob(k, id, func(o string) (err error) {
		runs, err = c.cfg.Jobs.Runs(r.Context(), o, id, MaxRuns)
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"runs": nonNil(runs)})
	return nil
}

func (c *Console) pauseJob(w http.ResponseWriter, r *http.Request, k store.APIKey) error {
	if c.cfg.Jobs == nil {
		return noJobs
	}
	var in struct {
		Paused *bool `json:"paused"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	if in.Paused == nil {
		return badRequest(`the body must say {"paused": true} or {"paused": false}`)
	}
	id := r.PathValue("id")
	var j schedule.Job
	err := c.ofJob(k, id, func(o string) (err error) {
		j, err = c.cfg.Jobs.SetPaused(r.Context(), o, id, *in.Paused)
		return err
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, j)
	return nil
}

// jobForm is the body of POST /jobs: what `lambdaclaw cron add` takes,
// for the key's own jobs. Exactly one of every ("1h30m"), cron (with
// tz) and at (RFC 3339) is set. The replies are kept in the job's runs
// (delivered nowhere else: where a reply may go is the operator's
// choice, `cron add --deliver`).
type jobForm struct {
	Agent   string    `json:"agent"`
	Name    string    `json:"name"`
	Message string    `json:"message"`
	Every   string    `json:"every"`
	Cron    string    `json:"cron"`
	TZ      string    `json:"tz"`
	At      time.Time `json:"at"`
}

// createJob schedules a job of the key's, validated by the engine as
// `lambdaclaw cron add` and the schedule tool's are.
func (c *Console) createJob(w http.ResponseWriter, r *http.Request, k store.APIKey) error {
	if c.cfg.Jobs == nil {
		return noJobs
	}
	var in jobForm
	if err := decode(r, &in); err != nil {
		return err
	}
	if !k.Allows(in.Agent) || !slices.Contains(c.cfg.Agents(), in.Agent) {
		return badRequest("agent %q: there is no such agent, or this key may not use it", in.Agent)
	}
	j := schedule.Job{Owner: owner(k), Agent: in.Agent, Name: in.Name, Message: in.Message,
		Schedule: schedule.Schedule{Cron: in.Cron, TZ: in.TZ, At: in.At}}
	if in.Every != "" {
		d, err := time.ParseDuration(in.Every)
		if err != nil || d <= 0 {
			return badRequest("every %q: want an interval, as 30m or 2h", in.Every)
		}
		j.Schedule.Every = schedule.Duration(d)
	}
	j, err := c.cfg.Jobs.Create(r.Context(), j)
	if errors.Is(err, schedule.ErrInvalid) {
		return badRequest("%v", err)
	}
	if err != nil {
		return failed("create job", err)
	}
	c.cfg.Log.Info("console: job created", "job_id", j.ID, "key_id", k.ID)
	writeJSON(w, http.StatusCreated, j)
	return nil
}

func (c *Console) deleteJob(w http.ResponseWriter, r *http.Request, k store.APIKey) error {
	if c.cfg.Jobs == nil {
		return noJobs
	}
	id := r.PathValue("id")
	err := c.ofJob(k, id, func(o string) error { return c.cfg.Jobs.Delete(r.Context(), o, id) })
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// budgets answers the token budgets of the key and of the agents it may
// use: each one's limit, what is spent and left of its day or month, and
// when it is replenished. None when nothing has a budget.
func (c *Console) budgets(w http.ResponseWriter, r *http.Request, k store.APIKey) error {
	out := []agent.Remaining{}
	if c.cfg.Budgets != nil {
		got, err := c.cfg.Budgets(r.Context(), k, c.agentsOf(k))
		if err != nil {
			return fmt.Errorf("budgets: %w", err)
		}
		out = append(out, got...)
	}
	writeJSON(w, http.StatusOK, map[string]any{"budgets": out})
	return nil
}

func (c *Console) agents(w http.ResponseWriter, _ *http.Request, k store.APIKey) error {
	writeJSON(w, http.StatusOK, map[string]any{"agents": c.agentsOf(k)})
	return nil
}

// workspace returns the workspace of the request's agent, if k may use it.
func (c *Console) workspace(r *http.Request, k store.APIKey) (string, filestore.FS, error) {
	name := r.PathValue("agent")
	if !k.Allows(name) || !slices.Contains(c.cfg.Agents(), name) {
		return "", nil, notFound("the agent " + strconv.Quote(name))
	}
	ws, ok := c.cfg.Workspace(name)
	if !ok {
		return "", nil, notFound("the workspace of agent " + strconv.Quote(name))
	}
	return name, ws, nil
}

type fileView struct {
	Path     string    `json:"path"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
}

type skillView struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Source      string `json:"source"`
}

// bootstrapFiles are the workspace files that make an agent's system
// prompt, in the order the console shows them.
var bootstrapFiles = []string{"AGENTS.md", "SOUL.md", "IDENTITY.md", "USER.md", "TOOLS.md", "MEMORY.md", "HEARTBEAT.md", "BOOTSTRAP.md"}

var errEnough = errors.New("enough files")

func (c *Console) agent(w http.ResponseWriter, r *http.Request, k store.APIKey) error {
	name, ws, err := c.workspace(r, k)
	if err != nil {
		return err
	}
	files := []fileView{}
	err = ws.Walk(r.Context(), ".", func(p string, e filestore.Entry) error {
		if len(files) == MaxFiles {
			return errEnough
		}
		files = append(files, fileView{Path: p, Size: e.Size, Modified: e.ModTime})
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		return failed("list workspace", err)
	}
	// The bootstrap files are listed apart, in their order, and not
	// again among the other files.
	boot := []string{}
	for _, b := range bootstrapFiles {
		if i := slices.IndexFunc(files, func(f fileView) bool { return f.Path == b }); i >= 0 {
			boot = append(boot, b)
			files = slices.Delete(files, i, i+1)
		}
	}
	skills := []skillView{}
	if c.cfg.Skills != nil {
		for _, s := range c.cfg.Skills(r.Context(), name, ws) {
			skills = append(skills, skillView{Name: s.Name, Description: s.Description, Source: s.Source.String()})
		}
	}
	_, _, deny := c.writer(name, k)
	writeJSON(w, http.StatusOK, map[string]any{
		"name": name, "files": files, "truncated": errors.Is(err, errEnough), "bootstrap": boot, "skills": skills,
		"editable": deny == nil,
	})
	return nil
}

func (c *Console) file(w http.ResponseWriter, r *http.Request, k store.APIKey) error {
	_, ws, err := c.workspace(r, k)
	if err != nil {
		return err
	}
	p := r.PathValue("path")
	if !fs.ValidPath(p) || p == "." || strings.ContainsFunc(p, unicode.IsControl) {
		return badRequest("%q is not a file path inside the workspace", p)
	}
	data, e, err := ws.ReadFile(r.Context(), p, MaxFileBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid):
		return notFound("the file " + strconv.Quote(p))
	case errors.Is(err, filestore.ErrNotFile):
		return &apiError{http.StatusNotFound, "not_found", fmt.Sprintf("%q is not a regular file of the workspace (a directory, a device or a link leading out of it)", p)}
	case err != nil:
		return failed("read file", err)
	}
	text := string(data)
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"path": p, "size": e.Size, "modified": e.ModTime, "text": text, "truncated": e.Size > int64(len(data)),
	})
	return nil
}

// writeFileTool is the file tool the console writes through.
const writeFileTool = "write_file"

// writer returns the agent's write_file and what its policy says of a
// call by k (tool.Judge); deny is the 403 when k may not write.
func (c *Console) writer(agent string, k store.APIKey) (tool.Tool, tool.Verdict, error) {
	var t tool.Tool
	ok := false
	if c.cfg.Tool != nil {
		t, ok = c.cfg.Tool(agent, writeFileTool)
	}
	if !ok {
		return nil, tool.Deny, &apiError{http.StatusForbidden, "read_only", "agent " + strconv.Quote(agent) + " has no " + writeFileTool + " tool here: its files are read-only"}
	}
	a, err := tool.ParseAutonomy(k.Autonomy)
	if err != nil {
		a = tool.ReadOnly
	}
	v := tool.Judge(t.Policy().Effect, a)
	if v == tool.Deny {
		return nil, v, &apiError{http.StatusForbidden, "read_only", "this key's autonomy is " + a.String() + ": it may read agent " + strconv.Quote(agent) + "'s files, not write them"}
	}
	return t, v, nil
}

// writeFile replaces a workspace file with {"text": "…"} through the
// agent's write_file tool, so that its path checks and the workspace's
// quota hold. A write others see is asked of a person under supervised
// autonomy: here the person is the one writing, and says so with
// "approved": true (the console asks before it saves); without it the
// answer is 403 approval_required.
func (c *Console) writeFile(w http.ResponseWriter, r *http.Request, k store.APIKey) error {
	name, ws, err := c.workspace(r, k)
	if err != nil {
		return err
	}
	t, verdict, err := c.writer(name, k)
	if err != nil {
		return err
	}
	var in struct {
		Text     *string `json:"text"`
		Approved bool    `json:"approved"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	if in.Text == nil {
		return badRequest(`the body must hold the file's new "text"`)
	}
	if verdict == tool.Ask && !in.Approved {
		return &apiError{http.StatusForbidden, "approval_required", "writing a workspace file changes what every key of agent " + strconv.Quote(name) + " sees: confirm it with \"approved\": true"}
	}
	p := r.PathValue("path")
	args, err := json.Marshal(map[string]string{"path": p, "content": *in.Text})
	if err != nil {
		return failed("encode write", err)
	}
	res, err := t.Call(r.Context(), tool.Env{Agent: name, Owner: owner(k), Workspace: ws}, args)
	if err != nil {
		// The tool's refusals are written for whoever asked: a bad path,
		// a limit.
		return badRequest("%s: %v", p, err)
	}
	c.cfg.Log.Info("console: file written", "agent", name, "path", p, "key_id", k.ID)
	writeJSON(w, http.StatusOK, map[string]any{"path": p, "result": res})
	return nil
}

// memoryOf checks the memory request's agent and that there is memory.
func (c *Console) memoryOf(r *http.Request, k store.APIKey) (string, error) {
	name := r.PathValue("agent")
	if !k.Allows(name) || !slices.Contains(c.cfg.Agents(), name) {
		return "", notFound("the agent " + strconv.Quote(name))
	}
	if c.cfg.Memory == nil {
		return "", &apiError{http.StatusNotFound, "not_found", "agent memory is off on this server"}
	}
	return name, nil
}

// memErr turns memory's error into an answer.
func (c *Console) memErr(r *http.Request, err error) error {
	switch {
	case errors.Is(err, memory.ErrNotFound):
		return notFound("the memory " + strconv.Quote(r.PathValue("key")))
	case errors.Is(err, memory.ErrInvalid):
		return badRequest("%s", err.Error())
	}
	return failed("memory", err)
}

func (c *Console) searchMemory(w http.ResponseWriter, r *http.Request, k store.APIKey) error {
	name, err := c.memoryOf(r, k)
	if err != nil {
		return err
	}
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	switch {
	case q == "":
		return badRequest("say what to search for with the query parameter q")
	case len(q) > MaxQuery:
		return badRequest("the query is longer than %d bytes", MaxQuery)
	}
	limit := 0
	if v := r.URL.Query().Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > memory.MaxLimit {
			return badRequest("limit %q: want a number from 1 to %d", v, memory.MaxLimit)
		}
	}
	res, err := c.cfg.Memory.Search(r.Context(), name, owner(k), q, memory.SearchOptions{Limit: limit})
	if err != nil {
		return c.memErr(r, err)
	}
	res.Hits = nonNil(res.Hits)
	writeJSON(w, http.StatusOK, res)
	return nil
}

func (c *Console) getMemory(w http.ResponseWriter, r *http.Request, k store.APIKey) error {
	name, err := c.memoryOf(r, k)
	if err != nil {
		return err
	}
	e, err := c.cfg.Memory.Get(r.Context(), name, owner(k), r.PathValue("key"))
	if err != nil {
		return c.memErr(r, err)
	}
	writeJSON(w, http.StatusOK, e)
	return nil
}

// forget forgets one of the owner's own memories; an agent-wide one, or
// another owner's, is 404.
func (c *Console) forget(w http.ResponseWriter, r *http.Request, k store.APIKey) error {
	name, err := c.memoryOf(r, k)
	if err != nil {
		return err
	}
	key := r.PathValue("key")
	e, err := c.cfg.Memory.Get(r.Context(), name, owner(k), key)
	if err == nil && e.Owner != owner(k) {
		return &apiError{http.StatusForbidden, "agent_wide", "the memory " + strconv.Quote(key) + " is the agent's, shared by all its users; edit its source (" + e.Source + ") instead"}
	}
	if err != nil {
		return c.memErr(r, err)
	}
	if err := c.cfg.Memory.Forget(r.Context(), name, owner(k), key); err != nil {
		return c.memErr(r, err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// keyView is a key as the console shows it: never its hash.
type keyView struct {
	ID            string     `json:"id"`
	Name          string     `json:"name"`
	Prefix        string     `json:"prefix"`
	Agents        []string   `json:"agents"`
	Autonomy      string     `json:"autonomy"`
	RatePerMinute int        `json:"rate_per_minute"`
	Admin         bool       `json:"admin"`
	CreatedAt     time.Time  `json:"created_at"`
	RevokedAt     *time.Time `json:"revoked_at,omitempty"`
}

func viewKey(k store.APIKey) keyView {
	return keyView{ID: k.ID, Name: k.Name, Prefix: k.Prefix, Agents: nonNil(k.Agents), Autonomy: k.Autonomy,
		RatePerMinute: k.RatePerMinute, Admin: k.Admin, CreatedAt: k.CreatedAt, RevokedAt: k.RevokedAt}
}

func (c *Console) listKeys(w http.ResponseWriter, r *http.Request, _ store.APIKey) error {
	ks, err := c.cfg.Keys.ListKeys(r.Context())
	if err != nil {
		return failed("list keys", err)
	}
	out := make([]keyView, 0, len(ks))
	for _, k := range ks {
		out = append(out, viewKey(k))
	}
	writeJSON(w, http.StatusOK, map[string]any{"keys": out})
	return nil
}

// newKey is the body of POST /keys.
type newKey struct {
	Name          string   `json:"name"`
	Agents        []string `json:"agents"`
	Autonomy      string   `json:"autonomy"`
	RatePerMinute *int     `json:"rate_per_minute"`
	Admin         bool     `json:"admin"`
}

// check validates a new key as `lambdaclaw keys create` does.
func (c *Console) check(in newKey) (store.APIKey, error) {
	if n := utf8.RuneCountInString(in.Name); n > MaxKeyName {
		return store.APIKey{}, badRequest("name is %d characters long; at most %d are allowed", n, MaxKeyName)
	}
	if strings.ContainsFunc(in.Name, unicode.IsControl) {
		return store.APIKey{}, badRequest("name %q has control characters", in.Name)
	}
	if in.Autonomy == "" {
		in.Autonomy = tool.Supervised.String()
	}
	if _, err := tool.ParseAutonomy(in.Autonomy); err != nil {
		return store.APIKey{}, badRequest("autonomy: %v", err)
	}
	known := c.cfg.Agents()
	var agents []string
	for _, a := range in.Agents {
		if !slices.Contains(known, a) {
			return store.APIKey{}, badRequest("agents: there is no agent %q", a)
		}
		if !slices.Contains(agents, a) {
			agents = append(agents, a)
		}
	}
	rate := c.cfg.DefaultRate
	if in.RatePerMinute != nil {
		if rate = *in.RatePerMinute; rate < 1 {
			return store.APIKey{}, badRequest("rate_per_minute %d: a key's rate limit is a number of requests per minute, at least 1", rate)
		}
	}
	return store.APIKey{Name: in.Name, Agents: agents, Autonomy: in.Autonomy, RatePerMinute: rate, Admin: in.Admin}, nil
}

func (c *Console) createKey(w http.ResponseWriter, r *http.Request, _ store.APIKey) error {
	var in newKey
	if err := decode(r, &in); err != nil {
		return err
	}
	spec, err := c.check(in)
	if err != nil {
		return err
	}
	secret, k, err := apikey.Create(r.Context(), c.cfg.Keys, spec)
	if err != nil {
		return failed("create key", err)
	}
	c.cfg.Log.Info("console: key created", "key_id", k.ID, "admin", k.Admin)
	writeJSON(w, http.StatusCreated, map[string]any{"key": secret, "record": viewKey(k)})
	return nil
}

func (c *Console) revokeKey(w http.ResponseWriter, r *http.Request, self store.APIKey) error {
	id := r.PathValue("id")
	if id == self.ID {
		return &apiError{http.StatusConflict, "own_key", "this is the key you are signed in with; revoke it with another admin key or `lambdaclaw keys revoke`"}
	}
	ks, err := c.cfg.Keys.ListKeys(r.Context())
	if err != nil {
		return failed("list keys", err)
	}
	i := slices.IndexFunc(ks, func(k store.APIKey) bool { return k.ID == id })
	switch {
	case i < 0:
		return notFound("the key " + strconv.Quote(id))
	case ks[i].RevokedAt != nil:
		return &apiError{http.StatusConflict, "revoked", "the key " + strconv.Quote(id) + " was revoked already"}
	}
	if err := c.cfg.Keys.RevokeKey(r.Context(), id, c.cfg.Now().UTC()); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return notFound("the key " + strconv.Quote(id))
		}
		return failed("revoke key", err)
	}
	c.cfg.Log.Info("console: key revoked", "key_id", id, "by", self.ID)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// decode reads a JSON object body into v; unknown fields are refused.
func decode(r *http.Request, v any) error {
	d := json.NewDecoder(r.Body)
	d.DisallowUnknownFields()
	err := d.Decode(v)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return &apiError{http.StatusRequestEntityTooLarge, "request_too_large", fmt.Sprintf("the body is larger than %d bytes", tooBig.Limit)}
	case errors.Is(err, io.EOF):
		return badRequest("the body is empty; send a JSON object")
	case err != nil:
		return badRequest("the body is not the JSON object expected: %v", err)
	}
	if d.More() {
		return badRequest("the body holds more than one JSON value")
	}
	return nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// writeError writes the OpenAI error JSON the rest of the API uses; a
// server error's message ends with the request's id (the gateway's
// X-Request-Id), which the log line about it carries too.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "server_error"
		if id := w.Header().Get("X-Request-Id"); id != "" {
			msg += " (request id " + id + ")"
		}
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":{"message":"encoding failed","type":"server_error","param":null,"code":"internal_error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
