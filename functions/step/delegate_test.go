package main

import (
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentenv"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// startTeam deploys boss, which may delegate to alpha and beta, with the
// model of fakellm.Team, beta hanging until hang is cleared, and sends
// boss "plan" in session sid, as the ws function does.
func startTeam(t *testing.T, sid string) (*inlineFixture, *atomic.Bool, agent.RunState) {
	env := cloudtest.Setup(t)
	agents, err := agentenv.Encode(map[string]config.AgentConfig{
		"boss": {DelegateTo: []string{"alpha", "beta"}}, "alpha": {}, "beta": {},
	}, []string{agentenv.ProviderOpenAI})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(agentenv.Var, agents)
	hang := &atomic.Bool{}
	hang.Store(true)
	env.LLM.SetDefault(fakellm.Team(hang))
	f := inlineFixtureOn(t, env)
	root, err := f.sender.Driver.Deliver(t.Context(), agent.Input{
		SessionID: sid, Agent: "boss", Owner: "key:key_sample", Messages: []chat.Message{{Role: chat.User, Content: "plan"}},
		Autonomy: tool.Supervised, Interactive: true, Reply: agent.Reply{Channel: "ws", To: "conn-" + sid},
	}, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	return f, hang, root
}

// TestInlineDelegationCrash: boss delegates to alpha and beta in one
// reply. Each child runs in an invocation of its own while the parent is
// handed to the state machine, parked as for an approval (no invocation
// waits for the children). alpha answers; beta's invocation dies in its
// model call, and Lambda's retry hands beta to the state machine, which
// finishes it. beta's end resumes the parent's execution, which answers
// with both results. Each child is one run: alpha's model is asked once.
func TestInlineDelegationCrash(t *testing.T) {
	f, hang, root := startTeam(t, "s-team")
	env, ctx := f.env, t.Context()
	var err error
	// alpha has answered while beta's model call hangs: both ran at once.
	var kids []agent.Child
	for deadline := time.Now().Add(20 * time.Second); ; {
		kids, err = agent.Children(ctx, env.Store, root.RunID)
		if err == nil && len(kids) == 2 && kids[0].Status == store.RunDone && env.LLM.Asked("task beta") == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("children %+v, %v; want alpha done and beta thinking", kids, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	hang.Store(false)
	env.Lambda.Kill() // beta's invocation dies; Lambda retries it
	env.Lambda.Wait()
	if x := env.SFN.Wait(root.RunID, 20*time.Second); x.Err != nil {
		t.Fatalf("the parent's execution: %v", x.Err)
	}
	f.runDone(t, root.RunID)
	if got := f.finals("s-team"); !slices.Equal(got, []string{"boss: alpha done + beta done"}) {
		t.Errorf("final frames %q; want the boss's answer with both results", got)
	}
	if n := env.LLM.Asked("task alpha"); n != 1 {
		t.Errorf("alpha's model was asked %d times; want once: a child that finished is not run again", n)
	}
	if n := env.LLM.Asked("task beta"); n != 2 {
		t.Errorf("beta's model was asked %d times; want twice: before its invocation died, and after", n)
	}
	kids, err = agent.Children(ctx, env.Store, root.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var tree []string
	for _, k := range kids {
		tree = append(tree, k.Agent+" "+string(k.Status))
		if k.Usage.TotalTokens == 0 {
			t.Errorf("child %s: no tokens counted", k.Agent)
		}
	}
	if want := []string{"alpha done", "beta done"}; !slices.Equal(tree, want) {
		t.Errorf("children %q, want %q", tree, want)
	}
	for _, sid := range []string{"s-team", kids[0].SessionID, kids[1].SessionID} {
		if !f.laneFree(t, sid) {
			t.Errorf("the lane of %s is still held", sid)
		}
	}
	if started := env.SFN.Started(); !slices.Contains(started, root.RunID) {
		t.Errorf("executions %q; want the parent's, parked while its children ran", started)
	}
}

// TestInlineDelegationStop: a user's stop of the parent (the channel's
// /stop, sfn.Driver.Stop), parked while beta thinks, ends the parent and
// its unfinished child as cancelled; nothing of the child runs after.
func TestInlineDelegationStop(t *testing.T) {
	f, hang, root := startTeam(t, "s-stop")
	env, ctx := f.env, t.Context()
	for deadline := time.Now().Add(20 * time.Second); ; {
		run, err := env.Store.GetRun(ctx, root.RunID)
		st, _ := agent.DecodeState(run)
		if err == nil && st.Parked() && env.LLM.Asked("task beta") == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the parent never parked with beta thinking")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if stopped, err := f.sender.Driver.Stop(ctx, "s-stop"); !stopped || err != nil {
		t.Fatalf("Stop = %v, %v", stopped, err)
	}
	kids, err := agent.Children(ctx, env.Store, root.RunID)
	if err != nil || len(kids) != 2 {
		t.Fatalf("children %+v, %v", kids, err)
	}
	if kids[1].Agent != "beta" || kids[1].Status != store.RunFailed || !strings.Contains(kids[1].Error, "stopped") {
		t.Errorf("beta's run: %+v; want it ended as stopped", kids[1])
	}
	hang.Store(false)
	env.Lambda.Kill() // the hanging invocation ends; its retry finds the run ended
	env.Lambda.Wait()
	run, err := env.Store.GetRun(ctx, root.RunID)
	if st, _ := agent.DecodeState(run); err != nil || st.ErrorCode != agent.CodeCancelled {
		t.Errorf("the parent: %+v, %v; want it cancelled", st, err)
	}
	if n := env.LLM.Asked("task beta"); n != 1 {
		t.Errorf("beta's model was asked %d times; want once, before the stop", n)
	}
	if got := f.finals("s-stop"); len(got) != 0 {
		t.Errorf("final frames %q; a stopped run tells nothing", got)
	}
}
