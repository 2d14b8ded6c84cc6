// Command ws is the Lambda function of the WebSocket API: $connect (API
// key check), $disconnect and client frames ($default), answered with
// PostToConnection; runs go through the state machine. See shared/adapters/apigw
// and shared/wiring/cloud.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
)

func main() {
	h, err := handler(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "ws:", err)
		os.Exit(1)
	}
	lambda.Start(h)
}

// handler builds the function's handler from the environment.
func handler(ctx context.Context) (func(context.Context, events.APIGatewayWebsocketProxyRequest) (events.APIGatewayProxyResponse, error), error) {
	root, err := cloud.New(ctx)
	if err != nil {
		return nil, err
	}
	return root.WebSocket()
}
