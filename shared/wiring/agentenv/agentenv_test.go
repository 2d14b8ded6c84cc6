package agentenv_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentenv"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

var providers = []string{agentenv.ProviderBedrock, agentenv.ProviderOpenAI}

// What an agents file defines reaches the functions unchanged: Parse,
// Encode and Decode keep every setting, and the functions serve the
// default agent besides.
func TestRoundTrip(t *testing.T) {
	zero, no := 0, false
	for _, tc := range []struct {
		name  string
		file  string
		want  map[string]config.AgentConfig
		names []string
	}{
		{name: "empty file", file: "", want: map[string]config.AgentConfig{}, names: []string{"default"}},
		{name: "no agents", file: "agents:\n", want: map[string]config.AgentConfig{}, names: []string{"default"}},
		{name: "agent without settings", file: "agents:\n  assistant:\n", want: map[string]config.AgentConfig{"assistant": {}},
			names: []string{"assistant", "default"}},
		{name: "every setting", file: `
agents:
  default:
    providers: [bedrock, openai]
    model: us.amazon.nova-pro-v1:0
    max_tool_iterations: 3
    tools: [web_fetch, memory_search]
    compaction_threshold: 0
    compaction_target: 5
    memory_flush: false
    client_system: replace
    budget: {daily_tokens: 1000, monthly_tokens: 20000}
    guardrails:
      deny_tools: [exec]
      filters: {"*": ['(?i)password'], web_fetch: ['\.onion']}
      scopes: {web_fetch: {url: {hosts: [example.com]}}}
  zed: {}
`, want: map[string]config.AgentConfig{
			"default": {Providers: []string{"bedrock", "openai"}, Model: "us.amazon.nova-pro-v1:0", MaxToolIterations: 3,
				Tools: []string{"web_fetch", "memory_search"}, CompactionThreshold: &zero, CompactionTarget: 5, MemoryFlush: &no, ClientSystem: "replace",
				Budget: &config.AgentBudget{DailyTokens: 1000, MonthlyTokens: 20000},
				Guardrails: &config.Guardrails{DenyTools: []string{"exec"}, Filters: map[string][]string{"*": {"(?i)password"}, "web_fetch": {`\.onion`}},
					Scopes: map[string]map[string]config.ArgScope{"web_fetch": {"url": {Hosts: []string{"example.com"}}}}}},
			"zed": {},
		}, names: []string{"default", "zed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := agentenv.Parse([]byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			agents := f.Agents
			if diff := cmp.Diff(tc.want, agents); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
			v, err := agentenv.Encode(agents, providers)
			if err != nil {
				t.Fatal(err)
			}
			if len(agents) == 0 && v != "" {
				t.Errorf("Encode of no agents = %q, want none", v)
			}
			got, err := agentenv.Decode(v, providers)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Decode(Encode) (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.names, agentenv.Names(got)); diff != "" {
				t.Errorf("Names (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{
		{"not a mapping", "- agents\n", `line 1: want a mapping with the keys "agents" and "mcp"`},
		{"another section", "agents: {}\ntelegram:\n  enabled: true\n", "line 2: telegram: only agents:, mcp: and budgets: are read on AWS"},
		{"unknown MCP setting", "mcp:\n  servers:\n    remote:\n      uri: https://x\n", "line 4: field uri not found"},
		{"unknown setting", "agents:\n  research:\n    max_iterations: 3\n", "line 3: field max_iterations not found"},
		{"wrong type", "agents:\n  research:\n    tools: web_fetch\n", "cannot unmarshal !!str `web_fetch` into []string"},
		{"not YAML", "agents: [\n", "did not find expected node content"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agentenv.Parse([]byte(tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// Check refuses for AWS what the functions could not serve, before
// Encode encodes it.
func TestEncodeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		agents    map[string]config.AgentConfig
		providers []string
		want      string
	}{
		{"provider not configured", map[string]config.AgentConfig{"research": {Providers: []string{"openai"}}}, []string{"bedrock"},
			`agent "research" uses unknown provider "openai" (the providers are bedrock)`},
		{"unknown tool", map[string]config.AgentConfig{"research": {Tools: []string{"exec"}}}, providers,
			`agent "research": unknown tool "exec" (the tools on AWS are web_fetch, web_search, load_skill,`},
		{"heartbeat under a minute", map[string]config.AgentConfig{"research": {Heartbeat: &config.Heartbeat{Every: config.Duration(30 * time.Second)}}}, providers,
			`agent "research": heartbeat: every 30s is under a minute, the shortest interval on AWS (EventBridge Scheduler)`},
		{"bad name", map[string]config.AgentConfig{"../etc": {}}, providers, `agent "../etc": agent name "../etc" is invalid`},
		{"negative compaction", map[string]config.AgentConfig{"research": {CompactionTarget: -1}}, providers,
			`agent "research": compaction settings must not be negative`},
		{"too long", map[string]config.AgentConfig{"research": {Model: strings.Repeat("m", agentenv.MaxBytes)}}, providers,
			"more than the 2048 the functions' environment has room for"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := agentenv.Encode(tc.agents, tc.providers)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Encode = %q, %v, want an error with %q", v, err, tc.want)
			}
		})
	}
}

// The mcp: section of an agents file reaches the functions unchanged:
// Parse, EncodeMCP and DecodeMCP keep every setting (durations too), and
// HeaderVars names the variables of its headers, which become secrets.
func TestMCPRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string
		want config.MCP
		vars []string
	}{
		{name: "no section", file: "agents:\n  research: {}\n"},
		{name: "every setting", file: `
mcp:
  start: eager
  start_timeout: 5s
  call_timeout: 2m
  servers:
    remote:
      url: https://mcp.example.com/mcp
      headers: {Authorization: "Bearer ${REMOTE_TOKEN}", X-Team: "${TEAM}-${REMOTE_TOKEN}"}
      trust_read_only_hints: true
    docs:
      url: http://docs.internal/mcp
agents:
  research:
    mcp: [docs]
    mcp_allow: ["docs__*"]
    mcp_deny: [docs__delete]
`, want: config.MCP{Start: "eager", StartTimeout: config.Duration(5 * time.Second), CallTimeout: config.Duration(2 * time.Minute),
			Servers: map[string]config.MCPServer{
				"remote": {URL: "https://mcp.example.com/mcp", TrustReadOnlyHints: true,
					Headers: map[string]string{"Authorization": "Bearer ${REMOTE_TOKEN}", "X-Team": "${TEAM}-${REMOTE_TOKEN}"}},
				"docs": {URL: "http://docs.internal/mcp"},
			}}, vars: []string{"REMOTE_TOKEN", "TEAM"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := agentenv.Parse([]byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, f.MCP); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.vars, f.MCP.HeaderVars()); diff != "" {
				t.Errorf("HeaderVars (-want +got):\n%s", diff)
			}
			v, err := agentenv.EncodeMCP(f.MCP, f.Agents)
			if err != nil {
				t.Fatal(err)
			}
			if len(tc.want.Servers) == 0 && v != "" {
				t.Errorf("EncodeMCP of no servers = %q, want none", v)
			}
			if strings.Contains(v, "s3cret") {
				t.Errorf("EncodeMCP = %q holds a value", v)
			}
			got, err := agentenv.DecodeMCP(v, f.Agents)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DecodeMCP(EncodeMCP) (-want +got):\n%s", diff)
			}
		})
	}
}

// CheckMCP refuses at synth, through EncodeMCP, what the functions would
// refuse at cold start: stdio servers (the cloud's rule) and what the
// local configuration refuses.
func TestEncodeMCPRefuses(t *testing.T) {
	remote := map[string]config.MCPServer{"remote": {URL: "https://x/mcp"}}
	for _, tc := range []struct {
		name   string
		mcp    config.MCP
		agents map[string]config.AgentConfig
		want   string
	}{
		{"stdio", config.MCP{Servers: map[string]config.MCPServer{"local": {Command: "node", Args: []string{"server.js"}}}}, nil,
			"config: mcp.servers.local: stdio servers (command) run only in the local server; on AWS use an HTTP server (url)"},
		{"not a URL", config.MCP{Servers: map[string]config.MCPServer{"remote": {URL: "ftp://x"}}}, nil,
			`config: mcp.servers.remote: url "ftp://x" is not an http:// or https:// URL`},
		{"bad name", config.MCP{Servers: map[string]config.MCPServer{"a__b": {URL: "https://x"}}}, nil, "config: mcp.servers.a__b: the name must be"},
		{"bad reference", config.MCP{Servers: map[string]config.MCPServer{"remote": {URL: "https://x", Headers: map[string]string{"Authorization": "${1X}"}}}}, nil,
			"config: mcp.servers.remote: headers.Authorization: ${1X} does not name an environment variable"},
		{"bad start", config.MCP{Servers: remote, Start: "soon"}, nil, `config: mcp.start is "soon"; want lazy or eager`},
		{"unknown server", config.MCP{Servers: remote}, map[string]config.AgentConfig{"research": {AgentMCP: config.AgentMCP{MCP: []string{"docs"}}}},
			`config: agent "research": mcp: unknown MCP server "docs" (the servers are remote)`},
		{"no servers", config.MCP{}, map[string]config.AgentConfig{"research": {AgentMCP: config.AgentMCP{MCP: []string{"docs"}}}},
			`config: agent "research": mcp: unknown MCP server "docs" (none are configured)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := agentenv.EncodeMCP(tc.mcp, tc.agents)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("EncodeMCP = %q, %v, want an error with %q", v, err, tc.want)
			}
		})
	}
}

func TestDecodeMCPRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, value, want string
	}{
		{"unknown setting", `{"servers":{"remote":{"uri":"https://x"}}}`, `MCP_CONFIG: json: unknown field "uri"`},
		{"two values", `{"servers":{}} {}`, "MCP_CONFIG: more than one JSON value"},
		{"stdio", `{"servers":{"local":{"command":"node"}}}`, "MCP_CONFIG: config: mcp.servers.local: stdio servers (command) run only in the local server"},
		{"too long", `{"servers":{"remote":{"url":"https://x/` + strings.Repeat("p", agentenv.MaxBytes) + `"}}}`, "MCP_CONFIG: 2091 bytes, more than 2048"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := agentenv.DecodeMCP(tc.value, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("DecodeMCP = %+v, %v, want an error with %q", m, err, tc.want)
			}
		})
	}
}

func TestBudgetEnv(t *testing.T) {
	f, err := agentenv.Parse([]byte("budgets:\n  reset_hour: 6\n  reply_cap: 1000\n  notify_below: 0.25\n  notify: ['webhook:https://hooks.example.com/x']\n"))
	if err != nil {
		t.Fatal(err)
	}
	env, err := agentenv.BudgetEnv(f.Budgets)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"BUDGET_RESET_HOUR": "6", "BUDGET_REPLY_CAP": "1000", "BUDGET_NOTIFY_BELOW": "0.25", "BUDGET_NOTIFY": "webhook:https://hooks.example.com/x"}
	if diff := cmp.Diff(want, env); diff != "" {
		t.Errorf("BudgetEnv (-want +got):\n%s", diff)
	}
	if env, err := agentenv.BudgetEnv(config.Budgets{}); err != nil || len(env) != 0 {
		t.Errorf("BudgetEnv of the defaults = %v, %v; want none", env, err)
	}
	for _, bad := range []config.Budgets{
		{NotifyBelow: 0.1, Notify: []string{"telegram:123"}},
		{ResetHour: 25},
	} {
		if _, err := agentenv.BudgetEnv(bad); err == nil {
			t.Errorf("BudgetEnv(%+v) succeeded", bad)
		}
	}
}
