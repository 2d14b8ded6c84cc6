package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// scriptTool stands for exec: it calls tools through env.Tools as a script
// would, and reports what it saw.
type scriptTool struct{}

func (scriptTool) Definition() chat.ToolDef {
	return chat.ToolDef{Name: "script", Description: "runs a script", Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (scriptTool) Policy() tool.Policy { return tool.Policy{Effect: tool.WriteOwn} }
func (scriptTool) Call(ctx context.Context, env tool.Env, _ json.RawMessage) (string, error) {
	var names []string
	for _, d := range env.Tools.Tools() {
		names = append(names, d.Name)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tools: %s\n", strings.Join(names, ","))
	for _, c := range []struct{ name, args string }{
		{"echo", `{"text":"one sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"}`},
		{"danger", `{"text":"x"}`},
		{"script", `{}`},
		{"nope", `{}`},
	} {
		out, err := env.Tools.Call(ctx, c.name, json.RawMessage(c.args))
		fmt.Fprintf(&b, "%s: %q %v\n", c.name, out, err)
	}
	return b.String(), nil
}

type dangerTool struct{ echoTool }

func (d *dangerTool) Definition() chat.ToolDef {
	return chat.ToolDef{Name: "danger", Description: "needs approval", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func TestBridge(t *testing.T) {
	tests := []struct {
		name     string
		autonomy tool.Autonomy
		want     string
	}{
		{"supervised: only what runs without asking", tool.Supervised, "tools: echo\n" +
			"echo: \"one [REDACTED]\" <nil>\n" +
			"danger: \"\" refused: danger needs a person's approval, which a script cannot ask for; call it directly instead of from a script\n" +
			"script: \"\" refused: script cannot be called from inside script\n" +
			"nope: \"\" error: there is no tool named \"nope\"\n"},
		{"full: every tool", tool.Full, "tools: danger,echo\n" +
			"echo: \"one [REDACTED]\" <nil>\n" +
			"danger: \"x\" <nil>\n" +
			"script: \"\" refused: script cannot be called from inside script\n" +
			"nope: \"\" error: there is no tool named \"nope\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, 5)
			danger := &dangerTool{echoTool{policy: tool.Policy{Effect: tool.External}}}
			reg, err := tool.NewRegistry(f.echo, danger, scriptTool{})
			if err != nil {
				t.Fatal(err)
			}
			f.loop.Agents = Registry{"a": {Name: "a", Provider: f.llm, Tools: reg, MaxToolIterations: 5}}
			ev := &events{}
			f.loop.Events = ev
			f.llm.script = append(f.llm.script, callTool("script", `{}`), say("done"))
			st, _ := f.loop.Enqueue(context.Background(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("x")}, Autonomy: tt.autonomy})
			f.runToEnd(t, st)
			if diff := cmp.Diff(tt.want, f.history(t, "s")[2].Content); diff != "" {
				t.Errorf("what the script saw (-want +got):\n%s", diff)
			}
			var started []string
			for _, e := range ev.got {
				if e.Type == obs.ToolCallStart {
					for _, a := range e.Attrs {
						if a.Key == "tool_name" {
							started = append(started, a.Value.String())
						}
						if a.Key == "args" && strings.Contains(a.Value.String(), "sk-proj") {
							t.Errorf("an event carries a secret: %s", a.Value)
						}
					}
				}
			}
			want := []string{"script", "echo"}
			if tt.autonomy == tool.Full {
				want = append(want, "danger")
			}
			if diff := cmp.Diff(want, started); diff != "" {
				t.Errorf("tool calls evented (-want +got):\n%s", diff)
			}
		})
	}
}
