// Package turns adds to the AWS composition root (package cloud) what a
// Lambda function needs to run the loop's steps in its process: the
// models (setup.Providers: Bedrock and the OpenAI-compatible provider),
// the embedding model, the search of memories in OpenSearch, the MCP
// servers' tools, the delivery of check-ins' answers and the agents'
// heartbeats, and the api function's handler (API). The step function
// builds its root with it (and fargate.Exec, its sandbox), and the api
// function for its stateless turns; the functions that only start runs
// (ws, telegram, scheduler) use cloud.New and link none of it.
package turns

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/bedrock"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentenv"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentset"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/search"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/setup"
)

// New builds the root of a function that runs the loop's steps: cloud's
// with the models, the embedding model, memory search and the MCP
// servers, and the exec tool exec makes (fargate.Exec; nil for none).
func New(ctx context.Context, exec cloud.Exec) (*cloud.Root, error) {
	r, err := cloud.NewWith(ctx, cloud.Turns{Providers: providers, Embedder: newEmbedder, Search: newSearch, MCP: useMCP, Exec: exec})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// providers builds the configured providers with the Lambda
// environment's AWS configuration (setup.EnvAWS).
func providers(ctx context.Context, cfg *config.Config) (map[string]llm.Provider, error) {
	return setup.Providers(ctx, cfg, setup.EnvAWS)
}

// newEmbedder returns the Titan embedder BEDROCK_EMBED_MODEL names, at
// EMBED_DIMENSIONS, or nil when it is not set. Agent memory and the api
// function's POST /v1/embeddings share it.
func newEmbedder(ctx context.Context, getenv func(string) string) (memory.RequestEmbedder, error) {
	model := getenv("BEDROCK_EMBED_MODEL")
	if model == "" {
		return nil, nil
	}
	dims, err := search.Dimensions(getenv)
	if err != nil {
		return nil, err
	}
	region := getenv("BEDROCK_REGION")
	if region == "" {
		region = getenv("AWS_REGION")
	}
	e, err := bedrock.NewEmbedder(ctx, bedrock.EmbedConfig{Region: region, ModelID: model, Dimensions: dims, BaseEndpoint: getenv("BEDROCK_ENDPOINT")})
	if err != nil {
		return nil, fmt.Errorf("cloud: %w", err)
	}
	return e, nil
}

// newSearch is the OpenSearch index of OPENSEARCH_ENDPOINT
// (search.NewIndex), nil without.
func newSearch(ctx context.Context, getenv func(string) string) (memory.Index, error) {
	x, err := search.NewIndex(ctx, getenv)
	if x == nil || err != nil {
		return nil, err
	}
	return x, nil
}

// useMCP gives the agents b builds the tools of the MCP servers of cfg
// (MCP_CONFIG) and, in a function that calls models, starts them when
// the configuration says eager; lazy servers start with the first run
// that needs them.
func useMCP(b *agentset.Builder, cfg *config.Config, secret func(context.Context, string) (string, error), getenv func(string) string, log *slog.Logger) error {
	servers, err := setup.MCP(cfg.MCP, mcpGetenv(secret, getenv, log), log)
	if err != nil || servers == nil {
		return err
	}
	setup.UseMCP(b, servers)
	if cfg.MCP.Eager() && len(cfg.Providers) > 0 {
		servers.Start()
	}
	return nil
}

// secretReadTimeout bounds the read of one header secret.
const secretReadTimeout = 10 * time.Second

// mcpGetenv returns the Getenv of the MCP servers: a variable that
// MCP_SECRET_<name> names a secret for is that secret's value, read when
// a server first starts and cached for the container's life (a failed
// read is not cached, so a server's restart reads again); any other is
// getenv's. A secret that cannot be read is logged (its name, never a
// value) and is unset: the server that needs it fails to start, and the
// others go on.
func mcpGetenv(secret func(context.Context, string) (string, error), getenv func(string) string, log *slog.Logger) func(string) string {
	return func(name string) string {
		id := getenv(agentenv.MCPSecretPrefix + name)
		if id == "" {
			return getenv(name)
		}
		ctx, cancel := context.WithTimeout(context.Background(), secretReadTimeout)
		defer cancel()
		v, err := secret(ctx, id)
		if err != nil {
			log.Warn("MCP header secret unreadable: set its value with aws secretsmanager put-secret-value",
				"var", name, "secret", id, "err", err)
			return ""
		}
		if v == "" {
			log.Warn("MCP header secret is empty: set its value with aws secretsmanager put-secret-value", "var", name, "secret", id)
		}
		return v
	}
}

// SyncHeartbeats makes the agents' heartbeats' jobs follow their settings
// (AGENTS_CONFIG): a job and its schedule for each heartbeat, changed
// where a setting changed, deleted where the heartbeat is gone. The step
// function, which may make schedules, calls it when it starts; it is
// idempotent, and two instances starting at once make one job (the
// second's create is refused as taken, and its next start finds the job).
func SyncHeartbeats(ctx context.Context, r *cloud.Root) error {
	beats, err := setup.Heartbeats(r.Config, r.Telegram != nil)
	if err != nil {
		return fmt.Errorf("cloud: %w", err)
	}
	if err := schedule.SyncHeartbeats(ctx, r.Schedule, beats); err != nil {
		return fmt.Errorf("cloud: %w", err)
	}
	return nil
}
