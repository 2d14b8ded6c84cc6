package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdadestinations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentenv"
)

// NewStack defines lambdaclaw's AWS deployment: everything is pay per use
// except the optional OpenSearch domain, so an idle deployment costs about a
// dollar a month, most of it its alarms (README: What it costs).
//
// # Front door: API Gateway REST API with response streaming
//
// The OpenAI-compatible endpoint streams Server-Sent Events. Two AWS
// designs stream from Lambda: a Function URL with InvokeMode
// RESPONSE_STREAM, or an API Gateway REST API whose Lambda proxy
// integration has responseTransferMode STREAM (API Gateway then calls
// InvokeWithResponseStream). This stack uses the REST API, which CDK 2.250
// exposes directly (LambdaIntegrationOptions.ResponseTransferMode), because:
//
//   - one base URL serves every route: OpenAI clients take a single
//     base_url for both /v1/models and /v1/chat/completions, and the
//     Telegram webhook (with -c telegram=on) and /health sit beside them,
//     routed to their functions by API Gateway rather than by a second
//     public URL;
//   - stage throttling caps what a leaked URL can cost, and the REST API
//     is where WAF, custom domains and usage plans attach later;
//   - streamed responses may run 15 minutes (the integration timeout is
//     raised to 900 s, allowed for STREAM without a quota increase); the
//     endpoint is REGIONAL because edge-optimized endpoints cut idle
//     streams after 30 s (regional: 5 minutes).
//
// The price is $3.50 per million requests instead of a Function URL's $0.
//
// What it implies for the Go side: every route of the api function uses
// STREAM, so the api function is invoked with InvokeWithResponseStream on
// every request. Its input is the ordinary REST proxy event (payload format
// 1.0, events.APIGatewayProxyRequest); its output must be the streaming
// proxy format: a JSON prelude {"statusCode":…,"headers":…,"cookies":…},
// eight NUL bytes, then the body as it is produced. That is exactly what
// aws-lambda-go writes for a handler returning
// *events.LambdaFunctionURLStreamingResponse (the lambdaurl package writes
// the same format but decodes Function URL events, payload 2.0, so the api
// function adapts the 1.0 request to an http.Request itself). The telegram
// function keeps a BUFFERED integration and answers with an ordinary
// events.APIGatewayProxyResponse.
//
// # The loop
//
// A Standard state machine drives one run's steps (statemachine.go). Its
// ARN is built from a fixed name rather than referenced, because the step
// function it invokes also starts executions (the next queued run of a
// session): a reference would make the function and the state machine
// depend on each other.
//
// # Search
//
// OpenSearch is created only with -c search=opensearch (search.go), because
// it is the one resource that costs money while idle. Its indexer function
// (functions/indexer) copies the memory items of the table's stream into
// the OpenSearch index.
//
// # Telegram
//
// The telegram function, its webhook route, its webhook secret and the
// webhook registration exist only with -c telegram=on (functions/telegram;
// environment in shared/wiring/cloud/telegram.go). -c telegram_allowed_users=<id,id>
// sets the allowlist and -c telegram_api_base=<url> a self-hosted Bot API
// server. The bot token is not created here: the operator stores it in
// Secrets Manager before deploying, and the stack imports that secret by
// name (-c telegram_token_secret, default lambdaclaw/telegram-bot-token).
// The deployment registers the webhook itself: the custom resource
// Custom::TelegramWebhook, served by the telegram function (ServiceToken),
// calls setWebhook with the stage's webhook URL and the generated secret on
// create and update, and deleteWebhook on delete (telegramWebhook).
//
// # IAM
//
// Every permission comes from a grant or a statement naming this stack's
// own resources; the exceptions are Bedrock model ARNs (region-wildcarded
// because cross-Region inference profiles route to several Regions), the
// AWS Marketplace subscription a model's first use makes, and the
// CloudWatch Logs delivery actions the state machine's logging needs,
// which IAM only accepts on "*". On the table, each function may do only
// what it needs to the items it owns, by partition key (access.go).
func NewStack(scope constructs.Construct, id string, cfg Config, props *awscdk.StackProps) (awscdk.Stack, error) {
	functions := []string{"api", "ws", "step", "scheduler"}
	if cfg.Telegram {
		functions = append(functions, "telegram")
	}
	if len(cfg.Channels) > 0 {
		functions = append(functions, "channels")
	}
	if cfg.Search == SearchOpenSearch {
		functions = append(functions, "indexer")
	}
	if cfg.Sandbox == SandboxFargate {
		functions = append(functions, "sandbox") // the runner, a task's program
	}
	if err := cfg.checkAssets(functions); err != nil {
		return nil, err
	}
	if props == nil {
		props = &awscdk.StackProps{}
	}
	if props.Description == nil {
		props.Description = jsii.String("lambdaclaw: AI agent gateway (API Gateway, Lambda, Step Functions, DynamoDB)")
	}
	name := id
	if props.StackName != nil {
		name = *props.StackName
	}
	if err := cfg.checkEnvironment(name); err != nil {
		return nil, err
	}
	stack := awscdk.NewStack(scope, jsii.String(id), props)
	s := &builder{stack: stack, cfg: cfg, fns: map[string]awslambda.Function{}}
	s.table()
	s.workspaceBucket()
	s.secrets()
	s.mcpSecrets()
	s.channelSecrets()
	s.stateMachineArn = stack.FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("states"),
		Resource:     jsii.String("stateMachine"),
		ResourceName: jsii.String(stateMachineName(stack)),
		ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
	s.stepFunctionArn = stack.FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("lambda"),
		Resource:     jsii.String("function"),
		ResourceName: jsii.String(stepFunctionName(stack)),
		ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
	})
	s.scheduler()
	s.websocket()
	s.lambdas()
	if cfg.Search == SearchOpenSearch {
		s.search()
	}
	if cfg.Sandbox == SandboxFargate {
		s.sandbox()
	}
	s.loop()
	s.restAPI()
	s.waf()
	s.alarms()
	s.telegramWebhook()
	s.outputs()
	return stack, nil
}

// builder holds the resources while NewStack wires them together.
type builder struct {
	stack awscdk.Stack
	cfg   Config

	table_             awsdynamodb.Table
	workspaces         awss3.Bucket
	botToken           awssecretsmanager.ISecret           // imported; nil without telegram=on
	webhookSecret      awssecretsmanager.Secret            // nil without telegram=on
	providerKey        awssecretsmanager.Secret            // nil without openai_base_url
	mcpSecret          map[string]awssecretsmanager.Secret // by header variable (mcp.go)
	channelSecret      map[string]awssecretsmanager.Secret // by channel (channels.go)
	stateMachineArn    *string
	stepFunctionArn    *string
	scheduleGroup      awsscheduler.ScheduleGroup
	schedulerRole      awsiam.Role
	schedulerFunction  awslambda.Function
	scheduleFailures   awssqs.Queue // the schedules' dead-letter queue
	runFailures        awssqs.Queue // the inline runs' dead-letter queue
	wsEndpoint         *string      // https callback URL for PostToConnection
	wsURL              *string      // wss URL for clients
	wsGrant            func(awsiam.IGrantable)
	addWebSocketRoutes func()
	searchEndpoint     *string // https URL of the OpenSearch domain, or nil
	searchGrant        func(awsiam.IGrantable)
	sandboxCluster     awsecs.Cluster // nil without sandbox=fargate
	fns                map[string]awslambda.Function
	deadLetters        []deadLetter
	stateMachine       awsstepfunctions.StateMachine
	restApi            awsapigateway.RestApi
	apiURL             *string
	urlFor             func(path string) *string
}

// deadLetter is a queue where the failures of an asynchronous path land.
type deadLetter struct {
	id    string
	queue awssqs.Queue
}

// deadLetterQueue creates a dead-letter queue (SQS costs nothing idle),
// which the alarms watch.
func (s *builder) deadLetterQueue(id string) awssqs.Queue {
	q := awssqs.NewQueue(s.stack, jsii.String(id), &awssqs.QueueProps{
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
	})
	s.deadLetters = append(s.deadLetters, deadLetter{id, q})
	return q
}

// stepFunctionName is the step function's physical name, fixed for the
// same reason as the state machine's: every function that starts runs,
// the step function itself among them, invokes it (RUN_FUNCTION), and a
// reference would make the step function depend on its own policy.
func stepFunctionName(stack awscdk.Stack) string {
	return *stack.StackName() + "-step"
}

// stateMachineName is the loop's physical name: fixed so that its ARN can
// be written into the functions' environment and policies without a
// reference (see NewStack).
func stateMachineName(stack awscdk.Stack) string {
	return *stack.StackName() + "-loop"
}

// table is the one DynamoDB table of the single-table design: sessions,
// history, memory, approvals, keys, leases and de-duplication items.
func (s *builder) table() {
	t := awsdynamodb.NewTable(s.stack, jsii.String("Table"), &awsdynamodb.TableProps{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String("pk"), Type: awsdynamodb.AttributeType_STRING},
		SortKey:             &awsdynamodb.Attribute{Name: jsii.String("sk"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String("expires_at"),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		Stream: awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES,
		// The table holds the users' data: `cdk destroy` leaves it behind.
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
	t.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:      jsii.String("gsi1"),
		PartitionKey:   &awsdynamodb.Attribute{Name: jsii.String("gsi1pk"), Type: awsdynamodb.AttributeType_STRING},
		SortKey:        &awsdynamodb.Attribute{Name: jsii.String("gsi1sk"), Type: awsdynamodb.AttributeType_STRING},
		ProjectionType: awsdynamodb.ProjectionType_ALL,
	})
	s.table_ = t
}

// secrets creates the Secrets Manager secrets. None holds a value from this
// code: the provider key is created with a random placeholder that the
// operator replaces (README: put-secret-value); the webhook secret token
// is random for good, in the alphabet Telegram allows (A-Z a-z 0-9 _ -,
// 1-256 characters: letters and digits here). The bot token secret is
// imported by name: the operator creates it before deploying, because the
// deployment registers the webhook with it.
func (s *builder) secrets() {
	if s.cfg.OpenAIBaseURL != "" {
		s.providerKey = awssecretsmanager.NewSecret(s.stack, jsii.String("ProviderKey"), &awssecretsmanager.SecretProps{
			Description: jsii.String("lambdaclaw: API key of the OpenAI-compatible provider at " + s.cfg.OpenAIBaseURL + " (replace the generated placeholder)"),
		})
	}
	if !s.cfg.Telegram {
		return
	}
	s.botToken = awssecretsmanager.Secret_FromSecretNameV2(s.stack, jsii.String("TelegramBotToken"), jsii.String(s.cfg.TelegramTokenSecret))
	s.webhookSecret = awssecretsmanager.NewSecret(s.stack, jsii.String("TelegramWebhookSecret"), &awssecretsmanager.SecretProps{
		Description: jsii.String("lambdaclaw: secret_token for Telegram's setWebhook, checked on every webhook call"),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			PasswordLength:     jsii.Number(64),
			ExcludePunctuation: jsii.Bool(true),
			IncludeSpace:       jsii.Bool(false),
		},
	})
}

// scheduler creates the EventBridge Scheduler group the check-ins live in
// and the role schedules run as: it may invoke the scheduler function and
// send to the queue of the deliveries it could not make, nothing else. The
// functions that create schedules get permission to pass this role to
// EventBridge Scheduler only.
func (s *builder) scheduler() {
	s.scheduleGroup = awsscheduler.NewScheduleGroup(s.stack, jsii.String("CheckIns"), &awsscheduler.ScheduleGroupProps{
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	s.schedulerRole = awsiam.NewRole(s.stack, jsii.String("SchedulerRole"), &awsiam.RoleProps{
		Description: jsii.String("lambdaclaw: assumed by EventBridge Scheduler to invoke the scheduler function"),
		AssumedBy: awsiam.NewServicePrincipal(jsii.String("scheduler.amazonaws.com"), &awsiam.ServicePrincipalOpts{
			Conditions: &map[string]interface{}{
				"StringEquals": map[string]interface{}{"aws:SourceAccount": s.stack.Account()},
			},
		}),
	})
	// Every schedule's target retries a delivery it could not make (the
	// scheduler function throttled or missing), then sends it here
	// (ebscheduler.Schedules.DeadLetter) as the schedule's role; the
	// queue has its alarm like every dead-letter queue.
	s.scheduleFailures = s.deadLetterQueue("ScheduleFailures")
	s.schedulerRole.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("sqs:SendMessage"),
		Resources: &[]*string{s.scheduleFailures.QueueArn()},
	}))
}

// grantSchedules lets fn do actions on the schedules of the check-in
// group, and, when it may create or update them, pass the scheduler role
// to EventBridge Scheduler (a schedule runs as that role).
func (s *builder) grantSchedules(fn awslambda.Function, actions ...string) {
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions: jsii.Strings(actions...),
		Resources: &[]*string{s.stack.FormatArn(&awscdk.ArnComponents{
			Service:      jsii.String("scheduler"),
			Resource:     jsii.String("schedule"),
			ResourceName: awscdk.Fn_Join(jsii.String(""), &[]*string{s.scheduleGroup.ScheduleGroupName(), jsii.String("/*")}),
		})},
	}))
	if !slices.Contains(actions, "scheduler:CreateSchedule") && !slices.Contains(actions, "scheduler:UpdateSchedule") {
		return
	}
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("iam:PassRole"),
		Resources: &[]*string{s.schedulerRole.RoleArn()},
		Conditions: &map[string]interface{}{
			"StringEquals": map[string]interface{}{"iam:PassedToService": "scheduler.amazonaws.com"},
		},
	}))
}

// grantStates lets fn start runs of the loop (an asynchronous invocation
// of the step function, which runs them inline, and executions of the
// state machine, for the step function's hand-overs and without
// RUN_FUNCTION) and, with answers, resume a run parked for approval
// (SendTaskSuccess/Failure with its task token): the channels that
// deliver answers, and the step function, whose park task resumes its run
// itself when the answer came before the token.
func (s *builder) grantStates(fn awslambda.Function, answers bool) {
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("states:StartExecution"),
		Resources: &[]*string{s.stateMachineArn},
	}))
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("lambda:InvokeFunction"),
		Resources: &[]*string{s.stepFunctionArn},
	}))
	if answers {
		fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("states:SendTaskSuccess", "states:SendTaskFailure", "states:SendTaskHeartbeat"),
			Resources: &[]*string{s.stateMachineArn},
		}))
	}
}

// inferenceProfilePrefixes are the geography prefixes of Bedrock's
// system-defined cross-Region inference profiles.
var inferenceProfilePrefixes = []string{"global.", "us.", "us-gov.", "eu.", "apac.", "jp.", "au.", "ca."}

// bedrockResources returns the ARNs bedrock:InvokeModel* needs for model.
//
// A foundation model id is one ARN in this Region. A cross-Region inference
// profile needs the profile (this account and Region) and the foundation
// model in every destination Region it may route to; AWS documents the
// foundation-model ARN with a wildcard Region for that (the global profile
// routes to any commercial Region, and "*" also matches its Region-less
// form). An inference profile ARN is granted as given, with the foundation
// models it may front.
func (s *builder) bedrockResources(model string) []*string {
	fm := func(region, id string) *string {
		return s.stack.FormatArn(&awscdk.ArnComponents{
			Service:      jsii.String("bedrock"),
			Region:       jsii.String(region),
			Account:      jsii.String(""),
			Resource:     jsii.String("foundation-model"),
			ResourceName: jsii.String(id),
		})
	}
	if strings.HasPrefix(model, "arn:") {
		return []*string{jsii.String(model), fm("*", "*")}
	}
	for _, p := range inferenceProfilePrefixes {
		if strings.HasPrefix(model, p) {
			profile := s.stack.FormatArn(&awscdk.ArnComponents{
				Service:      jsii.String("bedrock"),
				Resource:     jsii.String("inference-profile"),
				ResourceName: jsii.String(model),
			})
			return []*string{profile, fm("*", strings.TrimPrefix(model, p))}
		}
	}
	return []*string{fm(*s.stack.Region(), model)}
}

// grantBedrock lets fn call the chat models (Converse, ConverseStream):
// the deployment's and those the agents' definitions give Bedrock, and,
// with embed, the embedding model.
func (s *builder) grantBedrock(fn awslambda.Function, chat, embed bool) {
	var res []*string
	if chat {
		res = append(res, s.bedrockResources(s.cfg.Model)...)
		for _, m := range s.cfg.agentModels() {
			if m != s.cfg.Model {
				res = append(res, s.bedrockResources(m)...)
			}
		}
	}
	if embed {
		res = append(res, s.bedrockResources(s.cfg.EmbedModel)...)
	}
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("bedrock:InvokeModel", "bedrock:InvokeModelWithResponseStream"),
		Resources: &res,
	}))
	// The first call of a third-party model (Anthropic's, for one) in an
	// account subscribes the account to it through AWS Marketplace, with
	// the caller's permissions; without these it fails with
	// AccessDeniedException. Marketplace scopes them by product id only,
	// which differs per model and Region, so they are granted on "*".
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(marketplaceActions...),
		Resources: jsii.Strings("*"),
	}))
}

// runTimeout is the timeout of the functions that run the loop's steps
// (api: stateless runs; step: durable runs, inline and as the state
// machine's tasks): Lambda's maximum. runEnv tells them (STEP_TIMEOUT),
// so that each step fits in one invocation: model calls are cut in time,
// a tool whose calls could take longer fails the function's start, and
// an inline run is handed to the state machine before a step that could
// outlive what is left of its invocation (shared/wiring/cloud).
const runTimeout = 15 * time.Minute

var runEnv = map[string]*string{"STEP_TIMEOUT": jsii.String(runTimeout.String())}

// marketplaceActions let a Bedrock caller subscribe the account to a
// model on its first use.
var marketplaceActions = []string{"aws-marketplace:ViewSubscriptions", "aws-marketplace:Subscribe"}

// function creates one Lambda function from <assets>/<name>/bootstrap.
func (s *builder) function(name, description string, memory, timeoutSeconds float64, env map[string]*string) awslambda.Function {
	id := strings.ToUpper(name[:1]) + name[1:]
	var physical *string
	if name == "step" {
		physical = jsii.String(stepFunctionName(s.stack))
	}
	logs := awslogs.NewLogGroup(s.stack, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
		Retention:     awslogs.RetentionDays_ONE_MONTH,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	fn := awslambda.NewFunction(s.stack, jsii.String(id+"Function"), &awslambda.FunctionProps{
		FunctionName: physical,
		Description:  jsii.String("lambdaclaw " + name + ": " + description),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(s.cfg.Assets+"/"+name), nil),
		MemorySize:   jsii.Number(memory),
		Timeout:      awscdk.Duration_Seconds(jsii.Number(timeoutSeconds)),
		Environment:  &env,
		LogGroup:     logs,
		Tracing:      s.tracing(),
	})
	s.fns[name] = fn
	return fn
}

// tracing is the functions' X-Ray tracing: Active with tracing=active;
// otherwise none set, which is Lambda's PassThrough (a caller's sampled
// trace continues, none is started) without the X-Ray permissions CDK
// grants with a mode set.
func (s *builder) tracing() awslambda.Tracing {
	if s.cfg.Tracing {
		return awslambda.Tracing_ACTIVE
	}
	return awslambda.Tracing_DISABLED
}

// addEnvironment adds env to fn's environment in the order of its names,
// so the template is the same on every synth (a Go map's order is not).
func addEnvironment(fn awslambda.Function, env map[string]*string) {
	for _, k := range slices.Sorted(maps.Keys(env)) {
		fn.AddEnvironment(jsii.String(k), env[k], nil)
	}
}

// lambdas creates the functions with their environment and grants.
func (s *builder) lambdas() {
	common := func(extra map[string]*string) map[string]*string {
		env := map[string]*string{
			"TABLE_NAME":        s.table_.TableName(),
			"STATE_MACHINE_ARN": s.stateMachineArn,
			// Durable runs run inline in the step function, invoked
			// asynchronously (shared/adapters/sfn/inline.go).
			"RUN_FUNCTION": jsii.String(stepFunctionName(s.stack)),
			// The items of a session idle this long expire (DynamoDB TTL on
			// expires_at, which the store sets on every session item).
			"SESSION_TTL": jsii.String(fmt.Sprintf("%dh", s.cfg.RetentionDays*24)),
			// Every function builds the agents; their workspaces live in
			// the bucket (workspace.go).
			"WORKSPACE_BUCKET": s.workspaces.BucketName(),
			// The memory vectors' length, the same in every function.
			"EMBED_DIMENSIONS": jsii.String(strconv.Itoa(s.cfg.EmbedDimensions)),
		}
		// Every function builds the agents the agents file defines, with
		// their settings (agents.go).
		if s.cfg.AgentsConfig != "" {
			env[agentenv.Var] = jsii.String(s.cfg.AgentsConfig)
		}
		// And the MCP servers the agents' settings name (mcp.go).
		if s.cfg.MCPConfig != "" {
			env[agentenv.MCPVar] = jsii.String(s.cfg.MCPConfig)
		}
		for k, v := range extra {
			env[k] = v
		}
		return env
	}
	llm := map[string]*string{
		"DEFAULT_PROVIDER":    jsii.String("bedrock"),
		"BEDROCK_MODEL":       jsii.String(s.cfg.Model),
		"BEDROCK_EMBED_MODEL": jsii.String(s.cfg.EmbedModel),
		"LAMBDACLAW_SEARCH":   jsii.String(s.cfg.Search),
	}
	if s.providerKey != nil {
		llm["OPENAI_BASE_URL"] = jsii.String(s.cfg.OpenAIBaseURL)
		llm["OPENAI_MODEL"] = jsii.String(s.cfg.OpenAIModel)
		llm["OPENAI_API_KEY_SECRET_ARN"] = s.providerKey.SecretArn()
	}
	// The functions that run turns call the MCP servers' tools, with
	// their header secrets (mcp.go).
	for k, v := range s.mcpEnv() {
		llm[k] = v
	}
	schedules := map[string]*string{"SCHEDULE_GROUP": s.scheduleGroup.ScheduleGroupName()}
	merge := func(ms ...map[string]*string) map[string]*string {
		out := map[string]*string{}
		for _, m := range ms {
			for k, v := range m {
				out[k] = v
			}
		}
		return out
	}

	// scheduler: the target of check-in schedules; claims their firings
	// and starts their runs. It makes no schedules: it deletes only the
	// schedule of a job that no longer exists.
	sched := s.function("scheduler", "EventBridge Scheduler check-ins", 256, 60, common(schedules))
	s.grantTable(sched, "scheduler")
	s.grantWorkspace(sched)
	s.grantStates(sched, false)
	s.grantSchedules(sched, "scheduler:DeleteSchedule")
	sched.GrantInvoke(s.schedulerRole)
	// EventBridge Scheduler invokes it asynchronously: a check-in that
	// keeps failing lands in a queue instead of vanishing.
	sched.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{
		OnFailure:     awslambdadestinations.NewSqsDestination(s.deadLetterQueue("CheckInFailures")),
		RetryAttempts: jsii.Number(2),
	})
	// The functions that make schedules: each job's schedule targets the
	// scheduler function, as the scheduler role, with the retry policy and
	// the dead-letter queue of ebscheduler.
	makers := merge(schedules, map[string]*string{"SCHEDULER_ROLE_ARN": s.schedulerRole.RoleArn(), "SCHEDULER_TARGET_ARN": sched.FunctionArn(),
		"SCHEDULER_DEAD_LETTER_ARN": s.scheduleFailures.QueueArn()})
	s.schedulerFunction = sched

	// api: the OpenAI-compatible API, health, the MCP server and the
	// web console, streamed. The console's chat connects to the
	// WebSocket API, whose client URL the function derives from
	// WS_ENDPOINT; its jobs view makes, pauses, resumes and deletes the
	// jobs' schedules (a schedule made or updated names its target and
	// role).
	api := s.function("api", "OpenAI-compatible API, MCP server, web console and health (response streaming)", float64(s.cfg.RunMemory), runTimeout.Seconds(),
		common(merge(llm, makers, runEnv, map[string]*string{"WS_ENDPOINT": s.wsEndpoint})))
	s.grantTable(api, "api")
	s.grantWorkspace(api)
	s.grantStates(api, true)
	s.grantSchedules(api, "scheduler:CreateSchedule", "scheduler:UpdateSchedule", "scheduler:DeleteSchedule")
	s.grantBedrock(api, true, true)
	if s.providerKey != nil {
		s.providerKey.GrantRead(api, nil)
	}
	s.grantMCPSecrets(api)

	// ws: WebSocket $connect/$disconnect/$default.
	ws := s.function("ws", "WebSocket connections and messages", 256, 30,
		common(map[string]*string{"WS_ENDPOINT": s.wsEndpoint}))
	s.grantTable(ws, "ws")
	s.grantWorkspace(ws)
	s.grantStates(ws, true)
	s.wsGrant(ws)

	// telegram (telegram=on only): the webhook.
	if s.cfg.Telegram {
		tg := s.function("telegram", "Telegram webhook", 256, 30, common(map[string]*string{
			"TELEGRAM_BOT_TOKEN_SECRET_ARN": s.botTokenID(),
			"TELEGRAM_WEBHOOK_SECRET_ARN":   s.webhookSecret.SecretArn(),
			"TELEGRAM_API_BASE":             jsii.String(s.cfg.TelegramAPIBase),
			"TELEGRAM_ALLOWED_USERS":        jsii.String(s.cfg.TelegramAllowedUsers),
		}))
		s.grantTable(tg, "telegram")
		s.grantWorkspace(tg)
		s.grantStates(tg, true)
		s.botToken.GrantRead(tg, nil)
		s.webhookSecret.GrantRead(tg, nil)
	}

	// step: runs a durable run inline (an asynchronous invocation from
	// the functions that start runs), and one step of a run per task of
	// the state machine, to which it hands the runs that park or run
	// long. It delivers replies (WebSocket, and Telegram with
	// telegram=on), runs tools (check-in schedules among them) and starts
	// a session's next queued run.
	// channels (slack=on, discord=on, whatsapp=on): their webhooks.
	if len(s.cfg.Channels) > 0 {
		ch := s.function("channels", "Slack, Discord and WhatsApp webhooks", 256, 30, common(s.channelEnv()))
		s.grantTable(ch, "channels")
		s.grantWorkspace(ch)
		s.grantStates(ch, true)
		s.grantChannels(ch, true)
	}

	stepEnv := merge(map[string]*string{"WS_ENDPOINT": s.wsEndpoint}, s.channelEnv())
	if s.cfg.Telegram {
		stepEnv["TELEGRAM_BOT_TOKEN_SECRET_ARN"] = s.botTokenID()
		stepEnv["TELEGRAM_API_BASE"] = jsii.String(s.cfg.TelegramAPIBase)
	}
	s.runFailures = s.deadLetterQueue("RunFailures")
	step := s.function("step", "agent runs, inline and as Step Functions tasks", float64(s.cfg.RunMemory), runTimeout.Seconds(), common(merge(llm, makers, runEnv, stepEnv)))
	s.grantTable(step, "step")
	s.grantWorkspace(step)
	// The park task resumes its own run when the approval was answered
	// before the token was stored (SendTaskSuccess).
	s.grantStates(step, true)
	s.grantBedrock(step, true, true)
	// Agents' turns make, change and delete their reminders (the
	// schedule tool): the jobs' schedules.
	s.grantSchedules(step, "scheduler:CreateSchedule", "scheduler:UpdateSchedule", "scheduler:DeleteSchedule")
	s.wsGrant(step)
	// Runs are invoked asynchronously: Lambda retries a failed or timed
	// out invocation twice (the retry hands the run to the state machine),
	// then sends the event to a queue, which raises an alarm.
	step.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{
		OnFailure:     awslambdadestinations.NewSqsDestination(s.runFailures),
		RetryAttempts: jsii.Number(2),
	})
	if s.cfg.Telegram {
		s.botToken.GrantRead(step, nil)
	}
	s.grantChannels(step, false)
	if s.providerKey != nil {
		s.providerKey.GrantRead(step, nil)
	}
	s.grantMCPSecrets(step)
}

// botTokenID is how the functions name the imported bot token secret to
// GetSecretValue: by name, which always resolves, where the partial ARN an
// import by name yields does not when the name ends in "-" and six
// characters.
func (s *builder) botTokenID() *string {
	return jsii.String(s.cfg.TelegramTokenSecret)
}

// telegramWebhook (telegram=on only) registers the webhook during the
// deployment: a custom resource whose ServiceToken is the telegram
// function. CloudFormation invokes the function with the custom resource
// event, which it tells from API Gateway's by its shape; on Create and
// Update it calls setWebhook with Url and the webhook secret and answers
// FAILED with Telegram's description when Telegram refuses, and on Delete
// it calls deleteWebhook and answers SUCCESS whatever happens. Url is its
// property: a new URL (a renamed stage) registers again. Updates names
// the kinds of update the function registers (its own list; the button
// presses of approvals came with callback_query) only so that a change
// of them registers again. The
// function reads the token and the secret itself, so neither appears in
// the template or the event.
func (s *builder) telegramWebhook() {
	if !s.cfg.Telegram {
		return
	}
	awscdk.NewCustomResource(s.stack, jsii.String("TelegramWebhook"), &awscdk.CustomResourceProps{
		ServiceToken:   s.fns["telegram"].FunctionArn(),
		ResourceType:   jsii.String("Custom::TelegramWebhook"),
		ServiceTimeout: awscdk.Duration_Seconds(jsii.Number(300)),
		Properties:     &map[string]interface{}{"Url": s.urlFor("/telegram/webhook"), "Updates": "message,callback_query"},
	})
}

// outputs are the stack outputs the README and the operator use, and the
// CLI's --stack reads.
func (s *builder) outputs() {
	out := func(id string, value *string, description string) {
		awscdk.NewCfnOutput(s.stack, jsii.String(id), &awscdk.CfnOutputProps{
			Value:       value,
			Description: jsii.String(description),
		})
	}
	out("ApiUrl", s.apiURL, "REST API base URL (GET health, /v1/..., /mcp, /a2a, the web console)")
	out("ConsoleUrl", s.apiURL, "the web console: open it in a browser and sign in with an API key")
	out("McpUrl", s.urlFor("/mcp"), "the MCP server (streamable HTTP, stateless; Authorization: Bearer <API key>)")
	out("A2aUrl", s.urlFor("/a2a/default/.well-known/agent-card.json"), "the A2A card of the agent default (each agent's at a2a/NAME/.well-known/agent-card.json; Authorization: Bearer <API key>)")
	out("OpenAIBaseUrl", s.urlFor("/v1"), "base_url for OpenAI clients")
	out("ChatCompletionsUrl", s.urlFor("/v1/chat/completions"), "OpenAI-compatible chat completions (JSON and SSE)")
	out("WebSocketUrl", s.wsURL, "WebSocket endpoint")
	out("StateMachineArn", s.stateMachineArn, "the agent loop's state machine")
	out("TableName", s.table_.TableName(), "the DynamoDB table")
	// `lambdaclaw agent push|pull --stack` syncs agents/NAME/ of it.
	out("WorkspaceBucket", s.workspaces.BucketName(), "the S3 bucket of the agents' workspaces (agents/NAME/) and skills (skills/)")
	// `lambdaclaw … --stack` finds the table by TableName and the agents
	// by Agents (functions/lambdaclaw/stack.go).
	out("Agents", jsii.String(s.cfg.agentNames()), "the agents the functions serve by configuration (the default agent and those of agents_file), comma-separated; they also serve every workspace pushed to the bucket")
	// `lambdaclaw cron … --stack` makes the jobs' schedules as the
	// functions do.
	out("ScheduleGroup", s.scheduleGroup.ScheduleGroupName(), "the EventBridge Scheduler group of the check-ins' schedules")
	out("SchedulerRoleArn", s.schedulerRole.RoleArn(), "the role the check-ins' schedules invoke the scheduler function as")
	out("SchedulerFunctionArn", s.schedulerFunction.FunctionArn(), "the scheduler function, the target of the check-ins' schedules")
	out("ScheduleFailuresArn", s.scheduleFailures.QueueArn(), "the dead-letter queue of the check-ins' schedules")
	// `lambdaclaw runs … --stack` reads the failed inline runs, retries
	// them on the state machine and ends them through the step function.
	out("RunFailuresUrl", s.runFailures.QueueUrl(), "the dead-letter queue of the inline runs Lambda gave up on (lambdaclaw runs list --stack)")
	out("StepFunctionArn", s.fns["step"].FunctionArn(), "the step function, which lambdaclaw runs abandon --stack asks to end a run")
	if s.cfg.Telegram {
		out("TelegramWebhookUrl", s.urlFor("/telegram/webhook"), "url for Telegram's setWebhook")
		out("TelegramBotTokenSecretArn", s.botToken.SecretArn(), "the imported bot token secret (partial ARN)")
		out("TelegramWebhookSecretArn", s.webhookSecret.SecretArn(), "secret_token for setWebhook")
	}
	s.channelOutputs(out)
	if vars := s.cfg.MCP.HeaderVars(); len(vars) > 0 {
		var names []string
		for _, v := range vars {
			names = append(names, mcpSecretName(*s.stack.StackName(), v))
		}
		out("McpSecrets", jsii.String(strings.Join(names, ",")), "the secrets holding the MCP servers' header variables (<stack>/mcp/<VAR>): put each value with aws secretsmanager put-secret-value --secret-id NAME --secret-string VALUE")
	}
	if s.providerKey != nil {
		out("ProviderKeySecretArn", s.providerKey.SecretArn(), "put the OpenAI-compatible provider's API key here")
	}
	if s.searchEndpoint != nil {
		out("OpenSearchEndpoint", s.searchEndpoint, "OpenSearch domain endpoint")
	}
	if s.sandboxCluster != nil {
		out("SandboxClusterName", s.sandboxCluster.ClusterName(), "the ECS cluster of the exec tool's Fargate tasks")
	}
}
