package tests

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// bwrapInstalled skips a test where bubblewrap is missing; make test
// installs it.
func bwrapInstalled(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		t.Skip("bubblewrap is not installed (make test installs it: tests/install-bubblewrap.sh)")
	}
}

// execCall is a scripted exec call.
func execCall(id, command string, timeout int) fakellm.ToolCall {
	args := fmt.Sprintf(`{"command":%q}`, command)
	if timeout > 0 {
		args = fmt.Sprintf(`{"command":%q,"timeout_s":%d}`, command, timeout)
	}
	return fakellm.ToolCall{ID: id, Name: "exec", Arguments: args}
}

// runExec has the model call exec with command in session s of key, and
// returns the tool result the model got back.
func runExec(t *testing.T, g *gateway, fake *fakellm.Server, key, s, command string, timeout int) string {
	t.Helper()
	fake.Reset()
	fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{execCall("call_exec", command, timeout)}}, fakellm.Reply{Content: "ran it"})
	if got := ask(t, g.client(key), "run it", session(s)); got != "ran it" {
		t.Fatalf("reply = %q, want the model's answer after exec", got)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model was called %d times, want 2", len(reqs))
	}
	res, ok := toolResult(reqs[1], "call_exec")
	if !ok {
		t.Fatalf("no exec result in the second model request")
	}
	return res
}

func TestExec(t *testing.T) {
	t.Parallel()
	bwrapInstalled(t)
	fake := newFake(t)
	g := startGateway(t, fake, "sandbox:\n  limits: {output: 256KB}\n")
	full := g.createKey(t, "--name", "full", "--autonomy", "full")
	// The sandbox is probed once the server listens, not before.
	events := waitEvent(t, g, "exec tool offered", nil)
	order := map[string]int{}
	for i, e := range events {
		if m, _ := e["msg"].(string); m == "lambdaclaw listening" || m == "exec tool offered" {
			order[m] = i
		}
	}
	if l, p := order["lambdaclaw listening"], order["exec tool offered"]; l >= p {
		t.Errorf("the sandbox was probed (log line %d) before the server listened (line %d)", p, l)
	}
	planted := filepath.Join(g.home, "planted-secret.txt")
	if err := os.WriteFile(planted, []byte("PLANTED-7f3a9c"), 0o600); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(g.addr)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		command string
		timeout int
		// want are in the result, not are not.
		want, not []string
	}{
		{name: "output and exit code", command: "echo hello; echo oops >&2; exit 3",
			want: []string{"exit code: 3\nstdout:\nhello\nstderr:\noops"}},
		{name: "no network, not even the gateway", command: "bash -c 'echo > /dev/tcp/127.0.0.1/" + u.Port() + "' 2>&1; echo rc=$?; ls /sys/class/net 2>&1",
			want: []string{"Connection refused", "rc=1"}},
		{name: "cannot write /usr", command: "touch /usr/lib/x 2>&1; echo rc=$?",
			want: []string{"Read-only file system", "rc=1"}},
		{name: "a planted secret stays unread", command: "cat " + planted + " ../planted-secret.txt /workspace/../planted-secret.txt 2>&1; grep -rs PLANTED- /workspace /tmp /etc /run /tools; echo end",
			want: []string{"No such file or directory", "end"}, not: []string{"PLANTED-7f3a9c"}},
		{name: "none of the server's environment", command: "env; cat /proc/1/environ",
			want: []string{"HOME=/workspace"}, not: []string{"OPENAI", "LAMBDACLAW", providerKey, g.home}},
		{name: "no host path in /proc", command: "tr '\\0' ' ' < /proc/1/cmdline; echo; cat /proc/[0-9]*/mountinfo /proc/[0-9]*/cmdline; ls -l /proc/[0-9]*/cwd 2>&1",
			// The server runs in its data directory, g.home.
			want: []string{"/opt/lambdaclaw/lambdaclaw sandbox-init --box"}, not: []string{g.home}},
		{name: "a fork bomb", command: "b() { b | b & }; b; sleep 30", timeout: 3,
			want: []string{"stopped: it started more than 256 processes"}},
		{name: "a 2 GB allocation", command: "dd if=/dev/zero of=/dev/null bs=2G count=1",
			want: []string{"exit code: 1", "memory exhausted"}},
		{name: "an infinite loop", command: "while :; do :; done", timeout: 2,
			want: []string{"exit code: 137", "stopped: it ran past its time limit of 2s"}},
		{name: "100 MB of output", command: "head -c 100000000 /dev/zero | tr '\\0' x",
			want: []string{"stopped: it wrote more than 262144 bytes of output", "[output truncated"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			got := runExec(t, g, fake, full, "exec-"+strings.ReplaceAll(tt.name, " ", "-"), tt.command, tt.timeout)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("exec result does not hold %q:\n%s", w, tail(got, 2000))
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("exec result holds %q:\n%s", n, tail(got, 2000))
				}
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %s", d)
			}
			// The server is unaffected.
			resp, err := http.Get(g.addr + "/health")
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("the server does not answer after the command: %v", err)
			}
			resp.Body.Close()
		})
	}
}

// A script calls two tools through the bridge; the transcript holds one
// exec call, and the calls are evented in the run.
func TestExecBridge(t *testing.T) {
	t.Parallel()
	bwrapInstalled(t)
	fake := newFake(t)
	g := startGateway(t, fake, "")
	full := g.createKey(t, "--name", "full", "--autonomy", "full")
	g.writeWorkspaceFile("notes/a.txt", "alpha\n")
	g.writeWorkspaceFile("notes/b.txt", "beta\n")
	script := `set -e
grep -q '^read_file' /tools/index.txt
test -s /tools/list_dir/schema.json
files=$(lambdaclaw-tool list_dir '{"path":"notes"}')
a=$(lambdaclaw-tool read_file '{"path":"notes/a.txt"}')
echo "summary: $(echo "$files" | grep -c txt) files; first says $a"
lambdaclaw-tool exec '{"command":"true"}' || echo "nested exec refused"`
	got := runExec(t, g, fake, full, "bridge", script, 0)
	for _, w := range []string{"exit code: 0", "summary: 2 files; first says alpha", "nested exec refused", "cannot be called from inside exec"} {
		if !strings.Contains(got, w) {
			t.Errorf("exec result does not hold %q:\n%s", w, got)
		}
	}
	var calls []string
	for _, m := range fake.Requests()[1].Messages {
		for _, c := range m.ToolCalls {
			calls = append(calls, c.Name)
		}
	}
	if !slices.Equal(calls, []string{"exec"}) {
		t.Errorf("the transcript holds the calls %v, want the one exec", calls)
	}
	waitEvent(t, g, "tool_call_start", map[string]string{"tool_name": "list_dir"})
	waitEvent(t, g, "tool_call_start", map[string]string{"tool_name": "read_file"})
}

// Under autonomy supervised exec waits for a person's approval, which
// shows the command; read_only is not offered it.
func TestExecPolicy(t *testing.T) {
	t.Parallel()
	bwrapInstalled(t)
	fake := newFake(t)
	g := startGateway(t, fake, "")
	c := g.client(g.firstKey()) // supervised
	s := session("exec-supervised")
	fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{execCall("call_sup", "echo approved > approved.txt", 0)}},
		fakellm.Reply{Content: "done"})
	prompt := ask(t, c, "write it", s)
	for _, w := range []string{"exec", "echo approved > approved.txt", "/yes"} {
		if !strings.Contains(prompt, w) {
			t.Errorf("approval prompt %q does not show %q", prompt, w)
		}
	}
	if _, ok := fileContent(g, "approved.txt"); ok {
		t.Error("the command ran before it was approved")
	}
	if got := ask(t, c, "/yes", s); got != "done" {
		t.Errorf("reply to /yes = %q", got)
	}
	if got, _ := fileContent(g, "approved.txt"); got != "approved\n" {
		t.Errorf("approved.txt = %q after /yes", got)
	}

	fake.Reset()
	ro := g.client(g.createKey(t, "--name", "ro", "--autonomy", "read_only"))
	fake.Enqueue(fakellm.Reply{Content: "hi"})
	ask(t, ro, "hello", session("exec-ro"))
	if tools := fake.Requests()[0].Tools; slices.Contains(tools, "exec") || len(tools) == 0 {
		t.Errorf("a read-only key was offered %v; want tools, but not exec", tools)
	}
}

// Two owners using the same session name get different sandboxes.
func TestExecOwnership(t *testing.T) {
	t.Parallel()
	bwrapInstalled(t)
	fake := newFake(t)
	g := startGateway(t, fake, "")
	one := g.createKey(t, "--name", "one", "--autonomy", "full")
	two := g.createKey(t, "--name", "two", "--autonomy", "full")
	if got := runExec(t, g, fake, one, "same", "echo one > /tmp/mine; cat /tmp/mine", 0); !strings.Contains(got, "stdout:\none") {
		t.Fatalf("first owner: %s", got)
	}
	if got := runExec(t, g, fake, one, "same", "cat /tmp/mine", 0); !strings.Contains(got, "stdout:\none") {
		t.Errorf("the same session did not keep its /tmp: %s", got)
	}
	if got := runExec(t, g, fake, two, "same", "cat /tmp/mine 2>&1; ls -A /tmp", 0); strings.Contains(got, "one") || !strings.Contains(got, "No such file") {
		t.Errorf("another owner's session sees the first's /tmp: %s", got)
	}
}

// With the backend none, or one that does not work, exec is not offered
// and the log says why.
func TestExecNotOffered(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, config, why string }{
		{"none", "sandbox: {backend: none}\n", "sandbox.backend is none"},
		{"fargate locally", "sandbox: {backend: fargate}\n", "fargate runs on AWS only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFake(t)
			g := startGateway(t, fake, tt.config)
			fake.Enqueue(fakellm.Reply{Content: "hi"})
			ask(t, g.client(g.createKey(t, "--autonomy", "full")), "hello")
			if tools := fake.Requests()[0].Tools; slices.Contains(tools, "exec") {
				t.Errorf("exec offered with %s", tt.config)
			}
			if !strings.Contains(g.stderr.String(), tt.why) {
				t.Errorf("the log does not say %q", tt.why)
			}
		})
	}
}

// A script that succeeded is saved as a sandbox_script skill and run again
// by name.
func TestExecSavedScript(t *testing.T) {
	t.Parallel()
	bwrapInstalled(t)
	fake := newFake(t)
	g := startGateway(t, fake, "")
	c := g.client(g.createKey(t, "--name", "full", "--autonomy", "full"))
	s := session("saved")
	fake.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_save", Name: "exec",
			Arguments: `{"command":"ls /workspace | wc -l","save_as":{"name":"count_files","description":"Counts the workspace's files."}}`}}},
		fakellm.Reply{Content: "saved"},
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_run", Name: "exec", Arguments: `{"script":"count_files"}`}}},
		fakellm.Reply{Content: "ran"})
	ask(t, c, "count and save", s)
	ask(t, c, "run it again", s)
	reqs := fake.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d model requests, want 4", len(reqs))
	}
	saved, _ := toolResult(reqs[1], "call_save")
	ran, _ := toolResult(reqs[3], "call_run")
	if !strings.Contains(saved, `saved as the skill count_files`) {
		t.Errorf("save: %s", saved)
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(saved, "exit code: 0\nstdout:\n"), "\n")
	if !strings.HasPrefix(ran, "exit code: 0\nstdout:\n") || first == "" || !strings.Contains(ran, first) {
		t.Errorf("the saved script ran %q; the first run printed %q", ran, first)
	}
	md, ok := fileContent(g, "skills/count_files/SKILL.md")
	if !ok || !strings.Contains(md, "sandbox_script") {
		t.Errorf("SKILL.md = %q", md)
	}
}

// One key's exec cannot starve the others: a command writing a gigabyte
// into /tmp or filling the workspace is cut at the sandbox's disk limit or
// the workspace quota, the data directory does not grow, and another key's
// write_file still works.
func TestExecDisk(t *testing.T) {
	t.Parallel()
	bwrapInstalled(t)
	fake := newFake(t)
	g := startGateway(t, fake, "sandbox:\n  limits: {disk: 8MB}\nlimits:\n  workspace_quota_bytes: 5000000\n")
	hog := g.createKey(t, "--name", "hog", "--autonomy", "full")
	other := g.createKey(t, "--name", "other", "--autonomy", "full")
	waitEvent(t, g, "exec tool offered", nil)
	for _, tt := range []struct{ name, command string }{
		{"a gigabyte into /tmp", "head -c 1100000000 /dev/zero > /tmp/big"},
		{"the workspace filled", "for i in 1 2 3; do head -c 3000000 /dev/zero > big$i.bin; done"},
	} {
		got := runExec(t, g, fake, hog, "hog", tt.command, 0)
		if !strings.Contains(got, "stopped: it wrote more than its disk limit of 8 MiB") {
			t.Errorf("%s: the result does not give the disk limit:\n%s", tt.name, tail(got, 2000))
		}
	}
	var home int64
	filepath.WalkDir(g.home, func(_ string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				home += fi.Size()
			}
		}
		return err
	})
	if home > 30<<20 {
		t.Errorf("the data directory holds %d bytes after the commands", home)
	}
	fake.Reset()
	fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_w", Name: "write_file", Arguments: `{"path":"mine.txt","content":"still works"}`}}},
		fakellm.Reply{Content: "written"})
	ask(t, g.client(other), "write it", session("other"))
	if res, _ := toolResult(fake.Requests()[1], "call_w"); !strings.Contains(res, "created mine.txt") {
		t.Errorf("another key's write_file after the commands: %s", res)
	}
}

// A bootstrap file that cannot be read (here a link out of the workspace)
// is left out of the prompt with a warning event: every key's turns go
// on, and the console answers 404 for it. exec cannot leave such a link.
func TestUnreadableBootstrapFile(t *testing.T) {
	t.Parallel()
	bwrapInstalled(t)
	fake := newFake(t)
	g := startGateway(t, fake, "")
	full := g.createKey(t, "--name", "full", "--autonomy", "full")
	g.writeWorkspaceFile("SOUL.md", "You are calm.")
	got := runExec(t, g, fake, full, "link", "ln -sf ../../config.yaml SOUL.md && echo linked", 0)
	if !strings.Contains(got, "linked") || !strings.Contains(got, "not written back") {
		t.Errorf("exec result:\n%s", got)
	}
	if soul, _ := fileContent(g, "SOUL.md"); soul != "You are calm." {
		t.Errorf("SOUL.md after exec = %q", soul)
	}
	// The link made by someone else on the host.
	soul := filepath.Join(g.workspace(), "SOUL.md")
	if err := os.Remove(soul); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../config.yaml", soul); err != nil {
		t.Fatal(err)
	}
	// Every turn answers; the prompt, rebuilt within a second
	// (prompt.DefaultRefresh), leaves SOUL.md out.
	holdsSoul := func(key string) bool {
		fake.Reset()
		fake.Enqueue(fakellm.Reply{Content: "fine"})
		if got := ask(t, g.client(key), "hello", session("after-link")); got != "fine" {
			t.Fatalf("a turn after the link: %q", got)
		}
		return slices.ContainsFunc(fake.Requests()[0].Messages, func(m fakellm.Message) bool { return strings.Contains(m.Content, "## SOUL.md") })
	}
	for deadline := time.Now().Add(5 * time.Second); holdsSoul(full); {
		if time.Now().After(deadline) {
			t.Fatal("the prompt still holds SOUL.md")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if holdsSoul(g.firstKey()) {
		t.Error("another key's prompt holds SOUL.md")
	}
	waitEvent(t, g, "prompt_file_skipped", map[string]string{"agent": "default"})
	for path, status := range map[string]int{"SOUL.md": 404, "a%00b": 400} {
		req, _ := http.NewRequest("GET", g.addr+"/v1/lambdaclaw/agents/default/files/"+path, nil)
		req.Header.Set("Authorization", "Bearer "+full)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != status {
			t.Errorf("console file %s: %d, want %d", path, resp.StatusCode, status)
		}
	}
}
