// Package config reads lambdaclaw's configuration: an optional YAML file
// plus environment variables. Secrets are never written in the file: a
// secret field holds a reference such as `{env: OPENAI_API_KEY}`, resolved
// from the environment when the server starts, or `{file: secrets/x.key}`,
// a file only its owner may read (secret.go).
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Defaults.
const (
	DefaultAddr         = "127.0.0.1:8080"
	DefaultAgent        = "default"
	DefaultModel        = "gpt-4o-mini"
	DefaultMaxBodyBytes = 1 << 20
	// DefaultKeyRate is the rate limit, in requests per minute, of keys
	// created without one when default_rate_per_minute is not set.
	DefaultKeyRate = 120
)

// Config is the whole configuration.
type Config struct {
	// Home is the data directory ($LAMBDACLAW_HOME, default ~/.lambdaclaw).
	Home string `yaml:"-"`
	// Path is the config file Load read, or would have read: the file is
	// optional unless named explicitly.
	Path string `yaml:"-"`
	// Addr is the listen address ($LAMBDACLAW_ADDR).
	Addr     string `yaml:"addr"`
	LogLevel string `yaml:"log_level"`
	// MaxBodyBytes limits request bodies; larger ones get 413.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// DefaultRatePerMinute is the rate limit of keys created without one.
	DefaultRatePerMinute int                    `yaml:"default_rate_per_minute"`
	Providers            []Provider             `yaml:"providers"`
	Agents               map[string]AgentConfig `yaml:"agents"`
	Sessions             Sessions               `yaml:"sessions"`
	Telegram             Telegram               `yaml:"telegram"`
	// Channels configures the messaging channels other than Telegram.
	Channels Channels `yaml:"channels"`
	// Transcription turns the channels' voice notes into text (media.go).
	Transcription *Transcription `yaml:"transcription"`

	// Memory tunes agent memory; Embeddings, when set, adds semantic
	// search to it (see memory.go).
	Memory     Memory      `yaml:"memory"`
	Embeddings *Embeddings `yaml:"embeddings"`

	// Limits bound replies, tool calls and workspaces; Server the HTTP
	// server (limits.go).
	Limits Limits `yaml:"limits"`
	Server Server `yaml:"server"`
	// Outbound widens where web_fetch and webhooks may connect
	// (outbound.go).
	Outbound Outbound `yaml:"outbound"`

	// MCP lists the MCP servers whose tools agents use (mcp.go).
	MCP MCP `yaml:"mcp"`
	// A2A lists the remote A2A agents agents use as tools (a2a.go).
	A2A A2A `yaml:"a2a"`
	// Sandbox configures the exec tool's sandboxes (sandbox.go).
	Sandbox Sandbox `yaml:"sandbox"`
	// Tools configures built-in tools, web_search (tools.go).
	Tools Tools `yaml:"tools"`
	// Budgets says how token budgets are counted (budget.go).
	Budgets Budgets `yaml:"budgets"`
}

// Telegram configures the Telegram channel. The bot token is
// TELEGRAM_BOT_TOKEN and the Bot API base URL TELEGRAM_API_BASE.
type Telegram struct {
	Enabled bool `yaml:"enabled"`
	// Mode is "polling" (the default) or "webhook".
	Mode string `yaml:"mode"`
	// PublicURL is where Telegram reaches the server, for webhook mode;
	// the webhook is PublicURL + TelegramWebhookPath.
	PublicURL string `yaml:"public_url"`
	// AllowedUsers are the Telegram user ids that may use the bot.
	AllowedUsers []int64 `yaml:"allowed_users"`
	// AccessCodes each let one more user in, once.
	AccessCodes []Secret `yaml:"access_codes"`
	// Agent answers the bot (default "default").
	Agent string `yaml:"agent"`
	// Autonomy of Telegram runs (default supervised).
	Autonomy string `yaml:"autonomy"`
	// Groups says when the bot answers in groups.
	Groups Groups `yaml:"groups"`
	// Token and APIBase are read from the environment.
	Token   string `yaml:"-"`
	APIBase string `yaml:"-"`
}

// Channels configures the messaging channels, one section each.
type Channels struct {
	WhatsApp WhatsApp `yaml:"whatsapp"`
	Discord  Discord  `yaml:"discord"`
	Slack    Slack    `yaml:"slack"`
}

// TelegramWebhookPath is the local server's webhook route.
const TelegramWebhookPath = "/telegram/webhook"

// Provider types.
const (
	ProviderOpenAI  = "openai"
	ProviderBedrock = "bedrock"
)

// Provider is a language model endpoint: an OpenAI-compatible server, or
// Amazon Bedrock's Converse API with IAM credentials.
type Provider struct {
	Name string `yaml:"name"`
	// Type is "openai" (the default) or "bedrock".
	Type string `yaml:"type"`
	// BaseURL is the OpenAI-compatible API root; for bedrock, an optional
	// endpoint replacing the regional one (a VPC endpoint).
	BaseURL string `yaml:"base_url"`
	APIKey  Secret `yaml:"api_key"`
	// Region is Bedrock's region; AWS_REGION when empty.
	Region string `yaml:"region"`
	// Model is the model id; required for bedrock, DefaultModel otherwise.
	Model string `yaml:"model"`
	// Timeout bounds one model call (default 120s); a streamed one, the
	// wait for each chunk. A turn's model call, streamed or not, is cut
	// once every attempt of every provider of its chain could have taken
	// its timeout, with the waits between retries (agent.Loop.Bound).
	Timeout Duration `yaml:"timeout"`
	// Retries is how many times a transient failure is retried on this
	// provider before falling through to the next (default 2).
	Retries *int `yaml:"retries"`
	// Input are the kinds of input the model takes: text, image, file,
	// audio. Empty means the adapter's default: text and image for
	// openai, text, image and file (documents) for bedrock, which takes
	// no audio. A message with a part of another kind is refused (400).
	Input []string `yaml:"input"`
}

// inputKinds are the kinds a provider's input may list.
var inputKinds = []string{"text", "image", "file", "audio"}

// AgentConfig tunes one agent. Agents also exist without an entry here:
// every workspace directory is an agent.
type AgentConfig struct {
	// Providers names the fallback chain, in order; empty means all.
	Providers []string `yaml:"providers" json:"providers,omitempty"`
	// Model overrides the provider's model.
	Model             string `yaml:"model" json:"model,omitempty"`
	MaxToolIterations int    `yaml:"max_tool_iterations" json:"max_tool_iterations,omitempty"`
	// Tools lists the tools the agent may use; empty means all built-ins.
	Tools []string `yaml:"tools" json:"tools,omitempty"`
	// CompactionThreshold is the history length above which the history
	// is compacted (default 50; 0 turns compaction off).
	CompactionThreshold *int `yaml:"compaction_threshold" json:"compaction_threshold,omitempty"`
	// CompactionTarget is how many recent messages compaction keeps
	// verbatim (default 20).
	CompactionTarget int `yaml:"compaction_target" json:"compaction_target,omitempty"`
	// MemoryFlush runs a hidden turn before compaction so the agent can
	// save memories (default true).
	MemoryFlush *bool `yaml:"memory_flush" json:"memory_flush,omitempty"`
	// ClientSystem says what an API client's system (or developer)
	// messages do: "append" (default) follows the agent's system prompt
	// with them, "replace" sends them instead of it.
	ClientSystem string `yaml:"client_system" json:"client_system,omitempty"`
	// Heartbeat, when set, runs the agent's HEARTBEAT.md checklist
	// periodically (see schedule.Heartbeat).
	Heartbeat *Heartbeat `yaml:"heartbeat" json:"heartbeat,omitempty"`
	// DelegateTo names the agents this one may hand tasks to: it is
	// offered the delegate tool (agent.DelegateTool) when it names any.
	DelegateTo []string `yaml:"delegate_to" json:"delegate_to,omitempty"`
	// AgentMCP selects the agent's MCP tools (mcp.go).
	AgentMCP `yaml:",inline"`
	// Sandbox overrides the sandbox section for this agent (sandbox.go).
	Sandbox *AgentSandbox `yaml:"sandbox" json:"sandbox,omitempty"`
	// Privacy keeps personal data from the agent's model (privacy.go).
	Privacy *Privacy `yaml:"privacy" json:"privacy,omitempty"`
	// Budget limits the tokens the agent spends; Guardrails are checked
	// before every call of its tools (budget.go).
	Budget     *AgentBudget `yaml:"budget" json:"budget,omitempty"`
	Guardrails *Guardrails  `yaml:"guardrails" json:"guardrails,omitempty"`
}

// Heartbeat is an agent's periodic check-in: a turn with its HEARTBEAT.md
// checklist, whose answer is delivered unless it starts with HEARTBEAT_OK.
type Heartbeat struct {
	// Every is the interval between heartbeats (required).
	Every Duration `yaml:"every" json:"every"`
	// ActiveHours is "HH:MM-HH:MM" in TZ; outside it nothing runs. Empty:
	// always.
	ActiveHours string `yaml:"active_hours" json:"active_hours,omitempty"`
	// TZ is the IANA time zone of ActiveHours (UTC when empty).
	TZ string `yaml:"tz" json:"tz,omitempty"`
	// Deliver is where answers go: none (the default), telegram:<chat id>,
	// webhook:<url> or ws:<user>.
	Deliver string `yaml:"deliver" json:"deliver,omitempty"`
}

// check validates what the configuration can of the heartbeat; the
// schedule's rules (schedule.Heartbeat.Validate, schedule.ParseTarget)
// check the rest when the server sets its job up.
func (h Heartbeat) check() error {
	if h.Every <= 0 {
		return fmt.Errorf("heartbeat: every is required: the interval between heartbeats, such as 30m")
	}
	if _, err := time.LoadLocation(h.TZ); err != nil || strings.EqualFold(h.TZ, "local") {
		return fmt.Errorf("heartbeat: tz %q is not an IANA time zone such as Europe/Berlin", h.TZ)
	}
	return nil
}

// Sessions says how users meet agents across channels.
type Sessions struct {
	// Sharing is "shared" (one session per user and agent, whatever the
	// channel) or "per_channel".
	Sharing string `yaml:"sharing"`
	// Users links channel user ids ("tg:12345", "ws:alice", "api:alice")
	// to one person, who then has one session per agent across them.
	Users map[string][]string `yaml:"users"`
}

// Secret is a reference to a secret kept outside the config file: an
// environment variable (Env) or a file (File, secret.go).
type Secret struct {
	Env string `yaml:"env"`
	// File is a file holding the secret, relative to the data directory
	// unless absolute; only its owner may read it.
	File string `yaml:"file"`
	// value is the secret as resolved by Load; resolved says it was.
	value    string
	resolved bool
}

// UnmarshalYAML accepts only a reference, never a literal secret.
func (s *Secret) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: secrets are not written in config files; use a reference such as {env: OPENAI_API_KEY} or {file: secrets/openai.key}", n.Line)
	}
	type plain Secret
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	if (p.Env == "") == (p.File == "") {
		return fmt.Errorf("line %d: a secret reference needs env: VARIABLE_NAME or file: PATH (one of them)", n.Line)
	}
	*s = Secret(p)
	return nil
}

// Set reports whether the secret refers to something.
func (s Secret) Set() bool { return s.Env != "" || s.File != "" }

// Source says where the secret is read from, for messages: the variable's
// name, or "file PATH".
func (s Secret) Source() string {
	if s.File != "" {
		return "file " + s.File
	}
	return s.Env
}

// ResolvedSecret is a secret whose value is known already, read from env
// or elsewhere (a Secrets Manager secret on AWS).
func ResolvedSecret(env, value string) Secret {
	return Secret{Env: env, value: value, resolved: true}
}

// Value resolves the reference; an unset reference resolves to "".
// Secrets read by Load resolve with Load's getenv (and files when Load
// read them); others with os.Getenv.
func (s Secret) Value() string {
	if s.resolved {
		return s.value
	}
	if s.Env == "" {
		return ""
	}
	return os.Getenv(s.Env)
}

// Duration is a time.Duration written like "30s" or "2m".
type Duration time.Duration

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*d = Duration(v)
	return nil
}

// Load reads the configuration. The file is $LAMBDACLAW_CONFIG, or
// config.yaml in the home directory; it is optional unless named
// explicitly. getenv is os.Getenv in production.
func Load(path string, getenv func(string) string) (*Config, error) {
	c := &Config{Home: getenv("LAMBDACLAW_HOME")}
	if c.Home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("config: no LAMBDACLAW_HOME and no home directory: %w", err)
		}
		c.Home = filepath.Join(h, ".lambdaclaw")
	}
	explicit := path != ""
	if !explicit {
		path = getenv("LAMBDACLAW_CONFIG")
		explicit = path != ""
	}
	if !explicit {
		path = filepath.Join(c.Home, "config.yaml")
	}
	c.Path = path
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(c); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
	case errors.Is(err, os.ErrNotExist) && !explicit:
	default:
		return nil, fmt.Errorf("config: %w", err)
	}
	if v := getenv("LAMBDACLAW_ADDR"); v != "" {
		c.Addr = v
	}
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.DefaultRatePerMinute <= 0 {
		c.DefaultRatePerMinute = DefaultKeyRate
	}
	if len(c.Providers) == 0 && (getenv("OPENAI_API_KEY") != "" || getenv("OPENAI_BASE_URL") != "") {
		p := Provider{Name: "openai", BaseURL: getenv("OPENAI_BASE_URL"), Model: getenv("OPENAI_MODEL")}
		if getenv("OPENAI_API_KEY") != "" {
			p.APIKey = Secret{Env: "OPENAI_API_KEY"}
		}
		c.Providers = append(c.Providers, p)
	}
	for i := range c.Providers {
		if err := c.Providers[i].APIKey.resolve(c.Home, getenv); err != nil {
			return nil, fmt.Errorf("config: provider %q: api_key: %w", c.Providers[i].Name, err)
		}
		if p := &c.Providers[i]; p.Type == ProviderBedrock && p.Region == "" {
			p.Region = getenv("AWS_REGION")
		}
	}
	if t := c.Transcription; t != nil {
		if err := t.APIKey.resolve(c.Home, getenv); err != nil {
			return nil, fmt.Errorf("config: transcription.api_key: %w", err)
		}
	}
	for name, ag := range c.A2A.Agents {
		if err := ag.Token.resolve(c.Home, getenv); err != nil {
			return nil, fmt.Errorf("config: a2a.agents.%s.token: %w", name, err)
		}
		c.A2A.Agents[name] = ag
	}
	for i := range c.Telegram.AccessCodes {
		if err := c.Telegram.AccessCodes[i].resolve(c.Home, getenv); err != nil {
			return nil, fmt.Errorf("config: telegram.access_codes: %w", err)
		}
	}
	c.Telegram.Token, c.Telegram.APIBase = getenv("TELEGRAM_BOT_TOKEN"), getenv("TELEGRAM_API_BASE")
	if err := c.Channels.WhatsApp.resolve(c.Home, getenv); err != nil {
		return nil, err
	}
	if err := c.Channels.Discord.resolve(c.Home, getenv); err != nil {
		return nil, err
	}
	if err := c.Channels.Slack.resolve(c.Home, getenv); err != nil {
		return nil, err
	}
	if ws := c.Tools.WebSearch; ws != nil {
		if err := ws.APIKey.resolve(c.Home, getenv); err != nil {
			return nil, fmt.Errorf("config: tools.web_search.api_key: %w", err)
		}
	}
	if err := c.loadMemory(getenv); err != nil {
		return nil, err
	}
	return c, c.Validate()
}

// Validate checks a configuration and fills in its defaults. Load calls it;
// a configuration made in code (the Lambda functions make theirs from
// their environment) calls it before use.
func (c *Config) Validate() error {
	seen := map[string]bool{}
	for i := range c.Providers {
		p := &c.Providers[i]
		if p.Name == "" {
			p.Name = fmt.Sprintf("provider%d", i+1)
		}
		if seen[p.Name] {
			return fmt.Errorf("config: provider %q defined twice", p.Name)
		}
		seen[p.Name] = true
		switch p.Type {
		case "":
			p.Type = ProviderOpenAI
		case ProviderOpenAI:
		case ProviderBedrock:
			switch {
			case p.Model == "":
				return fmt.Errorf("config: provider %q: bedrock needs a model (a Bedrock model or inference profile id)", p.Name)
			case p.Region == "":
				return fmt.Errorf("config: provider %q: bedrock needs a region (region in the config, or AWS_REGION)", p.Name)
			case p.APIKey.Set():
				return fmt.Errorf("config: provider %q: bedrock signs with IAM credentials and takes no api_key", p.Name)
			}
		default:
			return fmt.Errorf("config: provider %q: type is %q; want openai or bedrock", p.Name, p.Type)
		}
		if p.Model == "" {
			p.Model = DefaultModel
		}
		if p.Timeout == 0 {
			p.Timeout = Duration(120 * time.Second)
		}
		if p.Retries == nil {
			two := 2
			p.Retries = &two
		}
		for _, k := range p.Input {
			switch {
			case !slices.Contains(inputKinds, k):
				return fmt.Errorf("config: provider %q: input %q is not one of text, image, file, audio", p.Name, k)
			case k == "audio" && p.Type == ProviderBedrock:
				return fmt.Errorf("config: provider %q: bedrock takes no audio input", p.Name)
			}
		}
		if len(p.Input) > 0 && !slices.Contains(p.Input, "text") {
			return fmt.Errorf("config: provider %q: input must include text", p.Name)
		}
	}
	switch c.Sessions.Sharing {
	case "":
		c.Sessions.Sharing = "shared"
	case "shared", "per_channel":
	default:
		return fmt.Errorf("config: sessions.sharing is %q; want shared or per_channel", c.Sessions.Sharing)
	}
	if err := c.Telegram.validate(); err != nil {
		return err
	}
	if err := c.Channels.WhatsApp.validate(); err != nil {
		return err
	}
	if err := c.Channels.Discord.validate(); err != nil {
		return err
	}
	if err := c.Channels.Slack.validate(); err != nil {
		return err
	}
	if err := c.Limits.fill(); err != nil {
		return err
	}
	if err := c.Transcription.validate(c.Providers); err != nil {
		return err
	}
	if err := c.Server.fill(); err != nil {
		return err
	}
	if _, err := c.Outbound.Networks(); err != nil {
		return err
	}
	if err := c.validateSandbox(); err != nil {
		return err
	}
	if err := c.Tools.WebSearch.Check(); err != nil {
		return err
	}
	if err := c.Budgets.Check(); err != nil {
		return err
	}
	linked := map[string]string{}
	for person, ids := range c.Sessions.Users {
		for _, id := range ids {
			if other, dup := linked[id]; dup {
				return fmt.Errorf("config: sessions.users: %q is linked to both %q and %q", id, other, person)
			}
			channel, rest, ok := strings.Cut(id, ":")
			if !ok || rest == "" {
				return fmt.Errorf("config: sessions.users.%s: %q needs a channel prefix (tg:, ws: or api:)", person, id)
			}
			// Sessions on the API and the WebSocket belong to their key:
			// the same user name under another key is someone else.
			if key, user, ok := strings.Cut(rest, "/"); (channel == "api" || channel == "ws") && (!ok || key == "" || user == "") {
				return fmt.Errorf("config: sessions.users.%s: %q must name the API key: %s:<key id>/<user> (see lambdaclaw keys list)", person, id, channel)
			}
			linked[id] = person
		}
	}
	if err := c.MCP.validate(); err != nil {
		return err
	}
	if err := c.A2A.validate(); err != nil {
		return err
	}
	if err := ValidateAgents(c.Agents, c.ProviderNames()); err != nil {
		return err
	}
	return validateAgentsMCP(c.Agents, c.MCP.Servers)
}

// ProviderNames lists the names of the providers, in order.
func (c *Config) ProviderNames() []string {
	names := make([]string, 0, len(c.Providers))
	for _, p := range c.Providers {
		names = append(names, p.Name)
	}
	return names
}

// ValidateAgents checks the settings of agents against the names of the
// providers they may use. Validate calls it; so does the AWS deployment,
// whose agents are checked before they are deployed (wiring/agentenv).
func ValidateAgents(agents map[string]AgentConfig, providers []string) error {
	for _, name := range slices.Sorted(maps.Keys(agents)) {
		a := agents[name]
		if a.CompactionTarget < 0 || a.CompactionThreshold != nil && *a.CompactionThreshold < 0 {
			return fmt.Errorf("config: agent %q: compaction settings must not be negative", name)
		}
		for _, p := range a.Providers {
			if !slices.Contains(providers, p) {
				known := "none are configured"
				if len(providers) > 0 {
					known = "the providers are " + strings.Join(providers, ", ")
				}
				return fmt.Errorf("config: agent %q uses unknown provider %q (%s)", name, p, known)
			}
		}
		if a.MaxToolIterations < 0 {
			return fmt.Errorf("config: agent %q: max_tool_iterations must not be negative", name)
		}
		if a.ClientSystem != "" && a.ClientSystem != "append" && a.ClientSystem != "replace" {
			return fmt.Errorf("config: agent %q: client_system must be append or replace, not %q", name, a.ClientSystem)
		}
		if a.Heartbeat != nil {
			if err := a.Heartbeat.check(); err != nil {
				return fmt.Errorf("config: agent %q: %w", name, err)
			}
		}
		if err := a.Sandbox.check(); err != nil {
			return fmt.Errorf("config: agent %q: sandbox: %w", name, err)
		}
		for i, to := range a.DelegateTo {
			switch {
			case to == "" || to == name:
				return fmt.Errorf("config: agent %q: delegate_to[%d] must name another agent", name, i)
			case slices.Contains(a.DelegateTo[:i], to):
				return fmt.Errorf("config: agent %q: delegate_to names %q twice", name, to)
			}
		}
		if _, err := a.Privacy.Scanner(); err != nil {
			return fmt.Errorf("config: agent %q: privacy: %w", name, err)
		}
		if err := a.checkGuards(); err != nil {
			return fmt.Errorf("config: agent %q: %w", name, err)
		}
	}
	return nil
}

// Compaction returns an agent's compaction settings with defaults applied:
// threshold, target, and whether to flush memories first.
func (a AgentConfig) Compaction() (threshold, target int, flush bool) {
	threshold, target, flush = 50, 20, true
	if a.CompactionThreshold != nil {
		threshold = *a.CompactionThreshold
	}
	if a.CompactionTarget > 0 {
		target = a.CompactionTarget
	}
	if a.MemoryFlush != nil {
		flush = *a.MemoryFlush
	}
	return threshold, target, flush
}

// Links maps each linked channel user id to its person.
func (s Sessions) Links() map[string]string {
	m := map[string]string{}
	for person, ids := range s.Users {
		for _, id := range ids {
			m[id] = person
		}
	}
	return m
}

// DBPath is where the embedded database lives.
func (c *Config) DBPath() string { return filepath.Join(c.Home, "lambdaclaw.db") }

// validate checks the section; defaults are filled in only when the
// channel is enabled.
func (t *Telegram) validate() error {
	if !t.Enabled {
		if t.Mode != "" && t.Mode != "polling" && t.Mode != "webhook" {
			return fmt.Errorf("config: telegram.mode is %q; want polling or webhook", t.Mode)
		}
		return nil
	}
	if t.Agent == "" {
		t.Agent = DefaultAgent
	}
	if t.Autonomy == "" {
		t.Autonomy = "supervised"
	}
	switch t.Mode {
	case "":
		t.Mode = "polling"
	case "polling":
	case "webhook":
		if t.Enabled && !strings.HasPrefix(t.PublicURL, "https://") && !strings.HasPrefix(t.PublicURL, "http://") {
			return fmt.Errorf("config: telegram.mode webhook needs public_url, the https:// address Telegram reaches this server at")
		}
	default:
		return fmt.Errorf("config: telegram.mode is %q; want polling or webhook", t.Mode)
	}
	if err := t.Groups.validate("telegram"); err != nil {
		return err
	}
	for _, c := range t.AccessCodes {
		if v := c.Value(); v != "" && len(v) < 8 {
			return fmt.Errorf("config: telegram.access_codes: the code in %s is shorter than 8 characters", c.Source())
		}
	}
	if t.Enabled && t.Token == "" {
		return fmt.Errorf("config: telegram is enabled but TELEGRAM_BOT_TOKEN is not set")
	}
	return nil
}
