package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/dynamo"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
)

// Administering a deployed stack. The commands that take --stack NAME
// operate on the CloudFormation stack `make deploy` created, with the
// caller's AWS credentials (the SDK's default chain: AWS_PROFILE, the
// AWS_ACCESS_KEY_ID variables, SSO, an instance role) in the Region of
// --region or the SDK's (AWS_REGION, the profile). What the stack holds —
// its table, its agents, its Telegram secrets — is found through the
// stack's outputs (infra/stack.go declares them), so nothing but the
// stack's name has to be known.
//
// Why --stack NAME and not --aws: one account and Region can hold several
// deployments (a test and a production stack, say), and the stack name is
// what tells them apart; the credentials and the Region already have their
// standard places, which a bare --aws would add nothing to.

// Stack outputs the commands read (infra/stack.go, builder.outputs).
const (
	outTable         = "TableName"
	outAgents        = "Agents"
	outTelegramURL   = "TelegramWebhookUrl"
	outBotToken      = "TelegramBotTokenSecretArn"
	outWebhookSecret = "TelegramWebhookSecretArn"
)

// Endpoint overrides of the AWS services the commands call, for tests
// against local engines and fakes (DYNAMODB_ENDPOINT and
// SECRETSMANAGER_ENDPOINT as in the Lambda functions).
const (
	envCloudFormationEndpoint = "CLOUDFORMATION_ENDPOINT"
	envDynamoDBEndpoint       = "DYNAMODB_ENDPOINT"
	envSecretsEndpoint        = "SECRETSMANAGER_ENDPOINT"
)

// stackFlags are the --stack and --region flags of a command.
type stackFlags struct {
	name, region *string
}

// withStack adds --stack and --region.
func (f *cmdFlags) withStack() *stackFlags {
	return &stackFlags{
		name:   f.String("stack", "", "operate on the deployed CloudFormation stack `NAME` (\"make deploy\" names it Lambdaclaw)\nwith your AWS credentials, instead of the local server"),
		region: f.String("region", "", "the AWS `REGION` of --stack (default: AWS_REGION or your profile's)"),
	}
}

// remote reports whether --stack was given.
func (s *stackFlags) remote() bool { return *s.name != "" }

// check refuses --region without --stack, and --config with it: the
// config file is the local server's.
func (s *stackFlags) check(f *cmdFlags) error {
	switch {
	case *s.region != "" && !s.remote():
		return errors.New("--region applies to --stack: name the stack too")
	case s.remote() && f.isSet("config"):
		return errors.New("--config is the local server's configuration; --stack reads everything from the deployed stack")
	}
	return nil
}

// stackAPI is the CloudFormation call open makes.
type stackAPI interface {
	DescribeStacks(ctx context.Context, name string) ([]awsapi.Stack, error)
}

// deployment is a deployed stack: its outputs, and the AWS configuration
// (credentials, Region) that reaches its resources.
type deployment struct {
	name, status string
	outputs      map[string]string
	aws          aws.Config
}

// open loads the AWS configuration and reads the outputs of the stack
// --stack names.
func (s *stackFlags) open(ctx context.Context) (*deployment, error) {
	awsCfg, err := loadAWS(ctx, *s.region)
	if err != nil {
		return nil, err
	}
	client, err := awsapi.NewCloudFormation(awsCfg, getenv(envCloudFormationEndpoint))
	if err != nil {
		return nil, err
	}
	return describeStack(ctx, client, *s.name, awsCfg)
}

// sdkAWS is the CLI's setup.LoadAWS, also of its Bedrock embedder: the
// SDK's default configuration (the environment, the shared config files'
// profiles, SSO, an instance's role), whose credentials are retrieved
// when a call is signed.
func sdkAWS(ctx context.Context) (aws.Config, error) { return awsconfig.LoadDefaultConfig(ctx) }

// loadAWS loads the SDK's default configuration, in region when it is
// not empty, and checks that it names a Region and finds credentials.
func loadAWS(ctx context.Context, region string) (aws.Config, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if region != "" {
		opts = append(opts, awsconfig.WithRegion(region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, errors.New("no AWS Region: pass --region or set AWS_REGION")
	}
	if cfg.Credentials == nil {
		return aws.Config{}, errors.New("no AWS credentials")
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return aws.Config{}, fmt.Errorf("no AWS credentials (set AWS_PROFILE, run `aws sso login` or `aws configure`, or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY): %w", err)
	}
	return cfg, nil
}

// describeStack reads the stack's outputs; an unknown stack is an error
// that says where it was looked for.
func describeStack(ctx context.Context, api stackAPI, name string, awsCfg aws.Config) (*deployment, error) {
	stacks, err := api.DescribeStacks(ctx, name)
	if e, ok := errors.AsType[*awsapi.Error](err); ok && e.Code == "ValidationError" && strings.Contains(e.Message, "does not exist") {
		return nil, fmt.Errorf("no stack %q in %s: check the name (`make deploy` names it Lambdaclaw) and the Region (--region, AWS_REGION)", name, awsCfg.Region)
	}
	if err != nil {
		return nil, fmt.Errorf("stack %q in %s: %w", name, awsCfg.Region, err)
	}
	if len(stacks) != 1 {
		return nil, fmt.Errorf("stack %q in %s: CloudFormation described %d stacks, want 1", name, awsCfg.Region, len(stacks))
	}
	st := stacks[0]
	d := &deployment{name: name, status: st.StackStatus, outputs: map[string]string{}, aws: awsCfg}
	for _, o := range st.Outputs {
		d.outputs[o.OutputKey] = o.OutputValue
	}
	return d, nil
}

// need checks that the stack has the outputs keys.
func (d *deployment) need(keys ...string) error {
	var missing []string
	for _, k := range keys {
		if d.outputs[k] == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("stack %q (%s) has no output %s: is it a lambdaclaw stack, deployed completely by this version? `make deploy` updates it",
		d.name, d.status, strings.Join(missing, ", "))
}

// where names the stack for messages: its name and Region.
func (d *deployment) where() string { return fmt.Sprintf("stack %s (%s)", d.name, d.aws.Region) }

// store opens the stack's table.
func (d *deployment) store(ctx context.Context) (*dynamo.Store, error) {
	if err := d.need(outTable); err != nil {
		return nil, err
	}
	client := dynamodb.NewFromConfig(d.aws, getenv(envDynamoDBEndpoint))
	db, err := dynamo.New(ctx, dynamo.Config{Table: d.outputs[outTable], Client: client})
	if err == nil {
		err = db.Check(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.where(), err)
	}
	return db, nil
}

// agents lists the agents the stack's functions serve, sorted: those its
// functions are configured with (output Agents) and every workspace in its
// bucket, as the functions serve them (agentset.Builder.Live).
func (d *deployment) agents(ctx context.Context) ([]string, error) {
	if err := d.need(outAgents); err != nil {
		return nil, err
	}
	files, err := d.files()
	if err != nil {
		return nil, err
	}
	names, err := workspace.List(ctx, files)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.where(), err)
	}
	for n := range strings.SplitSeq(d.outputs[outAgents], ",") {
		n = strings.TrimSpace(n)
		if err := workspace.ValidName(n); err != nil {
			return nil, fmt.Errorf("stack %q: output %s: %w", d.name, outAgents, err)
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// telegram reports whether the stack has the Telegram webhook
// (telegram=on).
func (d *deployment) telegram() bool { return d.outputs[outTelegramURL] != "" }

// secret reads a Secrets Manager secret of the stack, by ARN or name.
func (d *deployment) secret(ctx context.Context, id string) (string, error) {
	client, err := awsapi.NewSecretsManager(d.aws, getenv(envSecretsEndpoint))
	if err != nil {
		return "", err
	}
	v, err := client.SecretString(ctx, id)
	if err != nil {
		return "", fmt.Errorf("read secret %s: %w", id, err)
	}
	v = strings.TrimSpace(v)
	if v == "" {
		return "", fmt.Errorf("secret %s is empty", id)
	}
	return v, nil
}

// secretName returns the name in a secret's partial ARN, as the stack's
// TelegramBotTokenSecretArn holds it (an import by name): Secrets
// Manager resolves the name always, the partial ARN not when the name
// ends in "-" and six characters.
func secretName(arn string) string {
	if _, name, ok := strings.Cut(arn, ":secret:"); ok {
		return name
	}
	return arn
}
