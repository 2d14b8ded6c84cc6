package cloud

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/dynamo"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
)

// newInline returns how durable runs run inline (sfn.Inline): the step
// function RUN_FUNCTION names, invoked asynchronously (LAMBDA_ENDPOINT
// overrides the Lambda endpoint), leased in the table. Without
// RUN_FUNCTION it returns nil: every run goes through the state machine.
func newInline(awsCfg aws.Config, getenv func(string) string, db *dynamo.Store) (*sfn.Inline, error) {
	fn := getenv("RUN_FUNCTION")
	if fn == "" {
		return nil, nil
	}
	client, err := awsapi.NewLambda(awsCfg, getenv("LAMBDA_ENDPOINT"))
	if err != nil {
		return nil, fmt.Errorf("cloud: %w", err)
	}
	return &sfn.Inline{Invoker: client, Function: fn, Claims: db}, nil
}
