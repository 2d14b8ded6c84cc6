package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

func TestLoadA2A(t *testing.T) {
	dir, path := writeConfig(t, "a2a:\n  call_timeout: 30s\n  agents:\n    research:\n      url: https://agents.example.com/a2a/research/.well-known/agent-card.json\n      token: {env: RESEARCH_TOKEN}\n      read_only: true\n    plain:\n      url: http://10.0.0.5:8080/.well-known/agent-card.json\n      header: X-Api-Key\n")
	c, err := config.Load(path, env(map[string]string{"LAMBDACLAW_HOME": dir, "RESEARCH_TOKEN": "tok"}))
	if err != nil {
		t.Fatal(err)
	}
	r := c.A2A.Agents["research"]
	if r.Token.Value() != "tok" || !r.ReadOnly || c.A2A.Timeout() != 30*time.Second || c.A2A.Agents["plain"].Header != "X-Api-Key" {
		t.Errorf("a2a = %+v", c.A2A)
	}
	if (config.A2A{}).Timeout() != 120*time.Second {
		t.Error("the default call timeout is not 120s")
	}
}

func TestLoadA2AErrors(t *testing.T) {
	ag := func(body string) string { return "a2a:\n  agents:\n" + body }
	tests := []struct{ name, yaml, want string }{
		{"negative timeout", "a2a:\n  call_timeout: -1s\n", "a2a.call_timeout must not be negative"},
		{"bad name", ag("    my.agent: {url: 'https://h/c.json'}\n"), "a2a.agents.my.agent: the name must be"},
		{"separator in name", ag("    a__b: {url: 'https://h/c.json'}\n"), `without "__"`},
		{"no url", ag("    x: {read_only: true}\n"), `a2a.agents.x: url "" is not`},
		{"url scheme", ag("    x: {url: 'file:///etc/passwd'}\n"), `url "file:///etc/passwd" is not an http:// or https:// URL`},
		{"user in url", ag("    x: {url: 'https://u:p@h/c.json'}\n"), "is not an http:// or https:// URL"},
		{"bad header", ag("    x: {url: 'https://h/c.json', header: 'X Key'}\n"), `header "X Key" is not a header name`},
		{"literal token", ag("    x: {url: 'https://h/c.json', token: sk-123}\n"), "secrets are not written in config files"},
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
