package console_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// delegating answers a delegate call to helper first, then "done"; helper
// answers "helped".
type delegating struct{ agent string }

func (d delegating) Name() string { return "fake" }

func (d delegating) Generate(_ context.Context, req llm.Request, _ llm.OnDelta) (llm.Response, error) {
	usage := chat.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}
	last := req.Messages[len(req.Messages)-1]
	switch {
	case d.agent == "helper":
		return llm.Response{Message: chat.Message{Role: chat.Assistant, Content: "helped"}, Usage: usage}, nil
	case last.Role == chat.Tool:
		return llm.Response{Message: chat.Message{Role: chat.Assistant, Content: "done"}, Usage: usage}, nil
	}
	return llm.Response{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{
		{ID: "d1", Name: agent.DelegateToolName, Arguments: `{"agent":"helper","message":"help"}`}}}, Usage: usage}, nil
}

// TestRunTree: a run of the key's session that delegated shows the tree
// of runs, each with its tokens; another key's request is not found.
func TestRunTree(t *testing.T) {
	f := newFixture(t)
	tools, err := tool.NewRegistry(agent.NewDelegateTool([]string{"helper"}))
	if err != nil {
		t.Fatal(err)
	}
	loop := &agent.Loop{Store: f.db, Agents: agent.Registry{
		"main":   {Name: "main", Provider: delegating{"main"}, Tools: tools},
		"helper": {Name: "helper", Provider: delegating{"helper"}},
	}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	d := agent.NewDriver(ctx, loop, slog.New(slog.DiscardHandler))
	loop.Lanes = d
	st, err := d.Start(ctx, agent.Input{RunID: "boss-run", SessionID: "s-team", Agent: "main", Owner: "key:key_a",
		Messages: []chat.Message{{Role: chat.User, Content: "go"}}, Autonomy: tool.Supervised})
	if err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := d.Idle(wctx); err != nil {
		t.Fatal(err)
	}
	code, got := f.do(t, keyA, http.MethodGet, "/v1/lambdaclaw/sessions/s-team/runs/"+st.RunID, "")
	if code != http.StatusOK {
		t.Fatalf("status %d: %v", code, got)
	}
	kids, err := agent.Children(ctx, f.db, st.RunID)
	if err != nil || len(kids) != 1 {
		t.Fatalf("children %+v, %v", kids, err)
	}
	want := js(t, `{"run":{"run_id":"boss-run","session_id":"s-team","agent":"main","call_id":"","status":"done",
		"usage":{"prompt_tokens":20,"completion_tokens":4,"total_tokens":24},
		"children":[{"run_id":"`+kids[0].RunID+`","session_id":"`+kids[0].SessionID+`","agent":"helper","call_id":"d1","status":"done",
			"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}]}}`)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run tree (-want +got):\n%s", diff)
	}
	// The child's session is the key's too: its transcript opens.
	if code, _ := f.do(t, keyA, http.MethodGet, "/v1/lambdaclaw/sessions/"+kids[0].SessionID, ""); code != http.StatusOK {
		t.Errorf("the child's session: status %d", code)
	}
	for _, path := range []string{"/v1/lambdaclaw/sessions/s-team/runs/" + st.RunID, "/v1/lambdaclaw/sessions/sa/runs/" + st.RunID} {
		k := keyB
		if path != "/v1/lambdaclaw/sessions/s-team/runs/"+st.RunID {
			k = keyA // a's own session, another session's run
		}
		if code, got := f.do(t, k, http.MethodGet, path, ""); code != http.StatusNotFound {
			t.Errorf("GET %s as %s: status %d (%v), want 404", path, k.ID, code, got)
		}
	}
}
