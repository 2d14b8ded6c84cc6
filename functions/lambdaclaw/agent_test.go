package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
)

// cliStep is one lambdaclaw invocation; steps of a table run in order
// against one data directory.
type cliStep struct {
	name string
	args []string
	// input is what a person types at the confirmation prompt; terminal
	// says whether stdin is a terminal.
	input    string
	terminal bool
	// wantOut is the whole of stdout; wantStderr a part of stderr.
	wantOut    string
	wantStderr string
	// wantErr is a part of the error; empty means success.
	wantErr string
	// wantAgents, when not nil, lists the agents after the step.
	wantAgents []string
}

// agentHome points LAMBDACLAW_HOME at a fresh directory.
func agentHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("LAMBDACLAW_HOME", home)
	t.Setenv("LAMBDACLAW_CONFIG", "")
	return home
}

func runCLI(t *testing.T, home string, steps []cliStep) {
	t.Helper()
	oldInput, oldTerminal := confirmInput, stdinIsTerminal
	t.Cleanup(func() { confirmInput, stdinIsTerminal = oldInput, oldTerminal })
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			confirmInput = strings.NewReader(s.input)
			stdinIsTerminal = func() bool { return s.terminal }
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), s.args, &stdout, &stderr)
			switch {
			case s.wantErr == "" && err != nil:
				t.Fatalf("run %q: %v\nstderr: %s", s.args, err, stderr.String())
			case s.wantErr != "" && (err == nil || !strings.Contains(err.Error(), s.wantErr)):
				t.Fatalf("run %q = %v, want error containing %q", s.args, err, s.wantErr)
			}
			if diff := cmp.Diff(s.wantOut, stdout.String()); diff != "" {
				t.Errorf("stdout mismatch (-want +got):\n%s", diff)
			}
			if !strings.Contains(stderr.String(), s.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), s.wantStderr)
			}
			if s.wantAgents != nil {
				got, err := workspace.List(context.Background(), osroot.New(home))
				if err != nil {
					t.Fatal(err)
				}
				if got == nil {
					got = []string{}
				}
				if diff := cmp.Diff(s.wantAgents, got); diff != "" {
					t.Errorf("agents mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func writeHomeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func tmpl(t *testing.T, file, name string) string {
	t.Helper()
	s, err := workspace.Template(file, name)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAgentCreateListDelete(t *testing.T) {
	home := agentHome(t)
	dir := func(name string) string { return workspace.Dir(home, name) }
	runCLI(t, home, []cliStep{
		{name: "list none", args: []string{"agent", "list"}, wantStderr: "no agents yet", wantAgents: []string{}},
		{name: "create", args: []string{"agent", "create", "alpha"}, wantOut: dir("alpha") + "\n", wantStderr: `created agent "alpha"`, wantAgents: []string{"alpha"}},
		{name: "create another", args: []string{"agent", "create", "beta"}, wantOut: dir("beta") + "\n", wantAgents: []string{"alpha", "beta"}},
		{name: "create existing", args: []string{"agent", "create", "alpha"}, wantErr: `agent "alpha" already exists in ` + dir("alpha")},
		{name: "create invalid", args: []string{"agent", "create", "Bad/Name"}, wantErr: "is invalid"},
		{name: "create without name", args: []string{"agent", "create"}, wantErr: "usage", wantStderr: "missing arguments\nusage: lambdaclaw agent create NAME"},
		{name: "create two names", args: []string{"agent", "create", "a", "b"}, wantErr: "usage", wantStderr: "unexpected argument \"b\"\nusage: lambdaclaw agent create NAME", wantAgents: []string{"alpha", "beta"}},
		{name: "list", args: []string{"agent", "list"}, wantOut: "" +
			"alpha  🦞 alpha (AI assistant) — first run pending\n" +
			"beta   🦞 beta (AI assistant) — first run pending\n"},
		{name: "list extra", args: []string{"agent", "list", "alpha"}, wantErr: "usage", wantStderr: "usage: lambdaclaw agent list"},
		{name: "list bad config", args: []string{"agent", "list", "--config", filepath.Join(home, "missing.yaml")}, wantErr: "config"},

		{name: "delete not a terminal", args: []string{"agent", "delete", "alpha"}, wantErr: `refusing to delete agent "alpha" without --yes: stdin is not a terminal`, wantAgents: []string{"alpha", "beta"}},
		{name: "delete declined", args: []string{"agent", "delete", "alpha"}, terminal: true, input: "n\n", wantStderr: `Delete agent "alpha"`, wantErr: `agent "alpha" not deleted`, wantAgents: []string{"alpha", "beta"}},
		{name: "delete no answer", args: []string{"agent", "delete", "alpha"}, terminal: true, input: "", wantErr: "not deleted", wantAgents: []string{"alpha", "beta"}},
		{name: "delete confirmed", args: []string{"agent", "delete", "alpha"}, terminal: true, input: "yes\n", wantStderr: `deleted agent "alpha"`, wantAgents: []string{"beta"}},
		{name: "delete missing", args: []string{"agent", "delete", "alpha", "--yes"}, wantErr: `no agent "alpha"; the agents are: beta`, wantAgents: []string{"beta"}},
		{name: "delete invalid", args: []string{"agent", "delete", "../beta", "--yes"}, wantErr: "is invalid", wantAgents: []string{"beta"}},
		{name: "delete without name", args: []string{"agent", "delete", "--yes"}, wantErr: "usage", wantStderr: "usage: lambdaclaw agent delete NAME [flags]"},
		{name: "delete --yes after name", args: []string{"agent", "delete", "beta", "--yes"}, wantStderr: `deleted agent "beta"`, wantAgents: []string{}},

		{name: "create default", args: []string{"agent", "create", "default"}, wantOut: dir("default") + "\n", wantAgents: []string{"default"}},
		{name: "delete default asks for --yes", args: []string{"agent", "delete", "default"}, terminal: true, input: "y\n", wantErr: "the default agent can be deleted only with --yes", wantAgents: []string{"default"}},
		{name: "delete default --yes first", args: []string{"agent", "delete", "--yes", "default"}, wantStderr: "creates a fresh workspace", wantAgents: []string{}},
	})
}

func TestAgentListIdentity(t *testing.T) {
	home := agentHome(t)
	for _, n := range []string{"crab", "plain", "blank"} {
		if _, err := workspace.Create(context.Background(), osroot.New(home), n); err != nil {
			t.Fatal(err)
		}
	}
	writeHomeFile(t, filepath.Join(workspace.Dir(home, "crab"), "IDENTITY.md"), "# Identity\n\n- **Name:** Pinchy\n- Emoji: 🦀\n- Type: research assistant\n")
	if err := os.Remove(filepath.Join(workspace.Dir(home, "crab"), "BOOTSTRAP.md")); err != nil {
		t.Fatal(err)
	}
	writeHomeFile(t, filepath.Join(workspace.Dir(home, "plain"), "IDENTITY.md"), "Name: Plain\n")
	if err := os.Remove(filepath.Join(workspace.Dir(home, "blank"), "IDENTITY.md")); err != nil {
		t.Fatal(err)
	}
	runCLI(t, home, []cliStep{
		{name: "list", args: []string{"agents", "list"}, wantOut: "" +
			"blank  (no identity) — first run pending\n" +
			"crab   🦀 Pinchy (research assistant)\n" +
			"plain  Plain — first run pending\n"},
	})
}

func TestAgentShow(t *testing.T) {
	home := agentHome(t)
	dir, err := createWorkspace(home, "bot")
	if err != nil {
		t.Fatal(err)
	}
	header := "agent bot: " + dir + "\n"
	var fresh strings.Builder
	fresh.WriteString(header)
	for _, f := range workspace.Files() {
		fresh.WriteString("\n==> " + f + " <==\n" + tmpl(t, f, "bot"))
	}
	fresh.WriteString("\n==> memory/ <== (no daily logs)\n")

	steps := []cliStep{
		{name: "new workspace", args: []string{"agent", "show", "bot"}, wantOut: fresh.String()},
		{name: "missing", args: []string{"agent", "show", "nope"}, wantErr: `no agent "nope"; the agents are: bot`},
		{name: "invalid", args: []string{"agent", "show", "../bot"}, wantErr: "is invalid"},
		{name: "without name", args: []string{"agent", "show"}, wantErr: "usage", wantStderr: "usage: lambdaclaw agent show NAME"},
	}
	runCLI(t, home, steps)

	// After the first run: BOOTSTRAP.md gone, files edited, daily logs.
	if err := os.Remove(filepath.Join(dir, "BOOTSTRAP.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "TOOLS.md")); err != nil {
		t.Fatal(err)
	}
	writeHomeFile(t, filepath.Join(dir, "USER.md"), "# User\n- Name: Ana")
	writeHomeFile(t, filepath.Join(dir, "MEMORY.md"), "")
	writeHomeFile(t, filepath.Join(dir, "memory", "2026-03-02.md"), "# 2026-03-02\n")
	writeHomeFile(t, filepath.Join(dir, "memory", "2026-03-01.md"), "# 2026-03-01\n\n- 09:00 met Ana\n")
	writeHomeFile(t, filepath.Join(dir, "memory", "notes.md"), "not a log")
	want := header +
		"\n==> IDENTITY.md <==\n" + tmpl(t, "IDENTITY.md", "bot") +
		"\n==> SOUL.md <==\n" + tmpl(t, "SOUL.md", "bot") +
		"\n==> USER.md <==\n# User\n- Name: Ana\n" +
		"\n==> TOOLS.md <== (absent)\n" +
		"\n==> AGENTS.md <==\n" + tmpl(t, "AGENTS.md", "bot") +
		"\n==> BOOTSTRAP.md <== (absent: no first-run ritual pending)\n" +
		"\n==> MEMORY.md <==\n" +
		"\n==> memory/ <== (2 daily logs)\n" +
		"memory/2026-03-01.md (30 bytes)\n" +
		"memory/2026-03-02.md (13 bytes)\n"
	runCLI(t, home, []cliStep{
		{name: "after first run", args: []string{"agent", "show", "bot"}, wantOut: want},
	})
}

func TestAgentDeleteConfigured(t *testing.T) {
	home := agentHome(t)
	writeHomeFile(t, filepath.Join(home, "config.yaml"), "agents:\n  helper: {}\n")
	runCLI(t, home, []cliStep{
		{name: "create", args: []string{"agent", "create", "helper"}, wantOut: workspace.Dir(home, "helper") + "\n"},
		{name: "delete", args: []string{"agent", "delete", "helper", "--yes"}, wantStderr: "while the config file lists it", wantAgents: []string{}},
	})
}

func TestAgentCreateKeepsCompletedRitual(t *testing.T) {
	home := agentHome(t)
	dir, err := createWorkspace(home, "bot")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "BOOTSTRAP.md")); err != nil {
		t.Fatal(err)
	}
	runCLI(t, home, []cliStep{
		{name: "create existing", args: []string{"agent", "create", "bot"}, wantErr: "already exists"},
	})
	if _, err := os.Stat(filepath.Join(dir, "BOOTSTRAP.md")); err == nil {
		t.Error("agent create brought BOOTSTRAP.md back into an existing workspace")
	}
}

func TestAgentUsage(t *testing.T) {
	agentHome(t)
	for _, tc := range []struct {
		name       string
		args       []string
		wantStderr string
	}{
		{"no subcommand", []string{"agent"}, "lambdaclaw agent create NAME"},
		{"unknown subcommand", []string{"agent", "rename", "a"}, `unknown agent command "rename"`},
		{"unknown flag", []string{"agent", "list", "--force"}, "flag provided but not defined: -force"},
		{"yes only for delete", []string{"agent", "create", "a", "--yes"}, "flag provided but not defined: -yes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := run(context.Background(), tc.args, io.Discard, &stderr)
			if !errors.Is(err, errUsage) {
				t.Errorf("run %q = %v, want errUsage", tc.args, err)
			}
			if !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tc.wantStderr)
			}
		})
	}
}

// createWorkspace creates agent name's workspace in the directory home and
// returns its directory.
func createWorkspace(home, name string) (string, error) {
	_, err := workspace.Create(context.Background(), osroot.New(home), name)
	return workspace.Dir(home, name), err
}
