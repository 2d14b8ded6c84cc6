// Package mcp gives agents the tools of MCP servers, through the official
// Go SDK (github.com/modelcontextprotocol/go-sdk). A Registry holds the
// configured servers: commands speaking MCP on stdio, whose environment is
// only what their configuration names plus PATH, HOME and LANG, and
// streamable HTTP endpoints, with a fallback to the older HTTP+SSE
// transport. Each server's tools are tool.Tools named <server>__<tool>
// (sanitised to what model APIs accept); a server that crashes is started
// again with a growing delay, one that fails to start is logged and has
// no tools, and a server's notifications/tools/list_changed refreshes its
// tools.
//
// The registry's tools change while the process runs; an agent follows
// them through a Toolset (tool.Live), which the loop resolves at every
// step: its fixed tools plus the current tools of its servers, as one
// immutable tool.Registry rebuilt only when something changed.
package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Server is one configured MCP server: Command (with Args and Env) for a
// stdio server, URL (with Headers) for an HTTP one. Values of Env and
// Headers may name environment variables as ${VAR}, read through
// Config.Getenv when the server starts.
type Server struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
	// TrustReadOnlyHints lets the tools the server marks readOnlyHint
	// run without a person's approval.
	TrustReadOnlyHints bool
}

// Config configures a Registry.
type Config struct {
	Servers []Server
	// StartTimeout bounds how long Start, and a Toolset's first use of a
	// server, wait for it to start (default 10s).
	StartTimeout time.Duration
	// CallTimeout bounds one tool call (default 60s).
	CallTimeout time.Duration
	// Backoff is the delay before a failed or crashed server is started
	// again (default 1s); it doubles at each failure in a row up to
	// MaxBackoff (default 1m).
	Backoff, MaxBackoff time.Duration
	// Getenv reads the variables named in Env and Headers, and PATH,
	// HOME and LANG for stdio servers (default os.Getenv).
	Getenv func(string) string
	// HTTPClient makes the requests to HTTP servers (default: one with
	// no overall timeout, as SSE streams last).
	HTTPClient *http.Client
	// MaxResultBytes bounds the text made of one tool result (default
	// 1 MiB); the loop cuts it further to its own limit.
	MaxResultBytes int
	Log            *slog.Logger
}

// Registry holds the configured MCP servers.
type Registry struct {
	cfg     Config
	servers map[string]*server
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	// gen counts changes of any server's state or tools.
	gen     atomic.Uint64
	mu      sync.Mutex
	changed chan struct{}
}

// New returns a registry of the servers; none is started yet (Start,
// Toolset, Ensure).
func New(cfg Config) (*Registry, error) {
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = 10 * time.Second
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 60 * time.Second
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.MaxBackoff < cfg.Backoff {
		cfg.MaxBackoff = max(time.Minute, cfg.Backoff)
	}
	if cfg.MaxResultBytes <= 0 {
		cfg.MaxResultBytes = 1 << 20
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &Registry{cfg: cfg, servers: map[string]*server{}, ctx: ctx, cancel: cancel, changed: make(chan struct{})}
	for _, s := range cfg.Servers {
		if _, dup := r.servers[s.Name]; dup {
			cancel()
			return nil, fmt.Errorf("mcp: server %q configured twice", s.Name)
		}
		if (s.Command == "") == (s.URL == "") {
			cancel()
			return nil, fmt.Errorf("mcp: server %q needs a command or a url", s.Name)
		}
		r.servers[s.Name] = newServer(r, s)
	}
	return r, nil
}

// Names returns the servers' names, sorted.
func (r *Registry) Names() []string { return slices.Sorted(maps.Keys(r.servers)) }

// Start starts every server and waits, at most StartTimeout, until each
// has started or failed: the eager start.
func (r *Registry) Start() { r.Ensure(r.Names()...) }

// Ensure starts the named servers that were not started yet and waits, at
// most StartTimeout in all, for those starting the first time. Unknown
// names are ignored.
func (r *Registry) Ensure(names ...string) {
	var waits []<-chan struct{}
	for _, n := range names {
		if s, ok := r.servers[n]; ok {
			waits = append(waits, s.launch())
		}
	}
	if len(waits) == 0 {
		return
	}
	timer := time.NewTimer(r.cfg.StartTimeout)
	defer timer.Stop()
	for _, w := range waits {
		select {
		case <-w:
		case <-timer.C:
			return
		case <-r.ctx.Done():
			return
		}
	}
}

// Close stops every server and waits for them to end.
func (r *Registry) Close() error {
	r.cancel()
	r.wg.Wait()
	return nil
}

// Changed returns a channel closed at the next change of a server's state
// or tools.
func (r *Registry) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

func (r *Registry) bump() {
	r.gen.Add(1)
	r.mu.Lock()
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
}

// State is a server's state.
type State string

// Server states.
const (
	Stopped  State = "stopped"
	Starting State = "starting"
	Running  State = "running"
	Failed   State = "failed"
)

// Status is what Status tells of a server.
type Status struct {
	Name string
	// Transport is stdio, streamable-http or sse.
	Transport string
	State     State
	Tools     int
	// Restarts counts the starts after the first.
	Restarts int
	// Err is why the server last failed, or "".
	Err string
}

// Status returns the servers' states, sorted by name.
func (r *Registry) Status() []Status {
	out := make([]Status, 0, len(r.servers))
	for _, n := range r.Names() {
		out = append(out, r.servers[n].status())
	}
	return out
}

// Tools returns the current tools of the named server, sorted by name,
// and whether there is such a server.
func (r *Registry) Tools(name string) ([]*Tool, bool) {
	s, ok := r.servers[name]
	if !ok {
		return nil, false
	}
	return s.current(), true
}
