package tests

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// keyID returns the id `lambdaclaw keys list` shows for the key named name.
func (g *gateway) keyID(t *testing.T, name string) string {
	t.Helper()
	for _, line := range strings.Split(g.cli(t, "keys", "list"), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] == name {
			return f[0]
		}
	}
	t.Fatalf("no key named %s in keys list", name)
	return ""
}

// seen reports whether any request the fake model got holds text.
func seen(reqs []fakellm.Request, text string) bool {
	for _, r := range reqs {
		for _, m := range r.Messages {
			if strings.Contains(m.Content, text) {
				return true
			}
		}
	}
	return false
}

// A session belongs to the key that made it: another key sending the same
// session key, or the same WebSocket user, meets a session of its own and
// learns nothing of the first.
func TestSessionsBelongToTheirKey(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := newGateway(t, fake, "")
	alice := g.createKey(t, "--name", "alice", "--autonomy", "supervised")
	mallory := g.createKey(t, "--name", "mallory", "--autonomy", "supervised")
	g.start()

	ask(t, g.client(alice), "my locker code is 4711", session("shared"))
	before := len(fake.Requests())
	ask(t, g.client(mallory), "what is my locker code?", session("shared"))
	if reqs := fake.Requests()[before:]; seen(reqs, "4711") {
		t.Errorf("another key's request with the same session key carried the first key's history")
	}

	wa := g.dialWS(t, alice)
	wa.message("a1", "my bank PIN is 9182")
	_, final := wa.reply(wa.ack("a1", false))
	if final.Type != "final" {
		t.Fatalf("alice's WebSocket reply %+v", final)
	}
	before = len(fake.Requests())
	wm := g.dialWS(t, mallory)
	wm.message("m1", "what is my bank PIN?") // the same user name, ws-user
	if _, final := wm.reply(wm.ack("m1", false)); final.Type != "final" {
		t.Fatalf("mallory's WebSocket reply %+v", final)
	}
	if reqs := fake.Requests()[before:]; seen(reqs, "9182") {
		t.Errorf("the same WebSocket user under another key joined the first key's session")
	}
}

// A person linked across two keys shares one session; the read-only key
// cannot approve what the session waits for, the supervised one can.
func TestApprovalNeedsTheKeysAutonomy(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := newGateway(t, fake, "")
	writer := g.createKey(t, "--name", "writer", "--autonomy", "supervised")
	reader := g.createKey(t, "--name", "reader", "--autonomy", "read_only")
	config := "sessions:\n  users:\n    ada: [api:" + g.keyID(t, "writer") + "/notes, api:" + g.keyID(t, "reader") + "/notes]\n"
	if err := os.WriteFile(filepath.Join(g.home, "config.yaml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	g.start()

	fake.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_w", Name: "write_file", Arguments: `{"path":"todo.txt","content":"buy milk"}`}}},
		fakellm.Reply{Content: "Written."},
	)
	body := `{"model":"default","messages":[{"role":"user","content":"%s"}]}`
	sess := map[string]string{"X-Lambdaclaw-Session-Key": "notes"}
	resp, b := g.post(t, writer, strings.Replace(body, "%s", "note: buy milk", 1), sess)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "Approval needed") {
		t.Fatalf("first turn = %d %s; want the approval prompt", resp.StatusCode, b)
	}
	resp, b = g.post(t, reader, strings.Replace(body, "%s", "/yes", 1), sess)
	wantErrorJSON(t, resp, b, http.StatusForbidden, "permission_denied")
	if _, err := os.Stat(filepath.Join(g.workspace(), "todo.txt")); err == nil {
		t.Fatal("the read-only key's /yes wrote the file")
	}
	resp, b = g.post(t, writer, strings.Replace(body, "%s", "/yes", 1), sess)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "Written.") {
		t.Fatalf("the writer's /yes = %d %s", resp.StatusCode, b)
	}
	if got, err := os.ReadFile(filepath.Join(g.workspace(), "todo.txt")); err != nil || string(got) != "buy milk" {
		t.Errorf("todo.txt = %q, %v", got, err)
	}
}

// A tool receives its arguments exactly as the model sent them, credential
// included; history, logs and what the client sees carry the redacted form.
func TestToolGetsWhatTheModelSent(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := newGateway(t, fake, "")
	key := g.createKey(t, "--name", "ops", "--autonomy", "full")
	g.start()
	const secret = "sk-proj-Q7fV2mLx9TzR4bWc8NpK1sHd6JyG3uAe5XoZ0iCvBnM7qLwE2rTy8UoP4aSd"
	content := "OPENAI_API_KEY=" + secret + "\\nREGION=eu-west-1\\n"
	fake.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_env", Name: "write_file", Arguments: `{"path":".env","content":"` + content + `"}`}}},
		fakellm.Reply{Content: "Saved."},
	)
	c := g.client(key)
	ask(t, c, "save my .env", session("env"))
	got, err := os.ReadFile(filepath.Join(g.workspace(), ".env"))
	if err != nil || string(got) != "OPENAI_API_KEY="+secret+"\nREGION=eu-west-1\n" {
		t.Errorf(".env on disk = %q, %v; want exactly what the model wrote", got, err)
	}
	ask(t, c, "thanks", session("env"))
	reqs := fake.Requests()
	last := reqs[len(reqs)-1]
	var recorded string
	for _, m := range last.Messages {
		for _, tc := range m.ToolCalls {
			recorded = tc.Arguments
		}
	}
	if strings.Contains(recorded, secret) || !strings.Contains(recorded, "[REDACTED]") || !strings.Contains(recorded, "eu-west-1") {
		t.Errorf("the call in history = %s; want it redacted, the rest kept", recorded)
	}
	g.stop()
	if strings.Contains(g.stderr.String(), secret) {
		t.Error("the server log holds the secret")
	}
}
