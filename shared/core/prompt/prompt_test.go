package prompt

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/skill"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
)

var update = flag.Bool("update", false, "rewrite testdata/system_prompt.golden")

// clock is the fixed time of the tests: 14 March 2026, 09:30 UTC.
var clock = func() time.Time { return time.Date(2026, 3, 14, 9, 30, 0, 0, time.UTC) }

// env is a Linux machine with git on PATH and no environment variables.
var env = skill.Env{
	LookPath: func(file string) (string, error) {
		if file == "git" {
			return "/usr/bin/git", nil
		}
		return "", exec.ErrNotFound
	},
	Getenv: func(string) string { return "" },
	GOOS:   "linux",
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// render shows messages as text for the golden file: one block per
// message, headed by its number and role.
func render(msgs []chat.Message) string {
	var b strings.Builder
	for i, m := range msgs {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "======== message %d of %d: %s ========\n%s\n", i+1, len(msgs), m.Role, m.Content)
	}
	return b.String()
}

// fullWorkspace makes home with an agent "ada" whose workspace has every
// bootstrap file, three daily logs, and skills at every level.
func fullWorkspace(t *testing.T) (home, dir string) {
	home = t.TempDir()
	dir = workspace.Dir(home, "ada")
	files := map[string]string{
		"IDENTITY.md":          "# Identity\n\n- Name: Ada\n- Type: research assistant\n- Emoji: 🦉\n",
		"SOUL.md":              "# Soul\n\nYou are Ada, a careful research assistant. You answer precisely, cite your sources and say when you are unsure.\n",
		"USER.md":              "# User\n\n- Name: Grace\n- Time zone: Europe/Paris\n- Prefers short answers, code first.\n",
		"TOOLS.md":             "# Tools\n\n- web_fetch reads public web pages.\n- workspace_memory keeps your notes.\n",
		"AGENTS.md":            "# Workspace guidelines\n\n- MEMORY.md is your long-term memory.\n- memory/ holds daily logs.\n",
		"BOOTSTRAP.md":         "# First run\n\nAsk Grace what she is working on, note it in USER.md, then complete the bootstrap.\n",
		"MEMORY.md":            "# Memory\n\n## About Grace\n- Works on compilers (said 2026-03-01).\n\n## Follow-ups\n- Send the parser benchmarks by 2026-03-20.\n",
		"memory/2026-03-12.md": "# 2026-03-12\n\n- 10:00 Too old to be shown.\n",
		"memory/2026-03-13.md": "# 2026-03-13\n\n- 16:20 Compared three LR parser generators; Grace picked one.\n",
		"memory/2026-03-14.md": "# 2026-03-14\n\n- 08:55 Grace asked for benchmark numbers.\n",
	}
	for name, content := range files {
		write(t, filepath.Join(dir, filepath.FromSlash(name)), content)
	}
	skillFile := func(name, description, metadata string) string {
		return "---\nname: " + name + "\ndescription: " + strconv.Quote(description) + "\n" + metadata + "---\n# " + name + "\n\nSteps.\n"
	}
	// Global skills: one usable, one that needs a binary this machine lacks.
	write(t, filepath.Join(home, "skills", "release", "SKILL.md"), skillFile("release",
		"Cut a release: tag with git, write the changelog, announce it.",
		"metadata: {\"openclaw\": {\"emoji\": \"🚀\", \"requires\": {\"bins\": [\"git\"]}}}\n"))
	write(t, filepath.Join(home, "skills", "github", "SKILL.md"), skillFile("github",
		"Work with GitHub issues and pull requests through the gh CLI.",
		"metadata: {\"openclaw\": {\"emoji\": \"🐙\", \"requires\": {\"bins\": [\"gh\"]}}}\n"))
	// The agent's own skill, and its own version of a bundled one.
	write(t, filepath.Join(dir, "skills", "benchmarks", "SKILL.md"), skillFile("benchmarks",
		"Run and report the parser benchmarks the way Grace likes them.", ""))
	write(t, filepath.Join(dir, "skills", "research", "SKILL.md"), skillFile("web-research",
		"Ada's research method: arXiv and ACM first, then blogs.",
		"metadata:\n  lambdaclaw:\n    emoji: 📚\n"))
	return home, dir
}

func TestSystemPromptGolden(t *testing.T) {
	home, dir := fullWorkspace(t)
	c := skill.NewCatalog(home)
	c.Warn = func(err error) { t.Errorf("catalog warning: %v", err) }
	b := New(c, env)
	b.Now = clock
	msgs, err := b.SystemPrompt(context.Background(), &agent.Agent{Name: "ada", Workspace: osroot.New(dir)}, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range msgs {
		if m.Role != chat.System {
			t.Errorf("message %d has role %s, want system", i+1, m.Role)
		}
	}
	got := render(msgs)
	golden := filepath.Join("testdata", "system_prompt.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./shared/prompt -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("system prompt differs from %s (-want +got); run go test ./shared/prompt -update if the change is intended:\n%s", golden, diff)
	}

	// Asked again with nothing changed, the cached prompt is the same.
	again, err := b.SystemPrompt(context.Background(), &agent.Agent{Name: "ada", Workspace: osroot.New(dir)}, false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(msgs, again); diff != "" {
		t.Errorf("second call differs (-first +second):\n%s", diff)
	}
}

// A stateless request's prompt is the same without BOOTSTRAP.md, also
// from the cache, which keeps the whole prompt for the next conversation.
func TestStatelessPromptHasNoRitual(t *testing.T) {
	_, dir := fullWorkspace(t)
	b := New(nil, env)
	b.Now = clock
	a := &agent.Agent{Name: "ada", Workspace: osroot.New(dir)}
	full, err := b.SystemPrompt(context.Background(), a, false)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		stateless, err := b.SystemPrompt(context.Background(), a, true)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.DeleteFunc(slices.Clone(full), func(m chat.Message) bool { return strings.HasPrefix(m.Content, "## BOOTSTRAP.md\n") })
		if len(want) != len(full)-1 {
			t.Fatalf("the full prompt has no BOOTSTRAP.md message: %v", render(full))
		}
		if diff := cmp.Diff(want, stateless); diff != "" {
			t.Errorf("stateless prompt (-want +got):\n%s", diff)
		}
	}
	again, _ := b.SystemPrompt(context.Background(), a, false)
	if diff := cmp.Diff(full, again); diff != "" {
		t.Errorf("the full prompt after a stateless one (-want +got):\n%s", diff)
	}
}

// lastMessage returns the content of the last system message b builds for
// a: the skills section.
func lastMessage(t *testing.T, b *Builder, a *agent.Agent) string {
	t.Helper()
	msgs, err := b.SystemPrompt(context.Background(), a, false)
	if err != nil {
		t.Fatal(err)
	}
	return msgs[len(msgs)-1].Content
}

func TestSystemPromptChanges(t *testing.T) {
	home, dir := fullWorkspace(t)
	b := &Builder{Skills: skill.NewCatalog(home), Env: env, Now: clock}
	ada := &agent.Agent{Name: "ada", Workspace: osroot.New(dir)}
	last := func() string { t.Helper(); return lastMessage(t, b, ada) }
	if s := last(); strings.Contains(s, "deploy") {
		t.Fatalf("skills section already lists deploy:\n%s", s)
	}
	writeDeploySkill(t, dir)
	if s := last(); !strings.Contains(s, "\n- deploy: Deploy the site.") {
		t.Errorf("a new skill is not listed:\n%s", s)
	}
	if err := os.RemoveAll(filepath.Join(dir, "skills")); err != nil {
		t.Fatal(err)
	}
	if s := last(); strings.Contains(s, "benchmarks") || !strings.Contains(s, "\n- 🧠 memory-notes: ") {
		t.Errorf("after removing the agent's skills:\n%s", s)
	}
}

// writeDeploySkill adds a skill named deploy to the workspace dir.
func writeDeploySkill(t *testing.T, dir string) {
	write(t, filepath.Join(dir, "skills", "deploy", "SKILL.md"), "---\nname: deploy\ndescription: Deploy the site.\n---\nSteps.\n")
}

// With Refresh, the assembled prompt is reused without looking at the
// files until the interval ends or the agent's tools ran (Stale).
func TestSystemPromptRefresh(t *testing.T) {
	home, dir := fullWorkspace(t)
	b := &Builder{Skills: skill.NewCatalog(home), Env: env, Now: clock, Refresh: time.Hour}
	ada := &agent.Agent{Name: "ada", Workspace: osroot.New(dir)}
	last := func() string { t.Helper(); return lastMessage(t, b, ada) }
	before := last()
	writeDeploySkill(t, dir)
	if s := last(); s != before {
		t.Errorf("the prompt changed within the refresh interval:\n%s", s)
	}
	b.Stale(ada)
	if s := last(); !strings.Contains(s, "\n- deploy: Deploy the site.") {
		t.Errorf("after Stale, a new skill is not listed:\n%s", s)
	}
}

func TestSystemPromptWithoutWorkspace(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		name    string
		builder *Builder
		want    []string
	}{
		{"bundled skills", New(skill.NewCatalog(home), env), []string{workspace.Fallback, "## Skills"}},
		{"no catalog", &Builder{}, []string{workspace.Fallback}},
		{"bundled skills work on any OS", New(skill.NewCatalog(home), skill.Env{GOOS: "plan9", LookPath: env.LookPath, Getenv: env.Getenv}), []string{workspace.Fallback, "## Skills"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, err := tt.builder.SystemPrompt(context.Background(), &agent.Agent{Name: "ghost", Workspace: osroot.New(workspace.Dir(home, "ghost"))}, false)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range msgs {
				got = append(got, strings.SplitN(m.Content, "\n", 2)[0])
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("first lines of the messages (-want +got):\n%s", diff)
			}
		})
	}

	// A global skill that no machine can use leaves the bundled ones.
	write(t, filepath.Join(home, "skills", "mac", "SKILL.md"), "---\nname: mac\ndescription: d\nmetadata: {\"openclaw\": {\"os\": [\"darwin\"]}}\n---\n")
	msgs, err := New(skill.NewCatalog(home), env).SystemPrompt(context.Background(), &agent.Agent{Name: "ghost"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if s := msgs[len(msgs)-1].Content; strings.Contains(s, "mac") {
		t.Errorf("an ineligible skill is listed:\n%s", s)
	}
}

func TestSystemPromptErrors(t *testing.T) {
	home := t.TempDir()
	ws := filepath.Join(home, "agents", "broken")
	write(t, filepath.Join(home, "config.yaml"), "secret: x")
	write(t, filepath.Join(ws, "USER.md"), "the user")
	if err := os.Symlink("../../config.yaml", filepath.Join(ws, "SOUL.md")); err != nil {
		t.Fatal(err)
	}
	b := New(skill.NewCatalog(home), env)
	var warned []string
	b.Warn = func(agent string, err error) { warned = append(warned, agent+": "+err.Error()) }
	a := &agent.Agent{Name: "broken", Workspace: osroot.New(ws)}
	for range 2 {
		msgs, err := b.SystemPrompt(context.Background(), a, false)
		if err != nil {
			t.Fatalf("a link leaving the workspace failed the prompt: %v", err)
		}
		if got := msgs[0].Content; got != "## USER.md\n\nthe user" {
			t.Errorf("first message %q, want USER.md's", got)
		}
		for _, m := range msgs {
			if strings.Contains(m.Content, "secret") {
				t.Errorf("the link was followed: %q", m.Content)
			}
		}
		b.Stale(a)
	}
	if len(warned) != 1 || !strings.HasPrefix(warned[0], "broken: workspace file SOUL.md left out of the system prompt: ") {
		t.Errorf("warnings %q, want one naming SOUL.md (the second prompt is the cached one)", warned)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.SystemPrompt(ctx, &agent.Agent{Name: "x"}, false); err != context.Canceled {
		t.Errorf("SystemPrompt with a canceled context = %v", err)
	}
}
