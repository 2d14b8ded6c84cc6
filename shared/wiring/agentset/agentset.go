// Package agentset makes the agents of a configuration from the models
// it is given: each agent's provider chain, tools and workspace, and the
// set of agents served from the workspaces (Workspaces). It is the part of
// setup every composition root needs, and it links no model adapter and
// no MCP client: setup builds the providers and the MCP servers' tools
// and hands them over, where a process runs the loop's steps (the local
// server, the step and api functions); a Lambda function that only starts
// runs (ws, telegram, scheduler) makes its agents without them, for their
// names, workspaces and tools' policies.
package agentset

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

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

// LiveTools gives an agent configured ac a tool set that follows tools
// appearing and going while the process runs, over its fixed tools
// (agent.Agent.LiveTools): the MCP servers' (setup.UseMCP).
type LiveTools func(ac config.AgentConfig, fixed *tool.Registry) tool.Live

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
	// live adds the tools that come and go; nil without.
	live LiveTools
}

// NewBuilder checks that every agent of the configuration can be built
// from providers (the configured providers' adapters by name, none in a
// process that calls no model) and tools. Agents get workspaces in home,
// unless it is nil.
func NewBuilder(cfg *config.Config, home filestore.FS, tools []tool.Tool, providers map[string]llm.Provider) (*Builder, error) {
	b := &Builder{cfg: cfg, providers: providers, tools: tools, home: home}
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

// UseLiveTools makes the agents built from now on get live tools.
func (b *Builder) UseLiveTools(live LiveTools) { b.live = live }

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
	var extra []tool.Tool
	if len(ac.DelegateTo) > 0 {
		for _, to := range ac.DelegateTo {
			if err := workspace.ValidName(to); err != nil {
				return nil, fmt.Errorf("config: agent %q: delegate_to: %w", name, err)
			}
		}
		extra = append(extra, agent.NewDelegateTool(ac.DelegateTo))
	}
	tools, err := selectTools(b.tools, ac.Tools, extra...)
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
	if b.live != nil {
		a.LiveTools = b.live(ac, tools)
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
	return createWorkspaces(ctx, b.cfg, b.home, others...)
}

// CreateWorkspaces is Builder.CreateWorkspaces before there is a Builder,
// logging each workspace made: the local server makes the workspaces
// while it opens its database.
func CreateWorkspaces(ctx context.Context, cfg *config.Config, home filestore.FS, log *slog.Logger, others ...string) error {
	made, err := createWorkspaces(ctx, cfg, home, others...)
	for _, n := range made {
		log.Info("created the workspace of an agent", "agent", n, "workspace", workspace.Path(n))
	}
	return err
}

func createWorkspaces(ctx context.Context, cfg *config.Config, home filestore.FS, others ...string) ([]string, error) {
	if home == nil {
		return nil, nil
	}
	names := slices.Sorted(maps.Keys(cfg.Agents))
	for _, n := range others {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	var created []string
	for _, n := range names {
		made, err := workspace.Create(ctx, home, n)
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
// it lists none, and extra.
func selectTools(all []tool.Tool, names []string, extra ...tool.Tool) (*tool.Registry, error) {
	if len(names) == 0 {
		return tool.NewRegistry(slices.Concat(all, extra)...)
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
	return tool.NewRegistry(append(picked, extra...)...)
}
