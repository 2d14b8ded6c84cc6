package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// mcpConfig writes a config file naming the MCP everything server (stdio)
// and a server that cannot start, and returns its path.
func mcpConfig(t *testing.T, trust bool) string {
	t.Helper()
	index, err := filepath.Abs("../../tests/testdata/clients/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(index); err != nil {
		t.Fatalf("the MCP everything server is not installed: run bash tests/testdata/clients/install.sh (make test does): %v", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not on PATH: the MCP tests run the everything server with Node.js")
	}
	trustLine := ""
	if trust {
		trustLine = "      trust_read_only_hints: true\n"
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	cfg := "mcp:\n  servers:\n    everything:\n      command: node\n      args: [" + index + ", stdio]\n" + trustLine +
		"    broken:\n      command: /nonexistent/mcp-server\n"
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMCPCommands(t *testing.T) {
	agentHome(t)
	cfg := mcpConfig(t, false)
	trusted := mcpConfig(t, true)
	empty := filepath.Join(t.TempDir(), "empty.yaml")
	if err := os.WriteFile(empty, []byte("log_level: info\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want runWant
	}{
		{[]string{"mcp", "--help"}, runWant{stdout: "Usage:\n  lambdaclaw mcp list"}},
		{[]string{"mcp"}, runWant{stderr: "Usage:\n  lambdaclaw mcp list", usage: true}},
		{[]string{"mcp", "nope"}, runWant{stderr: `unknown mcp command "nope"`, usage: true}},
		{[]string{"mcp", "tools"}, runWant{stderr: "missing arguments", usage: true}},
		{[]string{"mcp", "call", "everything", "echo"}, runWant{stderr: "missing arguments", usage: true}},
		{[]string{"mcp", "list", "--config", empty}, runWant{err: "no MCP servers are configured"}},
		{[]string{"mcp", "call", "everything", "echo", "[1]", "--config", cfg}, runWant{err: "are not a JSON object"}},
		{[]string{"mcp", "call", "everything", "echo", "{", "--config", cfg}, runWant{err: "are not a JSON object"}},
		{[]string{"mcp", "tools", "nope", "--config", cfg}, runWant{err: `no MCP server "nope" (the servers are broken, everything)`}},
		{[]string{"mcp", "tools", "broken", "--config", cfg}, runWant{err: "MCP server broken is failed: start /nonexistent/mcp-server"}},
		{[]string{"mcp", "call", "everything", "echo", `{"message":"hi"}`, "--config", cfg}, runWant{stdout: "Echo: hi\n"}},
		{[]string{"mcp", "call", "everything", "everything__echo", `{}`, "--config", cfg}, runWant{err: "everything__echo: "}},
		{[]string{"mcp", "call", "everything", "nope", `{}`, "--config", cfg}, runWant{err: `MCP server everything has no tool "nope"`}},
	}
	for _, tt := range tests {
		checkRun(t, tt.args, tt.want)
	}
	// Tables: the rows wanted, with their columns' spacing normalised.
	tables := []struct {
		args []string
		rows []string
	}{
		{[]string{"mcp", "list", "--config", cfg}, []string{
			"NAME TRANSPORT STATUS TOOLS ERROR",
			"broken stdio failed 0 start /nonexistent/mcp-server: fork/exec /nonexistent/mcp-server: no such file or directory",
			"everything stdio running 1", // ten and more tools
		}},
		{[]string{"mcp", "tools", "everything", "--config", cfg}, []string{
			"TOOL APPROVAL DESCRIPTION",
			"everything__echo asks Echoes back the input string",
			"everything__get-env asks Returns all environment variables, helpful for debugging MCP server configuration",
		}},
		{[]string{"mcp", "tools", "everything", "--config", trusted}, []string{
			"everything__echo no (trusted read-only) Echoes back the input string",
			"everything__toggle-simulated-logging asks Toggles simulated, random-leveled logging on or off.",
		}},
	}
	for _, tt := range tables {
		t.Run(strings.Join(tt.args[:3], " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if err := run(context.Background(), tt.args, &stdout, &stderr); err != nil || stderr.Len() > 0 {
				t.Fatalf("run %q: %v; stderr %s", tt.args, err, stderr.String())
			}
			var lines []string
			for line := range strings.Lines(stdout.String()) {
				lines = append(lines, strings.Join(strings.Fields(line), " "))
			}
			for _, row := range tt.rows {
				if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, row) }) {
					t.Errorf("no row %q in\n%s", row, stdout.String())
				}
			}
		})
	}
}
