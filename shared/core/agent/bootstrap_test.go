package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
)

// hostWriter stands for exec: a command that writes the workspace's
// directory directly, not through the file store.
type hostWriter struct{ dir string }

func (hostWriter) Definition() chat.ToolDef {
	return chat.ToolDef{Name: "exec", Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (hostWriter) Policy() tool.Policy { return tool.Policy{Effect: tool.External} }
func (h hostWriter) Call(_ context.Context, _ tool.Env, args json.RawMessage) (string, error) {
	var a struct{ File, Text string }
	if err := json.Unmarshal(args, &a); err != nil {
		return "", err
	}
	return "written", os.WriteFile(filepath.Join(h.dir, a.File), []byte(a.Text), 0o600)
}

// Every change to a bootstrap file by a tool call is an event naming the
// agent, the file, the change, the run's owner and the tool, whichever
// tool made it: through the file store or behind its back (a command in a
// sandbox). Reads, writes elsewhere and writes that failed are none.
func TestBootstrapChangedEvents(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{"SOUL.md": "You are kind.\n", "BOOTSTRAP.md": "Hello.\n", "MEMORY.md": "tea\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	quota, err := workspace.NewQuota(workspace.Limits{MaxFileBytes: 1 << 20, WorkspaceQuotaBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, 20)
	reg, err := tool.NewRegistry(hostWriter{dir}, workspace.MemoryTool(quota))
	if err != nil {
		t.Fatal(err)
	}
	f.loop.Agents = Registry{"a": {Name: "a", Provider: f.llm, Tools: reg, MaxToolIterations: 20, Workspace: osroot.New(dir)}}
	ev := &events{}
	f.loop.Events = ev
	// One call per model reply, then two at once.
	for _, c := range []chat.ToolCall{
		{Name: "workspace_memory", Arguments: `{"action":"read_bootstrap","file":"SOUL.md"}`},
		{Name: "workspace_memory", Arguments: `{"action":"update_bootstrap","file":"SOUL.md","content":"You are EVIL."}`},
		{Name: "workspace_memory", Arguments: `{"action":"update_bootstrap","file":"IDENTITY.md","content":"Name: Evil"}`},
		{Name: "workspace_memory", Arguments: `{"action":"append","content":"obey"}`},
		{Name: "workspace_memory", Arguments: `{"action":"complete_bootstrap"}`},
		{Name: "workspace_memory", Arguments: `{"action":"append_daily","content":"a day"}`},
		{Name: "workspace_memory", Arguments: `{"action":"update_bootstrap","file":"SOUL.md","content":"` + strings.Repeat("x", 2<<20) + `"}`},
		{Name: "exec", Arguments: `{"file":"USER.md","text":"The user is evil."}`},
		{Name: "exec", Arguments: `{"file":"notes.md","text":"not a bootstrap file"}`},
	} {
		f.llm.script = append(f.llm.script, callTool(c.Name, c.Arguments))
	}
	f.llm.script = append(f.llm.script, func(llm.Request) (llm.Response, error) {
		return llm.Response{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{
			{ID: "p1", Name: "exec", Arguments: `{"file":"TOOLS.md","text":"curl evil"}`},
			{ID: "p2", Name: "workspace_memory", Arguments: `{"action":"read"}`},
		}}}, nil
	}, say("done"))
	st, _ := f.loop.Enqueue(t.Context(), Input{SessionID: "s", Agent: "a", Owner: "key:k1", Messages: []chat.Message{user("x")}, Autonomy: tool.Full})
	f.runToEnd(t, st)

	type change struct{ Agent, File, Change, Owner, Autonomy, Tool string }
	var got []change
	for _, e := range ev.got {
		if e.Type != obs.BootstrapChanged {
			continue
		}
		if e.SessionID != "s" || e.RunID != st.RunID {
			t.Errorf("event of session %q run %q, want s and %s", e.SessionID, e.RunID, st.RunID)
		}
		a := map[string]string{}
		for _, at := range e.Attrs {
			a[at.Key] = at.Value.String()
		}
		got = append(got, change{a["agent"], a["file"], a["change"], a["owner"], a["autonomy"], a["tool_name"]})
	}
	want := []change{
		{"a", "SOUL.md", "changed", "key:k1", "full", "workspace_memory"},
		{"a", "IDENTITY.md", "created", "key:k1", "full", "workspace_memory"},
		{"a", "MEMORY.md", "changed", "key:k1", "full", "workspace_memory"},
		{"a", "BOOTSTRAP.md", "deleted", "key:k1", "full", "workspace_memory"},
		{"a", "USER.md", "created", "key:k1", "full", "exec"},
		// Calls run at once are named together, but for reads.
		{"a", "TOOLS.md", "created", "key:k1", "full", "exec"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bootstrap_changed events (-want +got):\n%s", diff)
	}
}

// The memory flush's writes of MEMORY.md are events too.
func TestFlushBootstrapChanged(t *testing.T) {
	dir := t.TempDir()
	quota, err := workspace.NewQuota(workspace.Limits{MaxFileBytes: 1 << 20, WorkspaceQuotaBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, 5)
	reg, err := tool.NewRegistry(workspace.MemoryTool(quota))
	if err != nil {
		t.Fatal(err)
	}
	f.loop.Agents = Registry{"a": {Name: "a", Provider: f.llm, Tools: reg, MaxToolIterations: 5, Workspace: osroot.New(dir),
		Compaction: Compaction{Threshold: 6, Target: 3, Flush: true}}}
	ev := &events{}
	f.loop.Events = ev
	f.llm.onEmpty = func(req llm.Request) (llm.Response, error) {
		switch {
		case isFlush(req):
			return callTool("workspace_memory", `{"action":"append","content":"likes tea"}`)(req)
		case isSummary(req):
			return say("summary")(req)
		}
		return say("a")(req)
	}
	turns(t, f, 4)
	var got []string
	for _, e := range ev.got {
		if e.Type == obs.BootstrapChanged {
			for _, a := range e.Attrs {
				if a.Key == "file" || a.Key == "change" || a.Key == "tool_name" {
					got = append(got, a.Value.String())
				}
			}
		}
	}
	if diff := cmp.Diff([]string{"MEMORY.md", "created", "workspace_memory"}, got); diff != "" {
		t.Errorf("events of the flush (-want +got):\n%s", diff)
	}
}
