// Package a2a serves lambdaclaw's agents over the Agent2Agent protocol
// (A2A, https://a2a-protocol.org), so that another agent (one built with
// Google's ADK, Amazon Bedrock AgentCore, an A2A SDK) can hand them work.
// The gateway mounts Handler at /.well-known/agent-card.json and under
// /a2a, behind its API key checks and per-key limits.
//
// Every agent a key may use is an A2A agent: its card at
// /a2a/<agent>/.well-known/agent-card.json, its JSON-RPC 2.0 endpoint at
// /a2a/<agent>; /.well-known/agent-card.json and /a2a are the default
// agent's (DefaultAgent, or the first one the key may use). Cards, like
// the rest of the API, are served to a request with the key only. A card
// is of version 1.0 for a request whose A2A-Version header says 1.0 or
// later, else of version 0.3 with version 1.0's interfaces beside (what
// both read). The endpoint speaks version 1.0 (SendMessage,
// SendStreamingMessage, GetTask, CancelTask, SubscribeToTask) and 0.3
// (message/send, message/stream, tasks/get, tasks/cancel,
// tasks/resubscribe), told apart by the method's name; streams are
// server-sent events. Push notifications and ListTasks are not served.
//
// A task is a run of the agent in the key's session named by the
// message's contextId (a new one, made up by the server, when it names
// none): the session of agent.Identity for channel "a2a", the key and
// the context. The task's id is the run's id with its context; another
// key, whose session of that context is another one, gets "task not
// found". An approval the run asks for is the state input-required, the
// question as the status's message; the next message in the context
// (with the task's id, or none) answers it with yes, no or always, and
// the same task goes on. The answer is an artifact named "answer",
// streamed as pieces appended to it, then sent whole as its last chunk.
package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/skill"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// Channel names A2A clients in session ids (agent.Identity): context c of
// key k is "a2a:<k>/<c>".
const Channel = "a2a"

// Prefix is the path of the JSON-RPC endpoints.
const Prefix = "/a2a"

// Runner hands messages to the agent loop (agent.Driver locally,
// sfn.Runner on AWS).
type Runner interface {
	Deliver(ctx context.Context, in agent.Input, subscribe func(runID string)) (agent.RunState, error)
}

// Subscriber delivers a run's events to the request waiting for them.
type Subscriber interface {
	Subscribe(key string) *agent.Subscription
	Unsubscribe(key string, s *agent.Subscription)
}

// Outcomes reads a run's state and, once it has one, its outcome
// (agent.Loop.Outcome): the answer, the failure, or the question of the
// approval it waits for.
type Outcomes interface {
	Outcome(ctx context.Context, runID string) (agent.RunState, *agent.Result, error)
}

// Stopper ends a session's head run (agent.Driver.Stop, sfn.Driver.Stop).
type Stopper interface {
	Stop(ctx context.Context, sessionID string) (bool, error)
}

// Config wires the server.
type Config struct {
	Runner   Runner
	Events   Subscriber
	Outcomes Outcomes
	Stopper  Stopper
	// HasAgent says whether an agent exists; Names lists them.
	HasAgent func(name string) bool
	Names    func() []string
	// DefaultAgent is the agent of /a2a and the card at the root, when the
	// key may use it.
	DefaultAgent string
	Identity     agent.Identity
	// Skills, when set, lists an agent's skills for its card; Describe,
	// when set, describes the agent.
	Skills   func(ctx context.Context, agent string) []skill.Skill
	Describe func(ctx context.Context, agent string) string
	// BaseURL, when set, is the URL clients reach the server at (the
	// cards' endpoints are under it); else the request's scheme and host.
	BaseURL func(r *http.Request) string
	// KeepAlive is how long a stream may stay silent: then a comment line
	// keeps proxies from cutting it, and a resubscription reads the task
	// again. Zero means 15 s.
	KeepAlive time.Duration
	// MaxBodyBytes limits request bodies; zero means 1 MiB.
	MaxBodyBytes int64
	// Version is the agents' version on their cards.
	Version string
	Log     *slog.Logger
}

// Handler serves the cards and the JSON-RPC endpoints.
type Handler struct {
	cfg Config
}

// New returns the server.
func New(cfg Config) (*Handler, error) {
	if cfg.Runner == nil || cfg.Events == nil || cfg.Outcomes == nil || cfg.Stopper == nil || cfg.HasAgent == nil || cfg.Names == nil {
		return nil, errors.New("a2a: Runner, Events, Outcomes, Stopper, HasAgent and Names are required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = 15 * time.Second
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	return &Handler{cfg: cfg}, nil
}

// ServeHTTP serves CardPath, Prefix and what is under it. The gateway has
// checked the request's key (gateway.KeyFrom).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k, ok := gateway.KeyFrom(r.Context())
	if !ok {
		http.Error(w, "no API key", http.StatusUnauthorized)
		return
	}
	name, isCard, found := h.route(k, r.URL.Path)
	switch {
	case !found:
		http.Error(w, "no such A2A agent, or this key may not use it", http.StatusNotFound)
	case isCard && r.Method == http.MethodGet:
		w.Header().Set("Vary", VersionHeader)
		writeJSON(w, http.StatusOK, h.card(r, name, h.baseURL(r)+Prefix+"/"+name))
	case !isCard && r.Method == http.MethodPost:
		h.serveRPC(w, r, k, name)
	default:
		w.Header().Set("Allow", map[bool]string{true: "GET", false: "POST"}[isCard])
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// route finds the agent a path is about, and whether it asks for the
// card: CardPath and Prefix are the default agent's, Prefix/<agent> and
// Prefix/<agent>CardPath the named one's.
func (h *Handler) route(k store.APIKey, path string) (name string, isCard, found bool) {
	rest, isCard := strings.CutSuffix(path, CardPath)
	if isCard && rest == "" {
		rest = Prefix
	}
	if rest == Prefix || rest == Prefix+"/" {
		name, found = h.defaultAgent(k)
		return name, isCard, found
	}
	name, ok := strings.CutPrefix(rest, Prefix+"/")
	if !ok || name == "" || strings.Contains(name, "/") || !h.cfg.HasAgent(name) || !k.Allows(name) {
		return "", isCard, false
	}
	return name, isCard, true
}

// defaultAgent is DefaultAgent when the key may use it, else the first
// agent it may use.
func (h *Handler) defaultAgent(k store.APIKey) (string, bool) {
	if h.cfg.DefaultAgent != "" && h.cfg.HasAgent(h.cfg.DefaultAgent) && k.Allows(h.cfg.DefaultAgent) {
		return h.cfg.DefaultAgent, true
	}
	names := slices.Sorted(slices.Values(h.cfg.Names()))
	for _, n := range names {
		if k.Allows(n) {
			return n, true
		}
	}
	return "", false
}

// serveRPC answers one JSON-RPC request to agent name.
func (h *Handler) serveRPC(w http.ResponseWriter, r *http.Request, k store.APIKey, name string) {
	var req rpcRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	if err := dec.Decode(&req); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeRPC(w, nil, nil, rpcErr(CodeInvalidRequest, "the request is larger than %d bytes", h.cfg.MaxBodyBytes))
			return
		}
		writeRPC(w, nil, nil, rpcErr(CodeParse, "the body is not JSON: %v", err))
		return
	}
	if req.JSONRPC != "2.0" || !validID(req.ID) {
		writeRPC(w, req.ID, nil, rpcErr(CodeInvalidRequest, `a request has "jsonrpc": "2.0" and an id, a string or a number`))
		return
	}
	m, ok := methods[req.Method]
	if !ok {
		switch req.Method {
		case "ListTasks", "GetExtendedAgentCard", "agent/getAuthenticatedExtendedCard":
			writeRPC(w, req.ID, nil, rpcErr(CodeUnsupported, "%s is not served", req.Method))
		case "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig", "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig",
			"tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get", "tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete":
			writeRPC(w, req.ID, nil, rpcErr(CodePushNotSupported, "push notifications are not served"))
		default:
			writeRPC(w, req.ID, nil, rpcErr(CodeMethodNotFound, "unknown method %q", req.Method))
		}
		return
	}
	c := &call{h: h, k: k, agent: name, d: m.d, id: req.ID}
	switch m.op {
	case opSend, opStream:
		c.send(w, r, req.Params, m.op == opStream)
	case opGet:
		c.get(w, r, req.Params)
	case opCancel:
		c.cancel(w, r, req.Params)
	case opSubscribe:
		c.subscribe(w, r, req.Params)
	}
}

// writeRPC writes a JSON-RPC response: result, or err.
func writeRPC(w http.ResponseWriter, id json.RawMessage, result any, err *RPCError) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	resp := rpcResponse{JSONRPC: "2.0", ID: id, Result: result, Error: err}
	writeJSON(w, http.StatusOK, resp)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
