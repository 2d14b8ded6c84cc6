package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awswafv2"
	"github.com/aws/jsii-runtime-go"
)

// The stage name of the two APIs, and the longest a streamed response
// may run (15 minutes). Both stages' default method throttling is
// Config.APIRate and APIBurst (-c api_rate, -c api_burst): every request
// with a bad key still invokes a function, so the throttle is what bounds
// what a leaked URL can cost (README: What a flood can cost); API Gateway
// does not bill the requests it throttles.
const (
	stageName      = "prod"
	streamTimeoutS = 900
)

// websocket creates the WebSocket API ($connect, $disconnect and $default
// all go to the ws function) before the functions, which need its
// management endpoint; the routes are added once the ws function exists.
func (s *builder) websocket() {
	api := awsapigatewayv2.NewWebSocketApi(s.stack, jsii.String("WebSocket"), &awsapigatewayv2.WebSocketApiProps{
		Description: jsii.String("lambdaclaw WebSocket: streamed drafts and in-band approvals"),
	})
	stage := awsapigatewayv2.NewWebSocketStage(s.stack, jsii.String("WebSocketStage"), &awsapigatewayv2.WebSocketStageProps{
		WebSocketApi: api,
		StageName:    jsii.String(stageName),
		AutoDeploy:   jsii.Bool(true),
		Throttle: &awsapigatewayv2.ThrottleSettings{
			RateLimit:  jsii.Number(s.cfg.APIRate),
			BurstLimit: jsii.Number(s.cfg.APIBurst),
		},
	})
	s.wsEndpoint = stage.CallbackUrl()
	s.wsURL = stage.Url()
	// execute-api:ManageConnections on this API's stage only:
	// arn:…:execute-api:<region>:<account>:<api id>/prod/*/@connections/*.
	s.wsGrant = func(g awsiam.IGrantable) { stage.GrantManagementApiAccess(g) }
	s.addWebSocketRoutes = func() {
		ws := s.fns["ws"]
		for _, route := range []string{"$connect", "$disconnect", "$default"} {
			api.AddRoute(jsii.String(route), &awsapigatewayv2.WebSocketRouteOptions{
				Integration: awsapigatewayv2integrations.NewWebSocketLambdaIntegration(jsii.String("Ws"+routeID(route)), ws, nil),
			})
		}
	}
}

func routeID(route string) string {
	switch route {
	case "$connect":
		return "Connect"
	case "$disconnect":
		return "Disconnect"
	default:
		return "Default"
	}
}

// restAPI creates the REST API, the front door for HTTP.
//
// The api function's routes (the OpenAI-compatible API's, /health, /mcp,
// A2A's and the web console's) are Lambda proxy integrations in STREAM mode
// (see NewStack for why, and for the payload format it implies); the
// Telegram webhook (telegram=on only) is a BUFFERED proxy integration
// of the telegram function.
func (s *builder) restAPI() {
	s.addWebSocketRoutes()
	api := awsapigateway.NewRestApi(s.stack, jsii.String("Api"), &awsapigateway.RestApiProps{
		RestApiName: jsii.String(*s.stack.StackName() + "-api"),
		Description: jsii.String("lambdaclaw: OpenAI-compatible API (streamed), MCP server, A2A server, web console, health, Telegram webhook (optional)"),
		EndpointConfiguration: &awsapigateway.EndpointConfiguration{
			Types: &[]awsapigateway.EndpointType{awsapigateway.EndpointType_REGIONAL},
		},
		// No account-wide CloudWatch role and no execution logging: the
		// functions log what matters, and the role outlives the stack.
		CloudWatchRole: jsii.Bool(false),
		DeployOptions: &awsapigateway.StageOptions{
			StageName:            jsii.String(stageName),
			ThrottlingRateLimit:  jsii.Number(s.cfg.APIRate),
			ThrottlingBurstLimit: jsii.Number(s.cfg.APIBurst),
		},
	})
	stream := awsapigateway.NewLambdaIntegration(s.fns["api"], &awsapigateway.LambdaIntegrationOptions{
		ResponseTransferMode: awsapigateway.ResponseTransferMode_STREAM,
		Timeout:              awscdk.Duration_Seconds(jsii.Number(streamTimeoutS)),
		AllowTestInvoke:      jsii.Bool(false),
	})
	root := api.Root()
	root.AddResource(jsii.String("health"), nil).AddMethod(jsii.String("GET"), stream, nil)
	// The MCP server (shared/channels/mcpserver): POST carries the
	// messages; it is stateless here, so GET and DELETE, which only an
	// MCP session has, are the function's 405.
	mcp := root.AddResource(jsii.String("mcp"), nil)
	for _, method := range []string{"POST", "GET", "DELETE"} {
		mcp.AddMethod(jsii.String(method), stream, nil)
	}
	// The A2A server (shared/channels/a2a): the default agent's card and
	// endpoint, and each agent's under a2a/<agent>; streamed answers are
	// server-sent events.
	root.AddResource(jsii.String(".well-known"), nil).
		AddResource(jsii.String("agent-card.json"), nil).
		AddMethod(jsii.String("GET"), stream, nil)
	a2a := root.AddResource(jsii.String("a2a"), nil)
	a2a.AddMethod(jsii.String("POST"), stream, nil)
	a2aAgent := a2a.AddResource(jsii.String("{agent}"), nil)
	a2aAgent.AddMethod(jsii.String("POST"), stream, nil)
	a2aAgent.AddResource(jsii.String(".well-known"), nil).
		AddResource(jsii.String("agent-card.json"), nil).
		AddMethod(jsii.String("GET"), stream, nil)
	// The web console (shared/channels/console): its page at the
	// stage's root, its other files beside it under console/, and its
	// JSON API under /v1/lambdaclaw/.
	root.AddMethod(jsii.String("GET"), stream, nil)
	root.AddResource(jsii.String("console"), nil).
		AddResource(jsii.String("{file}"), nil).
		AddMethod(jsii.String("GET"), stream, nil)

	v1 := root.AddResource(jsii.String("v1"), nil)
	models := v1.AddResource(jsii.String("models"), nil)
	models.AddMethod(jsii.String("GET"), stream, nil)
	models.AddResource(jsii.String("{model}"), nil).AddMethod(jsii.String("GET"), stream, nil)
	v1.AddResource(jsii.String("chat"), nil).
		AddResource(jsii.String("completions"), nil).
		AddMethod(jsii.String("POST"), stream, nil)
	v1.AddResource(jsii.String("embeddings"), nil).AddMethod(jsii.String("POST"), stream, nil)
	responses := v1.AddResource(jsii.String("responses"), nil)
	responses.AddMethod(jsii.String("POST"), stream, nil)
	response := responses.AddResource(jsii.String("{id}"), nil)
	response.AddMethod(jsii.String("GET"), stream, nil)
	response.AddMethod(jsii.String("DELETE"), stream, nil)
	v1.AddResource(jsii.String("lambdaclaw"), nil).
		AddResource(jsii.String("{proxy+}"), nil).
		AddMethod(jsii.String("ANY"), stream, nil)

	if s.cfg.Telegram {
		telegram := awsapigateway.NewLambdaIntegration(s.fns["telegram"], &awsapigateway.LambdaIntegrationOptions{
			AllowTestInvoke: jsii.Bool(false),
		})
		root.AddResource(jsii.String("telegram"), nil).
			AddResource(jsii.String("webhook"), nil).
			AddMethod(jsii.String("POST"), telegram, nil)
	}

	s.addChannelRoutes(root)

	s.restApi = api
	s.apiURL = api.Url()
	s.urlFor = func(path string) *string { return api.UrlForPath(jsii.String(path)) }
}

// waf (waf=on) puts a regional WAF web ACL in front of the REST API's
// stage, with one rate-based rule: an IP that sends more than
// Config.WAFLimit requests in 5 minutes is blocked until its rate falls
// under the limit. The stage's throttle bounds every client together; this
// bounds each IP, so one client's flood does not throttle the others. WAF
// does not attach to WebSocket APIs (API Gateway v2): that stage has its
// throttle only. It costs $5 a month for the web ACL, $1 for the rule and
// $0.60 per million requests it inspects, blocked ones included.
func (s *builder) waf() {
	if !s.cfg.WAF {
		return
	}
	visibility := func(name string) *awswafv2.CfnWebACL_VisibilityConfigProperty {
		return &awswafv2.CfnWebACL_VisibilityConfigProperty{
			CloudWatchMetricsEnabled: jsii.Bool(true),
			MetricName:               jsii.String(name),
			SampledRequestsEnabled:   jsii.Bool(true),
		}
	}
	acl := awswafv2.NewCfnWebACL(s.stack, jsii.String("ApiWebAcl"), &awswafv2.CfnWebACLProps{
		Scope:            jsii.String("REGIONAL"),
		Description:      jsii.String("lambdaclaw: requests per IP limited on the REST API"),
		DefaultAction:    &awswafv2.CfnWebACL_DefaultActionProperty{Allow: &awswafv2.CfnWebACL_AllowActionProperty{}},
		VisibilityConfig: visibility("lambdaclaw-api"),
		Rules: &[]*awswafv2.CfnWebACL_RuleProperty{{
			Name:     jsii.String("rate-per-ip"),
			Priority: jsii.Number(0),
			Action:   &awswafv2.CfnWebACL_RuleActionProperty{Block: &awswafv2.CfnWebACL_BlockActionProperty{}},
			Statement: &awswafv2.CfnWebACL_StatementProperty{
				RateBasedStatement: &awswafv2.CfnWebACL_RateBasedStatementProperty{
					Limit:               jsii.Number(s.cfg.WAFLimit),
					EvaluationWindowSec: jsii.Number(300),
					AggregateKeyType:    jsii.String("IP"),
				},
			},
			VisibilityConfig: visibility("lambdaclaw-rate-per-ip"),
		}},
	})
	awswafv2.NewCfnWebACLAssociation(s.stack, jsii.String("ApiWebAclAssociation"), &awswafv2.CfnWebACLAssociationProps{
		ResourceArn: s.restApi.DeploymentStage().StageArn(),
		WebAclArn:   acl.AttrArn(),
	})
}
