// Package prompt assembles the system messages that open every model
// request (seed 004, "System prompt assembly"): the agent's workspace files
// followed by the list of skills it can load. Both deployments use it as
// their agent.Prompter.
package prompt

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/core/skill"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
)

// Builder is the agent.Prompter of lambdaclaw. Its system prompt is the
// workspace's messages (bootstrap files in the seed's order, then
// yesterday's and today's daily logs, or the fallback message) followed by
// the skills section listing the skills eligible for the agent. Both parts
// are cached and re-read only when their files change. A Builder is safe
// for concurrent use; its fields must not change once it is in use.
type Builder struct {
	// Skills finds the agents' skills; nil means no skills section.
	Skills *skill.Catalog
	// Env decides which skills are eligible.
	Env skill.Env
	// Now returns the time that picks the daily logs; nil means time.Now.
	Now func() time.Time
	// Refresh is how long an assembled prompt is reused before its files
	// are looked at again; zero looks at them on every call. Changes made
	// by an agent's own tools are seen at once (see Stale).
	Refresh time.Duration
	// Warn, when set, is told of each workspace file left out of an
	// agent's prompt because it cannot be read (a link leaving the
	// workspace, a device, a directory), once each time the prompt is
	// assembled anew; the turn goes on without it.
	Warn func(agent string, err error)

	cache workspace.PromptCache

	mu        sync.Mutex
	assembled map[string]assembled // by agent name
}

// assembled is a whole system prompt, as built at a time for a day.
type assembled struct {
	msgs []chat.Message
	day  string
	at   time.Time
}

// EventWarn is a Warn that emits each skipped file as an
// obs.PromptFileSkipped event.
func EventWarn(emit func(obs.Event)) func(agent string, err error) {
	return func(agent string, err error) {
		emit(obs.Event{Type: obs.PromptFileSkipped, Attrs: []slog.Attr{slog.String("agent", agent), slog.String("error", scrub.Scrub(err.Error()))}})
	}
}

// DefaultRefresh is the Refresh of New: edits to workspace files and
// skills made outside the agent's tools show within a second, and a busy
// agent does not look at its files on every turn.
const DefaultRefresh = time.Second

var _ agent.Prompter = (*Builder)(nil)

// New returns a Builder listing the skills of c that are eligible in env.
func New(c *skill.Catalog, env skill.Env) *Builder {
	return &Builder{Skills: c, Env: env, Refresh: DefaultRefresh}
}

// Stale drops the assembled prompt of agent a, whose tools may just have
// changed its files: the next SystemPrompt looks at them again, and at the
// agent's own skills (skill.Catalog.Stale).
func (b *Builder) Stale(a *agent.Agent) {
	b.mu.Lock()
	delete(b.assembled, a.Name)
	b.mu.Unlock()
	if b.Skills != nil {
		b.Skills.Stale(a.Name)
	}
}

// SystemPrompt returns the system messages for agent a, whose workspace is
// a.Workspace; for a stateless request without BOOTSTRAP.md, the first-run
// ritual. Broken SKILL.md files are left out, not errors: the catalog
// reports them through its Warn function.
func (b *Builder) SystemPrompt(ctx context.Context, a *agent.Agent, stateless bool) ([]chat.Message, error) {
	msgs, err := b.systemPrompt(ctx, a)
	if stateless {
		msgs = workspace.WithoutBootstrap(msgs)
	}
	return msgs, err
}

func (b *Builder) systemPrompt(ctx context.Context, a *agent.Agent) ([]chat.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	now := time.Now
	if b.Now != nil {
		now = b.Now
	}
	t := now()
	day := t.Format(time.DateOnly)
	if b.Refresh > 0 {
		b.mu.Lock()
		p, ok := b.assembled[a.Name]
		b.mu.Unlock()
		if ok && p.day == day && t.Sub(p.at) < b.Refresh {
			return slices.Clone(p.msgs), nil
		}
	}
	msgs, skipped, err := b.cache.SystemPrompt(ctx, a.Name, a.Workspace, t)
	if err != nil {
		return nil, fmt.Errorf("prompt: agent %s: %w", a.Name, err)
	}
	if b.Warn != nil {
		for _, err := range skipped {
			b.Warn(a.Name, err)
		}
	}
	if b.Skills != nil {
		all, _ := b.Skills.For(ctx, a.Name, a.Workspace)
		eligible, _ := skill.Filter(all, b.Env)
		if m, ok := skill.Section(eligible); ok {
			msgs = append(msgs, m)
		}
	}
	if b.Refresh > 0 {
		b.mu.Lock()
		if b.assembled == nil {
			b.assembled = map[string]assembled{}
		}
		b.assembled[a.Name] = assembled{msgs: slices.Clone(msgs), day: day, at: t}
		b.mu.Unlock()
	}
	return msgs, nil
}
