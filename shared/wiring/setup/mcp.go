package setup

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/mcp"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentset"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// MCP builds the registry of the configured MCP servers (the mcp
// section), nil when there are none. Their secrets (${VAR} in env and
// headers) are read from getenv when each server starts; the log names
// the servers and their transports, never their env or headers. The
// caller starts the servers (Registry.Start) when the section says eager,
// and closes the registry on shutdown.
func MCP(m config.MCP, getenv func(string) string, log *slog.Logger) (*mcp.Registry, error) {
	if len(m.Servers) == 0 {
		return nil, nil
	}
	start, call := m.Timeouts()
	cfg := mcp.Config{StartTimeout: start, CallTimeout: call, Getenv: getenv, Log: log}
	for _, name := range slices.Sorted(maps.Keys(m.Servers)) {
		s := m.Servers[name]
		cfg.Servers = append(cfg.Servers, mcp.Server{Name: name, Command: s.Command, Args: s.Args, Env: s.Env,
			URL: s.URL, Headers: s.Headers, TrustReadOnlyHints: s.TrustReadOnlyHints})
		transport := "stdio"
		if !s.Stdio() {
			transport = "http"
		}
		log.Info("MCP server configured", "mcp_server", name, "transport", transport, "start", m.Start)
	}
	reg, err := mcp.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return reg, nil
}

// UseMCP gives b's agents the tools of the registry's servers: each
// agent those of the servers its mcp setting names (all by default),
// filtered by its mcp_allow and mcp_deny patterns, resolved at every
// step of its runs (mcp.Toolset), so that it follows servers that start,
// crash and change their tools.
func UseMCP(b *agentset.Builder, reg *mcp.Registry) {
	b.UseLiveTools(func(ac config.AgentConfig, fixed *tool.Registry) tool.Live { return reg.Toolset(fixed, mcpFilter(ac)) })
}

// mcpFilter is an agent's share of the MCP tools.
func mcpFilter(ac config.AgentConfig) mcp.Filter {
	return mcp.Filter{Servers: ac.MCP, Allow: ac.MCPAllow, Deny: ac.MCPDeny}
}
