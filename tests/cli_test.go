package tests

import (
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// modelIDs lists GET /v1/models for key.
func (g *gateway) modelIDs(t *testing.T, key string) []string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, g.addr+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, m := range list.Data {
		ids = append(ids, m.ID)
	}
	return ids
}

// TestCLIExitStatus checks the exit status and streams of the real binary:
// help on stdout with status 0, mistakes on stderr with status 1.
func TestCLIExitStatus(t *testing.T) {
	t.Parallel()
	g := newGateway(t, nil, "")
	tests := []struct {
		args       []string
		status     int
		wantStdout string
		wantStderr string
	}{
		{[]string{"--help"}, 0, "lambdaclaw — an AI agent gateway", ""},
		{[]string{"serve", "--help"}, 0, "usage: lambdaclaw serve [flags]", ""},
		{[]string{"agent", "delete", "default", "--help"}, 0, "usage: lambdaclaw agent delete NAME [flags]", ""},
		{[]string{"keys", "create", "-h"}, 0, "usage: lambdaclaw keys create [flags]", ""},
		{[]string{"telegram", "setup", "--help"}, 0, "usage: lambdaclaw telegram setup [flags]", ""},
		{[]string{"frobnicate"}, 1, "", `unknown command "frobnicate"`},
		{[]string{"keys", "create", "--bogus"}, 1, "", "flag provided but not defined: -bogus"},
		{[]string{"keys", "create", "--rate", "-5"}, 1, "", "lambdaclaw: --rate -5: a key's rate limit is a number of requests per minute, at least 1"},
		{[]string{"keys", "create", "--autonomy", "god"}, 1, "", `lambdaclaw: --autonomy: unknown autonomy level "god"`},
		{[]string{"keys", "create", "--agents", "nope"}, 1, "", `lambdaclaw: --agents: no agent "nope"; the agents are: default`},
		{[]string{"agent", "show", "nope"}, 1, "", `lambdaclaw: no agent "nope": there are no agents yet`},
	}
	for _, tt := range tests {
		stdout, stderr, status := g.run(t, tt.args...)
		if status != tt.status || !strings.HasPrefix(stdout, tt.wantStdout) || !strings.Contains(stderr, tt.wantStderr) {
			t.Errorf("lambdaclaw %s: status %d, stdout %q, stderr %q; want status %d, stdout starting %q, stderr containing %q",
				strings.Join(tt.args, " "), status, stdout, stderr, tt.status, tt.wantStdout, tt.wantStderr)
		}
	}
	if _, _, status := g.run(t, "keys", "list"); status != 1 {
		t.Errorf("keys list on an empty home: status %d, want 1", status)
	}
	if out, _, _ := g.run(t, "agent", "list"); out != "" {
		t.Errorf("agent list after the failed commands = %q, want no agent created", out)
	}
}

// TestAgentsWhileServing creates and deletes agents while the server runs:
// they are served, and stop being served, without a restart.
func TestAgentsWhileServing(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	key := g.firstKey()
	if diff := cmp.Diff([]string{"default"}, g.modelIDs(t, key)); diff != "" {
		t.Fatalf("models at start (-want +got):\n%s", diff)
	}
	g.cli(t, "agent", "create", "helper")
	if diff := cmp.Diff([]string{"default", "helper"}, g.modelIDs(t, key)); diff != "" {
		t.Errorf("models after agent create (-want +got):\n%s", diff)
	}
	// A model lookup and a chat right after creating, without a listing
	// in between.
	g.cli(t, "agent", "create", "scribe")
	resp, body := g.post(t, key, `{"model":"scribe","messages":[{"role":"user","content":"hi scribe"}]}`, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "echo: hi scribe") {
		t.Fatalf("chat with a new agent: %d %s", resp.StatusCode, body)
	}
	// The WebSocket chat finds it too.
	stdout, stderr, err := g.chat(t, "hello\n", "--addr", g.addr, "--key", key, "--agent", "helper")
	if err != nil || stdout != "echo: hello\n" {
		t.Errorf("chat --agent helper: %v, stdout %q, stderr %q", err, stdout, stderr)
	}

	g.cli(t, "agent", "delete", "helper", "--yes")
	if diff := cmp.Diff([]string{"default", "scribe"}, g.modelIDs(t, key)); diff != "" {
		t.Errorf("models after agent delete (-want +got):\n%s", diff)
	}
	// A lookup trusts what the server knows for a second at most.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, body := g.post(t, key, `{"model":"helper","messages":[{"role":"user","content":"still there?"}]}`, nil)
		if resp.StatusCode == http.StatusNotFound {
			wantErrorJSON(t, resp, body, http.StatusNotFound, "model_not_found")
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deleted agent is still served 10s later: %d %s", resp.StatusCode, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if g.cmd == nil {
		t.Fatal("the server exited")
	}
}

// TestChatNamesMissingAgents checks that chat refuses an agent that does
// not exist, or that the key may not use, and lists those it may use.
func TestChatNamesMissingAgents(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	g.firstKey()
	g.cli(t, "agent", "create", "writer")
	g.cli(t, "agent", "create", "coder")
	key := g.createKey(t, "--agents", "writer,default")

	_, stderr, err := g.chat(t, "hi\n", "--addr", g.addr, "--key", key, "--agent", "nope")
	if err == nil || !strings.Contains(stderr, `no agent "nope" that this API key may use; it may use: default, writer`) {
		t.Errorf("chat --agent nope: err %v, stderr %q", err, stderr)
	}
	_, stderr, err = g.chat(t, "hi\n", "--addr", g.addr, "--key", key, "--agent", "coder")
	if err == nil || !strings.Contains(stderr, `no agent "coder" that this API key may use; it may use: default, writer`) {
		t.Errorf("chat --agent coder with a key for writer and default: err %v, stderr %q", err, stderr)
	}
	stdout, stderr, err := g.chat(t, "/agent nope\nhi\n", "--addr", g.addr, "--key", key)
	if err == nil || !strings.Contains(stderr, `no agent "nope" that this API key may use; it may use: default, writer; still talking to default`) {
		t.Errorf("/agent nope: err %v, stderr %q", err, stderr)
	}
	if stdout != "" {
		t.Errorf("/agent nope from a pipe: stdout %q; want nothing sent after it", stdout)
	}
	stdout, stderr, err = g.chat(t, "/agent writer\nhi\n", "--addr", g.addr, "--key", key)
	if err != nil || stdout != "echo: hi\n" {
		t.Errorf("/agent writer: err %v, stdout %q, stderr %q", err, stdout, stderr)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("the model got %d requests, want 1 (only the message to writer)", n)
	}
}

// TestChatReconnectsAfterRestart restarts the server under a running
// `lambdaclaw chat`: it reconnects, sends the line typed meanwhile and
// carries on with the same conversation.
func TestChatReconnectsAfterRestart(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	fake.SetDefault(fakellm.Echo)
	g := startGateway(t, fake, "")
	key := g.firstKey()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "chat", "--addr", g.addr, "--key", key, "--user", "restarter")
	cmd.Env = g.env
	cmd.Dir = g.home
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-exited
		if t.Failed() {
			t.Logf("chat stdout:\n%s\nchat stderr:\n%s", stdout.String(), stderr.String())
		}
	})
	wait := func(name string, b *syncBuffer, want string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(b.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("chat %s does not contain %q after 30s", name, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	write := func(line string) {
		t.Helper()
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}

	write("before the restart")
	wait("stdout", &stdout, "echo: before the restart\n")
	g.stop()
	wait("stderr", &stderr, "connection lost (the server shut down); reconnecting…")
	write("during the restart")
	wait("stderr", &stderr, `not connected: the message "during the restart" is sent when the connection is back`)
	g.start()
	wait("stdout", &stdout, "echo: during the restart\n")
	write("after the restart")
	wait("stdout", &stdout, "echo: after the restart\n")
	stdin.Close()
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Errorf("chat exited with %v, want status 0", err)
		}
	case <-ctx.Done():
		t.Fatal("chat did not exit after the end of its input")
	}
	if got, want := stdout.String(), "echo: before the restart\necho: during the restart\necho: after the restart\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if !strings.Contains(stderr.String(), "reconnected") {
		t.Errorf("stderr = %q, want it to say it reconnected", stderr.String())
	}
	reqs := fake.Requests()
	var users []string
	for _, m := range conversation(reqs[len(reqs)-1].Messages) {
		if m.Role == "user" {
			users = append(users, m.Content)
		}
	}
	if want := []string{"before the restart", "during the restart", "after the restart"}; !slices.Equal(users, want) {
		t.Errorf("the last request's user messages = %q, want the whole conversation %q, each once", users, want)
	}
}

// TestSecondServe: a second `lambdaclaw serve` on the same home, or on
// the port of another server, stops before it touches anything, with one
// clear line and status 1 (issue 26: it opened the database, resumed the
// first server's runs and logged errors before failing on the port).
func TestSecondServe(t *testing.T) {
	t.Parallel()
	g := startGateway(t, nil, "")
	hostPort := strings.TrimPrefix(g.addr, "http://")

	other := newGateway(t, nil, "")
	for _, tt := range []struct {
		name string
		g    *gateway
		addr string
		want string
	}{
		{"same home", g, "127.0.0.1:0", "lambdaclaw: another lambdaclaw serve (pid "},
		{"same port", other, hostPort, "lambdaclaw: listen on " + hostPort + ": the address is in use, by another server: stop it, or pass --addr"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := entries(t, tt.g.home)
			// A second server that served would be stopped by the deadline.
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, "serve", "--addr", tt.addr)
			cmd.Env, cmd.Dir = tt.g.env, tt.g.home
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.Run()
			status := cmd.ProcessState.ExitCode()
			if status != 1 || stdout.Len() != 0 || !strings.HasPrefix(stderr.String(), tt.want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("second serve: status %d, stdout %q, stderr %q; want status 1, nothing on stdout, one line starting %q", status, stdout.String(), stderr.String(), tt.want)
			}
			// (The first server writes its own home meanwhile.)
			if after := entries(t, tt.g.home); tt.g == other && !slices.Equal(before, after) {
				t.Errorf("the second serve changed the home: %v, then %v", before, after)
			}
		})
	}
	// The first server serves on; once it stopped, the home is free.
	resp, err := http.Get(g.addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the first server's /health: %s", resp.Status)
	}
	g.stop()
	g.start()
}

// entries lists the names under dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		out = append(out, path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
