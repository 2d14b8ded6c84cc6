// Package tool defines what an agent tool is, the autonomy levels that gate
// tools, and the registry the agent loop sends to the model.
package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
)

// Autonomy is how much an agent may do without asking a person.
type Autonomy int

// Autonomy levels, from least to most trusted.
const (
	ReadOnly Autonomy = iota
	Supervised
	Full
)

var autonomyNames = []string{"read_only", "supervised", "full"}

func (a Autonomy) String() string {
	if a < 0 || int(a) >= len(autonomyNames) {
		return fmt.Sprintf("autonomy(%d)", int(a))
	}
	return autonomyNames[a]
}

// ParseAutonomy reads "read_only", "supervised" or "full".
func ParseAutonomy(s string) (Autonomy, error) {
	for i, n := range autonomyNames {
		if s == n {
			return Autonomy(i), nil
		}
	}
	return 0, fmt.Errorf("unknown autonomy level %q (want read_only, supervised or full)", s)
}

// MarshalText writes the level's name.
func (a Autonomy) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads a level's name.
func (a *Autonomy) UnmarshalText(b []byte) error {
	v, err := ParseAutonomy(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// Policy is a tool's declaration of what it does, from which the loop
// derives who may call it and what a restart does to an unfinished call.
type Policy struct {
	// Effect is what a call does (External when left unset).
	Effect Effect
	// ActionArg names the argument that chooses a tool's action, and
	// Actions the effect of each action, for a tool whose actions differ
	// (read or write MEMORY.md): each call is judged by its action's
	// effect, an unknown action by Effect.
	ActionArg string
	Actions   map[string]Effect
	// Idempotent says that running a call twice does what running it once
	// does: a call interrupted by a restart may run again.
	Idempotent bool
	// Timeout bounds one call when positive, instead of the loop's
	// (agent.Loop.ToolTimeout): a tool that waits for a remote worker
	// to start, such as exec on Fargate.
	Timeout time.Duration
}

// Env is the context a tool call runs in.
type Env struct {
	Agent     string
	SessionID string
	// Owner is the principal the session belongs to; empty for agent-wide
	// work.
	Owner string
	// Workspace is the agent's workspace, nil when it has none.
	Workspace filestore.FS
	// Channel and ReplyTo are where the run's answer goes (its
	// agent.Reply): "tg" and the chat id for a Telegram chat.
	Channel string
	ReplyTo string
	// Tools runs the agent's other tools for this call (the sandbox's tool
	// bridge), through the same policy, events and scrubbing as the
	// model's calls; nil where there is none.
	Tools Caller
}

// Caller runs an agent's tools on behalf of one of its tools. It is what a
// sandbox's tool bridge calls (sandbox.Bridge).
type Caller interface {
	// Tools describes the tools that may be called, sorted by name: those
	// the policy lets run without asking a person.
	Tools() []chat.ToolDef
	// Call runs the tool name; an error is the refusal to show the caller.
	Call(ctx context.Context, name string, args json.RawMessage) (string, error)
}

// Tool is one capability an agent can call.
type Tool interface {
	Definition() chat.ToolDef
	Policy() Policy
	// Call runs the tool. args is the model's JSON, untrusted. An error is
	// reported to the model as the tool's result, so it should read well.
	Call(ctx context.Context, env Env, args json.RawMessage) (string, error)
}

// Availability is implemented by a tool that can turn out not to work
// after it was registered, such as exec, whose sandbox is probed once the
// server listens. The loop does not offer a tool while Unavailable
// reports why it cannot run.
type Availability interface {
	Unavailable() error
}

// Registry holds the tools an agent can use, by name. It does not change
// once made.
type Registry struct {
	tools map[string]Tool
	defs  []chat.ToolDef
}

// NewRegistry returns a registry of the given tools. Names must be unique.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{tools: make(map[string]Tool, len(tools)), defs: make([]chat.ToolDef, 0, len(tools))}
	for _, t := range tools {
		name := t.Definition().Name
		if _, dup := r.tools[name]; dup {
			return nil, fmt.Errorf("tool %q registered twice", name)
		}
		r.tools[name] = t
		r.defs = append(r.defs, t.Definition())
	}
	sort.Slice(r.defs, func(i, j int) bool { return r.defs[i].Name < r.defs[j].Name })
	return r, nil
}

// Get returns the named tool.
func (r *Registry) Get(name string) (Tool, bool) {
	t, ok := r.tools[name]
	return t, ok
}

// Live is a set of tools that changes while the process runs, such as
// the tools of MCP servers, which come and go with their servers. Current
// returns the set as it is now: an immutable Registry, the same one until
// the set changes, which the loop resolves afresh at every step.
type Live interface {
	Current() *Registry
}

// Definitions returns every tool's definition, sorted by name so that the
// request sent to the model is stable. It is the same slice on every call,
// which providers may cache the encoding of: callers must not change it.
func (r *Registry) Definitions() []chat.ToolDef { return r.defs }
