package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/pii"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// piiScript stands for exec running a script that passes a token the
// model gave it to a tool through the bridge.
type piiScript struct{}

func (piiScript) Definition() chat.ToolDef {
	return chat.ToolDef{Name: "script", Description: "runs a script", Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (piiScript) Policy() tool.Policy { return tool.Policy{Effect: tool.WriteOwn} }
func (piiScript) Call(ctx context.Context, env tool.Env, args json.RawMessage) (string, error) {
	var in struct{ To string }
	if err := json.Unmarshal(args, &in); err != nil {
		return "", err
	}
	out, err := env.Tools.Call(ctx, "echo", json.RawMessage(`{"text":"sent to `+in.To+`"}`))
	return "script: " + out, err
}

// piiFixture is the fixture with agent a tokenizing, its tools echo and
// the script.
func piiFixture(t *testing.T) *fixture {
	f := newFixture(t, 5)
	reg, err := tool.NewRegistry(f.echo, piiScript{})
	if err != nil {
		t.Fatal(err)
	}
	f.loop.Agents = Registry{"a": {Name: "a", Provider: f.llm, Tools: reg, MaxToolIterations: 5, PII: &pii.Scanner{}}}
	return f
}

// The model sees tokens; the script gets the token's value through the
// bridge, the tool the value; the script's result, which shows it, goes
// back to the model as the token; the owner's answer has the value.
func TestPIIThroughBridge(t *testing.T) {
	f := piiFixture(t)
	f.llm.script = append(f.llm.script, callTool("script", `{"to":"<EMAIL_1>"}`), say("Mailed <EMAIL_1>."))
	st, err := f.loop.Enqueue(t.Context(), Input{SessionID: "s", Owner: "key:k1", Agent: "a", Autonomy: tool.Supervised,
		Messages: []chat.Message{user("mail ana@example.com please")}})
	if err != nil {
		t.Fatal(err)
	}
	st = f.runToEnd(t, st)
	if diff := cmp.Diff([]string{`{"text":"sent to ana@example.com"}`}, f.echo.args); diff != "" {
		t.Errorf("what the tool got through the bridge (-want +got):\n%s", diff)
	}
	hist := f.history(t, "s")
	if hist[0].Content != "mail <EMAIL_1> please" || hist[2].Content != "script: sent to <EMAIL_1>" {
		t.Errorf("history = %q, %q; want tokens", hist[0].Content, hist[2].Content)
	}
	for i, req := range f.llm.seen {
		b, _ := json.Marshal(req.Messages)
		if strings.Contains(string(b), "ana@example.com") {
			t.Errorf("model request %d holds the address: %s", i, b)
		}
	}
	res, err := f.loop.Result(t.Context(), st)
	if err != nil || res.Content != "Mailed ana@example.com." {
		t.Errorf("result = %q, %v", res.Content, err)
	}
}

// A message for another owner's session writes no token there.
func TestPIIOtherOwner(t *testing.T) {
	f := piiFixture(t)
	f.llm.script = append(f.llm.script, say("hi"))
	if _, err := f.loop.Enqueue(t.Context(), Input{SessionID: "s", Owner: "key:k1", Agent: "a", Messages: []chat.Message{user("hello")}}); err != nil {
		t.Fatal(err)
	}
	_, err := f.loop.Enqueue(t.Context(), Input{SessionID: "s", Owner: "key:k2", Agent: "a", Messages: []chat.Message{user("I am eve@example.com")}})
	if !errors.Is(err, store.ErrForbidden) {
		t.Errorf("Enqueue for another owner's session = %v, want ErrForbidden", err)
	}
	if toks, _ := f.store.PIITokens(t.Context(), "s"); len(toks) != 0 {
		t.Errorf("tokens written for another owner: %v", toks)
	}
}

// noVault is a store that keeps no tokens.
type noVault struct{ Store }

// Without a vault a value is redacted, never shown to the model.
func TestPIIRedactedWithoutVault(t *testing.T) {
	f := piiFixture(t)
	f.loop.Store = noVault{f.store}
	f.llm.script = append(f.llm.script, say("ok"))
	st, err := f.loop.Enqueue(t.Context(), Input{SessionID: "s", Owner: "key:k1", Agent: "a", Messages: []chat.Message{user("call +44 20 7946 0958")}})
	if err != nil {
		t.Fatal(err)
	}
	f.runToEnd(t, st)
	if got := f.history(t, "s")[0].Content; got != "call <PHONE>" {
		t.Errorf("history = %q, want the number redacted", got)
	}
}

// A value written into MEMORY.md (the tool gets values) reaches the model
// as a token through the system prompt too.
func TestPIISystemPrompt(t *testing.T) {
	f := piiFixture(t)
	prompt := fixedPrompt{{Role: chat.System, Content: "MEMORY: the user's address is ana@example.com"}}
	f.loop.Prompter = prompt
	f.llm.script = append(f.llm.script, say("ok"))
	st, err := f.loop.Enqueue(t.Context(), Input{SessionID: "s", Owner: "key:k1", Agent: "a", Messages: []chat.Message{user("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	f.runToEnd(t, st)
	sys := f.llm.seen[0].Messages[0]
	if sys.Role != chat.System || sys.Content != "MEMORY: the user's address is <EMAIL_1>" {
		t.Errorf("system message = %+v", sys)
	}
	if prompt[0].Content != "MEMORY: the user's address is ana@example.com" {
		t.Errorf("the shared prompt was changed: %q", prompt[0].Content)
	}
}
