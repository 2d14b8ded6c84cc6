package setup

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/bedrock"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/openai"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/core/skill"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentset"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

func TestProvider(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	p, err := Provider(t.Context(), config.Provider{Name: "claude", Type: config.ProviderBedrock, Region: "us-east-1", Model: "anthropic.claude-x-v1:0"}, 1<<20, EnvAWS)
	if _, ok := p.(*bedrock.Converse); err != nil || !ok || p.Name() != "claude" {
		t.Errorf("bedrock: Provider = %T %v, want a *bedrock.Converse named claude", p, err)
	}
	failing := func(context.Context) (aws.Config, error) { return aws.Config{}, errors.New("no profile") }
	if _, err := Provider(t.Context(), config.Provider{Name: "claude", Type: config.ProviderBedrock, Region: "us-east-1", Model: "m"}, 1<<20, failing); err == nil || !strings.Contains(err.Error(), "no profile") {
		t.Errorf("bedrock with a failing AWS configuration: Provider = %v, want its error", err)
	}
	p, err = Provider(t.Context(), config.Provider{Name: "local", Type: config.ProviderOpenAI, BaseURL: "http://localhost:11434/v1", Model: "llama3.2"}, 1<<20, failing)
	if _, ok := p.(*openai.Provider); err != nil || !ok || p.Name() != "local" {
		t.Errorf("openai: Provider = %T %v, want an *openai.Provider named local", p, err)
	}
	audio := chat.Part{Type: chat.PartAudio, MediaType: "audio/wav", Data: []byte("RIFF")}
	if err := llm.CheckParts(p, []chat.Message{{Role: chat.User, Parts: []chat.Part{audio}}}); !llm.IsUnsupported(err) {
		t.Errorf("openai with the default input: audio checked %v, want it refused", err)
	}
	p, err = Provider(t.Context(), config.Provider{Name: "local", Model: "m", Input: []string{"text", "audio"}}, 1<<20, EnvAWS)
	if err != nil {
		t.Fatal(err)
	}
	image := chat.Part{Type: chat.PartImage, URL: "https://example.com/a.png"}
	if err := llm.CheckParts(p, []chat.Message{{Role: chat.User, Parts: []chat.Part{audio}}}); err != nil {
		t.Errorf("openai with input [text, audio]: audio refused: %v", err)
	}
	if err := llm.CheckParts(p, []chat.Message{{Role: chat.User, Parts: []chat.Part{image}}}); !llm.IsUnsupported(err) {
		t.Errorf("openai with input [text, audio]: an image checked %v, want it refused", err)
	}
	if _, err := Provider(t.Context(), config.Provider{Name: "x", Type: "nope", Model: "m"}, 1<<20, EnvAWS); err == nil {
		t.Error("unknown type: Provider succeeded")
	}
	for _, typ := range []string{config.ProviderOpenAI, config.ProviderBedrock} {
		if _, err := Provider(t.Context(), config.Provider{Name: "x", Type: typ, Region: "us-east-1", Model: "m"}, -1, EnvAWS); err == nil {
			t.Errorf("%s: a negative reply limit was accepted", typ)
		}
	}
}

// The builder makes each agent as its configuration says: provider chain,
// tools, compaction and workspace; the defaults for an agent it does not
// name.
func TestBuilder(t *testing.T) {
	home := t.TempDir()
	cfg := &config.Config{
		Providers: []config.Provider{
			{Name: "a", BaseURL: "http://127.0.0.1:1/v1", Model: "m"},
			{Name: "b", BaseURL: "http://127.0.0.1:2/v1", Model: "m"},
		},
		Agents: map[string]config.AgentConfig{
			"writer": {Providers: []string{"b"}, Tools: []string{"web_fetch"}, MaxToolIterations: 3, DelegateTo: []string{"other"}},
		},
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	quota, err := agentset.Quota(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := agentset.Tools(cfg, skill.NewCatalog(""), quota, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewBuilder(t.Context(), cfg, osroot.New(home), tools, EnvAWS)
	if err != nil {
		t.Fatal(err)
	}
	reg := agent.Registry{}
	for _, n := range []string{"writer", "other"} {
		if reg[n], err = b.Build(n); err != nil {
			t.Fatal(err)
		}
	}
	type shape struct {
		Provider   string
		Tools      []string
		Iterations int
		Workspace  string
		Compaction agent.Compaction
	}
	got := map[string]shape{}
	for name, a := range reg {
		var names []string
		for _, d := range a.Tools.Definitions() {
			names = append(names, d.Name)
		}
		got[name] = shape{a.Provider.Name(), names, a.MaxToolIterations, a.Workspace.(*osroot.FS).Dir(), a.Compaction}
	}
	want := map[string]shape{
		"writer": {"b", []string{"delegate", "web_fetch"}, 3, workspace.Dir(home, "writer"), agent.Compaction{Threshold: 50, Target: 20, Flush: true}},
		"other": {"a,b", []string{"list_dir", "load_skill", "read_file", "web_fetch", "workspace_memory", "write_file"}, 0,
			workspace.Dir(home, "other"), agent.Compaction{Threshold: 50, Target: 20, Flush: true}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("agents (-want +got):\n%s", diff)
	}
	if created, err := b.CreateWorkspaces(t.Context()); err != nil || !slices.Equal(created, []string{"writer"}) {
		t.Errorf("CreateWorkspaces = %v, %v; want the configured agent's", created, err)
	}
	cfg.Agents["broken"] = config.AgentConfig{Tools: []string{"no_such_tool"}}
	if _, err := NewBuilder(t.Context(), cfg, osroot.New(home), tools, EnvAWS); err == nil || !strings.Contains(err.Error(), "no_such_tool") {
		t.Errorf("NewBuilder with an unknown tool = %v, want an error naming it", err)
	}
}

// Without files, agents get only the tools that need no workspace, and
// schedule only where there is a schedule engine.
func TestToolsWithoutFiles(t *testing.T) {
	cfg := &config.Config{}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tt := range []struct {
		name string
		jobs schedule.Engine
		want []string
	}{
		{"no schedule engine", nil, []string{"web_fetch", "load_skill"}},
		{"a schedule engine", db.Schedule(nil), []string{"web_fetch", "load_skill", "schedule"}},
	} {
		tools, err := agentset.Tools(cfg, skill.NewCatalog(""), nil, tt.jobs)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range tools {
			names = append(names, tl.Definition().Name)
		}
		if diff := cmp.Diff(tt.want, names); diff != "" {
			t.Errorf("%s: tools (-want +got):\n%s", tt.name, diff)
		}
	}
}
