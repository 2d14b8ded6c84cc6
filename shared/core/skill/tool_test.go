package skill

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

func TestLoadTool(t *testing.T) {
	home := t.TempDir()
	alice := filepath.Join(home, "agents", "alice")
	bob := filepath.Join(home, "agents", "bob")
	writeSkill(t, home, "deploy", "deploy", "Deploy the site.", "")
	writeSkill(t, home, "gh", "github", "GitHub through gh.", "metadata: {\"openclaw\": {\"requires\": {\"bins\": [\"gh\"]}}}\n")
	writeSkill(t, alice, "mine", "alice-notes", "Alice's own.", "")
	writeSkill(t, alice, "deploy", "deploy", "Alice deploys differently.", "")
	writeSkill(t, bob, "secret", "bob-only", "Bob's own.", "")
	writeFile(t, filepath.Join(alice, Dir, "empty", FileName), "---\nname: empty\ndescription: Only a description.\n---\n")

	c := NewCatalog(home)
	lt := LoadTool(c, fakeEnv("linux", nil, nil))
	aliceSkills := "Available skills: alice-notes, deploy, empty, memory-notes, web-research."
	tests := []struct {
		name      string
		workspace string
		args      string
		want      string
		wantErr   string
	}{
		{name: "own skill", workspace: alice, args: `{"name": "alice-notes"}`,
			want: "# alice-notes\n\nInstructions of alice-notes from alice."},
		{name: "own skill replaces the global one", workspace: alice, args: `{"name": "deploy"}`,
			want: "# deploy\n\nInstructions of deploy from alice."},
		{name: "global skill", workspace: bob, args: `{"name": "deploy"}`,
			want: "# deploy\n\nInstructions of deploy from " + filepath.Base(home) + "."},
		{name: "bundled skill", workspace: alice, args: `{"name":" memory-notes "}`,
			want: "# Keeping good memory notes"},
		{name: "no body", workspace: alice, args: `{"name": "empty"}`,
			want: `Skill "empty" has no instructions beyond its description: Only a description.`},
		{name: "another agent's skill", workspace: alice, args: `{"name": "bob-only"}`,
			wantErr: `there is no skill "bob-only". ` + aliceSkills},
		{name: "no workspace", workspace: "", args: `{"name": "alice-notes"}`,
			wantErr: `there is no skill "alice-notes". Available skills: deploy, memory-notes, web-research.`},
		{name: "unknown", workspace: alice, args: `{"name": "nope"}`,
			wantErr: `there is no skill "nope". ` + aliceSkills},
		{name: "ineligible", workspace: alice, args: `{"name": "github"}`,
			wantErr: `skill "github" cannot be used here: it needs gh on PATH. ` + aliceSkills},
		{name: "path traversal", workspace: alice, args: `{"name": "../bob/skills/secret"}`,
			wantErr: `invalid skill name "../bob/skills/secret": use 1 to 64 lowercase letters, digits, '-' and '_', starting with a letter or digit. ` + aliceSkills},
		{name: "dot dot", workspace: alice, args: `{"name": ".."}`,
			wantErr: `invalid skill name ".."`},
		{name: "absolute path", workspace: alice, args: `{"name": "/etc/passwd"}`,
			wantErr: `invalid skill name "/etc/passwd"`},
		{name: "file name", workspace: alice, args: `{"name": "deploy/SKILL.md"}`,
			wantErr: `invalid skill name "deploy/SKILL.md"`},
		{name: "missing name", workspace: alice, args: `{}`,
			wantErr: `"name" is required. ` + aliceSkills},
		{name: "unknown argument", workspace: alice, args: `{"name": "deploy", "path": "x"}`,
			wantErr: `invalid arguments: unknown argument "path" (allowed: name)`},
		{name: "not JSON", workspace: alice, args: `deploy`,
			wantErr: "invalid arguments: not valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := lt.Call(context.Background(), tool.Env{Agent: filepath.Base(tt.workspace), Workspace: wsOf(tt.workspace)}, json.RawMessage(tt.args))
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("Call = %q, %v; want error starting with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			if !strings.HasPrefix(got, tt.want) {
				t.Errorf("Call = %q, want it to start with %q", got, tt.want)
			}
		})
	}
}

func TestLoadToolWithoutSkills(t *testing.T) {
	_, err := LoadTool(nil, Env{}).Call(context.Background(), tool.Env{}, json.RawMessage(`{"name": "x"}`))
	if err == nil || err.Error() != "skills are not configured" {
		t.Errorf("Call without a catalog: %v", err)
	}
	_, err = LoadTool(NewCatalog(""), Env{GOOS: "plan9"}).Call(context.Background(), tool.Env{}, json.RawMessage(`{"name": "x"}`))
	if err == nil || !strings.HasSuffix(err.Error(), "Available skills: memory-notes, web-research.") {
		t.Errorf("Call with bundled skills only: %v", err)
	}
}

func TestLoadToolDefinition(t *testing.T) {
	lt := LoadTool(NewCatalog(""), Env{})
	if diff := cmp.Diff(tool.Policy{Effect: tool.Read}, lt.Policy()); diff != "" {
		t.Errorf("Policy (-want +got):\n%s", diff)
	}
	def := lt.Definition()
	if def.Name != "load_skill" || def.Description == "" {
		t.Errorf("Definition = %+v", def)
	}
	var schema map[string]any
	if err := json.Unmarshal(def.Parameters, &schema); err != nil {
		t.Fatalf("parameters are not JSON: %v", err)
	}
	if diff := cmp.Diff([]any{"name"}, schema["required"]); diff != "" {
		t.Errorf("required (-want +got):\n%s", diff)
	}
	if _, err := tool.NewRegistry(lt); err != nil {
		t.Error(err)
	}
}

// wsOf is the workspace in the directory dir, nil for "".
func wsOf(dir string) filestore.FS {
	if dir == "" {
		return nil
	}
	return osroot.New(dir)
}
