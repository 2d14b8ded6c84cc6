package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// bridge is the tool.Caller a tool call gets (tool.Env.Tools): a script in
// a sandbox calls the agent's tools through it. Each call is judged by the
// same policy as the model's (judge), runs through callTool (its events,
// time limit, scrubbing and size limit) and is evented in the run. What
// would need a person's approval is refused: a script cannot wait for one,
// so under autonomy supervised it may use only the tools that run without
// asking (and those the session always allows); under full, every tool. The
// calling tool itself is never offered, so a script cannot start another
// sandbox.
type bridge struct {
	l    *Loop
	a    *Agent
	st   RunState
	sess store.Session
	from string
	n    atomic.Int64
}

// Tools describes the tools a script may call.
func (b *bridge) Tools() []chat.ToolDef {
	var out []chat.ToolDef
	reg := b.a.Registry()
	if reg == nil {
		return nil
	}
	for _, d := range offered(reg, b.st.Autonomy) {
		t, _ := reg.Get(d.Name)
		if tool.Judge(t.Policy().Least(), b.st.Autonomy) == allow && d.Name != b.from {
			out = append(out, d)
		}
	}
	return out
}

// Call runs one tool for a script.
func (b *bridge) Call(ctx context.Context, name string, args json.RawMessage) (string, error) {
	if name == b.from {
		return "", fmt.Errorf("refused: %s cannot be called from inside %s", name, b.from)
	}
	c := chat.ToolCall{ID: fmt.Sprintf("bridge-%s-%d", b.from, b.n.Add(1)), Name: name, Arguments: string(args)}
	if refusal := b.l.blocked(b.a, b.st, c); refusal != "" {
		return "", errors.New(refusal)
	}
	st := b.st
	st.Interactive = true // a script never asks, whoever could be asked
	switch v, reason := judge(b.a, st, b.sess, c); v {
	case deny:
		return "", errors.New(reason)
	case ask:
		return "", fmt.Errorf("refused: %s needs a person's approval, which a script cannot ask for; call it directly instead of from a script", name)
	}
	// A script's calls are not marked started: the call that runs the
	// script is, and is not run again.
	return b.l.callTool(ctx, b.a, b.st, b.sess, c, scrub.Scrub(c.Arguments), "", nil)
}
