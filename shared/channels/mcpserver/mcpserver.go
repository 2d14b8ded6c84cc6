// Package mcpserver serves lambdaclaw's agents over the Model Context
// Protocol, so that any MCP client (Claude Desktop, Cursor, VS Code, an
// agent framework) can talk to them. The gateway mounts its Handler at
// /mcp, behind the same API key checks and per-key limits as the rest of
// the API (shared/channels/gateway); `lambdaclaw mcp serve --stdio`
// carries the same server to desktop clients that start a command.
//
// The tools (a call that names no agent is for the agent "default",
// DefaultAgent, as a WebSocket frame that names none):
//
//   - chat (message, optional agent and session_key): one turn of a
//     conversation the server keeps; the reply is the result's text, and
//     the reply's pieces are progress notifications while the turn runs
//     (when the call has a progress token). An approval the turn asks for
//     is asked of the client with elicitation when it supports it;
//     otherwise the call returns the question, and /yes, /no or /always
//     in the next chat call of the conversation answers it.
//   - agents_list: the agents the key may use.
//   - history (optional agent and session_key): a conversation's messages.
//   - memory_search (query, optional agent, …): the agent's memory_search tool,
//     called as the caller's sessions call it.
//
// Everything is scoped to the key: a conversation is the key's session of
// the agent named by its session_key (agent.Identity, channel "mcp"), so
// another key never reaches it, its history or its owner's memories.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/wsproto"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

const (
	// Channel names MCP clients in session ids (agent.Identity): the
	// conversation session_key "notes" of key k is "mcp:<k>/notes".
	Channel = "mcp"
	// DefaultSessionKey names the conversation of the calls that name none.
	DefaultSessionKey = "mcp"
	// DefaultAgent answers the calls that name no agent, as it answers
	// WebSocket frames that name none (wsproto.DefaultAgent).
	DefaultAgent = wsproto.DefaultAgent
	// DefaultSessionTimeout is how long an idle MCP session is kept.
	DefaultSessionTimeout = time.Hour
	// DefaultMaxSessionsPerKey is how many MCP sessions one key may hold
	// open.
	DefaultMaxSessionsPerKey = 32
	// deliverTimeout bounds handing one message to the loop, which is not
	// cancelled with the call, so that it never stops halfway.
	deliverTimeout = 30 * time.Second
)

// Runner hands messages to the agent loop (agent.Driver locally,
// sfn.Runner on AWS).
type Runner interface {
	Deliver(ctx context.Context, in agent.Input, subscribe func(runID string)) (agent.RunState, error)
}

// Subscriber delivers a run's events to the call waiting for them.
type Subscriber interface {
	Subscribe(key string) *agent.Subscription
	Unsubscribe(key string, s *agent.Subscription)
}

// Sessions reads conversations.
type Sessions interface {
	GetSession(ctx context.Context, id string) (store.Session, error)
	Messages(ctx context.Context, sessionID string) ([]store.Message, error)
	// PendingApproval is store.ErrNotFound when the session waits for
	// none.
	PendingApproval(ctx context.Context, sessionID string) (store.Approval, error)
}

// Config wires the server.
type Config struct {
	Runner   Runner
	Events   Subscriber
	Sessions Sessions
	// Agents finds an agent, whose tools memory_search calls; Names lists
	// the agents served.
	Agents agent.Agents
	Names  func() []string
	// Identity derives the owner and session of a conversation.
	Identity agent.Identity
	// Stateless serves every HTTP request on its own, with no MCP session
	// (no Mcp-Session-Id): for servers where the next request may reach
	// another instance (the api function on AWS). Approvals are then
	// asked in the result, or with a multi round-trip request.
	Stateless bool
	// SessionTimeout closes MCP sessions idle this long; zero means
	// DefaultSessionTimeout.
	SessionTimeout time.Duration
	// MaxSessionsPerKey caps the MCP sessions one key holds open: a new
	// one over it is refused with 429 until one is closed or times out.
	// Zero means DefaultMaxSessionsPerKey.
	MaxSessionsPerKey int
	// KeepAlive is how long a chat call may stay silent while its run
	// works: then an empty progress notification (when the call asked for
	// progress) keeps proxies from cutting its stream (API Gateway's idle
	// timeout). Zero means 15 s.
	KeepAlive time.Duration
	// MaxBodyBytes limits request bodies; zero means 1 MiB.
	MaxBodyBytes int64
	// Version is the server version told to clients.
	Version string
	// Log receives the failures clients are told about only generically.
	Log *slog.Logger
}

// Handler is the MCP server: an http.Handler for the gateway's /mcp.
type Handler struct {
	cfg Config
	// build makes server and http on first use (make); begun says that
	// it has begun.
	build  func()
	begun  atomic.Bool
	server *mcp.Server
	http   http.Handler

	// The key of each MCP session, and the sessions each key is opening,
	// against MaxSessionsPerKey.
	mu      sync.Mutex
	owners  map[string]string
	opening map[string]int
}

// New returns the server.
func New(cfg Config) (*Handler, error) {
	if cfg.Runner == nil || cfg.Events == nil || cfg.Sessions == nil || cfg.Agents == nil || cfg.Names == nil {
		return nil, errors.New("mcpserver: Runner, Events, Sessions, Agents and Names are required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	if cfg.MaxSessionsPerKey <= 0 {
		cfg.MaxSessionsPerKey = DefaultMaxSessionsPerKey
	}
	h := &Handler{cfg: cfg, owners: map[string]string{}, opening: map[string]int{}}
	h.build = sync.OnceFunc(h.make)
	return h, nil
}

// make makes the MCP server and its HTTP handler (the tools' schemas come
// from reflection), on the first request rather than at start-up.
func (h *Handler) make() {
	h.begun.Store(true)
	h.server = mcp.NewServer(&mcp.Implementation{Name: "lambdaclaw", Title: "lambdaclaw agents", Version: h.cfg.Version}, &mcp.ServerOptions{
		Instructions: "Talk to lambdaclaw agents. agents_list names the agents you may use; chat sends a message to one and returns its reply. " +
			"A conversation is kept by the server under its session_key; history reads it back, memory_search searches what the agent remembers of you.",
		Logger: h.cfg.Log,
	})
	h.addTools()
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.server }, &mcp.StreamableHTTPOptions{
		Stateless:      h.cfg.Stateless,
		SessionTimeout: h.cfg.SessionTimeout,
		// Every request carries the API key, which a page that rebinds a
		// name to the loopback address does not have; a reverse proxy in
		// front of the local server keeps working.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        h.cfg.MaxBodyBytes,
		Logger:                     h.cfg.Log,
	})
	// The token info names the key: a session answers only the key that
	// opened it, and each call knows its caller.
	h.http = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(streamable)
}

// sessionHeader is the streamable HTTP transport's session header.
const sessionHeader = "Mcp-Session-Id"

// ServeHTTP serves /mcp. The gateway has checked the request's key
// (gateway.KeyFrom); a request without one is refused.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.build()
	k, ok := gateway.KeyFrom(r.Context())
	if h.cfg.Stateless || !ok || r.Method != http.MethodPost || r.Header.Get(sessionHeader) != "" {
		h.http.ServeHTTP(w, r)
		return
	}
	// A POST without a session opens one.
	if !h.reserve(k.ID) {
		w.Header().Set("Retry-After", "60")
		http.Error(w, fmt.Sprintf("this API key already has %d MCP sessions open, the most allowed; close one (DELETE /mcp) or wait until one has been idle for %s",
			h.cfg.MaxSessionsPerKey, h.cfg.SessionTimeout), http.StatusTooManyRequests)
		return
	}
	sw := &sessionWriter{ResponseWriter: w}
	defer func() { h.opened(k.ID, sw.id) }()
	h.http.ServeHTTP(sw, r)
}

// reserve counts a session the key is opening, unless it holds the most
// allowed already. The sessions closed since are forgotten first.
func (h *Handler) reserve(keyID string) bool {
	live := map[string]bool{}
	for ss := range h.server.Sessions() {
		live[ss.ID()] = true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.opening[keyID]
	for id, owner := range h.owners {
		switch {
		case !live[id]:
			delete(h.owners, id)
		case owner == keyID:
			n++
		}
	}
	if n >= h.cfg.MaxSessionsPerKey {
		return false
	}
	h.opening[keyID]++
	return true
}

// opened records the session a reserved request opened, if any.
func (h *Handler) opened(keyID, sessionID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.opening[keyID]--; h.opening[keyID] <= 0 {
		delete(h.opening, keyID)
	}
	if sessionID != "" {
		h.owners[sessionID] = keyID
	}
}

// sessionWriter notes the session id a response names.
type sessionWriter struct {
	http.ResponseWriter
	id string
}

func (w *sessionWriter) WriteHeader(status int) {
	w.id = w.Header().Get(sessionHeader)
	w.ResponseWriter.WriteHeader(status)
}

func (w *sessionWriter) Write(b []byte) (int, error) {
	if w.id == "" {
		w.id = w.Header().Get(sessionHeader)
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController flush the response.
func (w *sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Close ends the open MCP sessions, and with them their streams. Call it
// when the server shuts down. A server that no request made has none,
// and is not made for it.
func (h *Handler) Close() {
	if !h.begun.Load() {
		return
	}
	h.build()
	for ss := range h.server.Sessions() {
		ss.Close()
	}
}

// keyInfo is the TokenInfo.Extra entry that holds the caller's key.
const keyInfo = "lambdaclaw_key"

// verify turns the key the gateway checked into the request's token
// info.
func verify(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
	k, ok := gateway.KeyFrom(r.Context())
	if !ok {
		return nil, fmt.Errorf("%w: the request reached /mcp without a checked API key", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: k.ID, Extra: map[string]any{keyInfo: k}}, nil
}

// keyOf returns the key of a call.
func keyOf(extra *mcp.RequestExtra) (store.APIKey, error) {
	if extra != nil && extra.TokenInfo != nil {
		if k, ok := extra.TokenInfo.Extra[keyInfo].(store.APIKey); ok {
			return k, nil
		}
	}
	return store.APIKey{}, errors.New("the call carries no API key")
}
