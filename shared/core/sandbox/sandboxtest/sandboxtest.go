// Package sandboxtest is the conformance suite of sandbox.Backend: what
// every backend promises, whatever isolates it.
package sandboxtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
)

// Target is a backend under test and the workspace of the agent whose
// commands it runs.
type Target struct {
	Backend sandbox.Backend
	Agent   string
	// Workspace is the agent's workspace, as requests carry it; the suite
	// writes a file into it and reads what commands write.
	Workspace filestore.FS
}

// Run checks the promises of the port on target: output and exit code; a
// cleared environment; the workspace read-write at /workspace and /usr
// read-only; the wall time and output limits; what the command adds to
// the workspace counted against its quota; links not written back to the
// workspace; one /tmp per owner and session; and the tool bridge.
func Run(t *testing.T, target Target) {
	ctx := context.Background()
	exec := func(t *testing.T, req sandbox.Request) sandbox.Result {
		t.Helper()
		req.Agent = target.Agent
		req.Workspace = target.Workspace
		if req.Owner == "" {
			req.Owner = "key:suite"
		}
		if req.SessionID == "" {
			req.SessionID = "suite"
		}
		req.Limits = req.Limits.WithDefaults()
		res, err := target.Backend.Exec(ctx, req)
		if err != nil {
			t.Fatalf("Exec(%q): %v", req.Command, err)
		}
		return res
	}
	if err := target.Backend.Probe(ctx); err != nil {
		t.Fatalf("Probe: %v", err)
	}

	t.Run("output and exit code", func(t *testing.T) {
		got := exec(t, sandbox.Request{Command: "echo out; echo err >&2; exit 3"})
		want := sandbox.Result{Stdout: "out\n", Stderr: "err\n", ExitCode: 3}
		got.Duration = 0
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})

	t.Run("environment", func(t *testing.T) {
		got := exec(t, sandbox.Request{Command: "pwd; echo $HOME; env | cut -d= -f1 | sort | tr '\\n' ' '"})
		lines := strings.Split(got.Stdout, "\n")
		if len(lines) < 3 || lines[0] != "/workspace" || lines[1] != "/workspace" {
			t.Fatalf("working directory and HOME: %q", got.Stdout)
		}
		for _, name := range strings.Fields(lines[2]) {
			switch name {
			case "PATH", "HOME", "LANG", "PWD", "SHLVL", "_", "OLDPWD":
			default:
				t.Errorf("the environment holds %s", name)
			}
		}
	})

	t.Run("workspace read-write, /usr read-only", func(t *testing.T) {
		if _, err := target.Workspace.WriteFile(ctx, "suite/in.txt", []byte("from the host\n"), filestore.Any); err != nil {
			t.Fatal(err)
		}
		got := exec(t, sandbox.Request{Command: "cat suite/in.txt && echo made > suite/out.txt && touch /usr/suite 2>/dev/null || echo usr-refused"})
		if got.Stdout != "from the host\nusr-refused\n" {
			t.Errorf("stdout %q", got.Stdout)
		}
		b, _, err := target.Workspace.ReadFile(ctx, "suite/out.txt", 100)
		if err != nil || string(b) != "made\n" {
			t.Errorf("the file the command wrote: %q, %v", b, err)
		}
	})

	t.Run("wall time", func(t *testing.T) {
		start := time.Now()
		got := exec(t, sandbox.Request{Command: "sleep 60", Timeout: 2 * time.Second})
		if got.Cut != sandbox.WallTime || got.ExitCode == 0 {
			t.Errorf("a command past its timeout: %+v", got)
		}
		if d := time.Since(start); d > 30*time.Second {
			t.Errorf("stopped after %s", d)
		}
	})

	t.Run("output", func(t *testing.T) {
		got := exec(t, sandbox.Request{Command: "while :; do echo xxxxxxxxxxxxxxx; done", Limits: sandbox.Limits{Output: 4096}})
		if got.Cut != sandbox.Output || len(got.Stdout) != 4096 {
			t.Errorf("endless output: cut %q, %d bytes kept", got.Cut, len(got.Stdout))
		}
	})

	t.Run("workspace quota", func(t *testing.T) {
		var used int64
		err := target.Workspace.Walk(ctx, ".", func(_ string, e filestore.Entry) error {
			used += e.Size
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		got := exec(t, sandbox.Request{Quota: used + 100_000, Command: "head -c 60000 /dev/zero > suite/q1.bin && head -c 60000 /dev/zero > suite/q2.bin && echo wrote"})
		if got.Cut != sandbox.Disk || got.Stdout != "wrote\n" || !strings.Contains(got.Stderr, "suite/q2.bin") {
			t.Errorf("a command writing past the quota: %+v", got)
		}
		for name, want := range map[string]int{"suite/q1.bin": 60000, "suite/q2.bin": -1} {
			b, _, err := target.Workspace.ReadFile(ctx, name, 1<<20)
			if n := len(b); (want < 0) != (err != nil) || (want >= 0 && n != want) {
				t.Errorf("%s: %d bytes, %v; want %d", name, n, err, want)
			}
		}
		target.Workspace.Remove(ctx, "suite/q1.bin")
	})

	t.Run("links not written back", func(t *testing.T) {
		if _, err := target.Workspace.WriteFile(ctx, "suite/soul.md", []byte("calm"), filestore.Any); err != nil {
			t.Fatal(err)
		}
		got := exec(t, sandbox.Request{Command: "ln -sf ../../../config.yaml suite/soul.md && ln -s /etc/passwd suite/pw && echo linked"})
		if got.Stdout != "linked\n" {
			t.Errorf("%+v", got)
		}
		if b, _, err := target.Workspace.ReadFile(ctx, "suite/soul.md", 100); err != nil || string(b) != "calm" {
			t.Errorf("suite/soul.md after the command: %q, %v", b, err)
		}
		if _, err := target.Workspace.Stat(ctx, "suite/pw"); err == nil {
			t.Error("the link suite/pw reached the workspace")
		}
	})

	t.Run("one /tmp per owner and session", func(t *testing.T) {
		exec(t, sandbox.Request{Owner: "key:a", SessionID: "s", Command: "echo a > /tmp/mark"})
		tests := []struct{ owner, session, want string }{
			{"key:a", "s", "a\n"},
			{"key:b", "s", "none\n"},
			{"key:a", "t", "none\n"},
		}
		for _, tt := range tests {
			got := exec(t, sandbox.Request{Owner: tt.owner, SessionID: tt.session, Command: "cat /tmp/mark 2>/dev/null || echo none"})
			if got.Stdout != tt.want {
				t.Errorf("%s's session %s reads %q, want %q", tt.owner, tt.session, got.Stdout, tt.want)
			}
		}
	})

	t.Run("bridge", func(t *testing.T) {
		br := &Bridge{}
		got := exec(t, sandbox.Request{Bridge: br, Command: `cut -f1 /tools/index.txt | tr '\n' ' '; echo
lambdaclaw-tool upper '{"text":"hi"}'
lambdaclaw-tool nope || echo "exit $?"`})
		want := sandbox.Result{Stdout: "nope upper \nHI\nexit 1\n", Stderr: "lambdaclaw-tool: refused: no tool nope\n"}
		got.Duration = 0
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{`upper {"text":"hi"}`, "nope {}"}, br.Calls()); diff != "" {
			t.Errorf("bridge calls (-want +got):\n%s", diff)
		}
	})
}

// Bridge is a sandbox.Bridge of two tools, upper and nope (which refuses),
// that keeps its calls.
type Bridge struct {
	mu    sync.Mutex
	calls []string
}

// Tools describes upper and nope.
func (b *Bridge) Tools() []chat.ToolDef {
	return []chat.ToolDef{
		{Name: "nope", Description: "Refuses."},
		{Name: "upper", Description: "Upper-cases text.", Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
	}
}

// Call runs upper, refuses the rest.
func (b *Bridge) Call(_ context.Context, name string, args json.RawMessage) (string, error) {
	b.mu.Lock()
	b.calls = append(b.calls, name+" "+string(args))
	b.mu.Unlock()
	if name != "upper" {
		return "", fmt.Errorf("refused: no tool %s", name)
	}
	var a struct{ Text string }
	if err := json.Unmarshal(args, &a); err != nil {
		return "", err
	}
	return strings.ToUpper(a.Text), nil
}

// Calls returns the calls so far, as "name args".
func (b *Bridge) Calls() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.calls...)
}
