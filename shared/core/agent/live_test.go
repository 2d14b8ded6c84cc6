package agent

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// liveTools is a tool.Live whose set a test changes.
type liveTools struct{ reg atomic.Pointer[tool.Registry] }

func (l *liveTools) Current() *tool.Registry { return l.reg.Load() }

type namedTool struct{ name string }

func (n namedTool) Definition() chat.ToolDef {
	return chat.ToolDef{Name: n.name, Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (n namedTool) Policy() tool.Policy { return tool.Policy{Effect: tool.Read} }
func (n namedTool) Call(context.Context, tool.Env, json.RawMessage) (string, error) {
	return n.name + " ran", nil
}

// An agent with LiveTools sees its tools as they are at each step: a tool
// that appears is offered from the next model call on, one that went is
// refused.
func TestLiveTools(t *testing.T) {
	f := newFixture(t, 5)
	live := &liveTools{}
	set := func(names ...string) {
		var ts []tool.Tool
		for _, n := range names {
			ts = append(ts, namedTool{n})
		}
		reg, err := tool.NewRegistry(ts...)
		if err != nil {
			t.Fatal(err)
		}
		live.reg.Store(reg)
	}
	set("first")
	f.loop.Agents = Registry{"a": {Name: "a", Provider: f.llm, LiveTools: live, MaxToolIterations: 5}}
	changeThen := func(names []string, next func(llm.Request) (llm.Response, error)) func(llm.Request) (llm.Response, error) {
		return func(r llm.Request) (llm.Response, error) {
			set(names...)
			return next(r)
		}
	}
	f.llm.script = append(f.llm.script,
		changeThen([]string{"first", "second"}, callTool("first", `{}`)),
		changeThen([]string{"second"}, callTool("first", `{}`)),
		say("done"))
	st, err := f.loop.Enqueue(context.Background(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("go")}, Autonomy: tool.Supervised})
	if err != nil {
		t.Fatal(err)
	}
	f.runToEnd(t, st)
	var offered [][]string
	for _, req := range f.llm.seen {
		var names []string
		for _, d := range req.Tools {
			names = append(names, d.Name)
		}
		offered = append(offered, names)
	}
	if diff := cmp.Diff([][]string{{"first"}, {"first", "second"}, {"second"}}, offered); diff != "" {
		t.Errorf("tools offered per model call (-want +got):\n%s", diff)
	}
	var results []string
	for _, m := range f.history(t, "s") {
		if m.Role == chat.Tool {
			results = append(results, m.Content)
		}
	}
	if diff := cmp.Diff([]string{"first ran", `error: there is no tool named "first"`}, results); diff != "" {
		t.Errorf("tool results (-want +got):\n%s", diff)
	}
}
