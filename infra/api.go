package main

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"
)

// Stage names and limits of the two APIs. The throttles bound what a
// leaked URL can cost; raise them for real traffic.
const (
	stageName      = "prod"
	rateLimit      = 50  // requests (messages) per second, steady
	burstLimit     = 100 // requests (messages) in a burst
	streamTimeoutS = 900 // 15 minutes: the longest a streamed response may run
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
			RateLimit:  jsii.Number(rateLimit),
			BurstLimit: jsii.Number(burstLimit),
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
// The api function's routes (the OpenAI-compatible API's, /health, /mcp
// and the web console's) are Lambda proxy integrations in STREAM mode
// (see NewStack for why, and for the payload format it implies); the
// Telegram webhook (telegram=on only) is a BUFFERED proxy integration
// of the telegram function.
func (s *builder) restAPI() {
	s.addWebSocketRoutes()
	api := awsapigateway.NewRestApi(s.stack, jsii.String("Api"), &awsapigateway.RestApiProps{
		RestApiName: jsii.String(*s.stack.StackName() + "-api"),
		Description: jsii.String("lambdaclaw: OpenAI-compatible API (streamed), MCP server, web console, health, Telegram webhook (optional)"),
		EndpointConfiguration: &awsapigateway.EndpointConfiguration{
			Types: &[]awsapigateway.EndpointType{awsapigateway.EndpointType_REGIONAL},
		},
		// No account-wide CloudWatch role and no execution logging: the
		// functions log what matters, and the role outlives the stack.
		CloudWatchRole: jsii.Bool(false),
		DeployOptions: &awsapigateway.StageOptions{
			StageName:            jsii.String(stageName),
			ThrottlingRateLimit:  jsii.Number(rateLimit),
			ThrottlingBurstLimit: jsii.Number(burstLimit),
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

	s.apiURL = api.Url()
	s.urlFor = func(path string) *string { return api.UrlForPath(jsii.String(path)) }
}
