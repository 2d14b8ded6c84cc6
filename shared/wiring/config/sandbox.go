package config

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
)

// The sandbox backends of the exec tool.
const (
	// SandboxBubblewrap runs commands under bubblewrap on this machine
	// (the local default).
	SandboxBubblewrap = "bubblewrap"
	// SandboxFargate runs them in ECS Fargate tasks (the AWS default).
	SandboxFargate = "fargate"
	// SandboxNone offers no exec tool.
	SandboxNone = "none"
)

// MaxSandboxWallTime is the longest wall_time: the loop gives one tool
// call at most a minute, and a command cut by its own limit reads better
// than a call cut by the loop's.
const MaxSandboxWallTime = 50 * time.Second

// Sandbox configures sandboxed code execution (the exec tool).
type Sandbox struct {
	// Backend is bubblewrap, fargate or none; empty is the environment's
	// default (bubblewrap locally).
	Backend string `yaml:"backend"`
	// Idle is how long a session's sandbox is kept warm after its last
	// command; zero is the backend's default (10m locally).
	Idle Duration `yaml:"idle"`
	// Limits, Allow and Deny apply to every agent; an agent's own
	// (agents.<name>.sandbox) override them.
	Limits SandboxLimits `yaml:"limits"`
	Allow  []string      `yaml:"allow"`
	Deny   []string      `yaml:"deny"`
}

// AgentSandbox is one agent's sandbox settings: its limits replace the
// global ones field by field, its allow rules the global allow rules, and
// its deny rules add to the global ones.
type AgentSandbox struct {
	Limits SandboxLimits `yaml:"limits" json:"limits"`
	Allow  []string      `yaml:"allow" json:"allow,omitempty"`
	Deny   []string      `yaml:"deny" json:"deny,omitempty"`
}

// SandboxLimits bound one command; zero fields are not set.
type SandboxLimits struct {
	// Memory is what each process may allocate, like "512MB".
	Memory Size `yaml:"memory" json:"memory,omitempty"`
	CPUs   int  `yaml:"cpus" json:"cpus,omitempty"`
	Pids   int  `yaml:"pids" json:"pids,omitempty"`
	// FileSize is the largest file written; Output how much of stdout
	// and of stderr is kept.
	FileSize Size     `yaml:"file_size" json:"file_size,omitempty"`
	Output   Size     `yaml:"output" json:"output,omitempty"`
	WallTime Duration `yaml:"wall_time" json:"wall_time,omitempty"`
	// Disk is what a command may write in all: its /tmp and what it
	// adds to /workspace (which also counts against the workspace quota).
	Disk Size `yaml:"disk" json:"disk,omitempty"`
}

// Size is a number of bytes written as an integer or with a unit: "64KB",
// "512MB", "1GB" (powers of 1024).
type Size int64

var sizePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\d+)\s*([KMG]I?B?)?$`) })

// ParseSize reads a size.
func ParseSize(s string) (Size, error) {
	m := sizePattern().FindStringSubmatch(strings.ToUpper(strings.TrimSpace(s)))
	if m == nil {
		return 0, fmt.Errorf("%q is not a size such as 512MB", s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size such as 512MB", s)
	}
	shift := map[byte]uint{'K': 10, 'M': 20, 'G': 30}
	if m[2] != "" {
		sh := shift[m[2][0]]
		if n > (1<<62)>>sh {
			return 0, fmt.Errorf("%q is too large", s)
		}
		n <<= sh
	}
	return Size(n), nil
}

// UnmarshalYAML reads a size.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*s = v
	return nil
}

func (l SandboxLimits) limits() sandbox.Limits {
	return sandbox.Limits{Memory: int64(l.Memory), CPUs: l.CPUs, Pids: l.Pids, FileSize: int64(l.FileSize),
		Output: int64(l.Output), WallTime: time.Duration(l.WallTime), Disk: int64(l.Disk)}
}

// over returns l with the fields o sets replaced by o's.
func (l SandboxLimits) over(o SandboxLimits) SandboxLimits {
	pick := func(a, b int64) int64 {
		if b != 0 {
			return b
		}
		return a
	}
	return SandboxLimits{
		Memory: Size(pick(int64(l.Memory), int64(o.Memory))), CPUs: int(pick(int64(l.CPUs), int64(o.CPUs))),
		Pids: int(pick(int64(l.Pids), int64(o.Pids))), FileSize: Size(pick(int64(l.FileSize), int64(o.FileSize))),
		Output: Size(pick(int64(l.Output), int64(o.Output))), WallTime: Duration(pick(int64(l.WallTime), int64(o.WallTime))),
		Disk: Size(pick(int64(l.Disk), int64(o.Disk))),
	}
}

func (l SandboxLimits) check() error {
	if l.Memory < 0 || l.CPUs < 0 || l.Pids < 0 || l.FileSize < 0 || l.Output < 0 || l.WallTime < 0 || l.Disk < 0 {
		return fmt.Errorf("limits must not be negative")
	}
	full := l.limits().WithDefaults()
	if err := full.Check(); err != nil {
		return fmt.Errorf("limits: %w", err)
	}
	if full.WallTime > MaxSandboxWallTime {
		return fmt.Errorf("limits: wall_time %s is over %s, the most a tool call may take", full.WallTime, MaxSandboxWallTime)
	}
	return nil
}

func checkRules(allow, deny []string) error {
	for _, r := range slices.Concat(allow, deny) {
		if strings.TrimSpace(r) == "" {
			return fmt.Errorf("an allow or deny rule is empty")
		}
	}
	return nil
}

// validateSandbox checks the sandbox section; ValidateAgents checks the
// agents' own settings.
func (c *Config) validateSandbox() error {
	s := &c.Sandbox
	switch s.Backend {
	case "", SandboxBubblewrap, SandboxFargate, SandboxNone:
	default:
		return fmt.Errorf("config: sandbox.backend is %q; want bubblewrap, fargate or none", s.Backend)
	}
	if s.Idle < 0 {
		return fmt.Errorf("config: sandbox.idle must not be negative")
	}
	if err := s.Limits.check(); err != nil {
		return fmt.Errorf("config: sandbox: %w", err)
	}
	if err := checkRules(s.Allow, s.Deny); err != nil {
		return fmt.Errorf("config: sandbox: %w", err)
	}
	return nil
}

// check validates an agent's sandbox settings (ValidateAgents calls it, so
// the agents of an AWS deployment are checked too). Limits are checked
// field by field, so an agent's valid over the global valid ones are.
func (a *AgentSandbox) check() error {
	if a == nil {
		return nil
	}
	if err := a.Limits.check(); err != nil {
		return err
	}
	return checkRules(a.Allow, a.Deny)
}

// SandboxSettings returns the agent's sandbox limits (defaults filled in)
// and its allow and deny rules.
func (c *Config) SandboxSettings(agent string) (limits sandbox.Limits, allow, deny []string) {
	l, allow, deny := c.Sandbox.Limits, c.Sandbox.Allow, c.Sandbox.Deny
	if a := c.Agents[agent].Sandbox; a != nil {
		l = l.over(a.Limits)
		if len(a.Allow) > 0 {
			allow = a.Allow
		}
		deny = slices.Concat(deny, a.Deny)
	}
	return l.limits().WithDefaults(), allow, deny
}

// LongestWallTime returns the longest wall time of any agent's sandbox
// limits: the global limits' (every agent the configuration does not
// name has them) or an agent's own.
func (c *Config) LongestWallTime() time.Duration {
	wall := c.Sandbox.Limits.limits().WithDefaults().WallTime
	for name := range c.Agents {
		limits, _, _ := c.SandboxSettings(name)
		wall = max(wall, limits.WallTime)
	}
	return wall
}
