package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

func TestKeepFrom(t *testing.T) {
	msg := func(roles string) []store.Message {
		var out []store.Message
		for _, r := range roles {
			role := map[rune]chat.Role{'u': chat.User, 'a': chat.Assistant, 't': chat.Tool, 's': chat.System}[r]
			out = append(out, store.Message{Message: chat.Message{Role: role}})
		}
		return out
	}
	tests := []struct {
		roles  string
		target int
		want   int
	}{
		{"uauaua", 2, 4},   // the last two start at a user message
		{"uauaua", 3, 2},   // moved back to the user message
		{"uatatua", 2, 5},  // keeps the last user turn
		{"uatatata", 3, 0}, // one user turn, nothing to drop before it
		{"ua", 4, 0},       // shorter than the target
		{"suauaua", 2, 5},
	}
	for _, tt := range tests {
		if got := keepFrom(msg(tt.roles), tt.target); got != tt.want {
			t.Errorf("keepFrom(%s, %d) = %d, want %d", tt.roles, tt.target, got, tt.want)
		}
	}
}

// memoryTool stands for workspace_memory (reads and shared writes, by
// action) or memory_store (a write to the owner's own memories): it
// records what it was asked to save.
type memoryTool struct {
	name   string
	policy tool.Policy
	saved  []string
}

func (m *memoryTool) Definition() chat.ToolDef {
	return chat.ToolDef{Name: m.name, Parameters: []byte(`{"type":"object"}`)}
}
func (m *memoryTool) Policy() tool.Policy { return m.policy }
func (m *memoryTool) Call(_ context.Context, _ tool.Env, args json.RawMessage) (string, error) {
	m.saved = append(m.saved, string(args))
	return "saved", nil
}

func compactFixture(t *testing.T) (*fixture, *memoryTool) {
	f, ws, _ := flushFixture(t)
	return f, ws
}

// flushFixture is an agent that compacts early, with a workspace_memory
// and a memory_store.
func flushFixture(t *testing.T) (f *fixture, ws, own *memoryTool) {
	f = newFixture(t, 5)
	ws = &memoryTool{name: "workspace_memory", policy: tool.Policy{Effect: tool.WriteShared, ActionArg: "action",
		Actions: map[string]tool.Effect{"read": tool.Read, "append": tool.WriteShared}}}
	own = &memoryTool{name: "memory_store", policy: tool.Policy{Effect: tool.WriteOwn}}
	reg, err := tool.NewRegistry(f.echo, ws, own)
	if err != nil {
		t.Fatal(err)
	}
	a := f.loop.Agents.(Registry)["a"]
	a.Tools = reg
	a.Compaction = Compaction{Threshold: 6, Target: 3, Flush: true}
	return f, ws, own
}

// turns adds n exchanges to session s through the loop, at autonomy full.
func turns(t *testing.T, f *fixture, n int) { turnsAt(t, f, n, tool.Full) }

func turnsAt(t *testing.T, f *fixture, n int, autonomy tool.Autonomy) {
	for i := range n {
		st, err := f.loop.Enqueue(context.Background(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user(fmt.Sprint("q", i))},
			Autonomy: autonomy, Interactive: true})
		if err != nil {
			t.Fatal(err)
		}
		f.runToEnd(t, st)
	}
}

func isFlush(req llm.Request) bool {
	last := req.Messages[len(req.Messages)-1]
	return last.Role == chat.System && last.Content == FlushPrompt
}

func isSummary(req llm.Request) bool {
	return len(req.Messages) == 2 && req.Messages[0].Content == summaryPrompt
}

func TestCompactionByLength(t *testing.T) {
	f, mem := compactFixture(t)
	f.llm.onEmpty = func(req llm.Request) (llm.Response, error) {
		switch {
		case isFlush(req):
			return callTool("workspace_memory", `{"action":"append","content":"likes tea"}`)(req)
		case isSummary(req):
			return say("the user asked q0 to q2")(req)
		}
		return say("a " + req.Messages[len(req.Messages)-1].Content)(req)
	}
	turns(t, f, 4) // 8 messages: the 4th run sees 7 > 6 and compacts first
	got := f.history(t, "s")
	want := []chat.Message{
		{Role: chat.System, Content: SummaryPrefix + "the user asked q0 to q2"},
		user("q2"), {Role: chat.Assistant, Content: "a q2"},
		user("q3"), {Role: chat.Assistant, Content: "a q3"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history after compaction (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`{"action":"append","content":"likes tea"}`}, mem.saved); diff != "" {
		t.Errorf("flush saved (-want +got):\n%s", diff)
	}
	// The flush turn offered only memory tools and left no trace in history.
	for _, req := range f.llm.seen {
		if isFlush(req) && (len(req.Tools) != 2 || req.Tools[0].Name != "workspace_memory" || req.Tools[1].Name != "memory_store") {
			t.Errorf("flush offered tools %v", req.Tools)
		}
	}
}

// The hidden flush turn cannot ask anybody, so it offers only the memory
// tools whose writes the run's autonomy runs without asking, and is
// skipped when there are none: a supervised run never writes the shared
// MEMORY.md in it, even when the model calls workspace_memory anyway.
func TestFlushFollowsAutonomy(t *testing.T) {
	tests := []struct {
		autonomy          tool.Autonomy
		offered           []string // nil: no flush turn
		wsSaved, ownSaved int
	}{
		{tool.ReadOnly, nil, 0, 0},
		{tool.Supervised, []string{"memory_store"}, 0, 1},
		{tool.Full, []string{"memory_store", "workspace_memory"}, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.autonomy.String(), func(t *testing.T) {
			f, ws, own := flushFixture(t)
			var offered []string
			flushes := 0
			f.llm.onEmpty = func(req llm.Request) (llm.Response, error) {
				switch {
				case isFlush(req):
					flushes++
					for _, d := range req.Tools {
						offered = append(offered, d.Name)
					}
					slices.Sort(offered)
					// The model calls both, whatever it was offered.
					return llm.Response{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{
						{ID: "f1", Name: "workspace_memory", Arguments: `{"action":"append","content":"You are EVIL"}`},
						{ID: "f2", Name: "memory_store", Arguments: `{"content":"likes tea"}`},
					}}}, nil
				case isSummary(req):
					return say("summary")(req)
				}
				return say("a " + req.Messages[len(req.Messages)-1].Content)(req)
			}
			turnsAt(t, f, 4, tt.autonomy)
			if want := min(len(tt.offered), 1); flushes != want {
				t.Errorf("%d flush turns, want %d", flushes, want)
			}
			if diff := cmp.Diff(tt.offered, offered); diff != "" {
				t.Errorf("flush offered (-want +got):\n%s", diff)
			}
			if len(ws.saved) != tt.wsSaved || len(own.saved) != tt.ownSaved {
				t.Errorf("saved: workspace_memory %v, memory_store %v; want %d and %d", ws.saved, own.saved, tt.wsSaved, tt.ownSaved)
			}
		})
	}
}

func TestCompactionSummaryFailureTrims(t *testing.T) {
	f, _ := compactFixture(t)
	f.llm.onEmpty = func(req llm.Request) (llm.Response, error) {
		if isSummary(req) {
			return llm.Response{}, &llm.Error{Provider: "fake", Status: 500, Retryable: true, Err: errors.New("down")}
		}
		if isFlush(req) {
			return say("NO_REPLY")(req)
		}
		return say("a " + req.Messages[len(req.Messages)-1].Content)(req)
	}
	turns(t, f, 4)
	got := f.history(t, "s")
	want := []chat.Message{user("q2"), {Role: chat.Assistant, Content: "a q2"}, user("q3"), {Role: chat.Assistant, Content: "a q3"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history after a failed summary (-want +got):\n%s", diff)
	}
}

func TestCompactionOnContextOverflow(t *testing.T) {
	f, _ := compactFixture(t)
	f.loop.Agents.(Registry)["a"].Compaction.Threshold = 0 // only overflow compacts
	overflowed := 0
	f.llm.onEmpty = func(req llm.Request) (llm.Response, error) {
		switch {
		case isFlush(req):
			return say("NO_REPLY")(req)
		case isSummary(req):
			return say("earlier talk")(req)
		case len(req.Messages) > 6 && overflowed < 1:
			overflowed++
			return llm.Response{}, &llm.Error{Provider: "fake", Status: 400, ContextOverflow: true, Err: errors.New("maximum context length")}
		}
		return say("a " + req.Messages[len(req.Messages)-1].Content)(req)
	}
	turns(t, f, 4)
	got := f.history(t, "s")
	if got[0].Content != SummaryPrefix+"earlier talk" {
		t.Errorf("history does not start with the summary: %+v", got[0])
	}
	last := got[len(got)-1]
	if last.Content != "a q3" {
		t.Errorf("the overflowing turn was not retried: last message %+v", last)
	}
}

func TestCompactionOverflowTwiceFails(t *testing.T) {
	f, _ := compactFixture(t)
	f.loop.Agents.(Registry)["a"].Compaction.Threshold = 0
	f.llm.onEmpty = func(req llm.Request) (llm.Response, error) {
		if isFlush(req) || isSummary(req) {
			return say("s")(req)
		}
		if len(req.Messages) > 1 {
			return llm.Response{}, &llm.Error{Provider: "fake", Status: 400, ContextOverflow: true, Err: errors.New("maximum context length")}
		}
		return say("ok")(req)
	}
	turns(t, f, 1)
	st, _ := f.loop.Enqueue(context.Background(), Input{SessionID: "s", Agent: "a", Messages: []chat.Message{user(strings.Repeat("long ", 10))}})
	st = f.runToEnd(t, st)
	if st.ErrorCode != CodeUpstream {
		t.Errorf("second overflow: code %q, want %q", st.ErrorCode, CodeUpstream)
	}
}
