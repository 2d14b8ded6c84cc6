package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
)

func TestWSURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"127.0.0.1:8080", "ws://127.0.0.1:8080/ws"},
		{"localhost:9", "ws://localhost:9/ws"},
		{"http://127.0.0.1:8080", "ws://127.0.0.1:8080/ws"},
		{"http://127.0.0.1:8080/", "ws://127.0.0.1:8080/ws"},
		{"https://claw.example.com", "wss://claw.example.com/ws"},
		{"wss://claw.example.com/prefix/ws", "wss://claw.example.com/prefix/ws"},
	}
	for _, tt := range tests {
		if got, err := wsURL(tt.in); err != nil || got != tt.want {
			t.Errorf("wsURL(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"ftp://x:1", "http://", "://"} {
		if got, err := wsURL(bad); err == nil {
			t.Errorf("wsURL(%q) = %q, want an error", bad, got)
		}
	}
}

func TestChatNeedsKey(t *testing.T) {
	t.Setenv("LAMBDACLAW_API_KEY", "")
	var stdout, stderr bytes.Buffer
	err := chatCommand(context.Background(), []string{"--addr", "127.0.0.1:1"}, strings.NewReader("hi\n"), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "export LAMBDACLAW_API_KEY=$(lambdaclaw keys create --name chat)") {
		t.Errorf("err = %v, want one that says how to get a key", err)
	}
}

// scriptedServer answers /ws frames: a message with an ack, two deltas and
// a final, a reset with an ack; closeOn closes the connection instead when
// a message has that text.
func scriptedServer(t *testing.T, closeOn string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer lc_test" {
			http.Error(w, `{"error":{"message":"invalid API key"}}`, http.StatusUnauthorized)
			return
		}
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := context.Background()
		send := func(v map[string]any) {
			b, _ := json.Marshal(v)
			c.Write(ctx, websocket.MessageText, b)
		}
		for n := 1; ; n++ {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			var f chatFrame
			json.Unmarshal(b, &f)
			switch {
			case f.Type == "reset":
				send(map[string]any{"type": "ack", "id": f.ID, "session_id": "s1", "duplicate": false})
			case f.Text == closeOn:
				c.Close(websocket.StatusInternalError, "boom")
				return
			default:
				run := "r" + string(rune('0'+n))
				send(map[string]any{"type": "ack", "id": f.ID, "run_id": run, "session_id": "s1", "duplicate": false})
				send(map[string]any{"type": "delta", "run_id": run, "text": "Hel"})
				send(map[string]any{"type": "delta", "run_id": run, "text": "lo " + f.User})
				send(map[string]any{"type": "final", "run_id": run, "text": "Hello " + f.User})
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestChatTerminal(t *testing.T) {
	addr := scriptedServer(t, "")
	old := stdinIsTerminal
	stdinIsTerminal = func() bool { return true }
	t.Cleanup(func() { stdinIsTerminal = old })
	var stdout, stderr bytes.Buffer
	err := chatCommand(context.Background(), []string{"--addr", addr, "--key", "lc_test", "--user", "ada"},
		strings.NewReader("hi\n/agent coder\nhi\n/new\n/exit\nnever sent\n"), &stdout, &stderr)
	if err != nil {
		t.Fatalf("chat: %v\nstderr: %s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"you> default> Hello ada\n", "now talking to coder\n", "you> coder> Hello ada\n", "(new conversation with coder)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout does not contain %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "Hello ada") != 2 {
		t.Errorf("stdout:\n%s\nwant two replies: nothing after /exit", out)
	}
}

func TestChatConnectionLost(t *testing.T) {
	addr := scriptedServer(t, "crash")
	old := stdinIsTerminal
	stdinIsTerminal = func() bool { return false }
	t.Cleanup(func() { stdinIsTerminal = old })
	var stdout, stderr bytes.Buffer
	err := chatCommand(context.Background(), []string{"--addr", addr, "--key", "lc_test", "--user", "bo"},
		strings.NewReader("hi\ncrash\nnever sent\n"), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "connection lost") {
		t.Errorf("err = %v, want connection lost", err)
	}
	if got := stdout.String(); got != "Hello bo\n" {
		t.Errorf("stdout = %q, want the first reply only", got)
	}
	err = chatCommand(context.Background(), []string{"--addr", addr, "--key", "lc_wrong"}, strings.NewReader("hi\n"), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "refused the API key: invalid API key") {
		t.Errorf("err = %v, want the server's refusal", err)
	}
}
