package agent

import (
	"regexp"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

func TestGuard(t *testing.T) {
	g := &Guardrails{
		DenyTools: []string{"exec"},
		Filters: []Filter{
			{Tool: "echo", Pattern: regexp.MustCompile(`rm -rf`)},
			{Tool: "*", Pattern: regexp.MustCompile(`(?i)password`)},
		},
		Scopes: []Scope{
			{Tool: "web_fetch", Arg: "url", Hosts: []string{"example.com", "*.docs.example.org"}},
			{Tool: "read_file", Arg: "path", Prefixes: []string{"notes/"}},
		},
	}
	a := &Agent{Name: "a", Guardrails: g}
	for _, tt := range []struct {
		name, tool, args string
		key              *KeyRules
		rule             string
	}{
		{"allowed", "echo", `{"text":"hello"}`, nil, ""},
		{"denied tool", "exec", `{"command":"ls"}`, nil, "deny_tools"},
		{"denied by the key", "echo", `{"text":"hello"}`, &KeyRules{ID: "k", DenyTools: []string{"echo"}}, "key deny_tools"},
		{"filter", "echo", `{"text":"please rm -rf /"}`, nil, "filters.echo[0]"},
		// The filter reads the arguments with escapes resolved.
		{"filter through escapes", "echo", `{"text":"rm \u002drf /"}`, nil, "filters.echo[0]"},
		{"filter of another tool", "other", `{"text":"rm -rf /"}`, nil, ""},
		{"filter of every tool", "other", `{"x":"my PassWord"}`, nil, "filters.*[1]"},
		{"not JSON fails closed", "echo", `{"text":`, nil, "filters.echo[0]: arguments not a JSON object"},
		{"host listed", "web_fetch", `{"url":"https://example.com/a"}`, nil, ""},
		{"subdomain listed", "web_fetch", `{"url":"http://api.docs.example.org/x"}`, nil, ""},
		{"host not listed", "web_fetch", `{"url":"https://evil.com/?example.com"}`, nil, "scopes.web_fetch.url"},
		{"suffix is no subdomain", "web_fetch", `{"url":"https://notexample.com/"}`, nil, "scopes.web_fetch.url"},
		{"user info", "web_fetch", `{"url":"https://example.com@evil.com/"}`, nil, "scopes.web_fetch.url"},
		{"no scheme", "web_fetch", `{"url":"example.com"}`, nil, "scopes.web_fetch.url"},
		{"missing argument", "web_fetch", `{}`, nil, "scopes.web_fetch.url"},
		{"not a string", "web_fetch", `{"url":["https://example.com"]}`, nil, "scopes.web_fetch.url"},
		{"prefix", "read_file", `{"path":"notes/a.md"}`, nil, ""},
		{"outside the prefix", "read_file", `{"path":"secrets/a.md"}`, nil, "scopes.read_file.path"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rule, refusal := guard(a, RunState{Key: tt.key}, chat.ToolCall{Name: tt.tool, Arguments: tt.args})
			if rule != tt.rule {
				t.Errorf("rule = %q, want %q", rule, tt.rule)
			}
			if (refusal != "") != (tt.rule != "") || rule != "" && !strings.Contains(refusal, rule) {
				t.Errorf("refusal = %q for rule %q", refusal, rule)
			}
		})
	}
}

// A blocked call does not run: the model gets the refusal as the call's
// result, an event names the rule, and a person is not asked about it.
func TestGuardrailBlocksCall(t *testing.T) {
	f := newFixture(t, 5)
	f.echo.policy = tool.Policy{Effect: tool.External} // asked about at supervised
	f.loop.Agents.(Registry)["a"].Guardrails = &Guardrails{Filters: []Filter{{Tool: "echo", Pattern: regexp.MustCompile(`secret`)}}}
	ev := &events{}
	f.loop.Events = ev
	f.llm.script = append(f.llm.script, callTool("echo", `{"text":"the secret"}`), say("blocked"))
	st, err := f.loop.Enqueue(t.Context(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("go")},
		Autonomy: tool.Supervised, Interactive: true})
	if err != nil {
		t.Fatal(err)
	}
	st = f.runToEnd(t, st)
	if st.Failed() || f.echo.n != 0 {
		t.Fatalf("run failed (%s) or the tool ran (%d calls)", st.Error, f.echo.n)
	}
	if _, err := f.store.GetApproval(t.Context(), approvalID(RunState{RunID: st.RunID})); err == nil {
		t.Error("a blocked call was asked about")
	}
	h := f.history(t, "s")
	if len(h) != 4 || h[2].Role != chat.Tool || !strings.HasPrefix(h[2].Content, "refused by a guardrail (filters.echo[0])") {
		t.Fatalf("history = %+v, want the refusal as the tool's result", h)
	}
	// The model saw it.
	if got := f.llm.seen[1].Messages[2].Content; got != h[2].Content {
		t.Errorf("second request's tool result = %q", got)
	}
	var blocked []obs.Event
	for _, e := range ev.got {
		if e.Type == obs.ToolCallBlocked {
			blocked = append(blocked, e)
		}
	}
	if len(blocked) != 1 || attr(blocked[0], "rule") != "filters.echo[0]" || attr(blocked[0], "tool_name") != "echo" {
		t.Errorf("tool_call_blocked events = %+v, want one naming filters.echo[0]", blocked)
	}
}

// A tool the run's key denies is refused through the bridge too (a
// script's calls), whatever the autonomy.
func TestGuardrailKeyDeniesBridgeCall(t *testing.T) {
	f := newFixture(t, 5)
	sess := store.Session{ID: "s"}
	b := &bridge{l: f.loop, a: f.loop.Agents.(Registry)["a"], st: RunState{SessionID: "s", Autonomy: tool.Full,
		Key: &KeyRules{ID: "k", DenyTools: []string{"echo"}}}, sess: sess, from: "exec"}
	ev := &events{}
	f.loop.Events = ev
	_, err := b.Call(t.Context(), "echo", []byte(`{"text":"x"}`))
	if err == nil || !strings.Contains(err.Error(), "key deny_tools") || f.echo.n != 0 {
		t.Errorf("bridge call = %v with %d tool calls, want refused by the key", err, f.echo.n)
	}
	if len(ev.got) != 1 || ev.got[0].Type != obs.ToolCallBlocked {
		t.Errorf("events = %+v, want one tool_call_blocked", ev.got)
	}
}
