package main

import (
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/nettest"
)

func TestMCPServeRefuses(t *testing.T) {
	t.Setenv("LAMBDACLAW_API_KEY", "")
	t.Setenv("LAMBDACLAW_ADDR", "")
	refused := nettest.RefusedURL(t)
	for _, tt := range []struct {
		args []string
		err  string
	}{
		{[]string{"mcp", "serve"}, "--stdio is required"},
		{[]string{"mcp", "serve", "--stdio"}, "no API key: pass --key or set LAMBDACLAW_API_KEY"},
		{[]string{"mcp", "serve", "--stdio", "--key", "lc_x", "--addr", "ftp://host"}, "the scheme must be http or https"},
		{[]string{"mcp", "serve", "--stdio", "--key", "lc_x", "--addr", "http://"}, "want HOST:PORT or a URL"},
		{[]string{"mcp", "serve", "--stdio", "--key", "lc_x", "--addr", refused}, "cannot reach lambdaclaw at " + refused + "/mcp"},
	} {
		checkRun(t, tt.args, runWant{err: tt.err})
	}
	checkRun(t, []string{"mcp"}, runWant{usage: true, stderr: "\n  lambdaclaw mcp serve --stdio"})
	checkRun(t, []string{"mcp", "frobnicate"}, runWant{usage: true, stderr: `unknown mcp command "frobnicate"`})
	checkRun(t, []string{"mcp", "serve", "extra"}, runWant{usage: true, stderr: `unexpected argument "extra"`})
	checkRun(t, []string{"mcp", "serve", "--help"}, runWant{stdout: "usage: lambdaclaw mcp serve --stdio [flags]"})
}

func TestMCPURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080":        "http://127.0.0.1:8080/mcp",
		"http://localhost:9/":   "http://localhost:9/mcp",
		"https://h.example/mcp": "https://h.example/mcp",
		"https://abc.execute-api.eu-west-1.amazonaws.com/prod":     "https://abc.execute-api.eu-west-1.amazonaws.com/prod/mcp",
		"https://h.example/base/?q=1#f":                            "https://h.example/base/mcp",
		"https://abc.execute-api.eu-west-1.amazonaws.com/prod/v1/": "https://abc.execute-api.eu-west-1.amazonaws.com/prod/mcp",
	} {
		if got, err := mcpURL(addr); err != nil || got != want {
			t.Errorf("mcpURL(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
}
