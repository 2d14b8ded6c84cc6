// Command infra is the AWS CDK app that deploys lambdaclaw serverless:
// API Gateway and Lambda for chat, webhooks and WebSocket connections, a
// Step Functions state machine driving the agent loop, DynamoDB, and
// OpenSearch on request. cdk.json at the top of the repository runs it
// (`make synth`, `make deploy`, `make destroy`); see NewStack for the
// design and README.md for the context options.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// StackName is the CloudFormation stack's name.
const StackName = "Lambdaclaw"

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	cfg, err := ConfigFromContext(app)
	if err == nil {
		_, err = NewStack(app, StackName, cfg, &awscdk.StackProps{
			// Environment-agnostic unless CDK_DEFAULT_* are set by the CLI
			// from the caller's credentials and profile.
			Env: env(),
		})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(1)
	}
	app.Synth(nil)
}

// env pins the stack to the account and Region the CDK CLI resolved, when
// it resolved them.
func env() *awscdk.Environment {
	account, region := os.Getenv("CDK_DEFAULT_ACCOUNT"), os.Getenv("CDK_DEFAULT_REGION")
	if account == "" || region == "" {
		return nil
	}
	return &awscdk.Environment{Account: jsii.String(account), Region: jsii.String(region)}
}
