package exectool

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
	"github.com/lambdaclaw/lambdaclaw/shared/core/skill"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
)

// fakeBackend answers every command with res and keeps the requests.
type fakeBackend struct {
	res  sandbox.Result
	err  error
	reqs []sandbox.Request
}

func (f *fakeBackend) Exec(_ context.Context, req sandbox.Request) (sandbox.Result, error) {
	f.reqs = append(f.reqs, req)
	return f.res, f.err
}

func (f *fakeBackend) Probe(context.Context) error { return nil }

type caller struct{}

func (caller) Tools() []chat.ToolDef { return nil }
func (caller) Call(context.Context, string, json.RawMessage) (string, error) {
	return "", errors.New("no")
}

func TestCall(t *testing.T) {
	limits := sandbox.Limits{WallTime: 20 * time.Second}.WithDefaults()
	tests := []struct {
		name     string
		args     string
		res      sandbox.Result
		rules    Rules
		want     string
		wantErr  string
		wantReq  *sandbox.Request
		noBridge bool
	}{
		{name: "output and exit code", args: `{"command":"ls"}`,
			res:     sandbox.Result{Stdout: "a\nb\n", Stderr: "warn\n", ExitCode: 2},
			want:    "exit code: 2\nstdout:\na\nb\nstderr:\nwarn",
			wantReq: &sandbox.Request{Owner: "key:1", Agent: "a", SessionID: "s", Command: "ls", Limits: limits}},
		{name: "a timeout", args: `{"command":"sleep 100","timeout_s":5}`,
			res:     sandbox.Result{ExitCode: 137, Cut: sandbox.WallTime},
			want:    "exit code: 137\nstopped: it ran past its time limit of 5s and was killed\nstdout:",
			wantReq: &sandbox.Request{Owner: "key:1", Agent: "a", SessionID: "s", Command: "sleep 100", Timeout: 5 * time.Second, Limits: limits}},
		{name: "over the disk", args: `{"command":"dd if=/dev/zero of=/tmp/x"}`,
			res: sandbox.Result{ExitCode: 1, Cut: sandbox.Disk, Stderr: "dd: No space left on device\n"},
			want: "exit code: 1\nstopped: it wrote more than its disk limit of 256 MiB (its /tmp and what it adds to /workspace together) or than the workspace's quota has room for; " +
				"writes failed with \"No space left on device\", and what did not fit was not kept\nstdout:\nstderr:\ndd: No space left on device"},
		{name: "stderr scrubbed", args: `{"command":"env"}`,
			res:  sandbox.Result{Stderr: "token=sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD\n"},
			want: "exit code: 0\nstdout:\nstderr:\ntoken=[REDACTED]"},
		{name: "denied by a rule", args: `{"command":"rm -rf /workspace"}`, rules: Rules{Deny: []string{"rm *"}},
			wantErr: `refused: the command matches the deny rule "rm *" of this agent`},
		{name: "not allowed", args: `{"command":"curl x"}`, rules: Rules{Allow: []string{"python3 *", "ls*"}},
			wantErr: "refused: the command matches none of this agent's allow rules (python3 *, ls*)"},
		{name: "allowed", args: `{"command":"  ls -la "}`, rules: Rules{Allow: []string{"ls*"}, Deny: []string{"*rm*"}},
			want: "exit code: 0\nstdout:"},
		{name: "no command", args: `{}`, wantErr: "command is required"},
		{name: "unknown argument", args: `{"cmd":"ls"}`, wantErr: "unknown argument"},
		{name: "bad timeout", args: `{"command":"ls","timeout_s":0}`, wantErr: "timeout_s must be at least 1"},
		{name: "command and script", args: `{"command":"ls","script":"x"}`, wantErr: "not both"},
		{name: "too long", args: `{"command":"` + strings.Repeat("x", MaxCommand+1) + `"}`, wantErr: "over 65536 bytes"},
		{name: "a missing script", args: `{"script":"nope"}`, wantErr: `there is no saved script "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := &fakeBackend{res: tt.res}
			et, err := New(Config{Backend: fb, Settings: func(agent string) Settings {
				return Settings{Limits: sandbox.Limits{WallTime: 20 * time.Second}, Rules: tt.rules}
			}})
			if err != nil {
				t.Fatal(err)
			}
			ws := osroot.New(t.TempDir())
			got, err := et.Call(context.Background(), tool.Env{Agent: "a", SessionID: "s", Owner: "key:1", Workspace: ws}, json.RawMessage(tt.args))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Call = %q, %v; want error %q", got, err, tt.wantErr)
				}
				if len(fb.reqs) != 0 {
					t.Errorf("a refused command ran: %+v", fb.reqs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Call (-want +got):\n%s", diff)
			}
			if tt.wantReq != nil {
				tt.wantReq.Workspace = ws
				if diff := cmp.Diff(*tt.wantReq, fb.reqs[0], cmp.Comparer(func(a, b *osroot.FS) bool { return a == b })); diff != "" {
					t.Errorf("request (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// writingBackend is a backend whose command writes n bytes into the
// workspace directory dir.
type writingBackend struct {
	dir  string
	n    int
	reqs []sandbox.Request
}

func (w *writingBackend) Exec(_ context.Context, req sandbox.Request) (sandbox.Result, error) {
	w.reqs = append(w.reqs, req)
	return sandbox.Result{}, os.WriteFile(filepath.Join(w.dir, "big.bin"), make([]byte, w.n), 0o644)
}

func (w *writingBackend) Probe(context.Context) error { return nil }

// What a command adds to the workspace counts against the quota the file
// tools share: the request carries the quota, and the next write measures
// the workspace again.
func TestQuota(t *testing.T) {
	dir := t.TempDir()
	quota, err := workspace.NewQuota(workspace.Limits{MaxFileBytes: 1000, WorkspaceQuotaBytes: 2000})
	if err != nil {
		t.Fatal(err)
	}
	env := tool.Env{Agent: "a", SessionID: "s", Owner: "key:1", Workspace: osroot.New(dir)}
	w, err := quota.Begin(context.Background(), env) // measured: empty
	if err != nil {
		t.Fatal(err)
	}
	w.End()
	wb := &writingBackend{dir: dir, n: 1900}
	et, err := New(Config{Backend: wb, Quota: quota})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := et.Call(context.Background(), env, json.RawMessage(`{"command":"fill"}`)); err != nil {
		t.Fatal(err)
	}
	if got := wb.reqs[0].Quota; got != 2000 {
		t.Errorf("the request's quota is %d, want 2000", got)
	}
	w, err = quota.Begin(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	defer w.End()
	if err := w.Fit("note.txt", 200, 200); !errors.Is(err, workspace.ErrLimit) {
		t.Errorf("a write past the quota after exec filled the workspace: %v", err)
	}
}

// startingBackend takes a minute to start beyond a command's wall time
// (sandbox.Bounded).
type startingBackend struct{ fakeBackend }

func (*startingBackend) Bound(wall time.Duration) time.Duration { return wall + time.Minute }

// TestPolicy: exec is an external effect; its calls' timeout is the
// loop's, or a backend's bound for the agents' longest wall time.
func TestPolicy(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want tool.Policy
	}{
		{"a local backend: the loop's timeout", Config{Backend: &fakeBackend{}, MaxWallTime: 50 * time.Second}, tool.Policy{Effect: tool.External}},
		{"a backend that starts workers", Config{Backend: &startingBackend{}, MaxWallTime: 50 * time.Second},
			tool.Policy{Effect: tool.External, Timeout: time.Minute + 50*time.Second}},
		{"the default wall time", Config{Backend: &startingBackend{}}, tool.Policy{Effect: tool.External, Timeout: time.Minute + 30*time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			et, err := New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, et.Policy()); diff != "" {
				t.Errorf("policy (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBridgeHandedOver(t *testing.T) {
	fb := &fakeBackend{}
	et, _ := New(Config{Backend: fb})
	if _, err := et.Call(context.Background(), tool.Env{Agent: "a", Tools: caller{}}, json.RawMessage(`{"command":"x"}`)); err != nil {
		t.Fatal(err)
	}
	if _, ok := fb.reqs[0].Bridge.(caller); !ok {
		t.Errorf("the bridge is %T, want the env's caller", fb.reqs[0].Bridge)
	}
}

func TestSaveAndRunScript(t *testing.T) {
	dir := t.TempDir()
	ws := osroot.New(dir)
	env := tool.Env{Agent: "a", SessionID: "s", Owner: "key:1", Workspace: ws}
	tests := []struct {
		name string
		args string
		res  sandbox.Result
		want string
	}{
		{"a failure is not saved", `{"command":"false","save_as":{"name":"sum","description":"Sums."}}`, sandbox.Result{ExitCode: 1},
			"exit code: 1\nstdout:\nnot saved: only a command that succeeds (exit code 0) is saved as a skill"},
		{"a bad name", `{"command":"true","save_as":{"name":"../x","description":"Sums."}}`, sandbox.Result{},
			`exit code: 0` + "\nstdout:\nnot saved: invalid skill name \"../x\": use 1 to 64 lowercase letters, digits, '-' and '_', starting with a letter or digit"},
		{"a success is saved", `{"command":"echo 3","save_as":{"name":"sum","description":"Sums the numbers."}}`, sandbox.Result{Stdout: "3\n"},
			"exit code: 0\nstdout:\n3\nsaved as the skill sum: run it again with {\"script\": \"sum\"}"},
	}
	fb := &fakeBackend{}
	et, _ := New(Config{Backend: fb})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb.res = tt.res
			got, err := et.Call(context.Background(), env, json.RawMessage(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	md, err := os.ReadFile(filepath.Join(dir, "skills", "sum", "SKILL.md"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := skill.Parse(md)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "sum" || s.Description != "Sums the numbers." || typeOf(s) != SkillType {
		t.Errorf("saved skill %+v", s)
	}
	if script, _ := os.ReadFile(filepath.Join(dir, "skills", "sum", "script.sh")); string(script) != "echo 3\n" {
		t.Errorf("script.sh = %q", script)
	}
	if _, err := et.Call(context.Background(), env, json.RawMessage(`{"script":"sum"}`)); err != nil {
		t.Fatal(err)
	}
	if got := fb.reqs[len(fb.reqs)-1].Command; got != "sh /workspace/skills/sum/script.sh" {
		t.Errorf("running the saved script ran %q", got)
	}
	// A skill that is not a saved script is not run.
	if err := os.MkdirAll(filepath.Join(dir, "skills", "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "skills", "notes", "SKILL.md"), []byte("---\nname: notes\ndescription: Notes.\n---\nbody\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := et.Call(context.Background(), env, json.RawMessage(`{"script":"notes"}`)); err == nil || !strings.Contains(err.Error(), "not a saved script") {
		t.Errorf("running a plain skill: %v", err)
	}
}

func TestSandboxFailure(t *testing.T) {
	et, _ := New(Config{Backend: &fakeBackend{err: errors.New("boom")}})
	if _, err := et.Call(context.Background(), tool.Env{Agent: "a"}, json.RawMessage(`{"command":"x"}`)); err == nil || err.Error() != "the sandbox failed: boom" {
		t.Errorf("Call = %v", err)
	}
}
