package mcp

import (
	"path"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// Filter is an agent's share of the MCP tools.
type Filter struct {
	// Servers names the servers whose tools the agent gets; nil: all.
	Servers []string
	// Allow, when set, keeps only the tools whose names (<server>__<tool>)
	// match one of its patterns (path.Match); Deny then drops those
	// matching one of its patterns.
	Allow, Deny []string
}

// keeps reports whether the filter keeps the tool named name.
func (f Filter) keeps(name string) bool {
	match := func(patterns []string) bool {
		return slices.ContainsFunc(patterns, func(p string) bool { ok, _ := path.Match(p, name); return ok })
	}
	return (len(f.Allow) == 0 || match(f.Allow)) && !match(f.Deny)
}

// Toolset is an agent's tools: its fixed tools and the current tools of
// the MCP servers its filter selects. It implements tool.Live: the loop
// resolves it at every step, so the agent follows servers that start,
// crash and change their tools. Its first use starts the servers that
// were not started yet (the lazy start) and waits for them at most the
// registry's StartTimeout; later uses never wait.
type Toolset struct {
	reg     *Registry
	fixed   *tool.Registry
	servers []string
	filter  Filter
	ensured atomic.Bool
	mu      sync.Mutex
	snap    atomic.Pointer[snapshot]
}

type snapshot struct {
	gen uint64
	reg *tool.Registry
}

// Toolset returns the tools of an agent with the fixed tools and the MCP
// tools f selects.
func (r *Registry) Toolset(fixed *tool.Registry, f Filter) *Toolset {
	servers := f.Servers
	if servers == nil {
		servers = r.Names()
	}
	return &Toolset{reg: r, fixed: fixed, servers: servers, filter: f}
}

// Current implements tool.Live.
func (t *Toolset) Current() *tool.Registry {
	if !t.ensured.Load() {
		t.reg.Ensure(t.servers...)
		t.ensured.Store(true)
	}
	gen := t.reg.gen.Load()
	if s := t.snap.Load(); s != nil && s.gen == gen {
		return s.reg
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.snap.Load(); s != nil && s.gen == gen {
		return s.reg
	}
	reg := t.build()
	t.snap.Store(&snapshot{gen: gen, reg: reg})
	return reg
}

// build makes the registry of the fixed tools and the current MCP tools.
// An MCP tool named like a fixed one, or like another server's, is left
// out and logged.
func (t *Toolset) build() *tool.Registry {
	var all []tool.Tool
	names := map[string]bool{}
	if t.fixed != nil {
		for _, d := range t.fixed.Definitions() {
			ft, _ := t.fixed.Get(d.Name)
			all = append(all, ft)
			names[d.Name] = true
		}
	}
	for _, sn := range t.servers {
		s, ok := t.reg.servers[sn]
		if !ok {
			continue
		}
		for _, mt := range s.current() {
			name := mt.def.Name
			switch {
			case !t.filter.keeps(name):
				continue
			case names[name]:
				t.reg.cfg.Log.Warn("MCP tool left out: another tool has its name", "mcp_server", sn, "tool", name)
				continue
			}
			names[name] = true
			all = append(all, mt)
		}
	}
	reg, err := tool.NewRegistry(all...)
	if err != nil { // cannot happen: the names are unique
		return t.fixed
	}
	return reg
}
