package config

import (
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// MCP start modes.
const (
	MCPStartLazy  = "lazy"
	MCPStartEager = "eager"
)

// MCP configures the MCP servers whose tools agents use (adapters/mcp).
// Each server's tools appear to agents as <server>__<tool>.
type MCP struct {
	// Servers are the MCP servers by name.
	Servers map[string]MCPServer `yaml:"servers" json:"servers,omitempty"`
	// Start is "lazy" (the default: a server starts when an agent that
	// may use it first runs) or "eager" (at startup).
	Start string `yaml:"start" json:"start,omitempty"`
	// StartTimeout bounds how long a run (lazy) or the startup (eager)
	// waits for a server's first start (default 10s); a server slower
	// than that goes on starting without holding anything up.
	StartTimeout Duration `yaml:"start_timeout" json:"start_timeout,omitempty"`
	// CallTimeout bounds one tool call (default 60s).
	CallTimeout Duration `yaml:"call_timeout" json:"call_timeout,omitempty"`
}

// MCPServer is one MCP server: a command speaking MCP on its standard
// input and output (stdio), or the URL of a streamable HTTP endpoint (with
// a fallback to the older HTTP+SSE transport). Values of Env and Headers
// may name environment variables as ${VAR}, read when the server starts
// and never logged.
type MCPServer struct {
	Command string            `yaml:"command" json:"command,omitempty"`
	Args    []string          `yaml:"args" json:"args,omitempty"`
	Env     map[string]string `yaml:"env" json:"env,omitempty"`
	URL     string            `yaml:"url" json:"url,omitempty"`
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// TrustReadOnlyHints believes the server's hints: a tool it marks
	// readOnlyHint is a read (it runs at every autonomy without
	// approval), one it marks idempotentHint may run again after a
	// restart. Otherwise every tool is an external side effect.
	TrustReadOnlyHints bool `yaml:"trust_read_only_hints" json:"trust_read_only_hints,omitempty"`
}

// Stdio reports whether the server is a command.
func (s MCPServer) Stdio() bool { return s.Command != "" }

// AgentMCP is an agent's share of the MCP servers' tools.
type AgentMCP struct {
	// MCP names the servers whose tools the agent gets; empty: all.
	MCP []string `yaml:"mcp" json:"mcp,omitzero"`
	// MCPAllow, when set, keeps only the MCP tools whose names
	// (<server>__<tool>) match one of its patterns (path.Match: * and ?);
	// MCPDeny then drops those matching one of its patterns.
	MCPAllow []string `yaml:"mcp_allow" json:"mcp_allow,omitempty"`
	MCPDeny  []string `yaml:"mcp_deny" json:"mcp_deny,omitempty"`
}

// mcpServerName is the form of a server's name: the prefix of its tools'
// names, without the separator "__".
var mcpServerName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_-]{0,31}$`) })

// envRef is a ${VAR} reference in an MCP server's env or headers.
var envRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([^}]*)\}`) })

// envName is the form of an environment variable's name.
var envName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// Eager reports whether servers start at startup.
func (m MCP) Eager() bool { return m.Start == MCPStartEager }

// Timeouts returns StartTimeout and CallTimeout with their defaults.
func (m MCP) Timeouts() (start, call time.Duration) {
	start, call = 10*time.Second, 60*time.Second
	if m.StartTimeout > 0 {
		start = time.Duration(m.StartTimeout)
	}
	if m.CallTimeout > 0 {
		call = time.Duration(m.CallTimeout)
	}
	return start, call
}

// validate checks the section.
func (m *MCP) validate() error {
	switch m.Start {
	case "", MCPStartLazy, MCPStartEager:
	default:
		return fmt.Errorf("config: mcp.start is %q; want lazy or eager", m.Start)
	}
	if m.StartTimeout < 0 || m.CallTimeout < 0 {
		return fmt.Errorf("config: mcp: timeouts must not be negative")
	}
	for _, name := range slices.Sorted(maps.Keys(m.Servers)) {
		if err := m.Servers[name].check(name); err != nil {
			return err
		}
	}
	return nil
}

func (s MCPServer) check(name string) error {
	at := "config: mcp.servers." + name
	if !mcpServerName().MatchString(name) || strings.Contains(name, "__") {
		return fmt.Errorf("%s: the name must be 1 to 32 letters, digits, _ or -, starting with a letter or digit, without \"__\" (the separator of <server>__<tool>)", at)
	}
	switch {
	case s.Command != "" && s.URL != "":
		return fmt.Errorf("%s: set command (a stdio server) or url (an HTTP server), not both", at)
	case s.Command == "" && s.URL == "":
		return fmt.Errorf("%s: set command (a stdio server) or url (an HTTP server)", at)
	case s.Command != "" && len(s.Headers) > 0:
		return fmt.Errorf("%s: headers are for HTTP servers (url); a command gets env", at)
	case s.URL != "" && (len(s.Env) > 0 || len(s.Args) > 0):
		return fmt.Errorf("%s: env and args are for stdio servers (command); an HTTP server gets headers", at)
	}
	if s.URL != "" {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s: url %q is not an http:// or https:// URL", at, s.URL)
		}
	}
	for k, v := range s.Env {
		if !envName().MatchString(k) {
			return fmt.Errorf("%s: env: %q is not a variable name", at, k)
		}
		if err := checkRefs(v); err != nil {
			return fmt.Errorf("%s: env.%s: %w", at, k, err)
		}
	}
	for k, v := range s.Headers {
		if err := checkRefs(v); err != nil {
			return fmt.Errorf("%s: headers.%s: %w", at, k, err)
		}
	}
	return nil
}

// checkRefs checks the ${VAR} references of a value.
func checkRefs(v string) error {
	for _, m := range envRef().FindAllStringSubmatch(v, -1) {
		if !envName().MatchString(m[1]) {
			return fmt.Errorf("${%s} does not name an environment variable", m[1])
		}
	}
	return nil
}

// CheckCloud refuses what MCP cannot do in a Lambda function: a stdio
// server, which would be a process in the function.
func (m MCP) CheckCloud() error {
	for _, name := range slices.Sorted(maps.Keys(m.Servers)) {
		if m.Servers[name].Stdio() {
			return fmt.Errorf("config: mcp.servers.%s: stdio servers (command) run only in the local server; on AWS use an HTTP server (url)", name)
		}
	}
	return nil
}

// ValidateMCP checks m and the agents' MCP settings against its servers,
// as Validate does. The AWS deployment checks its servers with it before
// they are deployed (wiring/agentenv).
func ValidateMCP(m MCP, agents map[string]AgentConfig) error {
	if err := m.validate(); err != nil {
		return err
	}
	return validateAgentsMCP(agents, m.Servers)
}

// HeaderVars returns the names of the variables the HTTP servers' headers
// name as ${VAR}, sorted, each once.
func (m MCP) HeaderVars() []string {
	var names []string
	for _, s := range m.Servers {
		for _, v := range s.Headers {
			for _, ref := range envRef().FindAllStringSubmatch(v, -1) {
				if !slices.Contains(names, ref[1]) {
					names = append(names, ref[1])
				}
			}
		}
	}
	slices.Sort(names)
	return names
}

// validateAgentsMCP checks the agents' MCP settings against the servers.
func validateAgentsMCP(agents map[string]AgentConfig, servers map[string]MCPServer) error {
	for _, name := range slices.Sorted(maps.Keys(agents)) {
		a := agents[name]
		for _, s := range a.MCP {
			if _, ok := servers[s]; !ok {
				known := "none are configured"
				if len(servers) > 0 {
					known = "the servers are " + strings.Join(slices.Sorted(maps.Keys(servers)), ", ")
				}
				return fmt.Errorf("config: agent %q: mcp: unknown MCP server %q (%s)", name, s, known)
			}
		}
		for _, p := range slices.Concat(a.MCPAllow, a.MCPDeny) {
			if _, err := path.Match(p, ""); err != nil {
				return fmt.Errorf("config: agent %q: MCP tool pattern %q: %w", name, p, err)
			}
		}
	}
	return nil
}
