package cloud

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/dynamo"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
)

// newInline returns how durable runs run inline (sfn.Inline): the step
// function RUN_FUNCTION names, invoked asynchronously (LAMBDA_ENDPOINT
// overrides the Lambda endpoint), leased in the table. Without
// RUN_FUNCTION it returns nil: every run goes through the state machine.
func newInline(awsCfg aws.Config, getenv func(string) string, db *dynamo.Store) *sfn.Inline {
	fn := getenv("RUN_FUNCTION")
	if fn == "" {
		return nil
	}
	client := lambda.NewFromConfig(awsCfg, func(o *lambda.Options) {
		if ep := getenv("LAMBDA_ENDPOINT"); ep != "" {
			o.BaseEndpoint = aws.String(ep)
		}
	})
	return &sfn.Inline{Invoker: client, Function: fn, Claims: db}
}
