package cloud_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

// The AWS agents are the local ones, their workspaces in the stack's
// bucket (an S3-compatible server here): the configured agents get
// workspaces from the templates, every workspace in the bucket is an
// agent, and each has the file tools, workspace_memory and a prompt from
// its files.
func TestFilesWorkspaces(t *testing.T) {
	env := cloudtest.Setup(t)
	t.Setenv("AGENTS_CONFIG", `{"research":{}}`)
	ctx := t.Context()
	for name, text := range map[string]string{
		"agents/pushed/IDENTITY.md":         "# Identity\n\n- Name: Pinchy\n",
		"skills/tea-brewing/SKILL.md":       "---\nname: tea-brewing\ndescription: Brew tea well.\n---\nSteep green tea at 80 °C for two minutes.\n",
		"agents/pushed/skills/own/SKILL.md": "---\nname: own\ndescription: The agent's own skill.\n---\nOwn steps.\n",
	} {
		if _, err := env.Files.WriteFile(ctx, name, []byte(text), filestore.Any); err != nil {
			t.Fatal(err)
		}
	}
	r, err := newRoot(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"default", "pushed", "research"}, r.AgentNames()); diff != "" {
		t.Errorf("agents (-want +got):\n%s", diff)
	}
	if _, err := env.Files.Stat(ctx, "agents/research/BOOTSTRAP.md"); err != nil {
		t.Errorf("the configured agent's workspace was not made from the templates: %v", err)
	}
	a, ok := r.Loop.Agents.Agent("pushed")
	if !ok {
		t.Fatal("the pushed workspace is no agent")
	}
	var tools []string
	for _, d := range a.Tools.Definitions() {
		tools = append(tools, d.Name)
	}
	want := []string{"list_dir", "load_skill", "memory_forget", "memory_get", "memory_search", "memory_store", "read_file", "schedule", "web_fetch", "workspace_memory", "write_file"}
	if diff := cmp.Diff(want, tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	msgs, err := r.Loop.Prompter.SystemPrompt(t.Context(), a, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) == 0 || !strings.Contains(msgs[0].Content, "Name: Pinchy") {
		t.Errorf("the prompt is not the workspace's: %v", msgs)
	}

	mem, _ := a.Tools.Get("workspace_memory")
	tenv := tool.Env{Agent: a.Name, Workspace: a.Workspace}
	if _, err := mem.Call(t.Context(), tenv, json.RawMessage(`{"action":"append","content":"likes tea"}`)); err != nil {
		t.Fatal(err)
	}
	if b, _, err := env.Files.ReadFile(ctx, "agents/pushed/MEMORY.md", 1<<20); err != nil || !strings.Contains(string(b), "likes tea") {
		t.Errorf("MEMORY.md = %q, %v; want the appended line", b, err)
	}

	// The file tools write to and read from the agent's workspace in the
	// bucket, and no further.
	call := func(name, args string) (string, error) {
		t.Helper()
		tl, ok := a.Tools.Get(name)
		if !ok {
			t.Fatalf("no tool %s", name)
		}
		return tl.Call(ctx, tenv, json.RawMessage(args))
	}
	if _, err := call("write_file", `{"path":"notes/plan.md","content":"step one"}`); err != nil {
		t.Fatalf("write_file: %v", err)
	}
	if b, _, err := env.Files.ReadFile(ctx, "agents/pushed/notes/plan.md", 100); err != nil || string(b) != "step one" {
		t.Errorf("the bucket holds %q, %v; want the written file", b, err)
	}
	if out, err := call("read_file", `{"path":"notes/plan.md"}`); err != nil || !strings.Contains(out, "step one") {
		t.Errorf("read_file = %q, %v", out, err)
	}
	if out, err := call("list_dir", `{"path":"."}`); err != nil || !strings.Contains(out, "notes") {
		t.Errorf("list_dir = %q, %v", out, err)
	}
	if _, err := call("read_file", `{"path":"../research/BOOTSTRAP.md"}`); err == nil {
		t.Error("read_file reached another agent's workspace")
	}
	// Skills: the bucket's global ones and the agent's own.
	for sk, body := range map[string]string{"tea-brewing": "Steep green tea", "own": "Own steps."} {
		if out, err := call("load_skill", `{"name":"`+sk+`"}`); err != nil || !strings.Contains(out, body) {
			t.Errorf("load_skill %s = %q, %v; want its body", sk, out, err)
		}
	}
}
