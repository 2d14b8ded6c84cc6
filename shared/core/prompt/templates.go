package prompt

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/skill"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
)

// Templates is the agent.Prompter of an AWS deployment without a file
// store for workspaces (cloud.Options.Files): the system prompt of a new agent's
// workspace whose first-run ritual is done, assembled from the default
// templates (workspace.Template) in the order and format of
// workspace.SystemPrompt, without BOOTSTRAP.md, whose ritual needs the
// workspace tools; then the section listing the eligible skills of Skills
// (the bundled ones). It is safe for concurrent use.
type Templates struct {
	// Skills, when set, adds the skills section.
	Skills *skill.Catalog
	// Env decides which skills are eligible; the zero value is the
	// function's machine.
	Env skill.Env

	mu    sync.Mutex
	files map[string][]chat.Message // by agent name
}

var _ agent.Prompter = (*Templates)(nil)

// SystemPrompt implements agent.Prompter; its prompt never has the
// first-run ritual.
func (p *Templates) SystemPrompt(ctx context.Context, a *agent.Agent, _ bool) ([]chat.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	msgs, err := p.templates(a.Name)
	if err != nil {
		return nil, err
	}
	if p.Skills != nil {
		all, _ := p.Skills.For(ctx, a.Name, nil)
		eligible, _ := skill.Filter(all, p.Env)
		if m, ok := skill.Section(eligible); ok {
			msgs = append(msgs, m)
		}
	}
	return msgs, nil
}

// templates returns the workspace part of agent name's prompt, a copy the
// caller may modify.
func (p *Templates) templates(name string) ([]chat.Message, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if msgs, ok := p.files[name]; ok {
		return append([]chat.Message(nil), msgs...), nil
	}
	var msgs []chat.Message
	for _, f := range workspace.Files() {
		if f == workspace.BootstrapFile {
			continue
		}
		text, err := workspace.Template(f, name)
		if err != nil {
			return nil, fmt.Errorf("prompt: agent %s: %w", name, err)
		}
		if text = strings.TrimSpace(text); text != "" {
			msgs = append(msgs, chat.Message{Role: chat.System, Content: fmt.Sprintf("## %s\n\n%s", f, text)})
		}
	}
	if len(msgs) == 0 {
		msgs = []chat.Message{{Role: chat.System, Content: workspace.Fallback}}
	}
	if p.files == nil {
		p.files = map[string][]chat.Message{}
	}
	p.files[name] = msgs
	return append([]chat.Message(nil), msgs...), nil
}
