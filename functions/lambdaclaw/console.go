package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/console"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/skill"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentset"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/channelset"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// newConsole builds the web console of the local server: everything it
// shows is in the database, the agents' workspaces and memory; /metrics
// is served.
func newConsole(cfg *config.Config, db *sqlite.DB, agents *agentset.Workspaces, skills *skill.Catalog, jobs console.Jobs, mem *localMemory,
	files console.Media, budgets *agent.Budgets, log *slog.Logger) (*console.Console, error) {
	c := console.Config{
		Sessions: db, Keys: db, Jobs: jobs, Operator: localOwner, Channels: channelset.Names, Agents: agents.Names, Metrics: true, Media: files,
		DefaultRate: cfg.DefaultRatePerMinute, Log: log,
		Workspace: agentset.WorkspaceOf(agents), Tool: agentset.ToolOf(agents),
		Skills: func(ctx context.Context, agent string, ws filestore.FS) []skill.Skill {
			list, _ := skills.For(ctx, agent, ws)
			return list
		},
	}
	if mem.mem != nil {
		c.Memory = mem.mem
	}
	c.Budgets = func(ctx context.Context, k store.APIKey, names []string) ([]agent.Remaining, error) {
		return budgets.Report(ctx, agents, k, names, time.Now())
	}
	return console.New(c)
}
