package agent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// bounded is a provider whose calls take at most d (llm.Bounded).
type bounded struct {
	*provider
	d time.Duration
}

func (b bounded) Bound() (time.Duration, bool) { return b.d, true }

// slowTool is a tool whose calls may take timeout.
type slowTool struct {
	echoTool
	name    string
	effect  tool.Effect
	timeout time.Duration
}

func (s *slowTool) Definition() chat.ToolDef {
	return chat.ToolDef{Name: s.name, Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (s *slowTool) Policy() tool.Policy { return tool.Policy{Effect: s.effect, Timeout: s.timeout} }

// boundFixture is a loop whose agent's model calls take at most 2
// minutes, with the tools echo (the loop's timeout) and build (10
// minutes), and compaction with a memory flush through workspace_memory
// (30 s).
func boundFixture(t *testing.T) *fixture {
	f := newFixture(t, 5)
	reg, err := tool.NewRegistry(f.echo, &slowTool{name: "build", effect: tool.Read, timeout: 10 * time.Minute},
		&slowTool{name: "workspace_memory", effect: tool.WriteOwn, timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	a := f.loop.Agents.(Registry)["a"]
	a.Provider, a.Tools = bounded{f.llm, 2 * time.Minute}, reg
	a.Compaction = Compaction{Threshold: 10, Target: 2, Flush: true}
	f.loop.ToolTimeout = 45 * time.Second
	return f
}

// TestBound: each step's bound, known before it runs, from the settings
// it runs with.
func TestBound(t *testing.T) {
	ctx := context.Background()
	calls := func(names ...string) func(llm.Request) (llm.Response, error) {
		return func(llm.Request) (llm.Response, error) {
			m := chat.Message{Role: chat.Assistant}
			for i, n := range names {
				m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: "c" + string(rune('1'+i)), Name: n, Arguments: `{}`})
			}
			return llm.Response{Message: m}, nil
		}
	}
	// at steps a run to act, its model calling names.
	at := func(t *testing.T, f *fixture, names ...string) RunState {
		f.llm.script = append(f.llm.script, calls(names...))
		st, err := f.loop.Enqueue(ctx, Input{SessionID: "s-" + strings.Join(names, "-"), Agent: "a", Messages: []chat.Message{user("go")}, Autonomy: tool.Full})
		if err != nil {
			t.Fatal(err)
		}
		for st.Step != StepAct {
			if st, err = f.loop.Step(ctx, st); err != nil {
				t.Fatal(err)
			}
		}
		return st
	}
	for _, tt := range []struct {
		name    string
		maxStep time.Duration
		state   func(*testing.T, *fixture) RunState
		want    time.Duration
	}{
		{"begin goes on to think: its model call", 0, func(*testing.T, *fixture) RunState { return RunState{Agent: "a", Step: StepBegin} }, 2 * time.Minute},
		{"finish calls nothing", 0, func(*testing.T, *fixture) RunState { return RunState{Agent: "a", Step: StepFinish} }, 0},
		{"think: its model call", 0, func(*testing.T, *fixture) RunState { return RunState{Agent: "a", Step: StepThink} }, 2 * time.Minute},
		{"think: at most MaxStep", time.Minute, func(*testing.T, *fixture) RunState { return RunState{Agent: "a", Step: StepThink} }, time.Minute},
		{"compact: the flush's model and memory tool, then the summary", 0,
			func(*testing.T, *fixture) RunState {
				return RunState{Agent: "a", Step: StepCompact, Autonomy: tool.Full}
			}, 4*time.Minute + 30*time.Second},
		{"compact: no flush under read_only", 0,
			func(*testing.T, *fixture) RunState {
				return RunState{Agent: "a", Step: StepCompact, Autonomy: tool.ReadOnly}
			}, 2 * time.Minute},
		{"compact: at most MaxStep", 3 * time.Minute,
			func(*testing.T, *fixture) RunState {
				return RunState{Agent: "a", Step: StepCompact, Autonomy: tool.Full}
			}, 3 * time.Minute},
		{"act: the loop's timeout", 0, func(t *testing.T, f *fixture) RunState { return at(t, f, "echo") }, 45 * time.Second},
		{"act: parallel calls, the longest", 0, func(t *testing.T, f *fixture) RunState { return at(t, f, "echo", "build") }, 10 * time.Minute},
		{"act: a tool's timeout is never cut", time.Minute, func(t *testing.T, f *fixture) RunState { return at(t, f, "build") }, 10 * time.Minute},
		{"act: a tool gone takes nothing", 0, func(t *testing.T, f *fixture) RunState { return at(t, f, "gone") }, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := boundFixture(t)
			f.loop.MaxStep = tt.maxStep
			got, err := f.loop.Bound(ctx, tt.state(t, f))
			if err != nil || got != tt.want {
				t.Errorf("Bound = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

// TestBoundUnknown: a provider that declares no bound leaves think
// unbounded, unless the loop has a MaxStep.
func TestBoundUnknown(t *testing.T) {
	f := newFixture(t, 5)
	st := RunState{RunID: "r", Agent: "a", Step: StepThink}
	if _, err := f.loop.Bound(context.Background(), st); !errors.Is(err, ErrUnbounded) {
		t.Errorf("Bound: %v; want ErrUnbounded", err)
	}
	f.loop.MaxStep = time.Minute
	if d, err := f.loop.Bound(context.Background(), st); d != time.Minute || err != nil {
		t.Errorf("Bound = %s, %v; want MaxStep", d, err)
	}
}

// TestThinkCutAtBound: a model call that outlasts the step's bound, as a
// stream that keeps coming may, is cut there: the run fails as a
// provider's failure does, rather than outliving its driver.
func TestThinkCutAtBound(t *testing.T) {
	f := newFixture(t, 5)
	a := f.loop.Agents.(Registry)["a"]
	hang := &hanging{}
	a.Provider = hang
	f.loop.MaxStep = time.Millisecond
	st, err := f.loop.Enqueue(context.Background(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user("hi")}, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	st = f.runToEnd(t, st)
	if st.ErrorCode != CodeUpstream || !hang.cut {
		t.Errorf("run ended with %q (cut: %v); want the model call cut and %q", st.ErrorCode, hang.cut, CodeUpstream)
	}
}

// hanging is a provider that answers only when its call's context ends.
type hanging struct{ cut bool }

func (h *hanging) Name() string { return "hanging" }
func (h *hanging) Generate(ctx context.Context, _ llm.Request, _ llm.OnDelta) (llm.Response, error) {
	<-ctx.Done()
	h.cut = errors.Is(ctx.Err(), context.DeadlineExceeded)
	return llm.Response{}, &llm.Error{Provider: "hanging", Err: ctx.Err()}
}

// TestCheckFits: with a MaxStep, a tool whose calls may take longer is
// named; model calls are cut instead.
func TestCheckFits(t *testing.T) {
	f := boundFixture(t)
	a, _ := f.loop.Agents.Agent("a")
	if err := f.loop.CheckFits(a); err != nil {
		t.Errorf("without MaxStep: %v", err)
	}
	f.loop.MaxStep = 5 * time.Minute
	err := f.loop.CheckFits(a)
	if err == nil || !strings.Contains(err.Error(), "the tool build may take 10m0s, longer than a step may (5m0s)") {
		t.Errorf("CheckFits: %v; want build named", err)
	}
	f.loop.MaxStep = 10 * time.Minute
	if err := f.loop.CheckFits(a); err != nil {
		t.Errorf("CheckFits: %v; want build to fit", err)
	}
}
