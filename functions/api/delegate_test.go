package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentenv"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// TestDelegatedApproval: a stateful completion of boss, which delegates
// to writer, whose write_file needs a person's approval. The request is
// answered with writer's approval prompt, asked as boss's; the caller's
// /yes in boss's conversation resumes writer, whose end resumes boss, and
// that request gets boss's answer. Nothing waits in a Lambda meanwhile:
// both runs park in their executions.
func TestDelegatedApproval(t *testing.T) {
	env := cloudtest.Setup(t)
	agents, err := agentenv.Encode(map[string]config.AgentConfig{"boss": {DelegateTo: []string{"writer"}}, "writer": {}},
		[]string{agentenv.ProviderOpenAI})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(agentenv.Var, agents)
	env.LLM.SetDefault(func(req fakellm.Request) fakellm.Reply {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == "tool" && last.ToolCallID == "call_write":
			return fakellm.Reply{Content: "notes written: " + last.Content}
		case last.Role == "tool" && last.ToolCallID == "call_delegate":
			return fakellm.Reply{Content: "boss: " + last.Content}
		case req.LastUser() == "write the notes":
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_write", Name: "write_file", Arguments: `{"path":"notes.txt","content":"hi"}`}}}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_delegate", Name: "delegate", Arguments: `{"agent":"writer","message":"write the notes"}`}}}
	})
	env.PlayStep(t)
	h, err := handler(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	ev := sample(t, "chat-completions-session.json")
	ev.Body = `{"model":"boss","messages":[{"role":"user","content":"get the notes written"}]}`
	resp, body := invoke(t, h, ev)
	got := decode(t, body).Choices
	if resp.StatusCode != http.StatusOK || len(got) != 1 || !strings.Contains(got[0].Message.Content, "write_file") {
		t.Fatalf("first answer: %d %s; want writer's approval prompt", resp.StatusCode, body)
	}
	ev.Body = `{"model":"boss","messages":[{"role":"user","content":"/yes"}]}`
	resp, body = invoke(t, h, ev)
	got = decode(t, body).Choices
	if resp.StatusCode != http.StatusOK || len(got) != 1 || !strings.HasPrefix(got[0].Message.Content, "boss: notes written: ") {
		t.Fatalf("answer after /yes: %d %s; want boss's, with writer's", resp.StatusCode, body)
	}
	for _, name := range env.SFN.Started() {
		if e := env.SFN.Wait(name, 10*time.Second); e.Err != nil {
			t.Errorf("execution %s: %v", name, e.Err)
		}
	}
	if n := len(env.SFN.Started()); n != 2 {
		t.Errorf("executions %q; want boss's and writer's", env.SFN.Started())
	}
}
