package main

import (
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentenv"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
	"github.com/lambdaclaw/lambdaclaw/tests/fakesearch"
)

// TestWebSearch runs a turn that searches the web in the step function,
// as on AWS: the provider from WEB_SEARCH_PROVIDER and WEB_SEARCH_URL,
// its key read from the Secrets Manager secret WEB_SEARCH_KEY_SECRET
// names when the model first searches, the results back to the model.
func TestWebSearch(t *testing.T) {
	const key = "BSA-step-key-0123456789abcdef"
	search := fakesearch.New(key)
	t.Cleanup(search.Close)
	search.SetResults(fakesearch.Result{Title: "Lambda limits", URL: "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html",
		Snippet: "Function timeout: 900 seconds (15 minutes)."})
	env := cloudtest.Setup(t)
	sm := cloudtest.NewSecrets(t, map[string]string{"Lambdaclaw/web-search-key": key})
	for k, v := range map[string]string{
		"SECRETSMANAGER_ENDPOINT": sm.URL, agentenv.WebSearchProviderVar: "brave",
		agentenv.WebSearchURLVar: search.URL + "/res/v1", agentenv.WebSearchKeyVar: "Lambdaclaw/web-search-key",
	} {
		t.Setenv(k, v)
	}
	h, err := handler(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if n := sm.Calls("Lambdaclaw/web-search-key"); n != 0 {
		t.Errorf("the key was read %d times before any search", n)
	}
	f := &fixture{env: env, handle: h, sender: env.Root(t, "ws")}
	ev, sample := event(t, "step.json")
	f.deliver(t, sample)
	env.LLM.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_s", Name: "web_search", Arguments: `{"query":"lambda max timeout","count":1}`}}},
		fakellm.Reply{Content: "15 minutes."},
	)
	st := f.step(t, ev)
	for st.Step != agent.StepDone {
		st = f.step(t, stepEvent(t, st))
	}
	if st.Failed() {
		t.Fatalf("run failed: %s", st.Error)
	}
	msgs, err := env.Store.Messages(t.Context(), sample.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	var result string
	for _, m := range msgs {
		if m.Role == chat.Tool && m.ToolCallID == "call_s" {
			result = m.Content
		}
	}
	if !strings.Contains(result, "1. Lambda limits") || !strings.Contains(result, "Function timeout: 900 seconds") {
		t.Errorf("web_search's result = %q", result)
	}
	reqs := search.Requests()
	if len(reqs) != 1 || reqs[0].Key != key || reqs[0].Count != 1 {
		t.Errorf("searches = %+v, want one with the secret's key and count 1", reqs)
	}
	if reqs := env.LLM.Requests(); len(reqs) != 2 || !strings.Contains(conversationText(reqs[1]), "Function timeout: 900 seconds") {
		t.Errorf("the model did not get the results")
	}
}

// conversationText is the text of a model request's messages.
func conversationText(r fakellm.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		b.WriteString(m.Content + "\n")
	}
	return b.String()
}
