// Package setup turns configuration into a ready set of agents: their
// provider chains, tools and workspaces. It is the one place where that
// happens: the local server and every Lambda function build their agents
// with it, so an agent behaves the same wherever it runs. The composition
// roots (functions/lambdaclaw, shared/wiring/cloud) read the configuration, build
// the stores and decide which tools the environment can offer; setup does
// the rest.
package setup

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/bedrock"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/mcp"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/openai"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/webhook"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/skill"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
	"github.com/lambdaclaw/lambdaclaw/shared/tools/files"
	"github.com/lambdaclaw/lambdaclaw/shared/tools/scheduletool"
	"github.com/lambdaclaw/lambdaclaw/shared/tools/webfetch"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// Provider builds the adapter of a configured provider: an
// OpenAI-compatible endpoint, or Bedrock Converse signed with the IAM
// credentials of the environment (the Lambda role on AWS). Its replies are
// cut at maxReply bytes (limits.max_reply_bytes).
func Provider(ctx context.Context, p config.Provider, maxReply int) (llm.Provider, error) {
	switch p.Type {
	case config.ProviderBedrock:
		return bedrock.NewConverse(ctx, bedrock.ConverseConfig{
			Name: p.Name, Region: p.Region, Model: p.Model, Timeout: time.Duration(p.Timeout), Endpoint: p.BaseURL,
			MaxReplyBytes: maxReply,
		})
	case config.ProviderOpenAI, "":
		return openai.New(openai.Config{
			Name: p.Name, BaseURL: p.BaseURL, APIKey: p.APIKey.Value(), Model: p.Model, Timeout: time.Duration(p.Timeout),
			MaxReplyBytes: maxReply,
		})
	}
	return nil, fmt.Errorf("unknown provider type %q", p.Type)
}

// Tools returns the built-in tools: web_fetch and load_skill everywhere;
// schedule where there is a schedule engine (jobs not nil: locally always,
// on AWS once its engine exists), within limits.max_jobs_per_owner; and,
// where agents have workspaces (quota not nil, from Quota), read_file,
// write_file, list_dir and workspace_memory, within quota.
func Tools(cfg *config.Config, skills *skill.Catalog, quota *workspace.Quota, jobs schedule.Engine) ([]tool.Tool, error) {
	nets, err := cfg.Outbound.Networks()
	if err != nil {
		return nil, err
	}
	fetch, err := webfetch.New(webfetch.Config{Allow: webfetch.AllowNetworks(nets)})
	if err != nil {
		return nil, err
	}
	tools := []tool.Tool{fetch, skill.LoadTool(skills, skill.Env{})}
	if jobs != nil {
		reminders, err := scheduletool.New(scheduletool.Config{Engine: jobs, MaxJobsPerOwner: cfg.Limits.MaxJobsPerOwner})
		if err != nil {
			return nil, err
		}
		tools = append(tools, reminders)
	}
	if quota == nil {
		return tools, nil
	}
	return append(tools, files.ReadFile(), files.WriteFile(quota), files.ListDir(), workspace.MemoryTool(quota)), nil
}

// Quota is the configured workspace quota (limits.max_file_bytes and
// workspace_quota_bytes), which the file tools and exec share.
func Quota(cfg *config.Config) (*workspace.Quota, error) {
	quota, err := workspace.NewQuota(workspace.Limits{MaxFileBytes: cfg.Limits.MaxFileBytes, WorkspaceQuotaBytes: cfg.Limits.WorkspaceQuotaBytes})
	if err != nil {
		return nil, fmt.Errorf("config: limits: %w", err)
	}
	return quota, nil
}

// Builder makes the agents of a configuration: each with the provider
// chain and the tools its config selects, and its workspace,
// agents/<name>/ of the home file store, when there is one. Locally the
// home is the data directory (adapters/osroot); on AWS a prefix of the
// stack's bucket.
type Builder struct {
	cfg       *config.Config
	providers map[string]llm.Provider
	tools     []tool.Tool
	// home holds the workspaces; nil when agents have none.
	home filestore.FS
	// mcp holds the MCP servers (mcp.go); nil without.
	mcp *mcp.Registry
}

// NewBuilder builds the configured providers, each with retries and a
// circuit breaker, and checks that every agent of the configuration can be
// built from them and tools. Agents get workspaces in home, unless it is
// nil.
func NewBuilder(ctx context.Context, cfg *config.Config, home filestore.FS, tools []tool.Tool) (*Builder, error) {
	b := &Builder{cfg: cfg, providers: map[string]llm.Provider{}, tools: tools, home: home}
	for _, p := range cfg.Providers {
		op, err := Provider(ctx, p, cfg.Limits.MaxReplyBytes)
		if err != nil {
			return nil, fmt.Errorf("provider %s: %w", p.Name, err)
		}
		b.providers[p.Name] = llm.WithBreaker(llm.WithRetry(op, *p.Retries+1, 500*time.Millisecond, 10*time.Second), 5, 30*time.Second)
	}
	for n := range cfg.Agents {
		if err := workspace.ValidName(n); err != nil {
			return nil, fmt.Errorf("config: agent %q: %w", n, err)
		}
		if _, err := b.Build(n); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Build makes the agent name: its configuration's, or the defaults for an
// agent the configuration does not name.
func (b *Builder) Build(name string) (*agent.Agent, error) {
	ac := b.cfg.Agents[name]
	var chain []llm.Provider
	if len(ac.Providers) == 0 {
		for _, p := range b.cfg.Providers {
			chain = append(chain, b.providers[p.Name])
		}
	} else {
		for _, p := range ac.Providers {
			chain = append(chain, b.providers[p])
		}
	}
	tools, err := selectTools(b.tools, ac.Tools)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", name, err)
	}
	threshold, target, flush := ac.Compaction()
	a := &agent.Agent{
		Name: name, Provider: llm.NewChain(chain...), Model: ac.Model, Tools: tools,
		MaxToolIterations: ac.MaxToolIterations,
		ReplaceSystem:     ac.ClientSystem == "replace",
		Compaction:        agent.Compaction{Threshold: threshold, Target: target, Flush: flush},
	}
	if b.mcp != nil {
		a.LiveTools = b.mcp.Toolset(tools, mcpFilter(ac))
	}
	if b.home != nil {
		ws, err := workspace.Of(b.home, name)
		if err != nil {
			return nil, fmt.Errorf("agent %s: %w", name, err)
		}
		a.Workspace = ws
	}
	return a, nil
}

// CreateWorkspaces creates the workspaces of the agents the configuration
// names (and of the others named) that have none yet, from the templates
// (workspace.Create), and returns their names.
func (b *Builder) CreateWorkspaces(ctx context.Context, others ...string) ([]string, error) {
	if b.home == nil {
		return nil, nil
	}
	names := slices.Sorted(maps.Keys(b.cfg.Agents))
	for _, n := range others {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	var created []string
	for _, n := range names {
		made, err := workspace.Create(ctx, b.home, n)
		if err != nil {
			return created, err
		}
		if made {
			created = append(created, n)
		}
	}
	return created, nil
}

// selectTools returns the tools of all that names lists, all of them when
// it lists none.
func selectTools(all []tool.Tool, names []string) (*tool.Registry, error) {
	if len(names) == 0 {
		return tool.NewRegistry(all...)
	}
	byName := map[string]tool.Tool{}
	for _, t := range all {
		byName[t.Definition().Name] = t
	}
	var picked []tool.Tool
	for _, n := range names {
		t, ok := byName[n]
		if !ok {
			known := make([]string, 0, len(all))
			for _, t := range all {
				known = append(known, t.Definition().Name)
			}
			return nil, fmt.Errorf("unknown tool %q (known: %s)", n, strings.Join(known, ", "))
		}
		picked = append(picked, t)
	}
	return tool.NewRegistry(picked...)
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

// JobEngine is a schedule engine that also reads any owner's job by id.
type JobEngine interface {
	schedule.Engine
	Job(ctx context.Context, id string) (schedule.Job, error)
}

// CheckIns returns the replier of check-in runs of jobs, with the
// deliveries every deployment has: webhooks, through web_fetch's address
// rules and cfg's outbound networks. Channels add theirs (Telegram).
func CheckIns(cfg *config.Config, jobs JobEngine, log *slog.Logger) (*schedule.Replier, error) {
	nets, err := cfg.Outbound.Networks()
	if err != nil {
		return nil, err
	}
	client, err := webfetch.Client(&webfetch.Config{Allow: webfetch.AllowNetworks(nets), Timeout: 20 * time.Second})
	if err != nil {
		return nil, err
	}
	return &schedule.Replier{Engine: jobs, Jobs: jobs.Job, Log: log,
		Deliver: map[string]schedule.Delivery{schedule.DeliverWebhook: webhook.Delivery(client)}}, nil
}
