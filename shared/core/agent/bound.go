package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// ErrUnbounded is Bound's answer for a step whose longest duration is not
// known: its agent's provider declares no bound (llm.Bounded) and the
// loop has no MaxStep.
var ErrUnbounded = errors.New("the step's longest duration is not known")

// defaultToolTimeout bounds a tool call when neither the tool's policy
// nor Loop.ToolTimeout does.
const defaultToolTimeout = 60 * time.Second

// Bound returns the longest step st may take, known before it runs, from
// the settings the step itself runs with:
//
//   - think, and begin, which goes straight on to think: its model call
//     (the provider chain's bound with its retries and fallbacks,
//     llm.Bound; at most MaxStep);
//   - compact: the memory flush's model call and memory tool calls, and
//     the summary's model call (at most MaxStep);
//   - act: the longest of its tool calls' timeouts (toolTimeout), which
//     run in parallel;
//   - the other steps make no model or tool call: zero, which a driver
//     covers with a margin for the store and the reply channel.
//
// The steps hold to it: their model calls are cut at it (generate), their
// tool calls at their timeouts. The error is ErrUnbounded, or the store's.
func (l *Loop) Bound(ctx context.Context, st RunState) (time.Duration, error) {
	a, ok := l.Agents.Agent(st.Agent)
	if !ok {
		return 0, nil // the step fails at once
	}
	var d time.Duration
	switch st.Step {
	case StepBegin, StepThink:
		d, ok = l.modelBound(a)
	case StepCompact:
		d, _, ok = l.compactBound(a, st)
	case StepAct:
		return l.actBound(ctx, a, st)
	}
	if !ok {
		return 0, fmt.Errorf("run %s at %s: %w", st.RunID, st.Step, ErrUnbounded)
	}
	return d, nil
}

// modelBound is the longest one model call of a may take: its provider's
// bound, at most MaxStep; false when neither bounds it.
func (l *Loop) modelBound(a *Agent) (time.Duration, bool) {
	d, ok := llm.Bound(a.Provider)
	if l.MaxStep > 0 && (!ok || d > l.MaxStep) {
		return l.MaxStep, true
	}
	return d, ok
}

// generate makes a model call of a, cut at modelBound: a streamed reply
// too, which its provider bounds only between chunks.
//
// Every model call of a run is made here, held to the budgets of its
// agent and key: what it may spend is reserved before it is made, and
// what it spent replaces the reservation after (Budgets). A call the
// budgets have no room for is not made: the error is a
// *store.BudgetError.
func (l *Loop) generate(ctx context.Context, a *Agent, st RunState, req llm.Request, onDelta llm.OnDelta) (llm.Response, error) {
	r, err := l.reserve(ctx, a, st, &req)
	if err != nil {
		return llm.Response{}, err
	}
	if d, ok := l.modelBound(a); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	resp, err := a.Provider.Generate(ctx, req, onDelta)
	l.settle(ctx, st, r, resp.Usage)
	return resp, err
}

// compactBound is the longest a compaction of st's history may take, and
// the part of it the memory flush may take (zero without one): the
// flush's model call and the longest of its tools' timeouts, then the
// summary's model call; at most MaxStep. The flush's calls run one after
// another, so the flush is cut at its part.
func (l *Loop) compactBound(a *Agent, st RunState) (total, flush time.Duration, ok bool) {
	model, ok := l.modelBound(a)
	if !ok {
		return 0, 0, false
	}
	if a.Compaction.Flush {
		if defs := flushTools(a.Registry(), st.Autonomy); len(defs) > 0 {
			flush = model
			for _, d := range defs {
				if t, ok := a.Registry().Get(d.Name); ok {
					flush = max(flush, model+l.toolTimeout(t))
				}
			}
		}
	}
	total = flush + model
	if l.MaxStep > 0 {
		total = min(total, l.MaxStep)
	}
	return total, min(flush, total), true
}

// actBound is the longest timeout of the tool calls st's act step runs:
// they run in parallel.
func (l *Loop) actBound(ctx context.Context, a *Agent, st RunState) (time.Duration, error) {
	if len(st.Calls) == 0 {
		return 0, nil
	}
	am, err := l.Store.GetMessage(ctx, st.SessionID, assistantKey(st.Seq, st.Iteration))
	if err != nil {
		return 0, fmt.Errorf("bound of run %s at act: %w", st.RunID, err)
	}
	var d time.Duration
	for _, c := range am.ToolCalls {
		if !slices.Contains(st.Calls, c.ID) {
			continue
		}
		if t, ok := a.Registry().Get(c.Name); ok {
			d = max(d, l.toolTimeout(t))
		}
	}
	return d, nil
}

// toolTimeout is what bounds one call of t: its policy's timeout, or the
// loop's.
func (l *Loop) toolTimeout(t tool.Tool) time.Duration {
	return cmp.Or(t.Policy().Timeout, l.ToolTimeout, defaultToolTimeout)
}

// CheckFits says which of a's tools may take longer than MaxStep, when
// the loop has one: a call that a driver could not give the time it may
// take, which must be refused when the loop is set up rather than cut
// midway by the driver. Model calls are cut at MaxStep instead.
func (l *Loop) CheckFits(a *Agent) error {
	reg := a.Registry()
	if l.MaxStep <= 0 || reg == nil {
		return nil
	}
	var errs []error
	for _, d := range reg.Definitions() {
		t, _ := reg.Get(d.Name)
		if to := l.toolTimeout(t); to > l.MaxStep {
			errs = append(errs, fmt.Errorf("agent %s: a call of the tool %s may take %s, longer than a step may (%s)", a.Name, d.Name, to, l.MaxStep))
		}
	}
	return errors.Join(errs...)
}
