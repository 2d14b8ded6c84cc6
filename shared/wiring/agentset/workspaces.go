package agentset

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/skill"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
)

// agentRecheck is how long the server trusts what it knows of an agent
// before it looks at the workspaces directory again, so that a deleted
// workspace stops being served.
const agentRecheck = time.Second

// Workspaces is a set of agents kept in step with a home file store: one
// agent per workspace under agents/, including the workspaces created and
// deleted while the server runs (`lambdaclaw agent create|delete`, or a
// push to the stack's bucket). The local server and the AWS functions
// serve it.
//
// Looking up an agent it knows costs no call to the store: what it knows
// is trusted for the recheck interval. A name it does not know costs one
// Stat of that workspace, and a scan of agents/ when the workspace exists;
// a listing (GET /v1/models) always scans. It implements agent.Agents for
// the loop and Has, Names and Created for the gateway.
type Workspaces struct {
	home    filestore.FS
	created func(name string) (time.Time, error)
	build   func(name string) (*agent.Agent, error)
	recheck time.Duration
	now     func() time.Time
	log     *slog.Logger

	mu  sync.Mutex // held while scanning
	set atomic.Pointer[agentSet]
	// begun counts the scans begun.
	begun atomic.Uint64
}

// agentSet is what one scan found. It is never modified.
type agentSet struct {
	agents agent.Registry
	names  []string // sorted
	// created holds when each agent's workspace was created.
	created map[string]time.Time
	// gen numbers the scan; at is when it began.
	gen uint64
	at  time.Time
}

// Live makes the agents of the configuration served from the workspaces
// of b's home, the same way locally and on AWS: it creates from the
// templates the workspaces missing of the agents the configuration names
// and of the agents always (the default agent), logging each one made,
// then serves one agent per workspace of the home, live (Workspaces).
// created is as for NewWorkspaces.
func (b *Builder) Live(ctx context.Context, created func(name string) (time.Time, error), log *slog.Logger, always ...string) (*Workspaces, error) {
	if b.home == nil {
		return nil, errors.New("agentset: agents need a home for their workspaces")
	}
	if err := CreateWorkspaces(ctx, b.cfg, b.home, log, always...); err != nil {
		return nil, err
	}
	return NewWorkspaces(b.home, b.Build, created, log)
}

// NewWorkspaces scans the workspaces in home, making each agent with build
// (Builder.Build); an agent that cannot be built is an error. created,
// when set, tells when an agent's workspace was created (locally the
// directory's birth, workspace.Created).
func NewWorkspaces(home filestore.FS, build func(string) (*agent.Agent, error), created func(name string) (time.Time, error), log *slog.Logger) (*Workspaces, error) {
	r := &Workspaces{home: home, created: created, build: build, recheck: agentRecheck, now: time.Now, log: log}
	r.set.Store(&agentSet{agents: agent.Registry{}})
	if _, err := r.scan(); err != nil {
		return nil, err
	}
	return r, nil
}

// SetRecheck sets how long what r knows of an agent is trusted (a second
// unless set), before r serves anything. On AWS a listing of the bucket
// costs more than a file read: the functions look less often.
func (r *Workspaces) SetRecheck(d time.Duration) { r.recheck = d }

// SetClock makes r read the time from now, before r serves anything.
func (r *Workspaces) SetClock(now func() time.Time) { r.now = now }

// Agent implements agent.Agents.
func (r *Workspaces) Agent(name string) (*agent.Agent, bool) {
	since := r.begun.Load()
	s := r.set.Load()
	a, known := s.agents[name]
	if known && r.now().Sub(s.at) < r.recheck {
		return a, true
	}
	if !known {
		if workspace.ValidName(name) != nil {
			return nil, false
		}
		// A link the operator made (err not ErrNotExist) is for the scan
		// to judge.
		e, err := r.home.Stat(context.Background(), workspace.Path(name))
		if errors.Is(err, fs.ErrNotExist) || (err == nil && !e.IsDir()) {
			return nil, false
		}
	}
	a, ok := r.refresh(since).agents[name]
	return a, ok
}

// Has reports whether name is an agent.
func (r *Workspaces) Has(name string) bool {
	_, ok := r.Agent(name)
	return ok
}

// Names lists the agents the workspaces directory holds now, sorted.
func (r *Workspaces) Names() []string {
	return slices.Clone(r.refresh(r.begun.Load()).names)
}

// Created returns when the workspace of agent name was created, as found
// when the agent was first scanned; the zero time for an agent it does
// not know or without the created function.
func (r *Workspaces) Created(name string) time.Time {
	return r.set.Load().created[name]
}

// Current returns the agents as last scanned.
func (r *Workspaces) Current() agent.Registry { return r.set.Load().agents }

// refresh returns the agents as found by a scan begun after the first
// since scans: it scans unless another caller's scan did begin after them.
// When the scan fails, what was known stays and the failure is logged.
func (r *Workspaces) refresh(since uint64) *agentSet {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur := r.set.Load(); cur.gen > since {
		return cur
	}
	s, err := r.scan()
	if err != nil {
		r.log.Warn("agents rescanned with errors", "error", err)
	}
	return s
}

// scan lists the workspaces, keeps the agents it knew and builds the new
// ones, and stores the result. An agent that cannot be built is left out
// and reported in the error; a failure to list keeps the agents known.
// The caller holds mu (or has the only reference to r).
func (r *Workspaces) scan() (*agentSet, error) {
	gen, at := r.begun.Add(1), r.now()
	old := r.set.Load()
	names, err := workspace.List(context.Background(), r.home)
	if err != nil {
		s := &agentSet{agents: old.agents, names: old.names, created: old.created, gen: gen, at: at}
		r.set.Store(s)
		return s, err
	}
	s := &agentSet{agents: make(agent.Registry, len(names)), names: make([]string, 0, len(names)), created: make(map[string]time.Time, len(names)), gen: gen, at: at}
	var errs []error
	for _, n := range names {
		a, ok := old.agents[n]
		created := old.created[n]
		if !ok {
			if a, err = r.build(n); err != nil {
				errs = append(errs, fmt.Errorf("agent %s: %w", n, err))
				continue
			}
			if r.created != nil {
				if created, err = r.created(n); err != nil {
					// Deleted since it was listed: the next scan drops it.
					r.log.Warn("agent workspace creation time unknown", "agent", n, "error", err)
				}
			}
			if old.gen > 0 {
				r.log.Info("agent added", "agent", n)
			}
		}
		s.agents[n] = a
		s.names = append(s.names, n)
		s.created[n] = created
	}
	for n := range old.agents {
		if _, ok := s.agents[n]; !ok {
			r.log.Info("agent removed", "agent", n)
		}
	}
	slices.Sort(s.names)
	r.set.Store(s)
	return s, errors.Join(errs...)
}

// WorkspaceOf returns a function that gives an agent's workspace, as the
// web console asks for it (console.Config.Workspace).
func WorkspaceOf(r *Workspaces) func(name string) (filestore.FS, bool) {
	return func(name string) (filestore.FS, bool) {
		a, ok := r.Agent(name)
		if !ok || a.Workspace == nil {
			return nil, false
		}
		return a.Workspace, true
	}
}

// SkillsOf returns the skills of an agent by name, for what describes it
// (the A2A agent card): its workspace's and the catalog's.
func SkillsOf(r *Workspaces, c *skill.Catalog) func(ctx context.Context, name string) []skill.Skill {
	ws := WorkspaceOf(r)
	return func(ctx context.Context, name string) []skill.Skill {
		fs, _ := ws(name)
		list, _ := c.For(ctx, name, fs)
		return list
	}
}

// ToolOf returns a function that gives an agent's tool by name, as the
// web console asks for it (console.Config.Tool).
func ToolOf(r *Workspaces) func(agent, name string) (tool.Tool, bool) {
	return func(agent, name string) (tool.Tool, bool) {
		a, ok := r.Agent(agent)
		if !ok {
			return nil, false
		}
		return a.Registry().Get(name)
	}
}
