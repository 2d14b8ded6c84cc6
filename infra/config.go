package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/constructs-go/constructs/v10"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// Context keys read by the app. Set them in cdk.json or on the command
// line: cdk deploy -c search=opensearch -c model=<bedrock model id>.
const (
	ctxSearch         = "search"                 // none (default) or opensearch
	ctxModel          = "model"                  // Bedrock chat model or inference profile id
	ctxEmbedModel     = "embed_model"            // Bedrock embedding model id
	ctxAssets         = "assets"                 // directory holding <function>/bootstrap
	ctxOpenAIBaseURL  = "openai_base_url"        // optional OpenAI-compatible fallback provider
	ctxOpenAIModel    = "openai_model"           // its model (required with openai_base_url)
	ctxTelegram       = "telegram"               // off (default) or on: the Telegram webhook
	ctxTelegramUsers  = "telegram_allowed_users" // comma-separated Telegram user ids let in
	ctxTelegramAPI    = "telegram_api_base"      // Bot API base URL (default Telegram's)
	ctxTelegramToken  = "telegram_token_secret"  // name of the Secrets Manager secret holding the bot token
	ctxSlack          = "slack"                  // off (default) or on: the Slack webhooks (channels.go)
	ctxDiscord        = "discord"                // off (default) or on: the Discord interactions endpoint (channels.go)
	ctxWhatsApp       = "whatsapp"               // off (default) or on: the WhatsApp webhook (channels.go)
	ctxSearchInstance = "search_instance"        // OpenSearch data node instance type
	ctxAlarms         = "alarms"                 // on (default) or off: CloudWatch alarms and their SNS topic
	ctxAlarmEmail     = "alarm_email"            // optional email address the alarm topic notifies
	ctxApproval       = "approval_timeout"       // how long a run waits for an approval: 7d, 36h, 90s, …
	ctxRetention      = "session_retention_days" // days an idle session's items are kept
	ctxVersionDays    = "workspace_version_days" // days a workspace file's old versions are kept
	ctxRunMemory      = "run_memory"             // MB of the functions that run the loop (api, step)
	ctxEmbedDims      = "embed_dimensions"       // length of the memory vectors: 256, 512 or 1024
	ctxAgentsFile     = "agents_file"            // YAML file whose agents: and mcp: sections define the agents and MCP servers (agents.go, mcp.go)
	ctxSandbox        = "sandbox"                // none (default) or fargate: the exec tool's ECS Fargate tasks (sandbox.go)
	ctxSandboxNetwork = "sandbox_network"        // isolated (default) or public: where the Fargate tasks run (sandbox.go)
	ctxAPIRate        = "api_rate"               // requests (messages) per second each API stage lets through, steady
	ctxAPIBurst       = "api_burst"              // requests (messages) each API stage lets through in a burst
	ctxWAF            = "waf"                    // off (default) or on: a WAF web ACL with a rate-based rule per IP on the REST API
	ctxWAFLimit       = "waf_limit"              // requests one IP may send in 5 minutes (waf=on)
	ctxTracing        = "tracing"                // off (default) or active: X-Ray active tracing of the functions and the state machine
	ctxWebSearch      = "web_search"             // none (default), searxng, brave or tavily: the web_search tool's provider (websearch.go)
	ctxWebSearchURL   = "web_search_url"         // its endpoint: the SearXNG instance (required), or another of Brave's or Tavily's API
)

// Defaults for the context keys.
const (
	// DefaultModel is Claude Haiku 4.5 through Bedrock's global cross-Region
	// inference profile: Claude 4.x models are invoked through an inference
	// profile (on-demand calls with the bare model id are refused), and the
	// global profile is offered in every commercial Region, so the default
	// works wherever the stack is deployed. Pass -c model=... for another
	// (for example us.amazon.nova-2-lite-v1:0 or eu.anthropic.claude-...).
	DefaultModel = "global.anthropic.claude-haiku-4-5-20251001-v1:0"
	// DefaultEmbedModel matches shared/adapters/bedrock's embedder.
	DefaultEmbedModel = "amazon.titan-embed-text-v2:0"
	// DefaultSearchInstance is the smallest instance type that runs the k-NN
	// plugin; see search.go.
	DefaultSearchInstance = "t3.small.search"

	SearchNone       = "none"
	SearchOpenSearch = "opensearch"

	// DefaultApprovalTimeout is how long a run waits for an answer to an
	// approval prompt (or its client's tool results) before the approval
	// expires; MaxApprovalTimeout is the longest allowed, which the lane
	// lease of a parked run (8 days, shared/adapters/sfn) outlasts.
	DefaultApprovalTimeout = 7 * 24 * time.Hour
	MaxApprovalTimeout     = 7 * 24 * time.Hour
	// DefaultRetentionDays is how long the items of an idle session are
	// kept; MinRetentionDays keeps them for longer than a run may wait.
	DefaultRetentionDays = 90
	MinRetentionDays     = 8
	// DefaultWorkspaceVersionDays is how long the workspace bucket keeps
	// a file's replaced or deleted versions (S3 versioning) before its
	// lifecycle rule expires them.
	DefaultWorkspaceVersionDays = 30

	// DefaultRunMemory is the memory (MB) of the api and step functions,
	// which wait for the model most of a turn: Lambda bills the wait by
	// memory size, and the loop, a 10,000-memory search cache (512
	// dimensions) and a large history fit in 256 MB.
	DefaultRunMemory = 256
	// DefaultEmbedDimensions is the length of the memory vectors (Titan
	// Text Embeddings V2 makes 256, 512 or 1024): half of Titan's 1024
	// halves a memory's item, its write units and the search cache, for a
	// small loss of retrieval quality.
	DefaultEmbedDimensions = 512

	SandboxNone    = "none"
	SandboxFargate = "fargate"

	// SandboxIsolated and SandboxPublic are the Fargate tasks' networks
	// (sandbox.go): isolated subnets reaching S3, ECR and CloudWatch Logs
	// through VPC endpoints only, or public subnets with a public IP and
	// HTTPS to anywhere, without the interface endpoints' hourly cost.
	SandboxIsolated = "isolated"
	SandboxPublic   = "public"

	// DefaultAPIRate and DefaultAPIBurst are the stages' throttles: what
	// a personal gateway needs (the console polls every 5 s, a page load
	// is a handful of requests) and a bound on what a leaked URL can cost
	// (README: What a flood can cost).
	DefaultAPIRate  = 5
	DefaultAPIBurst = 20
	// DefaultWAFLimit is the rate-based rule's limit per IP over WAF's
	// 5-minute window: 2 requests a second on average.
	DefaultWAFLimit = 600

	TelegramOff = "off"
	TelegramOn  = "on"

	// TracingOff (the default) records no X-Ray traces: the functions
	// pass a caller's trace header on (Lambda's PassThrough) and have no
	// X-Ray permissions; TracingActive traces every function and the
	// state machine, one trace per turn ($5.00 per million, README: What
	// it costs).
	TracingOff    = "off"
	TracingActive = "active"
	// DefaultTelegramTokenSecret is the name of the secret the operator
	// creates with the bot token before deploying with telegram=on.
	DefaultTelegramTokenSecret = "lambdaclaw/telegram-bot-token"
)

// Config is the app's configuration, read from CDK context.
type Config struct {
	// Search is SearchNone or SearchOpenSearch.
	Search string
	// Model is the Bedrock chat model: a foundation model id, a
	// cross-Region inference profile id (us., eu., apac., global., …) or an
	// inference profile ARN.
	Model string
	// EmbedModel is the Bedrock embedding model id.
	EmbedModel string
	// Assets is the absolute path of the directory that holds one
	// <function>/bootstrap per Lambda function (the Makefile's dist/).
	Assets string
	// OpenAIBaseURL, when set, adds an OpenAI-compatible fallback provider
	// and a Secrets Manager secret for its API key; OpenAIModel is then
	// required (shared/wiring/cloud refuses OPENAI_BASE_URL without OPENAI_MODEL).
	OpenAIBaseURL string
	OpenAIModel   string
	// Telegram adds the Telegram webhook: the telegram function, its route,
	// its webhook secret, the import of the bot token secret and the
	// custom resource that registers the webhook. Off by default.
	Telegram bool
	// TelegramAllowedUsers (comma-separated user ids) and TelegramAPIBase
	// become TELEGRAM_ALLOWED_USERS and TELEGRAM_API_BASE (shared/wiring/cloud).
	TelegramAllowedUsers string
	TelegramAPIBase      string
	// TelegramTokenSecret is the name of the existing Secrets Manager
	// secret that holds the bot token: the stack imports it, it does not
	// create it (README: Telegram on AWS).
	TelegramTokenSecret string
	// Channels are the messaging channels whose webhooks the channels
	// function serves ("slack", "discord", "whatsapp": -c slack=on …),
	// in that order (channels.go).
	Channels []string
	// Sandbox is SandboxNone or SandboxFargate: the cluster, task
	// definition and network of the exec tool's tasks (sandbox.go).
	Sandbox string
	// SandboxNetwork is SandboxIsolated or SandboxPublic (only with
	// SandboxFargate).
	SandboxNetwork string
	// SearchInstance is the OpenSearch data node instance type.
	SearchInstance string
	// Alarms adds the CloudWatch alarms and their SNS topic (on by
	// default); AlarmEmail subscribes an address to the topic.
	Alarms     bool
	AlarmEmail string
	// APIRate and APIBurst are the default method throttling of the REST
	// and WebSocket API stages (api.go).
	APIRate  float64
	APIBurst int
	// WAF adds a regional WAF web ACL with a rate-based rule per IP,
	// associated with the REST API's stage; WAFLimit is the rule's limit
	// per 5 minutes.
	WAF      bool
	WAFLimit int
	// Tracing is X-Ray active tracing of the functions and the state
	// machine (tracing=active), with the functions' permissions to send
	// traces; off by default.
	Tracing bool
	// ApprovalTimeout is the timeout of the state machine's approval task:
	// a run that waits longer for an answer ends, its approval expired.
	ApprovalTimeout time.Duration
	// RetentionDays is how long a session's items live after its last
	// use: every function gets it as SESSION_TTL, and DynamoDB's TTL
	// removes what expired.
	RetentionDays int
	// WorkspaceVersionDays is how long the workspace bucket keeps the
	// noncurrent versions of a file (at least 1).
	WorkspaceVersionDays int
	// RunMemory is the memory (MB) of the api and step functions.
	RunMemory int
	// EmbedDimensions is the length of the memory vectors
	// (EMBED_DIMENSIONS): 256, 512 or 1024.
	EmbedDimensions int
	// AgentsFile is the file defining the agents with their settings
	// (agents.go), none when empty; Agents are its agents, and
	// AgentsConfig their definitions as the functions' AGENTS_CONFIG,
	// checked.
	AgentsFile   string
	Agents       map[string]config.AgentConfig
	AgentsConfig string
	// MCP are the MCP servers of the agents file's mcp: section, and
	// MCPConfig their definitions as the functions' MCP_CONFIG, checked
	// (mcp.go).
	MCP       config.MCP
	MCPConfig string
	// WebSearch is the web_search tool's provider (searxng, brave,
	// tavily), none when empty; WebSearchURL its endpoint (websearch.go).
	WebSearch    string
	WebSearchURL string
	// BudgetEnv is the agents file's budgets: section as the environment
	// of the functions that run turns (agentenv.BudgetEnv).
	BudgetEnv map[string]string
}

// ConfigFromContext reads the Config from the construct tree's context,
// filling in defaults. A relative assets path is taken from the working
// directory.
func ConfigFromContext(scope constructs.Construct) (Config, error) {
	get := func(key, def string) string {
		v := scope.Node().TryGetContext(&key)
		if s, ok := v.(string); ok && strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
		return def
	}
	c := Config{
		Search:         get(ctxSearch, SearchNone),
		Sandbox:        get(ctxSandbox, SandboxNone),
		SandboxNetwork: get(ctxSandboxNetwork, ""),
		Model:          get(ctxModel, DefaultModel),
		EmbedModel:     get(ctxEmbedModel, DefaultEmbedModel),
		Assets:         get(ctxAssets, defaultAssets()),
		OpenAIBaseURL:  get(ctxOpenAIBaseURL, ""),
		OpenAIModel:    get(ctxOpenAIModel, ""),
		SearchInstance: get(ctxSearchInstance, DefaultSearchInstance),

		TelegramAllowedUsers: get(ctxTelegramUsers, ""),
		TelegramAPIBase:      get(ctxTelegramAPI, ""),
		TelegramTokenSecret:  get(ctxTelegramToken, DefaultTelegramTokenSecret),
		AlarmEmail:           get(ctxAlarmEmail, ""),
		AgentsFile:           get(ctxAgentsFile, ""),
		WebSearch:            get(ctxWebSearch, ""),
		WebSearchURL:         get(ctxWebSearchURL, ""),
	}
	switch a := get(ctxAlarms, "on"); a {
	case "on":
		c.Alarms = true
	case "off":
	default:
		return Config{}, fmt.Errorf("context %s=%q: want \"on\" or \"off\"", ctxAlarms, a)
	}
	switch w := get(ctxWAF, "off"); w {
	case "on":
		c.WAF = true
	case "off":
	default:
		return Config{}, fmt.Errorf("context %s=%q: want \"on\" or \"off\"", ctxWAF, w)
	}
	switch tr := get(ctxTracing, TracingOff); tr {
	case TracingActive:
		c.Tracing = true
	case TracingOff:
	default:
		return Config{}, fmt.Errorf("context %s=%q: want %q or %q", ctxTracing, tr, TracingOff, TracingActive)
	}
	var err error
	if c.APIRate, err = strconv.ParseFloat(get(ctxAPIRate, strconv.Itoa(DefaultAPIRate)), 64); err != nil || !(c.APIRate > 0 && c.APIRate <= 10000) {
		return Config{}, fmt.Errorf("context %s=%q: want requests per second, more than 0 and at most 10000 (the account's limit)", ctxAPIRate, get(ctxAPIRate, ""))
	}
	if c.APIBurst, err = strconv.Atoi(get(ctxAPIBurst, strconv.Itoa(DefaultAPIBurst))); err != nil || c.APIBurst < 1 || c.APIBurst > 5000 {
		return Config{}, fmt.Errorf("context %s=%q: want a whole number of requests, 1 to 5000 (the account's limit)", ctxAPIBurst, get(ctxAPIBurst, ""))
	}
	if c.WAFLimit, err = strconv.Atoi(get(ctxWAFLimit, strconv.Itoa(DefaultWAFLimit))); err != nil || c.WAFLimit < 10 || c.WAFLimit > 2000000000 {
		return Config{}, fmt.Errorf("context %s=%q: want requests per IP in 5 minutes, 10 to 2000000000 (WAF's range)", ctxWAFLimit, get(ctxWAFLimit, ""))
	}
	if c.ApprovalTimeout, err = parseTimeout(get(ctxApproval, "7d")); err != nil {
		return Config{}, fmt.Errorf("context %s: %w", ctxApproval, err)
	}
	if c.RetentionDays, err = strconv.Atoi(get(ctxRetention, strconv.Itoa(DefaultRetentionDays))); err != nil || c.RetentionDays < MinRetentionDays {
		return Config{}, fmt.Errorf("context %s=%q: want a whole number of days, at least %d (longer than a run may wait for an approval)",
			ctxRetention, get(ctxRetention, ""), MinRetentionDays)
	}
	if c.WorkspaceVersionDays, err = strconv.Atoi(get(ctxVersionDays, strconv.Itoa(DefaultWorkspaceVersionDays))); err != nil || c.WorkspaceVersionDays < 1 {
		return Config{}, fmt.Errorf("context %s=%q: want a whole number of days, at least 1", ctxVersionDays, get(ctxVersionDays, ""))
	}
	if c.RunMemory, err = strconv.Atoi(get(ctxRunMemory, strconv.Itoa(DefaultRunMemory))); err != nil || c.RunMemory < 128 || c.RunMemory > 10240 {
		return Config{}, fmt.Errorf("context %s=%q: want the functions' memory in MB, 128 to 10240", ctxRunMemory, get(ctxRunMemory, ""))
	}
	if c.EmbedDimensions, err = strconv.Atoi(get(ctxEmbedDims, strconv.Itoa(DefaultEmbedDimensions))); err != nil ||
		(c.EmbedDimensions != 256 && c.EmbedDimensions != 512 && c.EmbedDimensions != 1024) {
		return Config{}, fmt.Errorf("context %s=%q: want 256, 512 or 1024 (what Titan Text Embeddings V2 makes)", ctxEmbedDims, get(ctxEmbedDims, ""))
	}
	if c.Search != SearchNone && c.Search != SearchOpenSearch {
		return Config{}, fmt.Errorf("context %s=%q: want %q or %q", ctxSearch, c.Search, SearchNone, SearchOpenSearch)
	}
	if c.Sandbox != SandboxNone && c.Sandbox != SandboxFargate {
		return Config{}, fmt.Errorf("context %s=%q: want %q or %q", ctxSandbox, c.Sandbox, SandboxNone, SandboxFargate)
	}
	switch {
	case c.SandboxNetwork != "" && c.Sandbox != SandboxFargate:
		return Config{}, fmt.Errorf("context %s=%q needs %s=%s: there is no sandbox network without the Fargate sandbox", ctxSandboxNetwork, c.SandboxNetwork, ctxSandbox, SandboxFargate)
	case c.SandboxNetwork == "":
		c.SandboxNetwork = SandboxIsolated
	case c.SandboxNetwork != SandboxIsolated && c.SandboxNetwork != SandboxPublic:
		return Config{}, fmt.Errorf("context %s=%q: want %q (no internet, VPC endpoints, about $22 a month idle) or %q (HTTPS to anywhere, about $0 idle)",
			ctxSandboxNetwork, c.SandboxNetwork, SandboxIsolated, SandboxPublic)
	}
	switch tg := get(ctxTelegram, TelegramOff); tg {
	case TelegramOff:
	case TelegramOn:
		c.Telegram = true
	default:
		return Config{}, fmt.Errorf("context %s=%q: want %q or %q", ctxTelegram, tg, TelegramOff, TelegramOn)
	}
	for _, name := range webhookChannels {
		switch v := get(name, "off"); v {
		case "on":
			c.Channels = append(c.Channels, name)
		case "off":
		default:
			return Config{}, fmt.Errorf("context %s=%q: want \"on\" or \"off\"", name, v)
		}
	}
	if c.OpenAIBaseURL != "" && c.OpenAIModel == "" {
		return Config{}, fmt.Errorf("context %s is set but %s is not: name the model of the OpenAI-compatible provider", ctxOpenAIBaseURL, ctxOpenAIModel)
	}
	if c.OpenAIModel != "" && c.OpenAIBaseURL == "" {
		return Config{}, fmt.Errorf("context %s is set but %s is not", ctxOpenAIModel, ctxOpenAIBaseURL)
	}
	if err := c.checkWebSearch(); err != nil {
		return Config{}, err
	}
	if err := c.readAgents(); err != nil {
		return Config{}, err
	}
	if err := c.checkAgentsSearch(); err != nil {
		return Config{}, err
	}
	abs, err := filepath.Abs(c.Assets)
	if err != nil {
		return Config{}, fmt.Errorf("context %s=%q: %w", ctxAssets, c.Assets, err)
	}
	c.Assets = abs
	return c, nil
}

// parseTimeout reads an approval timeout: a number of days ("7d") or a Go
// duration ("36h", "90s"), in whole seconds from 1 s to MaxApprovalTimeout.
func parseTimeout(v string) (time.Duration, error) {
	var d time.Duration
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil {
			return 0, fmt.Errorf("%q: want days (7d) or a duration (36h, 90s)", v)
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			return 0, fmt.Errorf("%q: want days (7d) or a duration (36h, 90s)", v)
		}
	}
	if d < time.Second || d > MaxApprovalTimeout || d%time.Second != 0 {
		return 0, fmt.Errorf("%q: want whole seconds from 1s to %s", v, MaxApprovalTimeout)
	}
	return d, nil
}

// defaultAssets is <repo>/dist, the Makefile's output: the repository is
// the nearest directory above the working directory that holds cdk.json
// (the app runs from the top when started by cdk.json, from infra/ under
// go test).
func defaultAssets() string {
	dir, err := os.Getwd()
	if err != nil {
		return "dist"
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "cdk.json")); err == nil {
			return filepath.Join(d, "dist")
		}
		if filepath.Dir(d) == d {
			return filepath.Join(dir, "dist")
		}
	}
}

// checkAssets reports a missing bootstrap before CDK fails with a less
// helpful message about an asset path.
func (c Config) checkAssets(functions []string) error {
	var missing []string
	for _, f := range functions {
		p := filepath.Join(c.Assets, f, "bootstrap")
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing Lambda bootstraps (run `make build`, or set -c %s=DIR): %s", ctxAssets, strings.Join(missing, ", "))
	}
	return nil
}
