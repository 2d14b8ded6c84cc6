// Package agentenv carries the agents a user defines to the AWS
// deployment. The CDK app (infra/) reads the user's agents file (Parse),
// checks the agents against what the functions offer and encodes them
// (Encode) into the functions' environment variable Var; every function
// decodes them (Decode) with the same checks at cold start, then
// validates and builds them exactly as locally (config.Validate,
// agentset.Builder). An agent that cannot work on AWS is thus refused
// before anything is deployed, with the same message the functions would
// give. The file's mcp: section, the MCP servers, goes the same way
// (EncodeMCP, DecodeMCP, into MCPVar), with the cloud's rule that only
// HTTP servers work in a Lambda function; the ${VAR}s of their headers
// are secrets the stack creates and names in MCPSecretPrefix variables.
//
// It imports only the configuration and the workspace's naming rule, so
// that the CDK app, a module of its own, can use it without the AWS SDK.
package agentenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// Var is the environment variable holding the agents' definitions, a
// JSON object of config.AgentConfig by agent name.
const Var = "AGENTS_CONFIG"

// MCPVar is the environment variable holding the deployment's MCP
// servers: the mcp section of a config file as encoding/json writes a
// config.MCP (durations in nanoseconds).
const MCPVar = "MCP_CONFIG"

// MCPSecretPrefix starts the environment variables naming the Secrets
// Manager secret that holds the value of a ${VAR} of the MCP servers'
// headers: MCP_SECRET_<VAR>=<secret name or ARN>.
const MCPSecretPrefix = "MCP_SECRET_"

// The web_search tool's provider on AWS (infra's -c web_search=…):
// WebSearchProviderVar (searxng, brave or tavily) and WebSearchURLVar
// (its endpoint) in every function, which builds the tool; and, in the
// functions that run turns, WebSearchKeyVar, the Secrets Manager secret
// (name or ARN) holding Brave's or Tavily's key, read at a search.
const (
	WebSearchProviderVar = "WEB_SEARCH_PROVIDER"
	WebSearchURLVar      = "WEB_SEARCH_URL"
	WebSearchKeyVar      = "WEB_SEARCH_KEY_SECRET"
)

// MaxBytes bounds what the user defines in the functions' environment:
// Var, MCPVar and the MCPSecretPrefix variables, keys and values
// together (the CDK app checks their sum; Decode and DecodeMCP each
// value). Lambda allows 4 KB of environment per function; the functions'
// other variables take less than the rest (infra's tests check the
// largest).
const MaxBytes = 2048

// Provider names of the AWS deployment: the functions configure these two
// (shared/wiring/cloud), bedrock always and openai with the context
// options openai_base_url and openai_model.
const (
	ProviderBedrock = "bedrock"
	ProviderOpenAI  = "openai"
)

// Tools are the names of the tools the functions give their agents:
// web_fetch, load_skill, schedule, the file tools, workspace_memory and
// the memory tools (shared/wiring/cloud's tests check that they are what
// it builds), and web_search with -c web_search.
var Tools = []string{
	"web_fetch", "web_search", "load_skill", "schedule",
	"read_file", "write_file", "list_dir", "workspace_memory",
	"memory_search", "memory_get", "memory_store", "memory_forget",
}

// File is what an agents file defines: the agents with their settings,
// the MCP servers whose tools they use, and how their token budgets are
// counted.
type File struct {
	Agents  map[string]config.AgentConfig
	MCP     config.MCP
	Budgets config.Budgets
}

// Parse reads an agents file: YAML with the top-level keys agents:, mcp:
// and budgets:, exactly as in the local configuration file, so those sections can
// be copied as they are. Unknown settings are refused; so are the file's
// other sections, which the deployment sets through its own options.
func Parse(data []byte) (File, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return File{}, err
	}
	if len(doc.Content) == 0 {
		return File{Agents: map[string]config.AgentConfig{}}, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return File{}, fmt.Errorf("line %d: want a mapping with the keys \"agents\" and \"mcp\"", root.Line)
	}
	for i := 0; i < len(root.Content); i += 2 {
		if k := root.Content[i]; k.Value != "agents" && k.Value != "mcp" && k.Value != "budgets" {
			return File{}, fmt.Errorf("line %d: %s: only agents:, mcp: and budgets: are read on AWS; the deployment's providers (%s, %s), limits and channels are its context options",
				k.Line, k.Value, ProviderBedrock, ProviderOpenAI)
		}
	}
	var f struct {
		Agents  map[string]config.AgentConfig `yaml:"agents"`
		MCP     config.MCP                    `yaml:"mcp"`
		Budgets config.Budgets                `yaml:"budgets"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return File{}, err
	}
	if f.Agents == nil {
		f.Agents = map[string]config.AgentConfig{}
	}
	return File{Agents: f.Agents, MCP: f.MCP, Budgets: f.Budgets}, nil
}

// BudgetEnv returns the budgets' settings as the environment of the
// functions that run turns (BUDGET_RESET_HOUR, BUDGET_REPLY_CAP,
// BUDGET_NOTIFY_BELOW, BUDGET_NOTIFY), which shared/wiring/cloud reads;
// none for the defaults. Notices go to webhooks only on AWS.
func BudgetEnv(b config.Budgets) (map[string]string, error) {
	if err := b.Check(); err != nil {
		return nil, err
	}
	for _, n := range b.Notify {
		if !strings.HasPrefix(n, "webhook:") || strings.Contains(n, ",") {
			return nil, fmt.Errorf("budgets.notify: %q: on AWS budget notices go to webhook:<url> targets (without commas)", n)
		}
	}
	env := map[string]string{}
	if b.ResetHour != 0 {
		env["BUDGET_RESET_HOUR"] = fmt.Sprint(b.ResetHour)
	}
	if b.ReplyCap != 0 {
		env["BUDGET_REPLY_CAP"] = fmt.Sprint(b.ReplyCap)
	}
	if b.NotifyBelow != 0 {
		env["BUDGET_NOTIFY_BELOW"] = fmt.Sprint(b.NotifyBelow)
		env["BUDGET_NOTIFY"] = strings.Join(b.Notify, ",")
	}
	return env, nil
}

// Check refuses agents that cannot work on AWS: a name that is not a
// workspace's, a heartbeat more often than once a minute, a tool the
// functions do not have, and what
// config.ValidateAgents refuses, among it a provider not in providers,
// the names of the providers the deployment configures.
func Check(agents map[string]config.AgentConfig, providers []string) error {
	for _, name := range slices.Sorted(maps.Keys(agents)) {
		if err := workspace.ValidName(name); err != nil {
			return fmt.Errorf("agent %q: %w", name, err)
		}
		// EventBridge Scheduler's rate() counts whole minutes.
		if hb := agents[name].Heartbeat; hb != nil && hb.Every > 0 && time.Duration(hb.Every) < time.Minute {
			return fmt.Errorf("agent %q: heartbeat: every %s is under a minute, the shortest interval on AWS (EventBridge Scheduler)", name, time.Duration(hb.Every))
		}
		for _, t := range agents[name].Tools {
			if !slices.Contains(Tools, t) {
				return fmt.Errorf("agent %q: unknown tool %q (the tools on AWS are %s)", name, t, strings.Join(Tools, ", "))
			}
		}
	}
	return config.ValidateAgents(agents, providers)
}

// Encode checks agents (Check) and returns Var's value, "" for none.
func Encode(agents map[string]config.AgentConfig, providers []string) (string, error) {
	if err := Check(agents, providers); err != nil {
		return "", err
	}
	if len(agents) == 0 {
		return "", nil
	}
	b, err := json.Marshal(agents)
	if err != nil {
		return "", fmt.Errorf("agents: %w", err)
	}
	if len(b) > MaxBytes {
		return "", fmt.Errorf("the agents' definitions take %d bytes in %s, more than the %d the functions' environment has room for (Lambda allows 4 KB in all): define fewer agents or fewer settings; an agent without settings needs no definition, its workspace is enough (lambdaclaw agent push)",
			len(b), Var, MaxBytes)
	}
	return string(b), nil
}

// Decode reads Var's value strictly: unknown settings and anything after
// the object are refused. Then it checks the agents (Check) against the
// providers configured. An empty value defines no agents.
func Decode(value string, providers []string) (map[string]config.AgentConfig, error) {
	agents := map[string]config.AgentConfig{}
	if strings.TrimSpace(value) == "" {
		return agents, nil
	}
	if len(value) > MaxBytes {
		return nil, fmt.Errorf("%s: %d bytes, more than %d", Var, len(value), MaxBytes)
	}
	dec := json.NewDecoder(strings.NewReader(value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&agents); err != nil {
		return nil, fmt.Errorf("%s: %w", Var, err)
	}
	if agents == nil {
		return nil, fmt.Errorf("%s: want a JSON object of agents by name, not null", Var)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: more than one JSON value", Var)
	}
	if err := Check(agents, providers); err != nil {
		return nil, fmt.Errorf("%s: %w", Var, err)
	}
	return agents, nil
}

// CheckMCP refuses MCP servers the functions could not use: what
// config.ValidateMCP refuses (against the agents' mcp settings) and stdio
// servers (config.MCP.CheckCloud), which would be processes in a Lambda
// function.
func CheckMCP(m config.MCP, agents map[string]config.AgentConfig) error {
	if err := m.CheckCloud(); err != nil {
		return err
	}
	return config.ValidateMCP(m, agents)
}

// EncodeMCP checks m (CheckMCP) and returns MCPVar's value, "" for no
// servers.
func EncodeMCP(m config.MCP, agents map[string]config.AgentConfig) (string, error) {
	if err := CheckMCP(m, agents); err != nil {
		return "", err
	}
	if len(m.Servers) == 0 {
		return "", nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("mcp: %w", err)
	}
	return string(b), nil
}

// DecodeMCP reads MCPVar's value strictly, as Decode reads Var's, and
// checks the servers (CheckMCP) against the agents. An empty value
// defines no servers.
func DecodeMCP(value string, agents map[string]config.AgentConfig) (config.MCP, error) {
	var m config.MCP
	if strings.TrimSpace(value) == "" {
		return m, nil
	}
	if len(value) > MaxBytes {
		return m, fmt.Errorf("%s: %d bytes, more than %d", MCPVar, len(value), MaxBytes)
	}
	dec := json.NewDecoder(strings.NewReader(value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return config.MCP{}, fmt.Errorf("%s: %w", MCPVar, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return config.MCP{}, fmt.Errorf("%s: more than one JSON value", MCPVar)
	}
	if err := CheckMCP(m, agents); err != nil {
		return config.MCP{}, fmt.Errorf("%s: %w", MCPVar, err)
	}
	return m, nil
}

// Names returns the agents the functions serve by configuration: the
// default agent, as locally, and the agents defined, sorted. (They also
// serve every workspace of the stack's bucket.)
func Names(agents map[string]config.AgentConfig) []string {
	names := slices.Collect(maps.Keys(agents))
	if _, ok := agents[config.DefaultAgent]; !ok {
		names = append(names, config.DefaultAgent)
	}
	slices.Sort(names)
	return names
}
