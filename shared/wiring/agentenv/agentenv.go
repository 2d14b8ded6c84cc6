// Package agentenv carries the agents a user defines to the AWS
// deployment. The CDK app (infra/) reads the user's agents file (Parse),
// checks the agents against what the functions offer and encodes them
// (Encode) into the functions' environment variable Var; every function
// decodes them (Decode) with the same checks at cold start, then
// validates and builds them exactly as locally (config.Validate,
// setup.Builder). An agent that cannot work on AWS is thus refused
// before anything is deployed, with the same message the functions would
// give.
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

// MaxBytes bounds Var's value. Lambda allows 4 KB of environment per
// function, keys and values together; the functions' other variables
// take less than the rest (infra's tests check the largest).
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
// it builds).
var Tools = []string{
	"web_fetch", "load_skill", "schedule",
	"read_file", "write_file", "list_dir", "workspace_memory",
	"memory_search", "memory_get", "memory_store", "memory_forget",
}

// Parse reads an agents file: YAML with one top-level key, agents:,
// exactly as in the local configuration file, so that section can be
// copied as it is. Unknown settings are refused; so are the file's other
// sections, which the deployment sets through its own options.
func Parse(data []byte) (map[string]config.AgentConfig, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return map[string]config.AgentConfig{}, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: want a mapping with the key \"agents\"", root.Line)
	}
	for i := 0; i < len(root.Content); i += 2 {
		if k := root.Content[i]; k.Value != "agents" {
			return nil, fmt.Errorf("line %d: %s: only agents: is read on AWS; the deployment's providers (%s, %s), limits and channels are its context options",
				k.Line, k.Value, ProviderBedrock, ProviderOpenAI)
		}
	}
	var f struct {
		Agents map[string]config.AgentConfig `yaml:"agents"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, err
	}
	if f.Agents == nil {
		f.Agents = map[string]config.AgentConfig{}
	}
	return f.Agents, nil
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
