package cloud_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
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
	if _, err := env.Files.WriteFile(ctx, "agents/pushed/IDENTITY.md", []byte("# Identity\n\n- Name: Pinchy\n"), filestore.Any); err != nil {
		t.Fatal(err)
	}
	r, err := cloud.New(ctx)
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
	want := []string{"list_dir", "load_skill", "memory_forget", "memory_get", "memory_search", "memory_store", "read_file", "web_fetch", "workspace_memory", "write_file"}
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
}
