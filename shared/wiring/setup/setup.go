// Package setup turns configuration into a ready set of agents: their
// provider chains, tools and workspaces. The agents are made by
// wiring/agentset, the one place where that happens, so an agent behaves
// the same wherever it runs; setup adds what only a process that runs the
// loop's steps needs: the providers' adapters (Provider, Providers) and
// the MCP servers' tools (MCP, UseMCP), and the heartbeats and
// check-in deliveries of the configuration. The composition roots
// (functions/lambdaclaw, shared/wiring/cloud) read the configuration,
// build the stores and decide which tools the environment can offer;
// setup and agentset do the rest. Tools, Quota and Workspaces are
// agentset's, under the names functions/lambdaclaw uses.
package setup

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/bedrock"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/openai"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/tools/webfetch"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentset"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// LoadAWS returns the AWS configuration Bedrock is called with: the SDK's
// default chain in the CLI (profiles, SSO), the Lambda environment's on
// AWS (EnvAWS). It is called only for a Bedrock provider.
type LoadAWS func(ctx context.Context) (aws.Config, error)

// EnvAWS is the Lambda functions' LoadAWS: the environment's
// configuration (awsapi.EnvConfig), without the SDK's default chain.
func EnvAWS(context.Context) (aws.Config, error) { return awsapi.EnvConfig(os.Getenv) }

// Provider builds the adapter of a configured provider: an
// OpenAI-compatible endpoint, or Bedrock Converse signed with the IAM
// credentials loadAWS returns (the Lambda role on AWS), which fetches
// the images given by URL through web_fetch's address rules (public
// addresses only). Its replies are cut at maxReply bytes
// (limits.max_reply_bytes).
func Provider(ctx context.Context, p config.Provider, maxReply int, loadAWS LoadAWS) (llm.Provider, error) {
	switch p.Type {
	case config.ProviderBedrock:
		images, err := webfetch.Client(&webfetch.Config{Timeout: 30 * time.Second})
		if err != nil {
			return nil, err
		}
		awsCfg, err := loadAWS(ctx)
		if err != nil {
			return nil, fmt.Errorf("loading AWS configuration: %w", err)
		}
		awsCfg.RetryMaxAttempts = 1 // Providers retries
		return bedrock.NewConverse(ctx, bedrock.ConverseConfig{
			Name: p.Name, Region: p.Region, Model: p.Model, Timeout: time.Duration(p.Timeout), Endpoint: p.BaseURL,
			MaxReplyBytes: maxReply, Input: input(p), Images: images, AWS: &awsCfg,
		})
	case config.ProviderOpenAI, "":
		return openai.New(openai.Config{
			Name: p.Name, BaseURL: p.BaseURL, APIKey: p.APIKey.Value(), Model: p.Model, Timeout: time.Duration(p.Timeout),
			MaxReplyBytes: maxReply, Input: input(p),
		})
	}
	return nil, fmt.Errorf("unknown provider type %q", p.Type)
}

// Transcriber builds the speech-to-text endpoint of the transcription
// section, or nil without one.
func Transcriber(cfg *config.Config) (*openai.Transcriber, error) {
	t := cfg.Transcription
	if t == nil {
		return nil, nil
	}
	return openai.NewTranscriber(openai.TranscribeConfig{Name: "transcription", BaseURL: t.BaseURL, APIKey: t.APIKey.Value(),
		Model: t.Model, Timeout: time.Duration(t.Timeout)})
}

// Media is what the messaging channels do with the files people send:
// the configured limits and transcription.
func Media(cfg *config.Config) (channel.Media, error) {
	m := channel.Media{Limits: cfg.Limits.Media.Chat()}
	t, err := Transcriber(cfg)
	if err != nil {
		return m, err
	}
	if t != nil {
		m.Transcriber = t
	}
	return m, nil
}

// input is the kinds of parts a configured model takes besides text;
// nil, the adapter's default, when the configuration lists none.
func input(p config.Provider) llm.Accepts {
	if len(p.Input) == 0 {
		return nil
	}
	out := llm.Accepts{}
	for _, k := range p.Input {
		if k != string(chat.PartText) {
			out = append(out, chat.PartType(k))
		}
	}
	return out
}

// NewBuilder builds the configured providers, each with retries and a
// circuit breaker, and checks that every agent of the configuration can be
// built from them and tools. Agents get workspaces in home, unless it is
// nil; UseMCP gives them the tools of MCP servers.
func NewBuilder(ctx context.Context, cfg *config.Config, home filestore.FS, tools []tool.Tool, loadAWS LoadAWS) (*agentset.Builder, error) {
	providers, err := Providers(ctx, cfg, loadAWS)
	if err != nil {
		return nil, err
	}
	return agentset.NewBuilder(cfg, home, tools, providers)
}

// Providers builds the adapters of the configured providers, by name,
// each with retries and a circuit breaker.
func Providers(ctx context.Context, cfg *config.Config, loadAWS LoadAWS) (map[string]llm.Provider, error) {
	providers := map[string]llm.Provider{}
	for _, p := range cfg.Providers {
		op, err := Provider(ctx, p, cfg.Limits.MaxReplyBytes, loadAWS)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", p.Name, err)
		}
		providers[p.Name] = llm.WithBreaker(llm.WithRetry(op, *p.Retries+1, 500*time.Millisecond, 10*time.Second), 5, 30*time.Second)
	}
	return providers, nil
}

// Heartbeats returns the agents' configured heartbeats as the schedule
// takes them (schedule.SyncHeartbeats), checked: their active hours, and
// a delivery target the deployment has, telegram:<chat id> when telegram
// (the Telegram channel) is on.
func Heartbeats(cfg *config.Config, telegram bool) (map[string]schedule.HeartbeatConfig, error) {
	out := map[string]schedule.HeartbeatConfig{}
	for name, a := range cfg.Agents {
		if a.Heartbeat == nil {
			continue
		}
		h := schedule.Heartbeat{ActiveHours: a.Heartbeat.ActiveHours, TZ: a.Heartbeat.TZ}
		if err := h.Validate(); err != nil {
			return nil, fmt.Errorf("config: agent %q: %w", name, err)
		}
		to, err := schedule.ParseTarget(a.Heartbeat.Deliver)
		if err != nil {
			return nil, fmt.Errorf("config: agent %q: heartbeat: deliver: %w", name, err)
		}
		if to.Kind == schedule.DeliverTelegram && !telegram {
			return nil, fmt.Errorf("config: agent %q: heartbeat: deliver %s needs the Telegram channel", name, to)
		}
		if to.Kind == schedule.DeliverWebhook || to.Kind == schedule.DeliverWS {
			return nil, fmt.Errorf("config: agent %q: heartbeat: deliver %s: heartbeats are delivered to telegram:<chat id> only", name, to)
		}
		out[name] = schedule.HeartbeatConfig{Every: time.Duration(a.Heartbeat.Every), Heartbeat: h, Deliver: to}
	}
	return out, nil
}
