package awsapi

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// EnvConfig is the AWS configuration a Lambda function's environment
// gives, read as the SDK's default chain reads it there, without the
// chain's other sources (shared config files, SSO, STS, IMDS, container
// credentials: some 500 KB of each bootstrap): the Region of AWS_REGION
// (else AWS_DEFAULT_REGION); the credentials of AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, which Lambda sets from
// the function's role, none when they are unset (a call then fails); the
// endpoint of AWS_ENDPOINT_URL; the attempts of AWS_MAX_ATTEMPTS; and
// the SDK's HTTP client. Processes elsewhere (the CLI, the Fargate
// sandbox) load the SDK's default chain instead.
func EnvConfig(getenv func(string) string) (aws.Config, error) {
	cfg := aws.Config{Region: getenv("AWS_REGION"), HTTPClient: awshttp.NewBuildableClient()}
	if cfg.Region == "" {
		cfg.Region = getenv("AWS_DEFAULT_REGION")
	}
	id, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	switch {
	case id != "" && secret != "":
		cfg.Credentials = credentials.StaticCredentialsProvider{Value: aws.Credentials{
			AccessKeyID: id, SecretAccessKey: secret, SessionToken: getenv("AWS_SESSION_TOKEN"), Source: "EnvConfigCredentials"}}
	case id != "" || secret != "":
		return aws.Config{}, errors.New("aws config: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY go together: set both or neither")
	}
	if v := getenv("AWS_ENDPOINT_URL"); v != "" {
		cfg.BaseEndpoint = aws.String(v)
	}
	if v := getenv("AWS_MAX_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return aws.Config{}, fmt.Errorf("aws config: AWS_MAX_ATTEMPTS=%q is not a positive number", v)
		}
		cfg.RetryMaxAttempts = n
	}
	return cfg, nil
}
