// Command step is the Lambda function of the loop's state machine: each
// task invokes it with an sfn.Event (actions step, call, park and fail)
// and it runs that piece of a run with the same Go steps as the local
// driver. See shared/adapters/sfn and shared/wiring/cloud/turns.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/fargate"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/turns"
)

func main() {
	h, err := handler(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "step:", err)
		os.Exit(1)
	}
	lambda.Start(h)
}

// handler builds the function's handler from the environment.
func handler(ctx context.Context) (func(context.Context, sfn.Event) (any, error), error) {
	// The steps run here: the root has the models, the tools and the
	// sandbox.
	root, err := turns.New(ctx, fargate.Exec)
	if err != nil {
		return nil, err
	}
	// The heartbeats' jobs follow the agents' settings, made here, where
	// schedules may be made. A failure leaves the runs working: it is
	// logged, and the next cold start tries again.
	if err := turns.SyncHeartbeats(ctx, root); err != nil {
		root.Log.Error("heartbeats not synced", "err", err)
	}
	return root.Step(), nil
}
