package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/mcp"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentset"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/setup"
)

// mcpCommands are the subcommands of `lambdaclaw mcp`; a new one is one
// entry here and its line in the usage.
var mcpCommands = map[string]func(ctx context.Context, args []string, stdout, stderr io.Writer) error{
	"list":  mcpList,
	"tools": mcpTools,
	"call":  mcpCall,
	"serve": func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		return mcpServeCommand(ctx, args, mcpInput, stdout, stderr)
	},
}

// mcpCommand runs `lambdaclaw mcp …`. list, tools and call start the
// configured MCP servers themselves, outside any running gateway, to
// debug a server without a chat; serve relays a desktop client's stdio to
// the gateway's /mcp (mcpserve.go).
func mcpCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sub, err := subcommand("mcp", slices.Sorted(maps.Keys(mcpCommands)), args, stdout, stderr)
	if err != nil {
		return err
	}
	return mcpCommands[sub](ctx, args[1:], stdout, stderr)
}

// serveMCPServers gives the agents of builder the tools of the configured
// MCP servers and returns what starts them when mcp.start is eager, which
// serve runs once it listens, and what stops them.
func serveMCPServers(cfg *config.Config, builder *agentset.Builder, log *slog.Logger) (start, stop func(), err error) {
	reg, err := setup.MCP(cfg.MCP, os.Getenv, log)
	if err != nil || reg == nil {
		return func() {}, func() {}, err
	}
	setup.UseMCP(builder, reg)
	start = func() {}
	if cfg.MCP.Eager() {
		start = reg.Start
	}
	return start, func() { reg.Close() }, nil
}

// mcpRegistry reads the configuration and builds its MCP servers' registry
// (none started). Only errors are logged, on stderr: why a server failed
// is in what the commands print.
func mcpRegistry(load func() (*config.Config, error), stderr io.Writer) (*mcp.Registry, error) {
	cfg, err := load()
	if err != nil {
		return nil, err
	}
	reg, err := setup.MCP(cfg.MCP, os.Getenv, newLogger(stderr, "error"))
	if err != nil {
		return nil, err
	}
	if reg == nil {
		return nil, errors.New("no MCP servers are configured (the mcp.servers section of the config file)")
	}
	return reg, nil
}

func mcpList(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("mcp list", "", "Start the configured MCP servers and list them: transport, status, number of tools and why a server failed.", stderr)
	load := fs.withConfig()
	if _, err := fs.parse(args, 0, 0, stdout); err != nil {
		return err
	}
	reg, err := mcpRegistry(load, stderr)
	if err != nil {
		return err
	}
	defer reg.Close()
	reg.Start()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTRANSPORT\tSTATUS\tTOOLS\tERROR")
	for _, s := range reg.Status() {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.Name, s.Transport, s.State, s.Tools, oneLine(s.Err, 200))
	}
	return tw.Flush()
}

// mcpServerTools builds the configured MCP servers' registry, starts the
// server name and returns its tools and what stops the servers.
func mcpServerTools(load func() (*config.Config, error), name string, stderr io.Writer) ([]*mcp.Tool, func(), error) {
	reg, err := mcpRegistry(load, stderr)
	if err != nil {
		return nil, nil, err
	}
	tools, err := mcpServer(reg, name)
	if err != nil {
		reg.Close()
		return nil, nil, err
	}
	return tools, func() { reg.Close() }, nil
}

// mcpServer starts the registry's server name and returns its tools.
func mcpServer(reg *mcp.Registry, name string) ([]*mcp.Tool, error) {
	if !slices.Contains(reg.Names(), name) {
		return nil, fmt.Errorf("no MCP server %q (the servers are %s)", name, strings.Join(reg.Names(), ", "))
	}
	reg.Ensure(name)
	for _, s := range reg.Status() {
		if s.Name == name && s.State != mcp.Running {
			return nil, fmt.Errorf("MCP server %s is %s: %s", name, s.State, s.Err)
		}
	}
	tools, _ := reg.Tools(name)
	return tools, nil
}

func mcpTools(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("mcp tools", "NAME", "Start the MCP server NAME and list its tools as agents see them: the name, whether a call asks\nfor approval under supervised autonomy, and the description.", stderr)
	load := fs.withConfig()
	pos, err := fs.parse(args, 1, 1, stdout)
	if err != nil {
		return err
	}
	tools, stop, err := mcpServerTools(load, pos[0], stderr)
	if err != nil {
		return err
	}
	defer stop()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tAPPROVAL\tDESCRIPTION")
	for _, t := range tools {
		approval := "asks"
		if tool.Judge(t.Policy().Effect, tool.Supervised) == tool.Allow {
			approval = "no (trusted read-only)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", t.Definition().Name, approval, oneLine(t.Definition().Description, 100))
	}
	return tw.Flush()
}

func mcpCall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("mcp call", "NAME TOOL JSON", "Start the MCP server NAME and call its tool TOOL (its own name, or the name agents see)\nwith the arguments JSON, an object; print the result. A result the server marks as an error\nis printed on stderr, and the command fails.", stderr)
	load := fs.withConfig()
	pos, err := fs.parse(args, 3, 3, stdout)
	if err != nil {
		return err
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(pos[2]), &obj); err != nil || obj == nil {
		return fmt.Errorf("the arguments %q are not a JSON object such as '{\"message\":\"hi\"}'", oneLine(pos[2], 80))
	}
	tools, stop, err := mcpServerTools(load, pos[0], stderr)
	if err != nil {
		return err
	}
	defer stop()
	i := slices.IndexFunc(tools, func(t *mcp.Tool) bool { return t.Remote() == pos[1] || t.Definition().Name == pos[1] })
	if i < 0 {
		return fmt.Errorf("MCP server %s has no tool %q (lambdaclaw mcp tools %s lists them)", pos[0], pos[1], pos[0])
	}
	out, err := tools[i].Call(ctx, tool.Env{}, bytes.TrimSpace([]byte(pos[2])))
	if err != nil {
		return fmt.Errorf("%s: %w", tools[i].Definition().Name, err)
	}
	fmt.Fprintln(stdout, out)
	return nil
}
