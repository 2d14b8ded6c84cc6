// Package cloud is the composition root of the AWS deployment: every
// Lambda function (functions/api, ws, step, scheduler, telegram) builds
// its adapters from the environment the CDK stack sets, then starts its
// handler. A function builds, and so links, only the parts it uses: New
// builds what every function needs (the store, the driver, the agents
// with their tools' policies but no models, the channels that start
// runs); NewWith adds the Turns of a function that runs the loop's steps
// in its process, built by package cloud/turns (the models, the
// embedding model, memory search, the MCP servers, the API handler) and
// cloud/fargate (the sandbox): the step function, and the api function
// for its stateless turns. ws, telegram and scheduler start runs that the
// step function runs; they link neither the model SDKs nor the MCP,
// ECS or OpenSearch clients (tests/lambdadeps holds them to it). It wires
//
//   - the store: DynamoDB (TABLE_NAME), with ephemeral sessions, those of
//     stateless requests, kept in memory (agent.WithEphemeral);
//   - the agents: their workspaces and skills live in the stack's bucket
//     (WORKSPACE_BUCKET, adapters/s3), and they are made exactly as
//     locally (agentset.Builder.Live): the default agent and those
//     AGENTS_CONFIG defines, with their settings (providers, model,
//     tools, compaction, …; wiring/agentenv), get their workspaces made
//     from the templates where missing, and every workspace under
//     agents/ is an agent, each with its provider chain and the tools its
//     settings select of web_fetch, web_search (with WEB_SEARCH_PROVIDER),
//     load_skill (bundled, global skills/
//     and the agent's own), schedule, the file tools, workspace_memory
//     and the memory tools, and its system prompt built from its workspace
//     (prompt.Builder);
//   - with Turns, the provider chain: DEFAULT_PROVIDER first (bedrock, the
//     default, or openai), then the other one when it is configured, each
//     with retries and a circuit breaker; without, the provider settings
//     are ignored and the agents have none;
//   - with Turns, the embedding model (BEDROCK_EMBED_MODEL) of memory and
//     of POST /v1/embeddings, which every agent shares;
//   - the agents' memory (memory.go): entries in the table, searched in
//     the function's process (dynamo.MemoryIndex), or, with Turns, through
//     OpenSearch, which the indexer function feeds from the table's
//     stream, when OPENSEARCH_ENDPOINT is set (cloud/search); and the
//     recorder of conversations, which the step function runs when a run
//     is done (sfn.Driver);
//   - the driver of the loop: durable runs run inline in the step
//     function (RUN_FUNCTION, inline.go), handed to the state machine
//     (STATE_MACHINE_ARN) when they park or run long;
//   - the agent.Router that routes what runs tell by their reply channel:
//     "ws" to the API Gateway WebSocket connection (WS_ENDPOINT), "http"
//     to the in-process Hub the api function's requests listen to, "tg"
//     to the Telegram channel when a bot token is configured (telegram.go),
//     "discord", "whatsapp" to those channels when their secret has a
//     value (channels.go),
//     "cron" to the record and delivery of scheduled check-ins, where runs
//     are stepped (cloud/turns);
//   - scheduled check-ins: jobs in the table, one EventBridge Scheduler
//     schedule each (schedule.go), which agents make with the schedule
//     tool, and the agents' heartbeats (cloud/turns);
//   - the events of the loop, written off the request path to standard
//     error (their log lines and EMF metrics, adapters/emf), which every
//     handler it returns (WebSocket, Step, Scheduler, turns.API; Flush and
//     Flushed for others, the telegram function's) writes before the
//     invocation returns (flush.go).
//
// # Environment
//
//	TABLE_NAME                 DynamoDB table (required)
//	DYNAMODB_ENDPOINT          DynamoDB endpoint override (DynamoDB Local)
//	SESSION_TTL                idle session lifetime, a Go duration
//	STATE_MACHINE_ARN          the loop's state machine (required)
//	STEPFUNCTIONS_ENDPOINT     Step Functions endpoint override
//	RUN_FUNCTION               the step function, invoked asynchronously to run a durable
//	                           run inline (inline.go); unset, runs are state machine executions
//	LAMBDA_ENDPOINT            Lambda endpoint override
//	WS_ENDPOINT                API Gateway Management API endpoint of the WebSocket stage
//	AGENTS_CONFIG              the agents' definitions: a JSON object of config.AgentConfig
//	                           by name, as the CDK app encodes them (wiring/agentenv);
//	                           unknown settings are refused
//	MCP_CONFIG                 the MCP servers whose tools agents use: the mcp section of a
//	                           config file as JSON (mcp.go); HTTP servers only
//	MCP_SECRET_<VAR>           the Secrets Manager secret (name or ARN) holding the value
//	                           of ${VAR} in the MCP servers' headers (mcp.go)
//	WEB_SEARCH_PROVIDER        searxng, brave or tavily: the web_search tool's provider
//	WEB_SEARCH_URL             its endpoint (required for searxng)
//	WEB_SEARCH_KEY_SECRET      the Secrets Manager secret (name or ARN) holding Brave's or
//	                           Tavily's key, read at a search (api and step functions)
//	WORKSPACE_BUCKET           S3 bucket of the agents' workspaces and skills (required)
//	S3_ENDPOINT                S3 endpoint override (path-style)
//	DEFAULT_PROVIDER           bedrock (default) or openai
//	BEDROCK_MODEL              Bedrock model or inference profile; configures Bedrock
//	BEDROCK_REGION             Bedrock Region, when not the function's
//	BEDROCK_ENDPOINT           Bedrock endpoint override
//	OPENAI_BASE_URL            OpenAI-compatible API root (https://…/v1)
//	OPENAI_MODEL               its model; configures the OpenAI-compatible provider
//	OPENAI_API_KEY             its API key, or:
//	OPENAI_API_KEY_SECRET_ARN  a Secrets Manager secret holding the key
//	MAX_REPLY_BYTES            the most bytes of one model reply (default 1 MiB);
//	                           a longer reply is cut with finish_reason "length"
//	SESSION_SHARING            shared (default: one session per user and agent
//	                           across channels) or per_channel
//	SCHEDULE_GROUP, SCHEDULER_ROLE_ARN, SCHEDULER_TARGET_ARN, SCHEDULER_DEAD_LETTER_ARN, SCHEDULER_ENDPOINT
//	                           the check-ins' EventBridge Scheduler schedules (schedule.go)
//	OPENSEARCH_ENDPOINT        OpenSearch domain, to search memories there (see search.NewIndex)
//	OPENSEARCH_ENGINE, OPENSEARCH_INDEX, EMBED_DIMENSIONS  its k-NN engine, index, vector length
//	BEDROCK_EMBED_MODEL        Titan embedding model of memory vectors (keyword-only without)
//	                           and of POST /v1/embeddings (400 without)
//	MEMORY_CONVERSATIONS       on (default) or off: remember the exchanges of stateful sessions
//	MEMORY_CACHE_MB            bound of the memories kept for search in a function (see newMemory)
//	LOG_LEVEL                  debug, info (default), warn or error
//
// AWS credentials and the Region come from the Lambda environment
// (awsapi.EnvConfig), not the SDK's default chain.
package cloud

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/apigw"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/dynamo"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/ebscheduler"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/emf"
	s3fs "github.com/lambdaclaw/lambdaclaw/shared/adapters/s3"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/checkin"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/ratelimit"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/telegram"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/wsproto"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/prompt"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/core/skill"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/memstore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentenv"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentset"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/channelset"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// Provider names of DEFAULT_PROVIDER, and of the providers an agent's
// definition (AGENTS_CONFIG) may name.
const (
	ProviderBedrock = agentenv.ProviderBedrock
	ProviderOpenAI  = agentenv.ProviderOpenAI
)

// Root holds the adapters of one Lambda function.
type Root struct {
	Log *slog.Logger
	// Store is the DynamoDB store; Loop.Store wraps it for ephemeral
	// sessions.
	Store *dynamo.Store
	// Memory is the agents' memory (memory.go).
	Memory *memory.Memory
	// Embedder is the embedding model (BEDROCK_EMBED_MODEL) of memory
	// and of POST /v1/embeddings, nil without one or without Turns.
	Embedder memory.RequestEmbedder
	// Agents are the agents served: the default agent, those
	// AGENTS_CONFIG defines and every workspace in the bucket, live.
	Agents   *agentset.Workspaces
	Identity agent.Identity
	// Hub receives the events of runs replying on the "http" channel.
	Hub  *agent.Hub
	Loop *agent.Loop
	// Router routes what runs tell by their reply channel; it is
	// Loop.Replier.
	Router agent.Router
	// Driver runs the loop on Step Functions.
	Driver *sfn.Driver
	// Conns reaches the WebSocket clients; its API is nil without
	// WS_ENDPOINT.
	Conns apigw.Conns
	// Limiter counts requests per API key in this instance.
	Limiter *ratelimit.Limiter
	// Telegram is the Telegram channel, nil without a bot token in the
	// environment (telegram.go).
	Telegram *telegram.Channel
	// Channels are the channels whose secret (DISCORD_SECRET_ARN, …)
	// has a value; ChannelsOff says, by name, why each other one named
	// is left out (channels.go).
	Channels    []*channelset.Channel
	ChannelsOff map[string]string
	// late are the channels of ChannelsOff left out for want of their
	// secret's value, which may come on (LateChannel).
	late map[string]*lateChannel
	// Schedule is the engine of scheduled check-ins (schedule.go).
	Schedule *dynamo.Schedule
	// Skills are the skills of the agents' workspaces and the bucket.
	Skills *skill.Catalog
	// Config is the configuration read from the environment.
	Config *config.Config
	timers *ebscheduler.Schedules
	// events are the loop's events, written off the request path; the
	// handlers flush them before they return (flush.go).
	events  *obs.Emitter
	secrets *secrets
}

// Turns are the parts of a function that runs the loop's steps in its
// process (NewWith): cloud/turns makes them, and cloud/fargate the exec
// tool. A part left nil is one the function goes without.
type Turns struct {
	// Providers builds the adapters of the configured providers, by name
	// (setup.Providers).
	Providers func(ctx context.Context, cfg *config.Config) (map[string]llm.Provider, error)
	// Embedder returns the embedding model the environment names, nil
	// for none.
	Embedder func(ctx context.Context, getenv func(string) string) (memory.RequestEmbedder, error)
	// Search returns the index memories are searched in, nil to search
	// them in the function's process.
	Search func(ctx context.Context, getenv func(string) string) (memory.Index, error)
	// MCP gives the agents b builds the tools of the configured MCP
	// servers, whose header secrets secret reads, and starts the eager
	// ones in a function that calls models.
	MCP  func(b *agentset.Builder, cfg *config.Config, secret func(ctx context.Context, id string) (string, error), getenv func(string) string, log *slog.Logger) error
	Exec Exec
}

// Exec returns the exec tool on the stack's sandbox, whose workspace
// copies go to files, nil when the function has none (fargate.Exec).
type Exec func(ctx context.Context, cfg *config.Config, awsCfg aws.Config, getenv func(string) string, files *s3fs.FS, log *slog.Logger, quota *workspace.Quota) tool.Tool

// Recheck is how long a function trusts what it read of the agents'
// workspaces (which agents there are, their prompt files and skills)
// before it looks at the bucket again. Every request to S3 is paid, a
// listing twelve times a read, so the functions look at most once a
// minute; a change an agent's own tools make shows at once in the
// instance that made it (prompt.Builder.Stale), elsewhere within the
// minute, as does a push.
const Recheck = time.Minute

// New builds the adapters of a function that starts runs but steps none
// (see the package doc): NewWith without Turns.
func New(ctx context.Context) (*Root, error) { return NewWith(ctx, Turns{}) }

// NewWith builds the adapters from the environment (see the package doc)
// with the parts of turns that are set.
func NewWith(ctx context.Context, turns Turns) (*Root, error) {
	getenv := os.Getenv
	log := newLogger(getenv("LOG_LEVEL"))
	dcfg, err := dynamo.ConfigFromEnv()
	if err != nil {
		return nil, err
	}
	db, err := dynamo.New(ctx, dcfg)
	if err != nil {
		return nil, err
	}
	awsCfg, err := awsapi.EnvConfig(getenv)
	if err != nil {
		return nil, fmt.Errorf("cloud: %w", err)
	}
	// The secrets: the OpenAI-compatible provider's key, the MCP
	// servers' headers (read when a server starts), Telegram's token.
	secrets, err := newSecrets(awsCfg, getenv("SECRETSMANAGER_ENDPOINT"))
	if err != nil {
		return nil, fmt.Errorf("cloud: %w", err)
	}
	cfg, names, err := configFromEnv(ctx, secrets, getenv, turns.Providers != nil)
	if err != nil {
		return nil, err
	}
	bucket := getenv("WORKSPACE_BUCKET")
	if bucket == "" {
		return nil, errors.New("cloud: WORKSPACE_BUCKET is not set: name the S3 bucket of the agents' workspaces")
	}
	files, err := s3fs.Open(awsCfg, getenv("S3_ENDPOINT"), bucket)
	if err != nil {
		return nil, fmt.Errorf("cloud: WORKSPACE_BUCKET: %w", err)
	}
	skills := skill.NewCatalogFS(filestore.IOFS(context.Background(), files, skill.MaxSize+1), "the workspaces' bucket")
	skills.Warn = func(err error) { log.Warn("skill skipped", "err", err) }
	// The skills directories are listed once per Recheck, as the prompt
	// is built, not on every load_skill.
	skills.Refresh = Recheck
	var emb memory.RequestEmbedder
	if turns.Embedder != nil {
		if emb, err = turns.Embedder(ctx, getenv); err != nil {
			return nil, err
		}
	}
	var search memory.Index
	if turns.Search != nil {
		if search, err = turns.Search(ctx, getenv); err != nil {
			return nil, err
		}
	}
	mem, memTools, recorder, err := newMemory(db, emb, search, getenv, log)
	if err != nil {
		return nil, err
	}
	// The engine of check-ins comes before the tools: the schedule tool
	// makes its jobs.
	schedules, timers, err := newSchedule(db, awsCfg, getenv)
	if err != nil {
		return nil, err
	}
	quota, err := agentset.Quota(cfg)
	if err != nil {
		return nil, err
	}
	tools, err := agentset.Tools(cfg, skills, quota, schedules)
	if err != nil {
		return nil, err
	}
	if turns.Exec != nil {
		if exec := turns.Exec(ctx, cfg, awsCfg, getenv, files, log, quota); exec != nil {
			tools = append(tools, exec)
		}
	}
	var providers map[string]llm.Provider
	if turns.Providers != nil {
		if providers, err = turns.Providers(ctx, cfg); err != nil {
			return nil, fmt.Errorf("cloud: %s: %w", agentenv.Var, err)
		}
	}
	builder, err := agentset.NewBuilder(cfg, files, append(tools, memTools...), providers)
	if err != nil {
		return nil, fmt.Errorf("cloud: %s: %w", agentenv.Var, err)
	}
	if turns.MCP != nil {
		// The MCP servers' header secrets are read when a server starts.
		if err := turns.MCP(builder, cfg, secrets.get, getenv, log); err != nil {
			return nil, fmt.Errorf("cloud: %s: %w", MCPVar, err)
		}
	}
	live, err := builder.Live(ctx, nil, log, names...)
	if err != nil {
		return nil, fmt.Errorf("cloud: workspaces: %w", err)
	}
	live.SetRecheck(Recheck)
	prompter := prompt.New(skills, skill.Env{})
	prompter.Refresh = Recheck
	events := obs.NewEmitter(log, 1024, emf.New(os.Stderr))
	prompter.Warn = prompt.EventWarn(events.Emit)
	identity := agent.Identity{}
	switch v := getenv("SESSION_SHARING"); v {
	case "", "shared":
	case "per_channel":
		identity.PerChannel = true
	default:
		return nil, fmt.Errorf("cloud: SESSION_SHARING=%q: want shared or per_channel", v)
	}

	r := &Root{Log: log, Store: db, Memory: mem, Embedder: emb, Agents: live, Identity: identity, Hub: agent.NewHub(), Limiter: ratelimit.New(time.Minute),
		Schedule: schedules, timers: timers, Skills: skills, events: events, Config: cfg}
	// Runs of the HTTP API: the hub streams a stateless run to its
	// request in this function; a durable run's model calls happen in
	// the step function, which stores what they stream for the api
	// function's request to follow (sfn.Runner).
	router := agent.Router{gateway.Channel: agent.Tee{r.Hub, &agent.DraftWriter{Store: db, Every: BatchInterval, Log: log}}}
	r.Router = router
	if ep := getenv("WS_ENDPOINT"); ep != "" {
		api, err := awsapi.NewAPIGatewayManagement(awsCfg, ep)
		if err != nil {
			return nil, fmt.Errorf("cloud: WS_ENDPOINT: %w", err)
		}
		r.Conns = apigw.Conns{Log: log, API: api}
		router[wsproto.Channel] = agent.BatchDeltas(apigw.Replier{Conns: r.Conns}, BatchInterval, nil)
	}
	r.Loop = &agent.Loop{
		Store:    agent.WithEphemeral(db, memstore.New()),
		Agents:   live,
		Prompter: prompter,
		Replier:  router,
		Events:   events,
		Recorder: recorder,
		Log:      log,
		Limits:   agent.Limits{MaxReplyBytes: cfg.Limits.MaxReplyBytes},
	}
	// Token budgets count in the table; their notices go to webhooks.
	if r.Loop.Budgets, err = agentset.Budgets(cfg, db, nil, ""); err != nil {
		return nil, fmt.Errorf("cloud: %w", err)
	}
	if err := r.fitSteps(getenv, names); err != nil {
		return nil, err
	}
	arn := getenv("STATE_MACHINE_ARN")
	if arn == "" {
		return nil, errors.New("cloud: STATE_MACHINE_ARN is not set")
	}
	client, err := awsapi.NewStepFunctions(awsCfg, getenv("STEPFUNCTIONS_ENDPOINT"))
	if err != nil {
		return nil, fmt.Errorf("cloud: %w", err)
	}
	inline, err := newInline(awsCfg, getenv, db)
	if err != nil {
		return nil, err
	}
	r.Driver = &sfn.Driver{Loop: r.Loop, Lanes: db, Client: client, StateMachine: arn, Log: log, Inline: inline}
	r.Loop.Lanes = r.Driver // delegations' child runs
	r.secrets = secrets
	if err := r.newTelegram(ctx, getenv, router); err != nil {
		return nil, err
	}
	if err := r.newChannels(ctx, getenv, router); err != nil {
		return nil, err
	}
	// Every function routes check-ins' answers: the scheduler function
	// too, which delivers the answer of a firing whose run ended before
	// it was recorded (schedule.Runner.Start).
	if err := r.routeCheckIns(); err != nil {
		return nil, err
	}
	if len(cfg.Providers) == 0 {
		log.Debug("no LLM provider configured: this function does not call models")
	}
	return r, nil
}

// StepTimeoutVar names the timeout of the function's invocations, which
// the stack sets on the functions that run the loop's steps, as a Go
// duration ("15m0s"); without it steps have no limit.
const StepTimeoutVar = "STEP_TIMEOUT"

// fitSteps makes every step of the loop fit in one invocation of the
// function (STEP_TIMEOUT): the loop's MaxStep is its timeout less
// sfn.StepMargin, at which model calls are cut; a tool of one of the
// agents names (the default agent and those defined) whose calls may take
// longer fails the function's start, rather than a call being killed
// midway.
func (r *Root) fitSteps(getenv func(string) string, names []string) error {
	v := getenv(StepTimeoutVar)
	if v == "" {
		return nil
	}
	timeout, err := time.ParseDuration(v)
	if err != nil || timeout <= sfn.StepMargin {
		return fmt.Errorf("cloud: %s=%q: want a duration longer than %s", StepTimeoutVar, v, sfn.StepMargin)
	}
	r.Loop.MaxStep = timeout - sfn.StepMargin
	if len(r.Config.Providers) == 0 {
		return nil // this function runs no step
	}
	var errs []error
	for _, name := range names {
		if a, ok := r.Agents.Agent(name); ok {
			errs = append(errs, r.Loop.CheckFits(a))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cloud: a tool call could outlive the function's invocation (%s=%s): %w", StepTimeoutVar, v, err)
	}
	return nil
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil || level == "" {
		l = slog.LevelInfo
	}
	return slog.New(scrub.NewHandler(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l})))
}

// configFromEnv reads the configuration of the agents from the
// environment: the providers (DEFAULT_PROVIDER first) when models is
// true (a function that calls none ignores them), the agents
// AGENTS_CONFIG defines, with their settings (agentenv.Decode), and the
// reply limit. It returns the configuration, validated as a local one
// is, and the names of the agents it configures: the default agent and
// those defined.
func configFromEnv(ctx context.Context, secrets *secrets, getenv func(string) string, models bool) (*config.Config, []string, error) {
	cfg := &config.Config{}
	if err := budgetsFromEnv(&cfg.Budgets, getenv); err != nil {
		return nil, nil, err
	}
	if v := getenv("MAX_REPLY_BYTES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return nil, nil, fmt.Errorf("cloud: MAX_REPLY_BYTES=%q: want a positive number of bytes", v)
		}
		cfg.Limits.MaxReplyBytes = n
	}
	var bedrockP, openaiP *config.Provider
	if !models {
		getenv = withoutProviders(getenv)
	}
	if model := getenv("BEDROCK_MODEL"); model != "" {
		bedrockP = &config.Provider{Name: ProviderBedrock, Type: config.ProviderBedrock, Model: model,
			Region: cmp.Or(getenv("BEDROCK_REGION"), getenv("AWS_REGION")), BaseURL: getenv("BEDROCK_ENDPOINT")}
	}
	if base, model := getenv("OPENAI_BASE_URL"), getenv("OPENAI_MODEL"); base != "" || model != "" {
		if model == "" {
			return nil, nil, errors.New("cloud: OPENAI_BASE_URL is set but OPENAI_MODEL is not: name the model of the OpenAI-compatible provider")
		}
		key, err := openAIKey(ctx, secrets, getenv)
		if err != nil {
			return nil, nil, err
		}
		openaiP = &config.Provider{Name: ProviderOpenAI, Type: config.ProviderOpenAI, BaseURL: base, Model: model}
		if key != "" {
			openaiP.APIKey = config.ResolvedSecret("OPENAI_API_KEY", key)
		}
	}
	add := func(ps ...*config.Provider) {
		for _, p := range ps {
			if p != nil {
				cfg.Providers = append(cfg.Providers, *p)
			}
		}
	}
	switch def := getenv("DEFAULT_PROVIDER"); def {
	case "", ProviderBedrock:
		if def != "" && bedrockP == nil {
			return nil, nil, errors.New("cloud: DEFAULT_PROVIDER=bedrock needs BEDROCK_MODEL")
		}
		add(bedrockP, openaiP)
	case ProviderOpenAI:
		if openaiP == nil {
			return nil, nil, errors.New("cloud: DEFAULT_PROVIDER=openai needs OPENAI_MODEL (and OPENAI_BASE_URL for a server other than OpenAI's)")
		}
		add(openaiP, bedrockP)
	default:
		return nil, nil, fmt.Errorf("cloud: DEFAULT_PROVIDER=%q: want %s or %s", def, ProviderBedrock, ProviderOpenAI)
	}
	providers := cfg.ProviderNames()
	calls := len(providers) > 0
	if !calls {
		// A function without providers (ws, telegram, scheduler) calls
		// no model: it needs the agents' names and tools, not their
		// provider chains, which the functions that call models check.
		providers = []string{ProviderBedrock, ProviderOpenAI}
	}
	agents, err := agentenv.Decode(getenv(agentenv.Var), providers)
	if err != nil {
		return nil, nil, fmt.Errorf("cloud: %w", err)
	}
	if !calls {
		for n, a := range agents {
			a.Providers = nil
			agents[n] = a
		}
	}
	cfg.Agents = agents
	if cfg.MCP, err = agentenv.DecodeMCP(getenv(MCPVar), agents); err != nil {
		return nil, nil, fmt.Errorf("cloud: %w", err)
	}
	cfg.Tools.WebSearch = webSearch(secrets, getenv)
	if err := cfg.Validate(); err != nil {
		return nil, nil, fmt.Errorf("cloud: %w", err)
	}
	return cfg, agentenv.Names(agents), nil
}

// webSearch is the web_search tool's provider (WEB_SEARCH_PROVIDER,
// WEB_SEARCH_URL), nil without; its key is the value of the secret
// WEB_SEARCH_KEY_SECRET names, read at a search (cached once it has a
// value), so that a function starts before the operator puts it and
// one that runs no turns never reads it.
func webSearch(secrets *secrets, getenv func(string) string) *config.WebSearch {
	provider := getenv(agentenv.WebSearchProviderVar)
	if provider == "" {
		return nil
	}
	ws := &config.WebSearch{Provider: provider, URL: getenv(agentenv.WebSearchURLVar)}
	if id := getenv(agentenv.WebSearchKeyVar); id != "" {
		ws.KeyFunc = func(ctx context.Context) (string, error) { return secrets.get(ctx, id) }
	} else if provider != "searxng" {
		// A function that runs no turns has no key: it builds the tool
		// for its name and policy only.
		ws.KeyFunc = func(context.Context) (string, error) {
			return "", fmt.Errorf("%s is not set in this function", agentenv.WebSearchKeyVar)
		}
	}
	return ws
}

// withoutProviders is getenv without the providers' settings.
func withoutProviders(getenv func(string) string) func(string) string {
	return func(name string) string {
		switch name {
		case "DEFAULT_PROVIDER", "BEDROCK_MODEL", "OPENAI_BASE_URL", "OPENAI_MODEL":
			return ""
		}
		return getenv(name)
	}
}

// openAIKey returns OPENAI_API_KEY, or the value of the secret
// OPENAI_API_KEY_SECRET_ARN names.
func openAIKey(ctx context.Context, secrets *secrets, getenv func(string) string) (string, error) {
	if key := getenv("OPENAI_API_KEY"); key != "" {
		return key, nil
	}
	arn := getenv("OPENAI_API_KEY_SECRET_ARN")
	if arn == "" {
		return "", nil // servers such as Ollama need no key
	}
	key, err := secrets.get(ctx, arn)
	if err != nil {
		return "", fmt.Errorf("cloud: read the OpenAI-compatible provider's key: %w", err)
	}
	return key, nil
}

// CheckIn returns the handler of the scheduler function.
func (r *Root) CheckIn() *checkin.Handler {
	return &checkin.Handler{Loop: r.Loop, Lane: r.Driver, Identity: r.Identity}
}

// AgentNames lists the agents served, sorted.
func (r *Root) AgentNames() []string { return r.Agents.Names() }

// BatchInterval is how long the functions hold streamed text back: one
// WebSocket post, or one stored draft piece, per interval rather than one
// per token. Each PostToConnection is a paid message; a quarter second
// still reads as live, and a 300-token answer takes 16 messages, not 34
// as at 100 ms (tests/cost).
const BatchInterval = 250 * time.Millisecond

// budgetsFromEnv reads the budgets' settings (config.Budgets) from
// BUDGET_RESET_HOUR, BUDGET_REPLY_CAP, BUDGET_NOTIFY_BELOW and
// BUDGET_NOTIFY (webhook:<url> targets, separated by commas); what is
// unset keeps its default. config.Validate checks the values.
func budgetsFromEnv(b *config.Budgets, getenv func(string) string) error {
	for name, to := range map[string]*int{"BUDGET_RESET_HOUR": &b.ResetHour, "BUDGET_REPLY_CAP": &b.ReplyCap} {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("cloud: %s=%q: want a whole number", name, v)
			}
			*to = n
		}
	}
	if v := getenv("BUDGET_NOTIFY_BELOW"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("cloud: BUDGET_NOTIFY_BELOW=%q: want a number between 0 and 1", v)
		}
		b.NotifyBelow = f
	}
	for n := range strings.SplitSeq(getenv("BUDGET_NOTIFY"), ",") {
		if n = strings.TrimSpace(n); n != "" {
			if !strings.HasPrefix(n, "webhook:") {
				return fmt.Errorf("cloud: BUDGET_NOTIFY: %q: on AWS budget notices go to webhook:<url> targets only", n)
			}
			b.Notify = append(b.Notify, n)
		}
	}
	return nil
}
