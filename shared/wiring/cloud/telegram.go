package cloud

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/telegram"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/wsproto"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// Telegram on AWS. The channel exists in a function whose environment
// names a bot token (TELEGRAM_BOT_TOKEN_SECRET_ARN, or TELEGRAM_BOT_TOKEN
// itself): the telegram function takes webhook updates with it, and the
// step function's Router sends the replies of runs on the "tg" channel
// with it. It is serverless (telegram.Config.Serverless): replies go to
// the outbox in DynamoDB and are sent before the step or webhook
// invocation returns; what fails is retried by the next invocation of
// either (there is no timer of its own).
//
//	TELEGRAM_BOT_TOKEN_SECRET_ARN  Secrets Manager secret (ARN or name) holding the bot token, or
//	TELEGRAM_BOT_TOKEN             the token itself
//	TELEGRAM_API_BASE              Bot API base URL (default https://api.telegram.org)
//	TELEGRAM_AGENT                 the agent that answers (default "default")
//	TELEGRAM_AUTONOMY              autonomy of Telegram runs (default supervised)
//	TELEGRAM_ALLOWED_USERS         comma-separated Telegram user ids let in
//	TELEGRAM_ACCESS_CODES          comma-separated one-time access codes
//	SECRETSMANAGER_ENDPOINT        Secrets Manager endpoint override (tests)

// newTelegram adds the Telegram channel to r and its route to router when
// the environment names a bot token.
func (r *Root) newTelegram(ctx context.Context, getenv func(string) string, router agent.Router) error {
	token := getenv("TELEGRAM_BOT_TOKEN")
	if arn := getenv("TELEGRAM_BOT_TOKEN_SECRET_ARN"); token == "" && arn != "" {
		var err error
		if token, err = r.Secret(ctx, arn); err != nil {
			return fmt.Errorf("cloud: telegram bot token: %w", err)
		}
	}
	if token == "" {
		return nil
	}
	autonomy := tool.Supervised
	if v := getenv("TELEGRAM_AUTONOMY"); v != "" {
		a, err := tool.ParseAutonomy(v)
		if err != nil {
			return fmt.Errorf("cloud: TELEGRAM_AUTONOMY: %w", err)
		}
		autonomy = a
	}
	var users []int64
	for v := range strings.SplitSeq(getenv("TELEGRAM_ALLOWED_USERS"), ",") {
		if v = strings.TrimSpace(v); v == "" {
			continue
		}
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("cloud: TELEGRAM_ALLOWED_USERS: %q is not a user id", v)
		}
		users = append(users, id)
	}
	var codes []string
	for v := range strings.SplitSeq(getenv("TELEGRAM_ACCESS_CODES"), ",") {
		if v = strings.TrimSpace(v); v != "" {
			if len(v) < 8 {
				return fmt.Errorf("cloud: TELEGRAM_ACCESS_CODES: a code is shorter than 8 characters")
			}
			codes = append(codes, v)
		}
	}
	name := getenv("TELEGRAM_AGENT")
	if name == "" {
		name = wsproto.DefaultAgent
	}
	ch, err := telegram.New(telegram.Config{
		Client: telegram.NewClient(getenv("TELEGRAM_API_BASE"), token), Store: r.Store.Channel(telegram.ChannelName), Runner: r.Driver,
		Agent: name, Identity: r.Identity, Autonomy: autonomy, AllowedUsers: users, AccessCodes: codes,
		Log: r.Log, Serverless: true,
	})
	if err != nil {
		return fmt.Errorf("cloud: %w", err)
	}
	r.Telegram = ch
	router[telegram.ChannelName] = ch
	return nil
}

// secrets reads Secrets Manager values once per container.
type secrets struct {
	client *awsapi.SecretsManager
	mu     sync.Mutex
	cache  map[string]string
}

func newSecrets(awsCfg aws.Config, endpoint string) (*secrets, error) {
	client, err := awsapi.NewSecretsManager(awsCfg, endpoint)
	if err != nil {
		return nil, err
	}
	return &secrets{cache: map[string]string{}, client: client}, nil
}

// Secret returns the value of the secret arn, read from Secrets Manager on
// first use and cached for the container's life; a failed read is not
// cached.
func (r *Root) Secret(ctx context.Context, arn string) (string, error) {
	return r.secrets.get(ctx, arn)
}

// get returns the value of the secret id (an ARN or a name), cached once
// read; a failed read or an empty value is not cached, so that a value
// the operator puts later is read then.
func (s *secrets) get(ctx context.Context, id string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.cache[id]; ok {
		return v, nil
	}
	v, err := s.client.SecretString(ctx, id)
	if err != nil {
		return "", fmt.Errorf("read secret: %w", err)
	}
	v = strings.TrimSpace(v)
	if v != "" {
		s.cache[id] = v
	}
	return v, nil
}
