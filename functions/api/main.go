// Command api is the Lambda function behind the REST API: the
// OpenAI-compatible chat completions (JSON and SSE), embeddings, the model
// list, the MCP server (/mcp, stateless) and the health check, served by the
// same http.Handler as the local server
// with responses streamed (the integration's STREAM mode). Stateless
// requests run inline; stateful ones go through the state machine. See
// shared/wiring/cloud/turns and shared/adapters/apigw.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/apigw"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/turns"
)

func main() {
	h, err := handler(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "api:", err)
		os.Exit(1)
	}
	lambda.Start(h)
}

// handler builds the function's handler from the environment.
func handler(ctx context.Context) (apigw.StreamHandler, error) {
	// Stateless turns run here: the root has the models and tools.
	root, err := turns.New(ctx, nil)
	if err != nil {
		return nil, err
	}
	h, err := turns.API(root)
	if err != nil {
		return nil, err
	}
	return apigw.Stream(h, root.Log), nil
}
