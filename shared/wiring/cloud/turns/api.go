package turns

import (
	"context"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/apigw"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sfn"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/a2a"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/console"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/mcpserver"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/skill"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentset"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// API returns the http.Handler of the api function: the gateway of the
// local server, with the Step Functions runner (sfn.Runner). Inline runs
// live as long as the function's instance.
func API(r *cloud.Root) (http.Handler, error) {
	// Inline runs are stateless: they record nothing, and this function
	// leaves the recording of what the state machine's runs queued to the
	// step function (sfn.Driver), rather than start a worker for it here.
	inline := *r.Loop
	inline.Recorder = nil
	inline.Lanes = nil // a stateless run delegates nothing
	lanes := agent.NewDriver(context.Background(), &inline, r.Log)
	runner := &sfn.Runner{
		Inline:  lanes,
		Durable: r.Driver,
		Hub:     r.Hub,
		Drafts:  r.Store,
		Log:     r.Log,
	}
	// /mcp is stateless: the next request of a client may reach another
	// instance, which holds no MCP session.
	mcpSrv, err := mcpserver.New(mcpserver.Config{
		Runner: runner, Events: r.Hub, Sessions: r.Store, Agents: r.Agents, Names: r.AgentNames,
		Identity: r.Identity, Stateless: true, Log: r.Log,
	})
	if err != nil {
		return nil, err
	}
	a2aSrv, err := a2a.New(a2a.Config{
		Runner: runner, Events: r.Hub, Outcomes: r.Loop, Stopper: r.Driver, HasAgent: r.Agents.Has, Names: r.AgentNames,
		DefaultAgent: config.DefaultAgent, Identity: r.Identity, Skills: agentset.SkillsOf(r.Agents, r.Skills),
		BaseURL: apigw.BaseURL, Log: r.Log,
	})
	if err != nil {
		return nil, err
	}
	cons, err := newConsole(r)
	if err != nil {
		return nil, err
	}
	h, err := gateway.New(gateway.Config{
		Console: cons,
		Runner:  runner, Events: r.Hub, Keys: r.Store, Runs: r.Store, Limiter: r.Limiter,
		Agents: r.AgentNames, HasAgent: r.Agents.Has, Identity: r.Identity, Log: r.Log, Embedder: r.Embedder,
		Responses: r.Store, Threads: r.Loop, MCP: mcpSrv, A2A: a2aSrv,
		// The agents are the deployment's: created with its table.
		Created: func(string) time.Time { return r.Store.Created() },
	})
	if err != nil {
		return nil, err
	}
	return flushedHTTP(r, h, lanes), nil
}

// flushedHTTP returns h, the api function's handler, flushing the events
// of the request before it returns: the response ends then, not before
// (apigw.Stream). A stateless run answers before its last step commits
// and emits turn_complete: its lane, one of lanes, is waited for first.
func flushedHTTP(r *cloud.Root, h http.Handler, lanes *agent.Driver) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h.ServeHTTP(w, req)
		ctx, cancel := context.WithTimeout(req.Context(), cloud.FlushTime)
		defer cancel()
		if err := lanes.Idle(ctx); err != nil {
			r.Log.Warn("inline runs still running as the request ends", "err", err)
		}
		r.Flush(ctx)
	})
}

// newConsole is the web console of the api function: the same as the
// local server's, over the table, the bucket and the scheduler; metrics
// are in CloudWatch, not at /metrics.
func newConsole(r *cloud.Root) (*console.Console, error) {
	c := console.Config{
		Sessions: r.Store, Keys: r.Store, Jobs: r.Schedule, Operator: schedule.OperatorOwner, Agents: r.AgentNames,
		DefaultRate: config.DefaultKeyRate, Log: r.Log,
		// The WebSocket API's management endpoint (https://…/stage) is
		// also its clients' URL, with wss://.
		WebSocketURL: wsURL(os.Getenv("WS_ENDPOINT")),
		Workspace:    agentset.WorkspaceOf(r.Agents),
		Tool:         agentset.ToolOf(r.Agents),
		Skills: func(ctx context.Context, agent string, ws filestore.FS) []skill.Skill {
			list, _ := r.Skills.For(ctx, agent, ws)
			return list
		},
	}
	if r.Memory != nil {
		c.Memory = r.Memory
	}
	return console.New(c)
}

// wsURL is the client URL of the WebSocket API whose management
// endpoint is ep; "" for none.
func wsURL(ep string) string {
	if rest, ok := strings.CutPrefix(ep, "https://"); ok {
		return "wss://" + rest
	}
	return ""
}
