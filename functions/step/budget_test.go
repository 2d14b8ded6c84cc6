package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentenv"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// TestInlineBudget: the step function holds runs to their agent's token
// budget (AGENTS_CONFIG), counted in the table through the function's
// grants: once it has no room, a run ends budget_exhausted before its
// model call.
func TestInlineBudget(t *testing.T) {
	env := cloudtest.Setup(t)
	const limit = 8000
	agents, err := agentenv.Encode(map[string]config.AgentConfig{"default": {Budget: &config.AgentBudget{DailyTokens: limit}}},
		[]string{agentenv.ProviderOpenAI})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(agentenv.Var, agents)
	t.Setenv("BUDGET_REPLY_CAP", "300")
	f := inlineFixtureOn(t, env)
	// Every reply uses its whole cap.
	f.env.LLM.SetDefault(func(fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: strings.Repeat("word ", 10_000)} })
	var ends []string
	for i := range 8 {
		st := f.deliver(t, fmt.Sprintf("s-budget-%d", i), "hi")
		f.env.Lambda.Wait()
		run, err := f.env.Store.GetRun(t.Context(), st.RunID)
		if err != nil || !run.Status.Finished() {
			t.Fatalf("run %d: %+v, %v; want finished", i, run.Status, err)
		}
		saved, err := agent.DecodeState(run)
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, saved.ErrorCode)
	}
	answered := 0
	for answered < len(ends) && ends[answered] == "" {
		answered++
	}
	for _, e := range ends[answered:] {
		if e != agent.CodeBudgetExhausted {
			t.Fatalf("runs ended %q: want answers, then budget_exhausted", ends)
		}
	}
	if answered == 0 || answered == len(ends) {
		t.Fatalf("runs ended %q: want some answered and the rest refused", ends)
	}
	if n := len(f.env.LLM.Requests()); n != answered {
		t.Errorf("%d model calls for %d answers: a refused run calls no model", n, answered)
	}
	rem, err := f.step.Loop.Budgets.Of(t.Context(), "default", agent.Budget{Daily: limit}, nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(rem) != 1 || rem[0].Spent == 0 || rem[0].Spent > limit {
		t.Errorf("budget = %+v, want some of %d spent and no more", rem, limit)
	}
}
