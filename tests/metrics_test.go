package tests

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// GET /metrics serves the turn, token and tool metrics in Prometheus's
// text format, to admin keys only: no key is 401, another key 403.
func TestMetrics(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	g.writeWorkspaceFile("notes.txt", "hello")
	fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{{Name: "read_file", Arguments: `{"path":"notes.txt"}`}}}, fakellm.Reply{Content: "done"})
	c := g.client(g.firstKey())
	ask(t, c, "read notes.txt")

	get := func(key string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, g.addr+"/metrics", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get(""); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics without a key: %d, want 401", code)
	}
	for _, autonomy := range []string{"read_only", "full"} {
		key := g.createKey(t, "--name", autonomy, "--autonomy", autonomy)
		if code, body := get(key); code != http.StatusForbidden || !strings.Contains(body, `"admin_required"`) || strings.Contains(body, "lambdaclaw_") {
			t.Errorf("GET /metrics with a %s key that is no admin: %d %s, want 403 admin_required", autonomy, code, body)
		}
	}
	want := []string{`lambdaclaw_turns_total{outcome="ok"} 1`, `lambdaclaw_tool_calls_total{outcome="ok",tool="read_file"} 1`,
		`lambdaclaw_tokens_total{direction="in"}`, "lambdaclaw_turn_seconds_count 1", "lambdaclaw_llm_seconds_count 2"}
	// Events are recorded off the request path: wait for them.
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body := get(g.firstKey())
		missing := ""
		for _, w := range want {
			if !strings.Contains(body, w) {
				missing = w
				break
			}
		}
		if code == http.StatusOK && missing == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /metrics: %d, missing %q in:\n%.3000s", code, missing, body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
