// Package gateway is lambdaclaw's HTTP API: the OpenAI-compatible chat
// completions endpoint (JSON and SSE streaming), embeddings, the model
// list (one model per agent), the health check, the web console when one
// is given (Config.Console) and, in the local server, the WebSocket
// endpoint /ws. The same http.Handler runs in the local server and behind
// API Gateway.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/wsproto"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// Channel names the OpenAI-compatible HTTP API in reply targets
// (agent.Reply.Channel).
const Channel = "http"

// SessionHeader makes a chat request stateful: requests with the same value
// continue the same conversation, whose history is kept by the server.
const SessionHeader = "X-Lambdaclaw-Session-Key"

// Runner hands messages to the agent loop.
type Runner interface {
	Deliver(ctx context.Context, in agent.Input, subscribe func(runID string)) (agent.RunState, error)
	// Reset starts a session afresh; it is agent.ErrBusy while the session
	// has a run queued, running or waiting for an approval.
	Reset(ctx context.Context, sessionID string) error
}

// Subscriber delivers a run's events to the request waiting for them.
type Subscriber interface {
	Subscribe(key string) *agent.Subscription
	// Attach delivers the events for key to an existing subscription too.
	Attach(key string, s *agent.Subscription)
	Unsubscribe(key string, s *agent.Subscription)
}

// RunFinder looks runs up by id.
type RunFinder interface {
	GetRun(ctx context.Context, id string) (store.Run, error)
}

// KeyFinder looks up API keys by hash.
type KeyFinder interface {
	KeyByHash(ctx context.Context, hash string) (store.APIKey, error)
}

// Limiter is a per-key rate limiter.
type Limiter interface {
	Allow(key string, limit int) (bool, time.Duration)
}

// Config wires the gateway.
type Config struct {
	// Components, when set, reports the state of the parts that start
	// after the server listens, by name (the sandbox: starting, ok or
	// unavailable); /health shows them.
	Components func() map[string]string
	Runner     Runner
	Events     Subscriber
	Keys       KeyFinder
	Limiter    Limiter
	// Agents lists the agent names served as models.
	Agents func() []string
	// HasAgent, when set, says whether an agent exists; requests ask it
	// instead of looking through Agents, which then only answers
	// /v1/models. It suits a set of agents that changes while the server
	// runs, where a listing costs more than a lookup.
	HasAgent func(name string) bool
	// Identity derives the session of a stateful request.
	Identity agent.Identity
	// Runs, when set, lets /ws recognise a repeated client message id whose
	// run the gateway no longer remembers (after a restart); without it
	// only the ids of the last 65536 messages are recognised.
	Runs RunFinder
	// KeepAlive is how long a stream may stay silent while its run works:
	// then a comment line keeps proxies (API Gateway's idle timeout) from
	// cutting it. Zero means 15 s.
	KeepAlive time.Duration
	// Metrics, when set, serves GET /metrics (Prometheus's text format)
	// to admin keys (store.APIKey.Admin); other keys get 403.
	Metrics http.Handler
	// Responses stores the responses of the Responses API, and Threads
	// reads the runs they point at; /v1/responses is served when both
	// are set.
	Responses store.Responses
	Threads   Threads
	// MaxBodyBytes limits request bodies and WebSocket frames; zero means
	// 1 MiB.
	MaxBodyBytes int64
	// Media bounds the images, audio and files of a message (zero
	// fields: chat.DefaultLimits); MaxBodyBytes bounds them first.
	Media chat.Limits
	// MaxConcurrentPerKey caps the requests one API key has in flight;
	// more are answered 429. Zero means no limit.
	MaxConcurrentPerKey int
	// MaxWebSocketsPerKey caps the /ws connections one API key holds open;
	// an upgrade over it is refused with 429. Zero means no limit.
	MaxWebSocketsPerKey int
	// Log receives the failures clients are told about only generically,
	// each with its request id.
	Log *slog.Logger
	// Embedder makes the vectors of POST /v1/embeddings. Every agent
	// shares it (the one embedding model of the configuration, which
	// agent memory uses too); nil answers that endpoint 400.
	Embedder Embedder
	// Created says when an agent was created: the created time of its
	// entry in /v1/models. Nil, or a zero time, gives 0 (not known).
	Created func(agent string) time.Time
	// MCP, when set, serves /mcp (shared/channels/mcpserver) behind the
	// same key checks and limits as the API; KeyFrom gives it the key.
	MCP http.Handler
	// A2A, when set, serves the Agent2Agent protocol (shared/channels/a2a):
	// the agent cards at /.well-known/agent-card.json and under /a2a/, and
	// the JSON-RPC endpoints /a2a and /a2a/<agent>, behind the same key
	// checks and limits as the API; KeyFrom gives it the key.
	A2A http.Handler
	// Console, when set, is the web console: its pages at /, /favicon.ico and under
	// /console/, and its JSON API under ConsolePrefix, whose requests are authenticated and
	// limited as every other.
	Console Console
}

// ConsolePrefix is the path of the web console's JSON API.
const ConsolePrefix = "/v1/lambdaclaw/"

// Console is the web console (package console).
type Console interface {
	// ServeHTTP serves the console's static pages.
	http.Handler
	// ServeAPI answers a request of the console's API for the key k.
	ServeAPI(w http.ResponseWriter, r *http.Request, k store.APIKey)
}

// Gateway serves the HTTP API.
type Gateway struct {
	cfg     Config
	mux     *http.ServeMux
	started time.Time

	// The WebSocket connections, closed by Shutdown.
	wsMu     sync.Mutex
	wsClosed bool
	wsStop   chan struct{}
	wsConns  sync.WaitGroup
	// wsSessions are the open connections by the sessions they talk in,
	// for check-ins delivered to WebSocket users (checkin.go).
	wsSessions map[string]map[*wsConn]bool
	// ws answers the frames of every connection.
	ws *wsproto.Server

	// What each key holds open, against MaxConcurrentPerKey and
	// MaxWebSocketsPerKey.
	requests, websockets *perKey
}

// New returns the API handler.
func New(cfg Config) (*Gateway, error) {
	if cfg.Runner == nil || cfg.Events == nil || cfg.Keys == nil || cfg.Agents == nil {
		return nil, errors.New("gateway: Runner, Events, Keys and Agents are required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	g := &Gateway{
		cfg: cfg, mux: http.NewServeMux(), started: time.Now(), wsStop: make(chan struct{}), wsSessions: map[string]map[*wsConn]bool{},
		requests: newPerKey(cfg.MaxConcurrentPerKey, "concurrency_limit_exceeded",
			"this API key already has %d requests in flight, the most allowed; retry when one has finished"),
		websockets: newPerKey(cfg.MaxWebSocketsPerKey, "websocket_limit_exceeded",
			"this API key already has %d WebSocket connections open, the most allowed; close one before opening another"),
	}
	g.ws = &wsproto.Server{
		HasAgent: g.hasAgent, Identity: cfg.Identity, Limiter: cfg.Limiter, Runs: cfg.Runs,
		Recent: wsproto.NewRecent(dedupSize), Log: cfg.Log,
	}
	g.mux.HandleFunc("GET /health", g.health)
	g.mux.HandleFunc("GET /v1/models", g.authed(g.requests, g.models))
	g.mux.HandleFunc("GET /v1/models/{model...}", g.authed(g.requests, g.oneModel))
	g.mux.HandleFunc("POST /v1/chat/completions", g.authed(g.requests, g.completions))
	g.mux.HandleFunc("POST /v1/embeddings", g.authed(g.requests, g.embeddings))
	if cfg.Metrics != nil {
		g.mux.HandleFunc("GET /metrics", g.authed(g.requests, adminOnly(cfg.Metrics.ServeHTTP)))
	}
	if cfg.Responses != nil && cfg.Threads != nil {
		g.mux.HandleFunc("POST /v1/responses", g.authed(g.requests, g.responses))
		g.mux.HandleFunc("GET /v1/responses/{id}", g.authed(g.requests, g.getResponse))
		g.mux.HandleFunc("DELETE /v1/responses/{id}", g.authed(g.requests, g.deleteResponse))
	}
	if cfg.MCP != nil {
		g.mux.HandleFunc("/mcp", g.authed(g.requests, cfg.MCP.ServeHTTP))
	}
	if cfg.A2A != nil {
		g.mux.HandleFunc("GET /.well-known/agent-card.json", g.authed(g.requests, cfg.A2A.ServeHTTP))
		g.mux.HandleFunc("/a2a", g.authed(g.requests, cfg.A2A.ServeHTTP))
		g.mux.HandleFunc("/a2a/", g.authed(g.requests, cfg.A2A.ServeHTTP))
	}
	// An upgraded connection counts as a WebSocket, not as a request.
	g.mux.HandleFunc("GET /ws", g.authed(g.websockets, g.serveWS))
	if cfg.Console != nil {
		g.mux.HandleFunc(ConsolePrefix, g.authed(g.requests, func(w http.ResponseWriter, r *http.Request) {
			cfg.Console.ServeAPI(w, r, keyOf(r))
		}))
		g.mux.Handle("GET /{$}", cfg.Console)
		g.mux.Handle("GET /console/", cfg.Console)
		g.mux.Handle("GET /favicon.ico", cfg.Console)
	}
	g.mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "not_found", fmt.Sprintf("unknown endpoint %s %s", r.Method, r.URL.Path))
	})
	return g, nil
}

// ServeHTTP implements http.Handler. Every response carries the request's
// id in X-Request-Id.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := newRequestID(r.Header.Get(RequestIDHeader))
	w.Header().Set(RequestIDHeader, id)
	g.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
}

// health answers 200 while the server serves, with the state of the
// components that start after it listens.
func (g *Gateway) health(w http.ResponseWriter, r *http.Request) {
	h := struct {
		Status     string            `json:"status"`
		Uptime     int               `json:"uptime_seconds"`
		Components map[string]string `json:"components,omitempty"`
	}{Status: "ok", Uptime: int(time.Since(g.started).Seconds())}
	if g.cfg.Components != nil {
		h.Components = g.cfg.Components()
	}
	writeJSON(w, http.StatusOK, h)
}

type ctxKey struct{}

// authed checks the bearer key, takes one of what the key may hold open
// (a request or a WebSocket connection) until h returns, and checks the
// key's rate limit before h runs.
func (g *Gateway) authed(open *perKey, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearer(r)
		if !ok {
			writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "missing API key: send Authorization: Bearer <key> (create one with `lambdaclaw keys create`)")
			return
		}
		var k store.APIKey
		var err error = store.ErrNotFound
		if apikey.Plausible(token) {
			k, err = g.cfg.Keys.KeyByHash(r.Context(), apikey.Hash(token))
		}
		if err != nil || k.RevokedAt != nil {
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				g.log(r).Error("key lookup failed", "error", err)
				writeError(w, http.StatusInternalServerError, "server_error", "internal_error", "could not check the API key")
				return
			}
			writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "invalid API key")
			return
		}
		if !open.acquire(k.ID) {
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusTooManyRequests, "rate_limit_error", open.code, fmt.Sprintf(open.full, open.max))
			return
		}
		defer open.release(k.ID)
		if g.cfg.Limiter != nil {
			if ok, wait := g.cfg.Limiter.Allow(k.ID, k.RatePerMinute); !ok {
				secs := int((wait + time.Second - 1) / time.Second)
				w.Header().Set("Retry-After", strconv.Itoa(secs))
				writeError(w, http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded", fmt.Sprintf("rate limit of %d requests per minute reached; retry in %d s", k.RatePerMinute, secs))
				return
			}
		}
		h(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, k)))
	}
}

// adminOnly serves h to admin keys only: the metrics of every key's
// turns, tools and tokens are the operator's, not a user's.
func adminOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !keyOf(r).Admin {
			writeError(w, http.StatusForbidden, "permission_error", "admin_required",
				"only an admin key may read "+r.URL.Path+" (create one with `lambdaclaw keys create --admin`)")
			return
		}
		h(w, r)
	}
}

// bearer returns the request's API key: its Authorization header's
// bearer token or, for a WebSocket upgrade (a browser cannot set headers
// there), the key a client offers as a subprotocol (wsproto.KeyFromProtocols).
func bearer(r *http.Request) (string, bool) {
	if token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && token != "" {
		return token, true
	}
	if r.URL.Path == "/ws" {
		return wsproto.KeyFromProtocols(r.Header.Values("Sec-WebSocket-Protocol"))
	}
	return "", false
}

func keyOf(r *http.Request) store.APIKey {
	k, _ := KeyFrom(r.Context())
	return k
}

// KeyFrom returns the API key the gateway checked for the request whose
// context ctx is, to a handler it serves (Config.MCP).
func KeyFrom(ctx context.Context) (store.APIKey, bool) {
	k, ok := ctx.Value(ctxKey{}).(store.APIKey)
	return k, ok
}

// agentFor resolves a model name to an agent the key may use.
func (g *Gateway) agentFor(k store.APIKey, model string) (string, bool) {
	name := strings.TrimPrefix(model, "lambdaclaw/")
	return name, k.Allows(name) && g.hasAgent(name)
}

// hasAgent says whether the agent name exists.
func (g *Gateway) hasAgent(name string) bool {
	if g.cfg.HasAgent != nil {
		return g.cfg.HasAgent(name)
	}
	return slices.Contains(g.cfg.Agents(), name)
}

// model is one entry of the model list: an agent.
type model struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

// modelOf returns the entry of agent name: owned by lambdaclaw, created
// when Config.Created says, which stays the same from one request, and
// one server, to the next.
func (g *Gateway) modelOf(name string) model {
	m := model{ID: name, Object: "model", OwnedBy: "lambdaclaw"}
	if g.cfg.Created != nil {
		if t := g.cfg.Created(name); !t.IsZero() {
			m.Created = t.Unix()
		}
	}
	return m
}

func (g *Gateway) models(w http.ResponseWriter, r *http.Request) {
	k := keyOf(r)
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, a := range g.cfg.Agents() {
		if k.Allows(a) {
			list.Data = append(list.Data, g.modelOf(a))
		}
	}
	writeJSON(w, http.StatusOK, list)
}

// oneModel answers OpenAI's "retrieve model" for an agent.
func (g *Gateway) oneModel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("model")
	if name, ok := g.agentFor(keyOf(r), id); ok {
		writeJSON(w, http.StatusOK, g.modelOf(name))
		return
	}
	writeError(w, http.StatusNotFound, "invalid_request_error", "model_not_found", fmt.Sprintf("the model %q does not exist or this key may not use it", id))
}

// readBody reads the request's body, of at most MaxBodyBytes. When it
// cannot, it answers the request (413, 408 or 400) and reports false.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.cfg.MaxBodyBytes))
	if err == nil {
		return body, true
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large", fmt.Sprintf("request body is larger than %d bytes", g.cfg.MaxBodyBytes))
	case errors.Is(err, os.ErrDeadlineExceeded):
		writeError(w, http.StatusRequestTimeout, "invalid_request_error", "request_timeout", "the request body did not arrive in time")
	default:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_body", "could not read the request body")
	}
	return nil, false
}

// autonomyOf reads a key's autonomy level; unknown values get the safest.
func autonomyOf(k store.APIKey) tool.Autonomy {
	a, err := tool.ParseAutonomy(k.Autonomy)
	if err != nil {
		return tool.ReadOnly
	}
	return a
}

type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// writeError writes OpenAI's error JSON. A server error's message ends
// with the request id, which the log line about the failure carries too.
func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	if status >= http.StatusInternalServerError {
		msg = withRequestID(msg, w.Header().Get(RequestIDHeader))
	}
	writeJSON(w, status, struct {
		Error apiError `json:"error"`
	}{apiError{Message: msg, Type: typ, Code: code}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":{"message":"encoding failed","type":"server_error"}}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}
