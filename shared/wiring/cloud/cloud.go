// Package cloud is the composition root of the AWS deployment: every
// Lambda function (functions/api, ws, step, scheduler) builds its adapters
// with New from the environment the CDK stack sets, then starts its
// handler. It wires
//
//   - the store: DynamoDB (TABLE_NAME), with ephemeral sessions, those of
//     stateless requests, kept in memory (agent.WithEphemeral);
//   - the agents: their workspaces and skills live in the stack's bucket
//     (WORKSPACE_BUCKET, adapters/s3), and they are made exactly as
//     locally (setup.Builder.Live): the default agent and those
//     AGENTS_CONFIG defines, with their settings (providers, model,
//     tools, compaction, …; wiring/agentenv), get their workspaces made
//     from the templates where missing, and every workspace under
//     agents/ is an agent, each with its provider chain and the tools its
//     settings select of web_fetch, load_skill (bundled, global skills/
//     and the agent's own), schedule, the file tools, workspace_memory
//     and the memory tools, and its system prompt built from its workspace
//     (prompt.Builder);
//   - the provider chain: DEFAULT_PROVIDER first (bedrock, the default, or
//     openai), then the other one when it is configured, each with retries
//     and a circuit breaker;
//   - the embedding model (BEDROCK_EMBED_MODEL, memory.go) of memory and
//     of POST /v1/embeddings, which every agent shares;
//   - the agents' memory (memory.go): entries in the table, searched in
//     the function's process (dynamo.MemoryIndex), or through OpenSearch,
//     which the indexer function feeds from the table's stream, when
//     OPENSEARCH_ENDPOINT is set; and the recorder of conversations, which
//     the step function runs when a run is done (sfn.Driver);
//   - the driver of the loop: durable runs run inline in the step
//     function (RUN_FUNCTION, inline.go), handed to the state machine
//     (STATE_MACHINE_ARN) when they park or run long;
//   - the agent.Router that routes what runs tell by their reply channel:
//     "ws" to the API Gateway WebSocket connection (WS_ENDPOINT), "http"
//     to the in-process Hub the api function's requests listen to, "tg"
//     to the Telegram channel when a bot token is configured (telegram.go),
//     "cron" to the record of scheduled check-ins (schedule.go);
//   - scheduled check-ins: jobs in the table, one EventBridge Scheduler
//     schedule each (schedule.go), which agents make with the schedule
//     tool, and the agents' heartbeats;
//   - the events of the loop, written off the request path to standard
//     error (their log lines and EMF metrics, adapters/emf), which every
//     handler it returns (API, WebSocket, Step, Scheduler; Flush and
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
//	OPENSEARCH_ENDPOINT        OpenSearch domain, to search memories there (see NewSearchIndex)
//	OPENSEARCH_ENGINE, OPENSEARCH_INDEX, EMBED_DIMENSIONS  its k-NN engine, index, vector length
//	BEDROCK_EMBED_MODEL        Titan embedding model of memory vectors (keyword-only without)
//	                           and of POST /v1/embeddings (400 without)
//	MEMORY_CONVERSATIONS       on (default) or off: remember the exchanges of stateful sessions
//	MEMORY_CACHE_MB            bound of the memories kept for search in a function (see newMemory)
//	LOG_LEVEL                  debug, info (default), warn or error
//
// AWS credentials and the Region come from the Lambda environment (the
// SDK's default chain).
package cloud

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/apigatewaymanagementapi"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/apigw"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/dynamo"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/ebscheduler"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/emf"
	s3fs "github.com/lambdaclaw/lambdaclaw/shared/adapters/s3"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/checkin"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/console"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/mcpserver"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/ratelimit"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/telegram"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/wsproto"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/prompt"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/core/skill"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/memstore"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentenv"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/setup"
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
	// and of POST /v1/embeddings, nil without one.
	Embedder memory.RequestEmbedder
	// Agents are the agents served: the default agent, those
	// AGENTS_CONFIG defines and every workspace in the bucket, live.
	Agents   *setup.Workspaces
	Identity agent.Identity
	// Hub receives the events of runs replying on the "http" channel.
	Hub  *agent.Hub
	Loop *agent.Loop
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
	// Schedule is the engine of scheduled check-ins (schedule.go).
	Schedule *dynamo.Schedule
	timers   *ebscheduler.Schedules
	skills   *skill.Catalog
	// events are the loop's events, written off the request path; the
	// handlers flush them before they return (flush.go).
	events  *obs.Emitter
	secrets *secrets
	cfg     *config.Config
}

// Recheck is how long a function trusts what it read of the agents'
// workspaces (which agents there are, their prompt files and skills)
// before it looks at the bucket again. Every request to S3 is paid, a
// listing twelve times a read, so the functions look at most once a
// minute; a change an agent's own tools make shows at once in the
// instance that made it (prompt.Builder.Stale), elsewhere within the
// minute, as does a push.
const Recheck = time.Minute

// New builds the adapters from the environment (see the package doc). It
// checks that the table exists.
func New(ctx context.Context) (*Root, error) {
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
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("cloud: aws config: %w", err)
	}
	// The secrets: the OpenAI-compatible provider's key, the MCP
	// servers' headers (read when a server starts), Telegram's token.
	secrets, err := newSecrets(awsCfg, getenv("SECRETSMANAGER_ENDPOINT"))
	if err != nil {
		return nil, fmt.Errorf("cloud: %w", err)
	}
	cfg, names, err := configFromEnv(ctx, secrets, getenv)
	if err != nil {
		return nil, err
	}
	bucket := getenv("WORKSPACE_BUCKET")
	if bucket == "" {
		return nil, errors.New("cloud: WORKSPACE_BUCKET is not set: name the S3 bucket of the agents' workspaces")
	}
	files, err := s3fs.New(s3fs.NewClient(awsCfg, getenv("S3_ENDPOINT")), bucket, "")
	if err != nil {
		return nil, fmt.Errorf("cloud: WORKSPACE_BUCKET: %w", err)
	}
	skills := skill.NewCatalogFS(filestore.IOFS(context.Background(), files, skill.MaxSize+1), "the workspaces' bucket")
	skills.Warn = func(err error) { log.Warn("skill skipped", "err", err) }
	// The skills directories are listed once per Recheck, as the prompt
	// is built, not on every load_skill.
	skills.Refresh = Recheck
	emb, err := newEmbedder(ctx, getenv)
	if err != nil {
		return nil, err
	}
	mem, memTools, recorder, err := newMemory(ctx, db, emb, getenv, log)
	if err != nil {
		return nil, err
	}
	// The engine of check-ins comes before the tools: the schedule tool
	// makes its jobs.
	schedules, timers, err := newSchedule(db, awsCfg, getenv)
	if err != nil {
		return nil, err
	}
	quota, err := setup.Quota(cfg)
	if err != nil {
		return nil, err
	}
	tools, err := setup.Tools(cfg, skills, quota, schedules)
	if err != nil {
		return nil, err
	}
	if exec := newExec(ctx, cfg, awsCfg, getenv, files, log, quota); exec != nil {
		tools = append(tools, exec)
	}
	builder, err := setup.NewBuilder(ctx, cfg, files, append(tools, memTools...))
	if err != nil {
		return nil, fmt.Errorf("cloud: %s: %w", agentenv.Var, err)
	}
	servers, err := setup.MCP(cfg.MCP, mcpGetenv(secrets, getenv, log), log)
	if err != nil {
		return nil, fmt.Errorf("cloud: %s: %w", MCPVar, err)
	}
	if servers != nil {
		// eager: started at cold start; lazy: by the first run that
		// needs them. A function that calls no model (ws, telegram,
		// scheduler) runs no turn, so it starts none.
		builder.UseMCP(servers)
		if cfg.MCP.Eager() && len(cfg.Providers) > 0 {
			servers.Start()
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
		Schedule: schedules, timers: timers, skills: skills, events: events, cfg: cfg}
	// Runs of the HTTP API: the hub streams a stateless run to its
	// request in this function; a durable run's model calls happen in
	// the step function, which stores what they stream for the api
	// function's request to follow (sfn.Runner).
	router := agent.Router{gateway.Channel: agent.Tee{r.Hub, &agent.DraftWriter{Store: db, Every: BatchInterval, Log: log}}}
	if ep := getenv("WS_ENDPOINT"); ep != "" {
		r.Conns = apigw.Conns{Log: log, API: apigatewaymanagementapi.NewFromConfig(awsCfg, func(o *apigatewaymanagementapi.Options) {
			o.BaseEndpoint = aws.String(ep)
		})}
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
	r.secrets = secrets
	if err := r.newTelegram(ctx, getenv, router); err != nil {
		return nil, err
	}
	if err := r.routeCheckIns(router); err != nil {
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
	if len(r.cfg.Providers) == 0 {
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
// environment: the providers (DEFAULT_PROVIDER first), the agents
// AGENTS_CONFIG defines, with their settings (agentenv.Decode), and the
// reply limit. It returns the configuration, validated as a local one
// is, and the names of the agents it configures: the default agent and
// those defined.
func configFromEnv(ctx context.Context, secrets *secrets, getenv func(string) string) (*config.Config, []string, error) {
	cfg := &config.Config{}
	if v := getenv("MAX_REPLY_BYTES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return nil, nil, fmt.Errorf("cloud: MAX_REPLY_BYTES=%q: want a positive number of bytes", v)
		}
		cfg.Limits.MaxReplyBytes = n
	}
	var bedrockP, openaiP *config.Provider
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
	if err := cfg.Validate(); err != nil {
		return nil, nil, fmt.Errorf("cloud: %w", err)
	}
	return cfg, agentenv.Names(agents), nil
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

// API returns the http.Handler of the api function: the gateway of the
// local server, with the Step Functions runner (sfn.Runner). Inline runs
// live as long as the function's instance.
func (r *Root) API() (http.Handler, error) {
	// Inline runs are stateless: they record nothing, and this function
	// leaves the recording of what the state machine's runs queued to the
	// step function (sfn.Driver), rather than start a worker for it here.
	inline := *r.Loop
	inline.Recorder = nil
	lanes := agent.NewDriver(context.Background(), &inline, r.Log)
	runner := &sfn.Runner{
		Inline:  lanes,
		Durable: r.Driver,
		Hub:     r.Hub,
		Drafts:  r.Store,
		Log:     r.Log,
	}
	// /mcp is stateless: the next request of a client may reach another
	// instance, which holds no MCP session.
	mcpSrv, err := mcpserver.New(mcpserver.Config{
		Runner: runner, Events: r.Hub, Sessions: r.Store, Agents: r.Agents, Names: r.AgentNames,
		Identity: r.Identity, Stateless: true, Log: r.Log,
	})
	if err != nil {
		return nil, err
	}
	cons, err := r.console()
	if err != nil {
		return nil, err
	}
	h, err := gateway.New(gateway.Config{
		Console: cons,
		Runner:  runner, Events: r.Hub, Keys: r.Store, Runs: r.Store, Limiter: r.Limiter,
		Agents: r.AgentNames, HasAgent: r.Agents.Has, Identity: r.Identity, Log: r.Log, Embedder: r.Embedder,
		Responses: r.Store, Threads: r.Loop, MCP: mcpSrv,
		// The agents are the deployment's: created with its table.
		Created: func(string) time.Time { return r.Store.Created() },
	})
	if err != nil {
		return nil, err
	}
	return flushedHTTP(r, h, lanes), nil
}

// console is the web console of the api function: the same as the local
// server's, over the table, the bucket and the scheduler; metrics are in
// CloudWatch, not at /metrics.
func (r *Root) console() (*console.Console, error) {
	c := console.Config{
		Sessions: r.Store, Keys: r.Store, Jobs: r.Schedule, Operator: schedule.OperatorOwner, Agents: r.AgentNames,
		DefaultRate: config.DefaultKeyRate, Log: r.Log,
		// The WebSocket API's management endpoint (https://…/stage) is
		// also its clients' URL, with wss://.
		WebSocketURL: wsURL(os.Getenv("WS_ENDPOINT")),
		Workspace:    setup.WorkspaceOf(r.Agents),
		Tool:         setup.ToolOf(r.Agents),
		Skills: func(ctx context.Context, agent string, ws filestore.FS) []skill.Skill {
			list, _ := r.skills.For(ctx, agent, ws)
			return list
		},
	}
	if r.Memory != nil {
		c.Memory = r.Memory
	}
	return console.New(c)
}

// wsURL is the client URL of the WebSocket API whose management
// endpoint is ep; "" for none.
func wsURL(ep string) string {
	if rest, ok := strings.CutPrefix(ep, "https://"); ok {
		return "wss://" + rest
	}
	return ""
}

// AgentNames lists the agents served, sorted.
func (r *Root) AgentNames() []string { return r.Agents.Names() }

// BatchInterval is how long the functions hold streamed text back: one
// WebSocket post, or one stored draft piece, per interval rather than one
// per token. Each PostToConnection is a paid message; a quarter second
// still reads as live, and a 300-token answer takes 16 messages, not 34
// as at 100 ms (tests/cost).
const BatchInterval = 250 * time.Millisecond
