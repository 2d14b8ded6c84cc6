// Command scheduler is the target of EventBridge Scheduler: the
// deliveries of jobs' firings, `lambdaclaw cron run --stack` and free-form
// check-ins (cloud.Root.Scheduler tells them apart).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
)

func main() {
	h, err := handler(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "scheduler:", err)
		os.Exit(1)
	}
	lambda.Start(h)
}

// handler builds the function's handler from the environment.
func handler(ctx context.Context) (func(context.Context, json.RawMessage) (any, error), error) {
	root, err := cloud.New(ctx)
	if err != nil {
		return nil, err
	}
	return root.Scheduler(), nil
}
