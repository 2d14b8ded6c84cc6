package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
)

func loadYAML(t *testing.T, text string) (*Config, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return Load(p, func(k string) string {
		if k == "LAMBDACLAW_HOME" {
			return t.TempDir()
		}
		return ""
	})
}

func TestSandboxSettings(t *testing.T) {
	cfg, err := loadYAML(t, `
sandbox:
  backend: bubblewrap
  idle: 5m
  limits: {memory: 256MB, wall_time: 20s, output: 64KB}
  deny: ["rm -rf *"]
agents:
  coder:
    sandbox:
      limits: {memory: 1GB, pids: 64, disk: 1GB}
      allow: ["python3 *"]
      deny: ["curl *"]
`)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Sandbox.Backend != SandboxBubblewrap || time.Duration(cfg.Sandbox.Idle) != 5*time.Minute {
		t.Errorf("sandbox section %+v", cfg.Sandbox)
	}
	type settings struct {
		Limits      sandbox.Limits
		Allow, Deny []string
	}
	tests := []struct {
		agent string
		want  settings
	}{
		{"default", settings{Limits: sandbox.Limits{Memory: 256 << 20, CPUs: 1, Pids: 256, FileSize: 64 << 20, Output: 64 << 10, WallTime: 20 * time.Second, Disk: 256 << 20},
			Deny: []string{"rm -rf *"}}},
		{"coder", settings{Limits: sandbox.Limits{Memory: 1 << 30, CPUs: 1, Pids: 64, FileSize: 64 << 20, Output: 64 << 10, WallTime: 20 * time.Second, Disk: 1 << 30},
			Allow: []string{"python3 *"}, Deny: []string{"rm -rf *", "curl *"}}},
	}
	if got := cfg.LongestWallTime(); got != 20*time.Second {
		t.Errorf("LongestWallTime = %s, want the global 20s", got)
	}
	cfg.Agents["coder"].Sandbox.Limits.WallTime = Duration(45 * time.Second)
	if got := cfg.LongestWallTime(); got != 45*time.Second {
		t.Errorf("LongestWallTime = %s, want coder's 45s", got)
	}
	cfg.Agents["coder"].Sandbox.Limits.WallTime = 0
	for _, tt := range tests {
		t.Run(tt.agent, func(t *testing.T) {
			var got settings
			got.Limits, got.Allow, got.Deny = cfg.SandboxSettings(tt.agent)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("SandboxSettings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSandboxInvalid(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"backend", "sandbox: {backend: docker}", `sandbox.backend is "docker"`},
		{"size", "sandbox: {limits: {memory: lots}}", `"lots" is not a size`},
		{"too little memory", "sandbox: {limits: {memory: 1MB}}", "memory 1048576 is under 16 MB"},
		{"too little disk", "sandbox: {limits: {disk: 64KB}}", "disk 65536 is under 1 MB"},
		{"wall time over a tool call", "sandbox: {limits: {wall_time: 5m}}", "wall_time 5m0s is over 50s"},
		{"negative", "sandbox: {limits: {pids: -1}}", "must not be negative"},
		{"empty rule", "sandbox: {deny: ['']}", "rule is empty"},
		{"agent's limits", "agents: {a: {sandbox: {limits: {pids: 2}}}}", `agent "a": sandbox: limits: pids 2 is under 8`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadYAML(t, tt.yaml)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want Size
		ok   bool
	}{
		{"1024", 1024, true}, {"64KB", 64 << 10, true}, {"512mb", 512 << 20, true}, {"1GiB", 1 << 30, true}, {"2 G", 2 << 30, true},
		{"", 0, false}, {"1TB", 0, false}, {"-5MB", 0, false}, {"99999999999999GB", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}
