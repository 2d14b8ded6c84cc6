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
  zed: {}
`, want: map[string]config.AgentConfig{
			"default": {Providers: []string{"bedrock", "openai"}, Model: "us.amazon.nova-pro-v1:0", MaxToolIterations: 3,
				Tools: []string{"web_fetch", "memory_search"}, CompactionThreshold: &zero, CompactionTarget: 5, MemoryFlush: &no, ClientSystem: "replace"},
			"zed": {},
		}, names: []string{"default", "zed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			agents, err := agentenv.Parse([]byte(tc.file))
			if err != nil {
				t.Fatal(err)
			}
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
		{"not a mapping", "- agents\n", `line 1: want a mapping with the key "agents"`},
		{"another section", "agents: {}\ntelegram:\n  enabled: true\n", "line 2: telegram: only agents: is read on AWS"},
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
			`agent "research": unknown tool "exec" (the tools on AWS are web_fetch, load_skill,`},
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
