// Command scheduler is the target of EventBridge Scheduler check-ins: each
// event ({"agent","user","channel","text"}) becomes a run in that user's
// session, driven by the state machine, whose replies go to the channel.
// See shared/channels/checkin.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/checkin"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
)

func main() {
	h, err := handler(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "scheduler:", err)
		os.Exit(1)
	}
	lambda.Start(h.Handle)
}

// handler builds the function's handler from the environment.
func handler(ctx context.Context) (*checkin.Handler, error) {
	root, err := cloud.New(ctx)
	if err != nil {
		return nil, err
	}
	return root.CheckIn(), nil
}
