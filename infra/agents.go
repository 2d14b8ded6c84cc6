package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentenv"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// The agents of a deployment are those a file defines, with their
// settings (-c agents_file=PATH): the agents: section of a lambdaclaw
// configuration file, as locally, and its mcp: section, the MCP servers
// (mcp.go). The app checks them with the
// functions' own code (shared/wiring/agentenv, through the replace
// directive of go.mod) and passes them on in AGENTS_CONFIG, so an agent
// the functions could not serve fails the synthesis, not their cold
// start.

// providers are the names of the providers the functions configure:
// bedrock always, openai with openai_base_url and openai_model.
func (c Config) providers() []string {
	p := []string{agentenv.ProviderBedrock}
	if c.OpenAIModel != "" {
		p = append(p, agentenv.ProviderOpenAI)
	}
	return p
}

// readAgents reads and checks the agents file (Config.AgentsFile) into
// c.Agents and c.AgentsConfig, and c.MCP and c.MCPConfig. A path starting with ~/ is in the home
// directory; a relative one is taken from the working directory (the top
// of the repository under make deploy).
func (c *Config) readAgents() error {
	if c.AgentsFile == "" {
		return nil
	}
	path := c.AgentsFile
	if rest, ok := strings.CutPrefix(path, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return fmt.Errorf("context %s=%q: %w", ctxAgentsFile, path, err)
		}
		path = filepath.Join(home, rest)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("context %s: %w", ctxAgentsFile, err)
	}
	f, err := agentenv.Parse(b)
	if err != nil {
		return fmt.Errorf("context %s: %s: %w", ctxAgentsFile, path, err)
	}
	c.Agents, c.MCP = f.Agents, f.MCP
	if c.BudgetEnv, err = agentenv.BudgetEnv(f.Budgets); err != nil {
		return fmt.Errorf("context %s: %s: %w", ctxAgentsFile, path, err)
	}
	if c.AgentsConfig, err = agentenv.Encode(c.Agents, c.providers()); err != nil {
		return fmt.Errorf("context %s: %s: %w", ctxAgentsFile, path, err)
	}
	if c.MCPConfig, err = agentenv.EncodeMCP(c.MCP, c.Agents); err != nil {
		return fmt.Errorf("context %s: %s: %w", ctxAgentsFile, path, err)
	}
	return nil
}

// agentNames are the agents the functions serve by configuration, for
// the Agents output: the default agent and the agents defined.
func (c Config) agentNames() string {
	return strings.Join(agentenv.Names(c.Agents), ",")
}

// agentModels are the models the agents' definitions give Bedrock: the
// model of every agent whose provider chain has bedrock (all of them
// when it names none). Their functions may call them, too.
func (c Config) agentModels() []string {
	var models []string
	for _, a := range c.Agents {
		if a.Model != "" && usesBedrock(a) && !slices.Contains(models, a.Model) {
			models = append(models, a.Model)
		}
	}
	slices.Sort(models)
	return models
}

func usesBedrock(a config.AgentConfig) bool {
	return len(a.Providers) == 0 || slices.Contains(a.Providers, agentenv.ProviderBedrock)
}
