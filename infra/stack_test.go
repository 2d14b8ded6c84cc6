package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
	gocmp "github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/emf"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentenv"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// m is shorthand for the JSON objects the assertions match.
type m = map[string]any

func objectLike(v m) assertions.Matcher { return assertions.Match_ObjectLike(&v) }
func arrayWith(v ...any) assertions.Matcher {
	return assertions.Match_ArrayWith(&v)
}

// TestRetention: the retention becomes every function's SESSION_TTL; the
// table's TTL on expires_at removes what expired (TestTable).
func TestRetention(t *testing.T) {
	for variant, want := range map[string]string{variantDefault: "2160h", variantOpenSearch: "2160h", variantShortApproval: "720h"} {
		s := stack(t, variant)
		for id, r := range s.resources("AWS::Lambda::Function") {
			if d, _ := props(r)["Description"].(string); !strings.HasPrefix(d, "lambdaclaw ") || strings.HasPrefix(d, "lambdaclaw indexer:") {
				continue // the indexer writes no session; CDK's own functions
			}
			if got := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)["SESSION_TTL"]; got != want {
				t.Errorf("%s %s: SESSION_TTL=%v, want %s", variant, id, got, want)
			}
		}
	}
}

func TestTable(t *testing.T) {
	s := stack(t, variantDefault)
	assert(t, "one table", func() { s.template.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(1)) })
	assert(t, "table schema", func() {
		s.template.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), m{
			"KeySchema": []any{
				m{"AttributeName": "pk", "KeyType": "HASH"},
				m{"AttributeName": "sk", "KeyType": "RANGE"},
			},
			"AttributeDefinitions": arrayWith(
				m{"AttributeName": "pk", "AttributeType": "S"},
				m{"AttributeName": "sk", "AttributeType": "S"},
				m{"AttributeName": "gsi1pk", "AttributeType": "S"},
				m{"AttributeName": "gsi1sk", "AttributeType": "S"},
			),
			"GlobalSecondaryIndexes": []any{m{
				"IndexName": "gsi1",
				"KeySchema": []any{
					m{"AttributeName": "gsi1pk", "KeyType": "HASH"},
					m{"AttributeName": "gsi1sk", "KeyType": "RANGE"},
				},
				"Projection": m{"ProjectionType": "ALL"},
			}},
			"BillingMode":                      "PAY_PER_REQUEST",
			"TimeToLiveSpecification":          m{"AttributeName": "expires_at", "Enabled": true},
			"PointInTimeRecoverySpecification": m{"PointInTimeRecoveryEnabled": true},
			"StreamSpecification":              m{"StreamViewType": "NEW_AND_OLD_IMAGES"},
		})
	})
	assert(t, "table outlives the stack", func() {
		s.template.HasResource(jsii.String("AWS::DynamoDB::Table"), m{"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})
	})
}

func TestFunctions(t *testing.T) {
	for variant, want := range map[string][]string{
		variantDefault:    {"api", "ws", "step", "scheduler"},
		variantOpenSearch: {"api", "ws", "telegram", "channels", "step", "scheduler", "indexer"},
	} {
		t.Run(variant, func(t *testing.T) {
			s := stack(t, variant)
			fns := s.resources("AWS::Lambda::Function")
			if len(fns) != len(want) {
				t.Errorf("%d Lambda functions, want %d (%v): a construct added one of its own?", len(fns), len(want), want)
			}
			for _, name := range want {
				id := s.functionID(t, name)
				p := props(fns[id])
				if p["Runtime"] != "provided.al2023" || p["Handler"] != "bootstrap" {
					t.Errorf("%s: runtime %v handler %v, want provided.al2023 and bootstrap", name, p["Runtime"], p["Handler"])
				}
				if a := p["Architectures"]; len(list(a)) != 1 || list(a)[0] != "arm64" {
					t.Errorf("%s: architectures %v, want [arm64]", name, a)
				}
				env := props(fns[id])["Environment"].(map[string]any)["Variables"].(map[string]any)
				if _, ok := env["TABLE_NAME"]; !ok {
					t.Errorf("%s: no TABLE_NAME", name)
				}
				if _, ok := p["ReservedConcurrentExecutions"]; ok {
					t.Errorf("%s: reserved concurrency", name)
				}
			}
			// The functions that talk to a model, and how.
			for _, name := range []string{"api", "step"} {
				env := props(fns[s.functionID(t, name)])["Environment"].(map[string]any)["Variables"].(map[string]any)
				if env["DEFAULT_PROVIDER"] != "bedrock" || env["BEDROCK_MODEL"] != s.cfg.Model {
					t.Errorf("%s: DEFAULT_PROVIDER=%v BEDROCK_MODEL=%v, want bedrock and %s", name, env["DEFAULT_PROVIDER"], env["BEDROCK_MODEL"], s.cfg.Model)
				}
			}
			// The OpenAI-compatible provider: exactly the variables
			// shared/wiring/cloud reads, and only with openai_base_url.
			for _, name := range []string{"api", "step"} {
				env := props(fns[s.functionID(t, name)])["Environment"].(map[string]any)["Variables"].(map[string]any)
				for _, v := range []string{"OPENAI_BASE_URL", "OPENAI_MODEL", "OPENAI_API_KEY_SECRET_ARN"} {
					if _, ok := env[v]; ok != (s.cfg.OpenAIBaseURL != "") {
						t.Errorf("%s: %s set %v, want %v", name, v, ok, s.cfg.OpenAIBaseURL != "")
					}
				}
				if s.cfg.OpenAIBaseURL != "" && (env["OPENAI_BASE_URL"] != s.cfg.OpenAIBaseURL || env["OPENAI_MODEL"] != s.cfg.OpenAIModel) {
					t.Errorf("%s: OPENAI_BASE_URL=%v OPENAI_MODEL=%v, want %s and %s", name, env["OPENAI_BASE_URL"], env["OPENAI_MODEL"], s.cfg.OpenAIBaseURL, s.cfg.OpenAIModel)
				}
				if _, ok := env["OPENAI_API_KEY"]; ok {
					t.Errorf("%s: the API key in the environment", name)
				}
			}
			// Who gets which endpoint.
			vars := map[string][]string{
				"api":       {"STATE_MACHINE_ARN", "WS_ENDPOINT", "SCHEDULE_GROUP", "SCHEDULER_ROLE_ARN", "SCHEDULER_TARGET_ARN"},
				"ws":        {"STATE_MACHINE_ARN", "WS_ENDPOINT"},
				"step":      {"STATE_MACHINE_ARN", "WS_ENDPOINT", "SCHEDULE_GROUP", "SCHEDULER_ROLE_ARN", "SCHEDULER_TARGET_ARN"},
				"scheduler": {"STATE_MACHINE_ARN", "SCHEDULE_GROUP"},
			}
			if s.cfg.Telegram {
				vars["telegram"] = []string{"STATE_MACHINE_ARN", "TELEGRAM_BOT_TOKEN_SECRET_ARN", "TELEGRAM_WEBHOOK_SECRET_ARN"}
				vars["step"] = append(vars["step"], "TELEGRAM_BOT_TOKEN_SECRET_ARN")
			}
			for name, vars := range vars {
				env := props(fns[s.functionID(t, name)])["Environment"].(map[string]any)["Variables"].(map[string]any)
				for _, v := range vars {
					if _, ok := env[v]; !ok {
						t.Errorf("%s: no %s", name, v)
					}
				}
			}
			for id, r := range fns {
				env := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
				for v := range env {
					if strings.HasPrefix(v, "TELEGRAM_") && !s.cfg.Telegram {
						t.Errorf("%s: %s without telegram=on", id, v)
					}
				}
			}
			// The console's chat (api) connects where ws posts and step
			// replies: the one WebSocket API's stage.
			for _, name := range []string{"ws", "step", "api"} {
				env := props(fns[s.functionID(t, name)])["Environment"].(map[string]any)["Variables"].(map[string]any)
				if got := render(env["WS_ENDPOINT"]); !regexp.MustCompile(`^https://\$\{WebSocket[0-9A-F]+\}\.execute-api\.\$\{AWS::Region\}\.\$\{AWS::URLSuffix\}/prod$`).MatchString(got) {
					t.Errorf("%s: WS_ENDPOINT = %s, want the stage's https management endpoint", name, got)
				}
			}
			// The functions that make or change schedules name the same
			// group, role and target.
			step := props(fns[s.functionID(t, "step")])["Environment"].(map[string]any)["Variables"].(map[string]any)
			api := props(fns[s.functionID(t, "api")])["Environment"].(map[string]any)["Variables"].(map[string]any)
			for _, v := range []string{"SCHEDULE_GROUP", "SCHEDULER_ROLE_ARN", "SCHEDULER_TARGET_ARN"} {
				if render(api[v]) != render(step[v]) {
					t.Errorf("api: %s = %s, want the step function's %s", v, render(api[v]), render(step[v]))
				}
			}
			sm := props(fns[s.functionID(t, "step")])["Environment"].(map[string]any)["Variables"].(map[string]any)["STATE_MACHINE_ARN"]
			if got := render(sm); !strings.HasSuffix(got, ":stateMachine:"+StackName+"-loop") {
				t.Errorf("STATE_MACHINE_ARN = %s", got)
			}
		})
	}
}

// restPaths returns the REST API's methods as "VERB /path" → method
// properties, walking each resource's ParentId chain.
func restPaths(s *synthesized) map[string]map[string]any {
	res := s.resources("AWS::ApiGateway::Resource")
	var path func(id string) string
	path = func(id string) string {
		p := props(res[id])
		parent := render(p["ParentId"])
		part := p["PathPart"].(string)
		if strings.HasSuffix(parent, ".RootResourceId}") {
			return "/" + part
		}
		return path(strings.Trim(parent, "${}")) + "/" + part
	}
	out := map[string]map[string]any{}
	for _, r := range s.resources("AWS::ApiGateway::Method") {
		p := props(r)
		rid := render(p["ResourceId"])
		var route string
		if strings.HasSuffix(rid, ".RootResourceId}") {
			route = "/"
		} else {
			route = path(strings.Trim(rid, "${}"))
		}
		out[p["HttpMethod"].(string)+" "+route] = p
	}
	return out
}

func TestRestAPIStreaming(t *testing.T) {
	for _, variant := range []string{variantDefault, variantOpenSearch} {
		t.Run(variant, func(t *testing.T) { testRestAPIStreaming(t, stack(t, variant)) })
	}
}

func testRestAPIStreaming(t *testing.T, s *synthesized) {
	assert(t, "regional REST API without an account-wide role", func() {
		s.template.HasResourceProperties(jsii.String("AWS::ApiGateway::RestApi"), m{
			"EndpointConfiguration": m{"Types": []any{"REGIONAL"}},
		})
		s.template.ResourceCountIs(jsii.String("AWS::ApiGateway::Account"), jsii.Number(0))
	})
	assert(t, "stage throttling", func() {
		s.template.HasResourceProperties(jsii.String("AWS::ApiGateway::Stage"), m{
			"StageName":      "prod",
			"MethodSettings": arrayWith(objectLike(m{"ThrottlingRateLimit": s.cfg.APIRate, "ThrottlingBurstLimit": s.cfg.APIBurst})),
		})
	})

	routes := restPaths(s)
	apiFn := s.functionID(t, "api")
	apiRoutes := []string{"GET /health", "GET /v1/models", "GET /v1/models/{model}", "POST /v1/chat/completions", "POST /v1/embeddings",
		"POST /v1/responses", "GET /v1/responses/{id}", "DELETE /v1/responses/{id}",
		// The MCP server: GET and DELETE are the function's 405.
		"POST /mcp", "GET /mcp", "DELETE /mcp",
		// The A2A server: the default agent's card and endpoint, each
		// agent's.
		"GET /.well-known/agent-card.json", "POST /a2a", "POST /a2a/{agent}", "GET /a2a/{agent}/.well-known/agent-card.json",
		// The web console: its page, its files, its API.
		"GET /", "GET /console/{file}", "ANY /v1/lambdaclaw/{proxy+}"}
	for _, route := range apiRoutes {
		p, ok := routes[route]
		if !ok {
			t.Errorf("no route %s", route)
			continue
		}
		integ := p["Integration"].(map[string]any)
		uri := render(integ["Uri"])
		if integ["Type"] != "AWS_PROXY" || integ["ResponseTransferMode"] != "STREAM" ||
			!strings.Contains(uri, "/2021-11-15/functions/${"+apiFn+".Arn}/response-streaming-invocations") {
			t.Errorf("%s: integration %v %v %s, want a streaming AWS_PROXY integration of the api function", route, integ["Type"], integ["ResponseTransferMode"], uri)
		}
		if integ["TimeoutInMillis"] != float64(streamTimeoutS*1000) {
			t.Errorf("%s: TimeoutInMillis %v, want %d", route, integ["TimeoutInMillis"], streamTimeoutS*1000)
		}
		if p["AuthorizationType"] != "NONE" {
			t.Errorf("%s: authorization %v (the api function checks bearer keys itself)", route, p["AuthorizationType"])
		}
	}
	tg, ok := routes["POST /telegram/webhook"]
	if !s.cfg.Telegram {
		if ok || len(routes) != len(apiRoutes) {
			t.Errorf("routes %v, want exactly %v (no Telegram webhook without telegram=on)", keys(routes), apiRoutes)
		}
		return
	}
	if !ok {
		t.Fatalf("no Telegram webhook route; routes: %v", keys(routes))
	}
	tgFn := s.functionID(t, "telegram")
	integ := tg["Integration"].(map[string]any)
	if uri := render(integ["Uri"]); integ["Type"] != "AWS_PROXY" || !strings.Contains(uri, "/2015-03-31/functions/${"+tgFn+".Arn}/invocations") {
		t.Errorf("Telegram webhook integration %v %s, want a buffered proxy integration of the telegram function", integ["Type"], uri)
	}
	if mode, ok := integ["ResponseTransferMode"]; ok && mode != "BUFFERED" {
		t.Errorf("Telegram webhook ResponseTransferMode %v", mode)
	}
	if want := len(apiRoutes) + 1 + len(channelRouteNames(s.cfg)); len(routes) != want {
		t.Errorf("routes %v, want exactly %v, the webhook and the channels' %v", keys(routes), apiRoutes, channelRouteNames(s.cfg))
	}
}

func TestWebSocket(t *testing.T) {
	s := stack(t, variantDefault)
	assert(t, "WebSocket API", func() {
		s.template.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Api"), m{
			"ProtocolType":             "WEBSOCKET",
			"RouteSelectionExpression": "$request.body.action",
		})
		s.template.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Stage"), m{"StageName": "prod", "AutoDeploy": true})
	})
	wsFn := s.functionID(t, "ws")
	integrations := s.resources("AWS::ApiGatewayV2::Integration")
	var routes []string
	for _, r := range s.resources("AWS::ApiGatewayV2::Route") {
		p := props(r)
		routes = append(routes, p["RouteKey"].(string))
		target := render(p["Target"])
		id := strings.TrimSuffix(strings.TrimPrefix(target, "integrations/${"), "}")
		ip := props(integrations[id])
		if ip == nil || !strings.Contains(render(ip["IntegrationUri"]), "${"+wsFn+".Arn}") {
			t.Errorf("route %s → %s, want the ws function", p["RouteKey"], target)
		}
	}
	slices.Sort(routes)
	if want := []string{"$connect", "$default", "$disconnect"}; !slices.Equal(routes, want) {
		t.Errorf("routes %v, want %v", routes, want)
	}

	// ManageConnections on this API's stage only, for ws and step only.
	for _, st := range s.statements() {
		if !slices.Contains(st.actions, "execute-api:ManageConnections") {
			continue
		}
		for _, r := range st.resources {
			if got := render(r); !regexp.MustCompile(`^arn:\$\{AWS::Partition\}:execute-api:\$\{AWS::Region\}:\$\{AWS::AccountId\}:\$\{WebSocket[0-9A-F]+\}/prod/\*/@connections/\*$`).MatchString(got) {
				t.Errorf("ManageConnections on %s", got)
			}
		}
		if want := []string{"${" + s.roleOf(t, wsFn) + "}"}; !slices.Equal(st.roles, want) &&
			!slices.Equal(st.roles, []string{"${" + s.roleOf(t, s.functionID(t, "step")) + "}"}) {
			t.Errorf("ManageConnections granted to %v", st.roles)
		}
	}
	for name, want := range map[string]bool{"ws": true, "step": true, "api": false, "scheduler": false} {
		_, got := s.actionsOf(s.roleOf(t, s.functionID(t, name)))["execute-api:ManageConnections"]
		if got != want {
			t.Errorf("%s has ManageConnections: %v, want %v", name, got, want)
		}
	}
}

func TestScheduler(t *testing.T) {
	s := stack(t, variantDefault)
	assert(t, "schedule group", func() { s.template.ResourceCountIs(jsii.String("AWS::Scheduler::ScheduleGroup"), jsii.Number(1)) })
	assert(t, "scheduler role trusts EventBridge Scheduler in this account", func() {
		s.template.HasResourceProperties(jsii.String("AWS::IAM::Role"), m{
			"AssumeRolePolicyDocument": m{"Statement": []any{m{
				"Action":    "sts:AssumeRole",
				"Effect":    "Allow",
				"Principal": m{"Service": "scheduler.amazonaws.com"},
				"Condition": m{"StringEquals": m{"aws:SourceAccount": m{"Ref": "AWS::AccountId"}}},
			}}},
		})
	})
	var role string
	for id, r := range s.resources("AWS::IAM::Role") {
		if strings.HasPrefix(id, "SchedulerRole") {
			role = id
			_ = r
		}
	}
	got := s.actionsOf(role)
	schedFn := s.functionID(t, "scheduler")
	var queue string
	for id := range s.resources("AWS::SQS::Queue") {
		if strings.HasPrefix(id, "ScheduleFailures") {
			queue = id
		}
	}
	if len(got) != 2 || !slices.Contains(got["lambda:InvokeFunction"], "${"+schedFn+".Arn}") ||
		queue == "" || !slices.Equal(got["sqs:SendMessage"], []string{"${" + queue + ".Arn}"}) {
		t.Errorf("scheduler role may %v, want lambda:InvokeFunction on the scheduler function and sqs:SendMessage on the schedules' dead-letter queue only", got)
	}
	// Every function that makes or changes schedules gives them the
	// dead-letter queue (ebscheduler.Schedules.DeadLetter).
	for _, name := range []string{"api", "step"} {
		env, _ := props(s.resources("AWS::Lambda::Function")[s.functionID(t, name)])["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		if got := render(vars["SCHEDULER_DEAD_LETTER_ARN"]); got != "${"+queue+".Arn}" {
			t.Errorf("%s: SCHEDULER_DEAD_LETTER_ARN %s, want the queue %s", name, got, queue)
		}
	}
	// Who may do what with schedules: step makes the agents' reminders,
	// api (the web console) pauses, resumes and deletes them, the
	// scheduler function deletes only schedules left by deleted jobs,
	// nobody reads them; only those that make or change schedules pass
	// the role.
	var groupName string
	for _, g := range s.resources("AWS::Scheduler::ScheduleGroup") {
		groupName, _ = props(g)["Name"].(string)
	}
	group := regexp.MustCompile(`^arn:\$\{AWS::Partition\}:scheduler:\$\{AWS::Region\}:\$\{AWS::AccountId\}:schedule/` + regexp.QuoteMeta(groupName) + `/\*$`)
	for name, want := range map[string][]string{
		"step":      {"scheduler:CreateSchedule", "scheduler:DeleteSchedule", "scheduler:UpdateSchedule"},
		"scheduler": {"scheduler:DeleteSchedule"},
		"api":       {"scheduler:CreateSchedule", "scheduler:DeleteSchedule", "scheduler:UpdateSchedule"},
		"ws":        nil,
	} {
		acts := s.actionsOf(s.roleOf(t, s.functionID(t, name)))
		var got []string
		for a, resources := range acts {
			if strings.HasPrefix(a, "scheduler:") {
				got = append(got, a)
				for _, r := range resources {
					if !group.MatchString(r) {
						t.Errorf("%s: %s on %s, want the check-in group's schedules", name, a, r)
					}
				}
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s may %v on schedules, want %v", name, got, want)
		}
		r, passes := acts["iam:PassRole"]
		changes := slices.Contains(want, "scheduler:CreateSchedule") || slices.Contains(want, "scheduler:UpdateSchedule")
		if passes != changes || (passes && (len(r) != 1 || r[0] != "${"+role+".Arn}")) {
			t.Errorf("%s: iam:PassRole on %v; want the scheduler role exactly when it makes or changes schedules", name, r)
		}
	}
	for _, o := range []string{"ScheduleGroup", "SchedulerRoleArn", "SchedulerFunctionArn", "ScheduleFailuresArn"} {
		assert(t, "output "+o, func() { s.template.HasOutput(jsii.String(o), m{}) })
	}
	for _, st := range s.statements() {
		if slices.Contains(st.actions, "iam:PassRole") {
			c, _ := st.raw["Condition"].(map[string]any)
			if render(c["StringEquals"]) != `{"iam:PassedToService":"scheduler.amazonaws.com"}` {
				t.Errorf("iam:PassRole condition %v", c)
			}
		}
	}
}

func TestSecrets(t *testing.T) {
	// With telegram=on the stack creates the webhook secret; the bot token
	// secret is imported (TestTelegramWebhookRegistration). The MCP
	// header secrets are created without a value (TestMCP).
	for variant, want := range map[string]int{variantDefault: 0, variantOpenSearch: 7} {
		t.Run(variant, func(t *testing.T) {
			s := stack(t, variant)
			secrets := s.resources("AWS::SecretsManager::Secret")
			if len(secrets) != want {
				t.Errorf("%d secrets, want %d", len(secrets), want)
			}
			for id, r := range secrets {
				if v, ok := props(r)["SecretString"]; ok {
					t.Errorf("secret %s has a value in the template: %v", id, v)
				}
				// The MCP header and channel secrets have no value until
				// the operator puts one.
				empty := strings.HasPrefix(id, "McpSecret") || strings.HasPrefix(id, "SlackSecret") ||
					strings.HasPrefix(id, "DiscordSecret") || strings.HasPrefix(id, "WhatsAppSecret")
				if _, ok := props(r)["GenerateSecretString"]; !ok && !empty {
					t.Errorf("secret %s: no generated placeholder", id)
				}
			}
			names := []string{"api", "ws", "step", "scheduler"}
			if s.cfg.Telegram {
				names = append(names, "telegram")
			}
			if len(s.cfg.Channels) > 0 {
				names = append(names, "channels")
			}
			reads := map[string][]string{}
			for _, name := range names {
				for _, r := range s.actionsOf(s.roleOf(t, s.functionID(t, name)))["secretsmanager:GetSecretValue"] {
					if strings.HasSuffix(r, ":secret:"+s.cfg.TelegramTokenSecret+"-??????") {
						r = "TelegramBotToken(imported)"
					}
					reads[name] = append(reads[name], strings.TrimRight(strings.TrimLeft(r, "${"), "0123456789ABCDEF}"))
				}
				slices.Sort(reads[name])
			}
			wantReads := map[string][]string{}
			if variant == variantOpenSearch {
				wantReads["telegram"] = []string{"TelegramBotToken(imported)", "TelegramWebhookSecret"}
				wantReads["api"] = []string{"McpSecretDOCSKEY", "McpSecretREMOTETOKEN", "ProviderKey"}
				wantReads["step"] = []string{"DiscordSecret", "McpSecretDOCSKEY", "McpSecretREMOTETOKEN", "ProviderKey", "SlackSecret",
					"TelegramBotToken(imported)", "WhatsAppSecret"}
				wantReads["channels"] = []string{"DiscordSecret", "SlackSecret", "WhatsAppSecret"}
			}
			for _, name := range names {
				if !slices.Equal(reads[name], wantReads[name]) {
					t.Errorf("%s reads secrets %v, want %v", name, reads[name], wantReads[name])
				}
			}
		})
	}
}

// starAllowed are the actions IAM accepts only on "*": the CloudWatch Logs
// delivery actions Step Functions logging needs, DynamoDB's ListStreams,
// which the stream event source mapping needs and which returns stream
// names, never data, X-Ray's trace upload, and the AWS Marketplace
// actions of a Bedrock model's first use.
var starAllowed = map[string]bool{
	"logs:CreateLogDelivery": true, "logs:GetLogDelivery": true, "logs:UpdateLogDelivery": true,
	"logs:DeleteLogDelivery": true, "logs:ListLogDeliveries": true, "logs:PutResourcePolicy": true,
	"logs:DescribeResourcePolicies": true, "logs:DescribeLogGroups": true,
	"dynamodb:ListStreams": true,
	// Marketplace scopes subscriptions by product id (per model and
	// Region), not by resource.
	"aws-marketplace:ViewSubscriptions": true, "aws-marketplace:Subscribe": true,
	"xray:PutTraceSegments": true, "xray:PutTelemetryRecords": true,
	"xray:GetSamplingRules": true, "xray:GetSamplingTargets": true,
	// The sandbox (sandbox.go): the image pull's registry login, and the
	// deploy-time lookup of S3's prefix list, which names no resource.
	"ecr:GetAuthorizationToken": true, "ec2:DescribeManagedPrefixLists": true,
}

// runnerAsset is the sandbox runner's object in the CDK's asset bucket.
var runnerAsset = regexp.MustCompile(`cdk-hnb659fds-assets-\$\{AWS::AccountId\}-\$\{AWS::Region\}"\}/[0-9a-f]{64}`)

func TestIAMScopedToTheStack(t *testing.T) {
	for _, variant := range []string{variantDefault, variantOpenSearch, variantSandbox} {
		t.Run(variant, func(t *testing.T) {
			s := stack(t, variant)
			// The names this stack gives its own resources.
			owned := map[string]bool{}
			for id, r := range s.resources("") {
				owned["${"+id+"}"] = true
				for _, k := range []string{"Name", "StateMachineName", "FunctionName", "Family", "EcrRepositoryPrefix"} {
					if n, ok := props(r)[k].(string); ok {
						owned[n] = true
					}
				}
			}
			// The bot token secret is the operator's, imported by name.
			if s.cfg.Telegram {
				owned[":secret:"+s.cfg.TelegramTokenSecret+"-??????"] = true
			}
			ownsOne := func(rendered string) bool {
				// The sandbox's runner, one object of the CDK's asset bucket.
				if runnerAsset.MatchString(rendered) {
					return true
				}
				for o := range owned {
					if strings.Contains(rendered, o) || strings.Contains(rendered, strings.TrimSuffix(o, "}")+".") {
						return true
					}
				}
				return false
			}
			model := func(id string) string {
				for _, p := range inferenceProfilePrefixes {
					id = strings.TrimPrefix(id, p)
				}
				return id
			}
			for _, st := range s.statements() {
				if st.raw["Effect"] != "Allow" {
					continue
				}
				for _, a := range st.actions {
					if strings.Contains(a, "*") {
						t.Errorf("%s: wildcard action %s", st.policy, a)
					}
				}
				for _, r := range st.resources {
					got := render(r)
					if got == "*" {
						for _, a := range st.actions {
							if !starAllowed[a] {
								t.Errorf("%s: %s on *", st.policy, a)
							}
						}
						continue
					}
					if strings.HasPrefix(st.actions[0], "bedrock:") {
						// Model ARNs: the configured models (the stack's and
						// its agents'), in this account's inference profiles or
						// as foundation models (any Region, for cross-Region
						// inference).
						ok := strings.HasSuffix(got, "foundation-model/"+s.cfg.EmbedModel)
						for _, m := range append(s.cfg.agentModels(), s.cfg.Model) {
							ok = ok || strings.HasSuffix(got, "foundation-model/"+model(m)) ||
								strings.HasSuffix(got, "${AWS::AccountId}:inference-profile/"+m)
						}
						if !ok {
							t.Errorf("%s: bedrock on %s", st.policy, got)
						}
						continue
					}
					if !ownsOne(got) {
						t.Errorf("%s: %v on %s, not a resource of this stack", st.policy, st.actions, got)
					}
				}
			}
		})
	}
}

func TestNothingRunsWhileIdle(t *testing.T) {
	// Resource types billed per request, per GB stored or per secret, never
	// per hour of running.
	payPerUse := map[string]bool{
		"AWS::Lambda::Function": true, "AWS::Lambda::Permission": true, "AWS::Lambda::EventSourceMapping": true,
		"AWS::IAM::Role": true, "AWS::IAM::Policy": true, "AWS::Logs::LogGroup": true,
		"AWS::ApiGateway::RestApi": true, "AWS::ApiGateway::Resource": true, "AWS::ApiGateway::Method": true,
		"AWS::ApiGateway::Deployment": true, "AWS::ApiGateway::Stage": true,
		"AWS::ApiGatewayV2::Api": true, "AWS::ApiGatewayV2::Stage": true, "AWS::ApiGatewayV2::Route": true,
		"AWS::ApiGatewayV2::Integration": true,
		"AWS::DynamoDB::Table":           true, "AWS::StepFunctions::StateMachine": true,
		"AWS::Scheduler::ScheduleGroup": true, "AWS::SecretsManager::Secret": true,
		"AWS::SQS::Queue": true, "AWS::SQS::QueuePolicy": true, "AWS::CDK::Metadata": true,
		"Custom::TelegramWebhook": true, "AWS::Lambda::EventInvokeConfig": true,
		"AWS::S3::Bucket": true, "AWS::S3::BucketPolicy": true,
		// Alarms are billed per alarm metric and month ($0.10; the
		// default deployment's 13, TestAlarms, are in tests/cost/README.md's idle
		// cost); an SNS topic costs nothing idle.
		"AWS::CloudWatch::Alarm": true, "AWS::SNS::Topic": true, "AWS::SNS::Subscription": true,
	}
	for variant, exceptions := range map[string][]string{
		variantDefault:    nil,
		variantOpenSearch: {"AWS::OpenSearchService::Domain"},
	} {
		s := stack(t, variant)
		for id, r := range s.resources("") {
			typ := r["Type"].(string)
			if !payPerUse[typ] && !slices.Contains(exceptions, typ) {
				t.Errorf("%s: %s %s may cost money while idle", variant, typ, id)
			}
		}
	}
}

func TestOpenSearchOnlyOnRequest(t *testing.T) {
	def := stack(t, variantDefault)
	for _, typ := range []string{
		"AWS::OpenSearchService::Domain", "AWS::OpenSearchServerless::Collection",
		"AWS::Lambda::EventSourceMapping", "AWS::EC2::NatGateway",
	} {
		assert(t, "default has no "+typ, func() { def.template.ResourceCountIs(jsii.String(typ), jsii.Number(0)) })
	}
	for _, st := range def.statements() {
		for _, a := range st.actions {
			if strings.HasPrefix(a, "es:") || strings.HasPrefix(a, "aoss:") {
				t.Errorf("default stack grants %s", a)
			}
		}
	}
	for id, r := range def.resources("AWS::Lambda::Function") {
		env := props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
		if _, ok := env["OPENSEARCH_ENDPOINT"]; ok {
			t.Errorf("default stack: %s has OPENSEARCH_ENDPOINT", id)
		}
		if env["LAMBDACLAW_SEARCH"] != nil && env["LAMBDACLAW_SEARCH"] != SearchNone {
			t.Errorf("default stack: %s has LAMBDACLAW_SEARCH=%v", id, env["LAMBDACLAW_SEARCH"])
		}
	}

	s := stack(t, variantOpenSearch)
	assert(t, "one small domain", func() {
		s.template.ResourceCountIs(jsii.String("AWS::OpenSearchService::Domain"), jsii.Number(1))
		s.template.HasResourceProperties(jsii.String("AWS::OpenSearchService::Domain"), m{
			"EngineVersion": "OpenSearch_2.19",
			"ClusterConfig": objectLike(m{
				"InstanceType":              DefaultSearchInstance,
				"InstanceCount":             1,
				"DedicatedMasterEnabled":    false,
				"ZoneAwarenessEnabled":      false,
				"MultiAZWithStandbyEnabled": false,
			}),
			"EBSOptions":                  objectLike(m{"EBSEnabled": true, "VolumeSize": 10, "VolumeType": "gp3"}),
			"EncryptionAtRestOptions":     m{"Enabled": true},
			"NodeToNodeEncryptionOptions": m{"Enabled": true},
			"DomainEndpointOptions":       objectLike(m{"EnforceHTTPS": true, "TLSSecurityPolicy": "Policy-Min-TLS-1-2-2019-07"}),
			"VPCOptions":                  assertions.Match_Absent(),
			"AccessPolicies":              assertions.Match_Absent(),
		})
	})
	assert(t, "indexer reads the table's stream", func() {
		s.template.HasResourceProperties(jsii.String("AWS::Lambda::EventSourceMapping"), m{
			"FunctionName":               m{"Ref": s.functionID(t, "indexer")},
			"EventSourceArn":             m{"Fn::GetAtt": []any{s.template.GetResourceId(jsii.String("AWS::DynamoDB::Table"), nil), "StreamArn"}},
			"StartingPosition":           "TRIM_HORIZON",
			"FunctionResponseTypes":      []any{"ReportBatchItemFailures"},
			"BisectBatchOnFunctionError": true,
			"DestinationConfig":          objectLike(m{"OnFailure": assertions.Match_AnyValue()}),
			"FilterCriteria":             m{"Filters": []any{m{"Pattern": `{"dynamodb":{"Keys":{"pk":{"S":[{"prefix":"MEM#"}]}}}}`}}},
		})
	})
	domain := *s.template.GetResourceId(jsii.String("AWS::OpenSearchService::Domain"), nil)
	for _, name := range []string{"api", "step", "indexer"} {
		id := s.functionID(t, name)
		env := props(s.resources("AWS::Lambda::Function")[id])["Environment"].(map[string]any)["Variables"].(map[string]any)
		if got := render(env["OPENSEARCH_ENDPOINT"]); got != "https://${"+domain+".DomainEndpoint}" {
			t.Errorf("%s: OPENSEARCH_ENDPOINT=%s", name, got)
		}
		acts := s.actionsOf(s.roleOf(t, id))
		for _, a := range []string{"es:ESHttpGet", "es:ESHttpPost", "es:ESHttpPut", "es:ESHttpDelete"} {
			res := acts[a]
			slices.Sort(res)
			if want := []string{"${" + domain + ".Arn}", "${" + domain + ".Arn}/*"}; !slices.Equal(res, want) {
				t.Errorf("%s: %s on %v, want %v", name, a, res, want)
			}
		}
	}
	for _, name := range []string{"ws", "telegram", "scheduler"} {
		for a := range s.actionsOf(s.roleOf(t, s.functionID(t, name))) {
			if strings.HasPrefix(a, "es:") {
				t.Errorf("%s may %s", name, a)
			}
		}
	}
}

func TestBedrockGrants(t *testing.T) {
	for _, variant := range []string{variantDefault, variantOpenSearch} {
		s := stack(t, variant)
		base := s.cfg.Model[strings.Index(s.cfg.Model, ".")+1:]
		for _, name := range []string{"api", "step"} {
			res := s.actionsOf(s.roleOf(t, s.functionID(t, name)))["bedrock:InvokeModelWithResponseStream"]
			slices.Sort(res)
			want := []string{
				"arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/" + s.cfg.Model,
				"arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/" + DefaultEmbedModel,
				"arn:${AWS::Partition}:bedrock:*::foundation-model/" + base,
			}
			if s.cfg.AgentsFile != "" {
				// The models agents give Bedrock (testdata/agents.yaml).
				want = append(want,
					"arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/us.amazon.nova-pro-v1:0",
					"arn:${AWS::Partition}:bedrock:*::foundation-model/amazon.nova-pro-v1:0",
					"arn:${AWS::Partition}:bedrock:${AWS::Region}::foundation-model/amazon.nova-micro-v1:0")
			}
			slices.Sort(want)
			if !slices.Equal(res, want) {
				t.Errorf("%s %s: bedrock on %v, want %v", variant, name, res, want)
			}
		}
		// The first use of a model subscribes the account to it through
		// AWS Marketplace, with the caller's permissions.
		for _, name := range []string{"api", "step"} {
			acts := s.actionsOf(s.roleOf(t, s.functionID(t, name)))
			for _, a := range []string{"aws-marketplace:ViewSubscriptions", "aws-marketplace:Subscribe"} {
				if r := acts[a]; !slices.Equal(r, []string{"*"}) {
					t.Errorf("%s %s: %s on %v, want *", variant, name, a, r)
				}
			}
			if _, ok := acts["aws-marketplace:Unsubscribe"]; ok {
				t.Errorf("%s %s may unsubscribe", variant, name)
			}
		}
		names := []string{"ws", "scheduler"}
		if s.cfg.Telegram {
			names = append(names, "telegram")
		}
		for _, name := range names {
			for a := range s.actionsOf(s.roleOf(t, s.functionID(t, name))) {
				if strings.HasPrefix(a, "bedrock:") || strings.HasPrefix(a, "aws-marketplace:") {
					t.Errorf("%s %s may %s", variant, name, a)
				}
			}
		}
	}
}

func TestStatesGrants(t *testing.T) {
	s := stack(t, variantOpenSearch) // the variant with telegram=on
	arn := "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:stateMachine:" + StackName + "-loop"
	stepARN := "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:" + StackName + "-step"
	// The step function answers too: its park task resumes the run when
	// the approval was answered before the task stored its token.
	for name, answers := range map[string]bool{"api": true, "ws": true, "telegram": true, "step": true, "scheduler": false} {
		acts := s.actionsOf(s.roleOf(t, s.functionID(t, name)))
		if r := acts["states:StartExecution"]; !slices.Equal(r, []string{arn}) {
			t.Errorf("%s: StartExecution on %v", name, r)
		}
		// Runs start inline: an asynchronous invocation of the step function.
		if r := acts["lambda:InvokeFunction"]; !slices.Equal(r, []string{stepARN}) {
			t.Errorf("%s: lambda:InvokeFunction on %v, want %s only", name, r, stepARN)
		}
		for _, a := range []string{"states:SendTaskSuccess", "states:SendTaskFailure"} {
			r, ok := acts[a]
			if ok != answers || ok && !slices.Equal(r, []string{arn}) {
				t.Errorf("%s: %s on %v, want it %v and on the state machine only", name, a, r, answers)
			}
		}
	}
}

func TestOutputs(t *testing.T) {
	s := stack(t, variantDefault)
	for _, o := range []string{"ApiUrl", "ConsoleUrl", "McpUrl", "A2aUrl", "OpenAIBaseUrl", "ChatCompletionsUrl", "WebSocketUrl", "StateMachineArn", "TableName", "Agents"} {
		assert(t, "output "+o, func() { s.template.HasOutput(jsii.String(o), m{"Value": assertions.Match_AnyValue()}) })
	}
	outputs := s.json["Outputs"].(map[string]any)
	all := stack(t, variantOpenSearch).json["Outputs"].(map[string]any)
	for _, o := range []string{"TelegramWebhookUrl", "TelegramBotTokenSecretArn", "TelegramWebhookSecretArn"} {
		if _, ok := outputs[o]; ok {
			t.Errorf("default stack outputs %s", o)
		}
		if _, ok := all[o]; !ok {
			t.Errorf("telegram=on stack outputs no %s", o)
		}
	}
	if got := render(outputs["ChatCompletionsUrl"].(map[string]any)["Value"]); !regexp.MustCompile(`^https://\$\{Api[0-9A-F]+\}\.execute-api\.\$\{AWS::Region\}\.\$\{AWS::URLSuffix\}/\$\{ApiDeploymentStageprod[0-9A-F]+\}/v1/chat/completions$`).MatchString(got) {
		t.Errorf("ChatCompletionsUrl = %s", got)
	}
	stage := `^https://\$\{Api[0-9A-F]+\}\.execute-api\.\$\{AWS::Region\}\.\$\{AWS::URLSuffix\}/\$\{ApiDeploymentStageprod[0-9A-F]+\}/`
	for o, want := range map[string]string{"ConsoleUrl": stage + "$", "McpUrl": stage + "mcp$", "A2aUrl": stage + `a2a/default/\.well-known/agent-card\.json$`} {
		if got := render(outputs[o].(map[string]any)["Value"]); !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("%s = %s", o, got)
		}
	}
	if got := render(outputs["WebSocketUrl"].(map[string]any)["Value"]); !strings.HasPrefix(got, "wss://") {
		t.Errorf("WebSocketUrl = %s", got)
	}
	if _, ok := outputs["OpenSearchEndpoint"]; ok {
		t.Error("default stack outputs an OpenSearch endpoint")
	}
	if _, ok := stack(t, variantOpenSearch).json["Outputs"].(map[string]any)["OpenSearchEndpoint"]; !ok {
		t.Error("opensearch stack outputs no OpenSearch endpoint")
	}
}

// TestAdminOutputs checks the outputs `lambdaclaw … --stack` reads: the
// table the functions use, and the agents they serve.
func TestAdminOutputs(t *testing.T) {
	for _, variant := range []string{variantDefault, variantOpenSearch} {
		s := stack(t, variant)
		outputs := s.json["Outputs"].(map[string]any)
		value := func(name string) string {
			o, ok := outputs[name].(map[string]any)
			if !ok {
				t.Fatalf("%s: no output %s", variant, name)
			}
			return render(o["Value"])
		}
		tables := s.resources("AWS::DynamoDB::Table")
		if len(tables) != 1 {
			t.Fatalf("%s: %d tables", variant, len(tables))
		}
		for id := range tables {
			if got := value("TableName"); got != "${"+id+"}" {
				t.Errorf("%s: TableName output = %s, want the table %s", variant, got, id)
			}
		}
		for id, fn := range s.resources("AWS::Lambda::Function") {
			env, _ := props(fn)["Environment"].(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			if tn, ok := vars["TABLE_NAME"]; ok && render(tn) != value("TableName") {
				t.Errorf("%s: function %s uses table %s, the output says %s", variant, id, render(tn), value("TableName"))
			}
		}
	}
}

// TestAgents checks the agents of agents_file: every function gets their
// definitions in AGENTS_CONFIG, which decode, as the functions decode
// them, to the file's agents with all their settings, and the Agents
// output lists them with the default agent; without the option the
// functions serve the default agent (and the pushed workspaces).
func TestAgents(t *testing.T) {
	b, err := os.ReadFile(agentsFile)
	if err != nil {
		t.Fatal(err)
	}
	f, err := agentenv.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	fileAgents := f.Agents
	eighty, no := 80, false
	if diff := gocmp.Diff(map[string]config.AgentConfig{
		"default":  {CompactionThreshold: &eighty},
		"research": {Providers: []string{"openai", "bedrock"}, Model: "us.amazon.nova-pro-v1:0", Tools: []string{"web_fetch", "load_skill", "memory_search"}, MaxToolIterations: 3},
		"writer":   {Providers: []string{"bedrock"}, Model: "amazon.nova-micro-v1:0", ClientSystem: "replace", MemoryFlush: &no},
	}, fileAgents); diff != "" {
		t.Fatalf("%s (-want +got):\n%s", agentsFile, diff)
	}
	for variant, tc := range map[string]struct {
		output string
		agents map[string]config.AgentConfig // nil: no AGENTS_CONFIG
	}{
		variantDefault:    {output: "default"},
		variantOpenSearch: {output: "default,research,writer", agents: fileAgents},
	} {
		s := stack(t, variant)
		if got := render(s.json["Outputs"].(map[string]any)["Agents"].(map[string]any)["Value"]); got != tc.output {
			t.Errorf("%s: Agents output = %q, want %q", variant, got, tc.output)
		}
		for id, fn := range s.resources("AWS::Lambda::Function") {
			vars, _ := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
			if _, ok := vars["WORKSPACE_BUCKET"]; !ok {
				continue // not a function of the agents (a CDK helper)
			}
			v, ok := vars[agentenv.Var].(string)
			if ok != (tc.agents != nil) {
				t.Errorf("%s: function %s has %s=%v", variant, id, agentenv.Var, vars[agentenv.Var])
				continue
			}
			if !ok {
				continue
			}
			got, err := agentenv.Decode(v, s.cfg.providers())
			if err != nil {
				t.Errorf("%s: function %s: %v", variant, id, err)
			}
			if diff := gocmp.Diff(tc.agents, got); diff != "" {
				t.Errorf("%s: function %s's agents (-want +got):\n%s", variant, id, diff)
			}
		}
	}
}

// The functions that run the loop (api, step) have run_memory, the others
// their fixed sizes; every function that embeds or indexes memories has
// the same vector length, embed_dimensions.
func TestMemoryAndDimensions(t *testing.T) {
	for variant, want := range map[string]struct{ run, dims float64 }{
		variantDefault:       {DefaultRunMemory, DefaultEmbedDimensions},
		variantOpenSearch:    {DefaultRunMemory, DefaultEmbedDimensions},
		variantShortApproval: {1024, 1024},
	} {
		t.Run(variant, func(t *testing.T) {
			s := stack(t, variant)
			fns := s.resources("AWS::Lambda::Function")
			sizes := map[string]float64{"api": want.run, "step": want.run, "ws": 256, "scheduler": 256}
			names := []string{"api", "step", "ws", "scheduler"}
			if variant == variantOpenSearch {
				sizes["telegram"], sizes["indexer"] = 256, 256
				names = append(names, "telegram", "indexer")
			}
			for _, name := range names {
				p := props(fns[s.functionID(t, name)])
				if p["MemorySize"] != sizes[name] {
					t.Errorf("%s: memory %v MB, want %v", name, p["MemorySize"], sizes[name])
				}
				env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
				if env["EMBED_DIMENSIONS"] != strconv.Itoa(int(want.dims)) {
					t.Errorf("%s: EMBED_DIMENSIONS=%v, want %v", name, env["EMBED_DIMENSIONS"], want.dims)
				}
			}
		})
	}
}

// TestEnvironmentSize: Lambda refuses a function whose environment
// (keys and values) exceeds 4 KB. With the user's definitions
// (AGENTS_CONFIG, MCP_CONFIG and MCP_SECRET_<VAR>) as long as the app
// allows (agentenv.MaxBytes, all together) and every reference at its
// longest (a resource's name, ARN or endpoint at 128 bytes, more than any
// of these takes), every function's environment fits.
func TestEnvironmentSize(t *testing.T) {
	longest := map[string]int{"AWS::Partition": len("aws-us-gov"), "AWS::Region": len("ap-southeast-2"), "AWS::AccountId": 12, "AWS::URLSuffix": len("amazonaws.com.cn")}
	refs := regexp.MustCompile(`\$\{([^}]*)\}`)
	for _, variant := range []string{variantDefault, variantOpenSearch} {
		s := stack(t, variant)
		for id, fn := range s.resources("AWS::Lambda::Function") {
			vars, _ := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
			size := len(agentenv.Var) + agentenv.MaxBytes
			for k, v := range vars {
				if k == agentenv.Var || k == agentenv.MCPVar || strings.HasPrefix(k, agentenv.MCPSecretPrefix) {
					continue
				}
				size += len(k) + len(refs.ReplaceAllStringFunc(render(v), func(ref string) string {
					return strings.Repeat("x", cmp.Or(longest[ref[2:len(ref)-1]], 128))
				}))
			}
			if size > 4096 {
				t.Errorf("%s: function %s's environment may take %d bytes, more than Lambda's 4 KB", variant, id, size)
			}
		}
	}
}

// TestAgentsRefused: agents the functions could not serve fail the
// synthesis with a message that names the agent and what is wrong.
func TestAgentsRefused(t *testing.T) {
	dir, err := assetsDir()
	if err != nil {
		t.Fatal(err)
	}
	many := "agents:\n"
	for i := range 40 {
		many += fmt.Sprintf("  agent-%02d: {model: us.amazon.nova-pro-v1:0, tools: [web_fetch]}\n", i)
	}
	for name, tc := range map[string]struct {
		file   string
		openai bool
		want   string
	}{
		"unknown provider": {file: "agents:\n  research:\n    providers: [azure]\n",
			want: `agent "research" uses unknown provider "azure" (the providers are bedrock)`},
		"openai not configured": {file: "agents:\n  research:\n    providers: [openai]\n",
			want: `agent "research" uses unknown provider "openai" (the providers are bedrock)`},
		"unknown tool": {file: "agents:\n  research:\n    tools: [web_fetch, shell]\n",
			want: `agent "research": unknown tool "shell" (the tools on AWS are web_fetch, load_skill, schedule, read_file`},
		"heartbeat under a minute": {file: "agents:\n  research:\n    heartbeat: {every: 30s}\n",
			want: `agent "research": heartbeat: every 30s is under a minute, the shortest interval on AWS (EventBridge Scheduler)`},
		"unknown setting": {file: "agents:\n  research:\n    tool: [web_fetch]\n",
			want: "line 3: field tool not found"},
		"another section": {file: "providers:\n  - name: local\nagents:\n  research: {}\n",
			want: "line 1: providers: only agents: and mcp: are read on AWS"},
		"bad name": {file: "agents:\n  Research: {}\n", want: `agent "Research": agent name "Research" is invalid`},
		"bad setting": {file: "agents:\n  research:\n    client_system: merge\n",
			want: `agent "research": client_system must be append or replace`},
		"not YAML": {file: "agents: [\n", want: "yaml:"},
		"too long": {file: many, openai: true, want: "more than the 2048 the functions' environment has room for"},
		"no file":  {want: "no such file"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agents.yaml")
			if tc.file != "" {
				if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			ctx := map[string]any{ctxAssets: dir, ctxAgentsFile: path}
			if tc.openai {
				ctx[ctxOpenAIBaseURL], ctx[ctxOpenAIModel] = "https://example.com/v1", "gpt-x"
			}
			app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(t.TempDir())})
			_, err := ConfigFromContext(app)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), ctxAgentsFile) {
				t.Errorf("error %v, want one about %s containing %q", err, ctxAgentsFile, tc.want)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	dir, err := assetsDir()
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		ctx  map[string]any
		want string
	}{
		"bad search":                           {map[string]any{ctxSearch: "elastic", ctxAssets: dir}, `search="elastic"`},
		"missing assets":                       {map[string]any{ctxAssets: t.TempDir()}, "missing Lambda bootstraps"},
		"bad telegram":                         {map[string]any{ctxTelegram: "yes", ctxAssets: dir}, `telegram="yes"`},
		"bad alarms":                           {map[string]any{ctxAlarms: "maybe", ctxAssets: dir}, `alarms="maybe"`},
		"openai_base_url without openai_model": {map[string]any{ctxOpenAIBaseURL: "https://example.com/v1", ctxAssets: dir}, ctxOpenAIModel},
		"openai_model without openai_base_url": {map[string]any{ctxOpenAIModel: "gpt-x", ctxAssets: dir}, ctxOpenAIBaseURL},
		"telegram=on needs its bootstrap":      {map[string]any{ctxTelegram: TelegramOn, ctxAssets: coreAssets(t)}, "telegram/bootstrap"},
		"opensearch needs the indexer":         {map[string]any{ctxSearch: SearchOpenSearch, ctxAssets: coreAssets(t)}, "indexer/bootstrap"},
		"retention shorter than a run waits":   {map[string]any{ctxRetention: "7", ctxAssets: dir}, ctxRetention},
		"retention not a number":               {map[string]any{ctxRetention: "90d", ctxAssets: dir}, ctxRetention},
		"approval timeout over 7 days":         {map[string]any{ctxApproval: "8d", ctxAssets: dir}, ctxApproval},
		"approval timeout not a duration":      {map[string]any{ctxApproval: "soon", ctxAssets: dir}, ctxApproval},
		"approval timeout in fractions":        {map[string]any{ctxApproval: "1500ms", ctxAssets: dir}, ctxApproval},
		"no days of old workspace versions":    {map[string]any{ctxVersionDays: "0", ctxAssets: dir}, ctxVersionDays},
		"workspace version days not a number":  {map[string]any{ctxVersionDays: "30d", ctxAssets: dir}, ctxVersionDays},
		"run memory below Lambda's least":      {map[string]any{ctxRunMemory: "64", ctxAssets: dir}, ctxRunMemory},
		"run memory not a number":              {map[string]any{ctxRunMemory: "1GB", ctxAssets: dir}, ctxRunMemory},
		"vectors Titan does not make":          {map[string]any{ctxEmbedDims: "768", ctxAssets: dir}, ctxEmbedDims},
		"bad waf":                              {map[string]any{ctxWAF: "yes", ctxAssets: dir}, `waf="yes"`},
		"no api rate":                          {map[string]any{ctxAPIRate: "0", ctxAssets: dir}, ctxAPIRate},
		"api rate not a number":                {map[string]any{ctxAPIRate: "fast", ctxAssets: dir}, ctxAPIRate},
		"api rate over the account's":          {map[string]any{ctxAPIRate: "20000", ctxAssets: dir}, ctxAPIRate},
		"no api burst":                         {map[string]any{ctxAPIBurst: "0", ctxAssets: dir}, ctxAPIBurst},
		"api burst in fractions":               {map[string]any{ctxAPIBurst: "2.5", ctxAssets: dir}, ctxAPIBurst},
		"waf limit under WAF's least":          {map[string]any{ctxWAFLimit: "5", ctxAssets: dir}, ctxWAFLimit},
		"bad tracing":                          {map[string]any{ctxTracing: "on", ctxAssets: dir}, `tracing="on"`},
		"unknown sandbox network":              {map[string]any{ctxSandbox: SandboxFargate, ctxSandboxNetwork: "private", ctxAssets: dir}, `sandbox_network="private"`},
		"sandbox network without the sandbox":  {map[string]any{ctxSandboxNetwork: SandboxPublic, ctxAssets: dir}, "needs sandbox=fargate"},
	} {
		t.Run(name, func(t *testing.T) {
			app := awscdk.NewApp(&awscdk.AppProps{Context: &tc.ctx, Outdir: jsii.String(t.TempDir())})
			cfg, err := ConfigFromContext(app)
			if err == nil {
				_, err = NewStack(app, StackName, cfg, nil)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// X-Ray traces (one a turn, tests/cost/README.md) only with
// tracing=active: every function Active and the state machine traced,
// with the permissions to send traces; by default no function has a
// tracing mode (Lambda's PassThrough), the state machine none, and no
// role an X-Ray action.
func TestTracing(t *testing.T) {
	for _, tc := range []struct {
		variant      string
		fn, sm       string
		xrayPolicies bool
	}{
		{variantDefault, "null", `{"Enabled":false}`, false},
		{variantTracing, `{"Mode":"Active"}`, `{"Enabled":true}`, true},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			s := stack(t, tc.variant)
			fns := s.resources("AWS::Lambda::Function")
			if len(fns) == 0 {
				t.Fatal("no functions")
			}
			for id, fn := range fns {
				if got := render(props(fn)["TracingConfig"]); got != tc.fn {
					t.Errorf("%s: tracing %s, want %s", id, got, tc.fn)
				}
			}
			for id, sm := range s.resources("AWS::StepFunctions::StateMachine") {
				if got := render(props(sm)["TracingConfiguration"]); got != tc.sm {
					t.Errorf("%s: tracing %s, want %s", id, got, tc.sm)
				}
			}
			// The roles that may send traces: every function's and the
			// state machine's when traced, none else.
			sending := map[string]bool{}
			for _, st := range s.statements() {
				if slices.Contains(st.actions, "xray:PutTraceSegments") {
					for _, r := range st.roles {
						sending[r] = true
					}
				}
			}
			for id := range fns {
				if role := "${" + s.roleOf(t, id) + "}"; sending[role] != tc.xrayPolicies {
					t.Errorf("%s: may send traces %v, want %v", id, sending[role], tc.xrayPolicies)
				}
			}
			if !tc.xrayPolicies && len(sending) > 0 {
				t.Errorf("roles %v may send traces with tracing off", keys(sending))
			}
		})
	}
}

// coreAssets returns a directory with the bootstraps of the functions that
// exist (functions/api, ws, step and scheduler) and no others.
func coreAssets(t *testing.T) string {
	dir := t.TempDir()
	for _, f := range []string{"api", "ws", "step", "scheduler"} {
		if err := os.MkdirAll(filepath.Join(dir, f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f, "bootstrap"), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestDefaultNeedsOnlyTheFunctionsThatExist: `make build` builds api, ws,
// step and scheduler; the default stack must synthesize with those alone.
func TestDefaultNeedsOnlyTheFunctionsThatExist(t *testing.T) {
	ctx := map[string]any{ctxAssets: coreAssets(t)}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(t.TempDir())})
	cfg, err := ConfigFromContext(app)
	if err == nil {
		_, err = NewStack(app, StackName, cfg, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func TestBedrockResources(t *testing.T) {
	// Pure string logic, but FormatArn needs a stack.
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	st := awscdk.NewStack(app, jsii.String("S"), &awscdk.StackProps{
		Env: &awscdk.Environment{Account: jsii.String("123456789012"), Region: jsii.String("eu-west-1")},
	})
	b := &builder{stack: st}
	for model, want := range map[string][]string{
		"amazon.nova-lite-v1:0": {"arn:aws:bedrock:eu-west-1::foundation-model/amazon.nova-lite-v1:0"},
		"eu.amazon.nova-lite-v1:0": {
			"arn:aws:bedrock:eu-west-1:123456789012:inference-profile/eu.amazon.nova-lite-v1:0",
			"arn:aws:bedrock:*::foundation-model/amazon.nova-lite-v1:0",
		},
		"global.anthropic.claude-haiku-4-5-20251001-v1:0": {
			"arn:aws:bedrock:eu-west-1:123456789012:inference-profile/global.anthropic.claude-haiku-4-5-20251001-v1:0",
			"arn:aws:bedrock:*::foundation-model/anthropic.claude-haiku-4-5-20251001-v1:0",
		},
	} {
		var got []string
		for _, r := range b.bedrockResources(model) {
			var v any
			raw, _ := json.Marshal(st.Resolve(r))
			if err := json.Unmarshal(raw, &v); err != nil {
				t.Fatal(err)
			}
			got = append(got, strings.ReplaceAll(render(v), "${AWS::Partition}", "aws"))
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", model, got, want)
		}
	}
}

// TestAlarms: the operator is told of failed runs (not of the step
// function's errors raised for a retry), failing or throttled functions,
// the REST API's 5XX, DynamoDB throttling and dead letters, through one
// topic, each alarm saying what to do; alarms=off removes them; every
// function and the loop are traced.
func TestAlarms(t *testing.T) {
	s := stack(t, variantDefault)
	alarms := s.resources("AWS::CloudWatch::Alarm")
	var names []string
	for id, a := range alarms {
		p := props(a)
		if len(list(p["AlarmActions"])) != 1 || p["Threshold"] != float64(1) || p["TreatMissingData"] != "notBreaching" ||
			p["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" {
			t.Errorf("%s: %v", id, p)
		}
		if d, _ := p["AlarmDescription"].(string); !strings.HasPrefix(d, "lambdaclaw: ") || !strings.Contains(d, ". ") {
			t.Errorf("%s: description %q does not say what to do", id, d)
		}
		for _, met := range alarmMetrics(p) {
			names = append(names, met.name)
		}
	}
	slices.Sort(names)
	// The step function's Errors are not among them (alarms.go: it fails
	// on purpose to be retried); the runs that failed are.
	want := []string{"5XXError", "ApproximateNumberOfMessagesVisible", "ApproximateNumberOfMessagesVisible", "ApproximateNumberOfMessagesVisible",
		"Errors", "Errors", "Errors", "ExecutionsFailed", "ReadThrottleEvents", "Throttles", "Throttles", "WriteThrottleEvents", obs.MetricErrors}
	if !slices.Equal(names, want) {
		t.Errorf("alarm metrics %v, want %v (the 13 alarm metrics alarms.go counts)", names, want)
	}
	step := s.functionID(t, "step")
	byMetric := map[string][]alarmMetric{}
	for _, a := range alarms {
		for _, met := range alarmMetrics(props(a)) {
			byMetric[met.name] = append(byMetric[met.name], met)
		}
	}
	for _, met := range byMetric["Errors"] {
		if met.dims["FunctionName"] == "${"+step+"}" {
			t.Errorf("an alarm on the step function's Errors, which count the Transient errors it raises for a retry")
		}
	}
	for name, want := range map[string]alarmMetric{
		obs.MetricErrors:      {namespace: emf.Namespace, dims: map[string]string{"kind": "turn"}},
		"5XXError":            {namespace: "AWS/ApiGateway", dims: map[string]string{"ApiName": StackName + "-api"}},
		"ReadThrottleEvents":  {namespace: "AWS/DynamoDB", dims: map[string]string{"TableName": "${" + tableID(s) + "}"}},
		"WriteThrottleEvents": {namespace: "AWS/DynamoDB", dims: map[string]string{"TableName": "${" + tableID(s) + "}"}},
		"ExecutionsFailed":    {namespace: "AWS/States"},
	} {
		got := byMetric[name]
		if len(got) != 1 || got[0].namespace != want.namespace || got[0].stat != "Sum" || got[0].period != 300 {
			t.Errorf("%s: %+v, want one alarm on %s's sum over 5 minutes", name, got, want.namespace)
			continue
		}
		for k, v := range want.dims {
			if got[0].dims[k] != v {
				t.Errorf("%s: dimension %s=%q, want %q", name, k, got[0].dims[k], v)
			}
		}
	}
	if n := len(s.resources("AWS::SNS::Topic")); n != 1 {
		t.Errorf("%d alarm topics, want 1", n)
	}
	if n := len(s.resources("AWS::SNS::Subscription")); n != 0 {
		t.Errorf("%d subscriptions without alarm_email", n)
	}
	// Each asynchronous path has its queue: check-ins and inline runs.
	queues := map[string]string{s.functionID(t, "scheduler"): "CheckInFailures", s.functionID(t, "step"): "RunFailures"}
	configs := s.resources("AWS::Lambda::EventInvokeConfig")
	if len(configs) != len(queues) {
		t.Errorf("%d asynchronous invocation configs, want %d", len(configs), len(queues))
	}
	for id, c := range configs {
		fn := render(props(c)["FunctionName"])
		q, ok := queues[strings.Trim(fn, "${}")]
		if !ok || !strings.Contains(render(props(c)["DestinationConfig"]), q) {
			t.Errorf("%s: async failures of %s go to %s, want the queue %q", id, fn, render(props(c)["DestinationConfig"]), q)
		}
	}

	mail := synth(map[string]string{ctxAlarmEmail: "ops@example.com"})
	if mail.err != nil {
		t.Fatal(mail.err)
	}
	for _, sub := range mail.resources("AWS::SNS::Subscription") {
		if p := props(sub); p["Protocol"] != "email" || p["Endpoint"] != "ops@example.com" {
			t.Errorf("subscription %v", p)
		}
	}
	off := synth(map[string]string{ctxAlarms: "off"})
	if off.err != nil {
		t.Fatal(off.err)
	}
	if n := len(off.resources("AWS::CloudWatch::Alarm")) + len(off.resources("AWS::SNS::Topic")); n != 0 {
		t.Errorf("alarms=off: %d alarms and topics", n)
	}
}

// TestInlineRuns: durable runs run inline in the step function, which
// has the fixed name every function that starts runs invokes
// (RUN_FUNCTION); its asynchronous invocations are retried twice, then
// land in the RunFailures queue, which raises an alarm.
// TestStepTimeout: the functions that run the loop's steps are told
// their timeout (STEP_TIMEOUT), from which they fit every step in one
// invocation (shared/wiring/cloud); the others run no step.
func TestStepTimeout(t *testing.T) {
	s := stack(t, variantDefault)
	fns := s.resources("AWS::Lambda::Function")
	for _, name := range []string{"api", "step", "ws", "scheduler"} {
		p := props(fns[s.functionID(t, name)])
		env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		v, told := env["STEP_TIMEOUT"].(string)
		if runs := name == "api" || name == "step"; told != runs {
			t.Errorf("%s: STEP_TIMEOUT %q; want it only where steps run", name, v)
			continue
		}
		if !told {
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil || d.Seconds() != p["Timeout"] || d != 15*time.Minute {
			t.Errorf("%s: STEP_TIMEOUT %q and a timeout of %v s; want Lambda's longest, 900 s, both", name, v, p["Timeout"])
		}
	}
}

func TestInlineRuns(t *testing.T) {
	s := stack(t, variantOpenSearch)
	step := s.functionID(t, "step")
	fns := s.resources("AWS::Lambda::Function")
	if n := props(fns[step])["FunctionName"]; n != StackName+"-step" {
		t.Errorf("step function name %v, want %s-step", n, StackName)
	}
	for _, name := range []string{"api", "ws", "telegram", "scheduler", "step"} {
		env := props(fns[s.functionID(t, name)])["Environment"].(map[string]any)["Variables"].(map[string]any)
		if env["RUN_FUNCTION"] != StackName+"-step" {
			t.Errorf("%s: RUN_FUNCTION=%v, want the step function", name, env["RUN_FUNCTION"])
		}
	}
	var found bool
	for _, c := range s.resources("AWS::Lambda::EventInvokeConfig") {
		p := props(c)
		if render(p["FunctionName"]) != "${"+step+"}" {
			continue
		}
		found = true
		if p["MaximumRetryAttempts"] != float64(2) || !strings.Contains(render(p["DestinationConfig"]), "RunFailures") {
			t.Errorf("step's asynchronous invocations: %v", p)
		}
	}
	if !found {
		t.Error("no asynchronous invocation config of the step function")
	}
	var alarmed bool
	for _, a := range s.resources("AWS::CloudWatch::Alarm") {
		if strings.Contains(render(props(a)["Dimensions"]), "RunFailures") {
			alarmed = true
			// The operator is told what to run (functions/lambdaclaw/runs.go).
			if d, _ := props(a)["AlarmDescription"].(string); !strings.Contains(d, "`lambdaclaw runs list --stack <stack name>`") {
				t.Errorf("RunFailures alarm description %q names no command", d)
			}
		}
	}
	if !alarmed {
		t.Error("no alarm on the RunFailures queue")
	}
	// `lambdaclaw runs … --stack` finds the queue and the step function
	// by the stack's outputs.
	outputs := s.json["Outputs"].(map[string]any)
	queues := s.resources("AWS::SQS::Queue")
	var queueID string
	for id := range queues {
		if strings.HasPrefix(id, "RunFailures") {
			queueID = id
		}
	}
	for name, want := range map[string]string{"RunFailuresUrl": "${" + queueID + "}", "StepFunctionArn": "${" + step + ".Arn}"} {
		o, _ := outputs[name].(map[string]any)
		if got := render(o["Value"]); queueID == "" || got != want {
			t.Errorf("output %s = %s, want %s", name, got, want)
		}
	}
}
