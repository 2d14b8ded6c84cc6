package config_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

func TestLoadMCP(t *testing.T) {
	yaml := `mcp:
  start: eager
  call_timeout: 5s
  servers:
    everything:
      command: node
      args: [server.js, stdio]
      env: {TOKEN: "${TOKEN}"}
      trust_read_only_hints: true
    remote:
      url: https://host/mcp
      headers: {Authorization: "Bearer ${REMOTE_TOKEN}"}
agents:
  default:
    mcp: [everything]
    mcp_allow: ["everything__*"]
    mcp_deny: ["*__delete*"]
`
	dir, path := writeConfig(t, yaml)
	c, err := config.Load(path, env(map[string]string{"LAMBDACLAW_HOME": dir}))
	if err != nil {
		t.Fatal(err)
	}
	want := config.MCP{Start: "eager", CallTimeout: config.Duration(5 * time.Second), Servers: map[string]config.MCPServer{
		"everything": {Command: "node", Args: []string{"server.js", "stdio"}, Env: map[string]string{"TOKEN": "${TOKEN}"}, TrustReadOnlyHints: true},
		"remote":     {URL: "https://host/mcp", Headers: map[string]string{"Authorization": "Bearer ${REMOTE_TOKEN}"}},
	}}
	if diff := cmp.Diff(want, c.MCP); diff != "" {
		t.Errorf("mcp (-want +got):\n%s", diff)
	}
	if start, call := c.MCP.Timeouts(); start != 10*time.Second || call != 5*time.Second || !c.MCP.Eager() {
		t.Errorf("Timeouts = %s, %s, Eager %v; want 10s, 5s, true", start, call, c.MCP.Eager())
	}
	wantAgent := config.AgentMCP{MCP: []string{"everything"}, MCPAllow: []string{"everything__*"}, MCPDeny: []string{"*__delete*"}}
	if diff := cmp.Diff(wantAgent, c.Agents["default"].AgentMCP); diff != "" {
		t.Errorf("agent's mcp (-want +got):\n%s", diff)
	}
	// The agents' settings travel to AWS as JSON (wiring/agentenv).
	b, err := json.Marshal(c.Agents["default"])
	if err != nil || !strings.Contains(string(b), `"mcp":["everything"],"mcp_allow":["everything__*"],"mcp_deny":["*__delete*"]`) {
		t.Errorf("agent as JSON = %s, %v", b, err)
	}
	if err := c.MCP.CheckCloud(); err == nil || !strings.Contains(err.Error(), "mcp.servers.everything: stdio servers (command) run only in the local server") {
		t.Errorf("CheckCloud = %v, want the stdio server refused", err)
	}
}

func TestLoadMCPErrors(t *testing.T) {
	srv := func(body string) string { return "mcp:\n  servers:\n" + body }
	tests := []struct{ name, yaml, want string }{
		{"bad start", "mcp:\n  start: later\n", `mcp.start is "later"; want lazy or eager`},
		{"negative timeout", "mcp:\n  call_timeout: -1s\n", "timeouts must not be negative"},
		{"neither", srv("    x: {args: [a]}\n"), "mcp.servers.x: set command (a stdio server) or url (an HTTP server)"},
		{"both", srv("    x: {command: a, url: 'https://h'}\n"), "not both"},
		{"bad name", srv("    my.server: {command: a}\n"), "mcp.servers.my.server: the name must be"},
		{"separator in name", srv("    a__b: {command: a}\n"), "without \"__\""},
		{"url scheme", srv("    x: {url: 'ftp://h/mcp'}\n"), `url "ftp://h/mcp" is not an http:// or https:// URL`},
		{"headers on stdio", srv("    x: {command: a, headers: {A: b}}\n"), "headers are for HTTP servers"},
		{"env on http", srv("    x: {url: 'https://h', env: {A: b}}\n"), "env and args are for stdio servers"},
		{"bad env name", srv("    x: {command: a, env: {'A-B': b}}\n"), `env: "A-B" is not a variable name`},
		{"bad reference", srv("    x: {command: a, env: {A: '${not a var}'}}\n"), "${not a var} does not name an environment variable"},
		{"unknown field", srv("    x: {command: a, enviroment: {}}\n"), "enviroment"},
		{"unknown server", "agents:\n  default:\n    mcp: [nope]\n", `agent "default": mcp: unknown MCP server "nope" (none are configured)`},
		{"bad pattern", srv("    x: {command: a}\n") + "agents:\n  default:\n    mcp_deny: ['[']\n", `MCP tool pattern "["`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, path := writeConfig(t, tt.yaml)
			_, err := config.Load(path, env(map[string]string{"LAMBDACLAW_HOME": dir}))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// An agent with mcp: [] has no MCP servers, also once its settings went
// through JSON to AWS; one without the setting has them all (nil).
func TestAgentMCPNone(t *testing.T) {
	dir, path := writeConfig(t, "agents:\n  none:\n    mcp: []\n  all:\n    model: m\n")
	c, err := config.Load(path, env(map[string]string{"LAMBDACLAW_HOME": dir}))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c.Agents)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]config.AgentConfig
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, agents := range []map[string]config.AgentConfig{c.Agents, back} {
		if none := agents["none"].MCP; none == nil || len(none) != 0 {
			t.Errorf("mcp: [] became %#v (JSON %s)", none, b)
		}
		if all := agents["all"].MCP; all != nil {
			t.Errorf("no mcp setting became %#v (JSON %s)", all, b)
		}
	}
}
