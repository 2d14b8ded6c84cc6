package tests

// The gateway as an MCP client (issue 16): agents use the tools of the
// MCP everything server (npm @modelcontextprotocol/server-everything,
// pinned in testdata/clients), started by the real binary over stdio.

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// everythingIndex is the everything server's entry point, installed by
// testdata/clients/install.sh.
func everythingIndex(t *testing.T) string {
	t.Helper()
	requireClients(t)
	index, err := filepath.Abs(filepath.Join(clientsDir, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(index); err != nil {
		t.Fatal(err)
	}
	return index
}

func TestMCPClientTurn(t *testing.T) {
	t.Parallel()
	index := everythingIndex(t)
	fake := newFake(t)
	// everything trusts its server's read-only hints; untrusted is the
	// same server, whose every tool asks for approval.
	g := newGateway(t, fake, "mcp:\n  start: eager\n  servers:\n"+
		"    everything:\n      command: node\n      args: ["+index+", stdio]\n      env: {TOKEN: \"${MCP_E2E_TOKEN}\"}\n      trust_read_only_hints: true\n"+
		"    untrusted:\n      command: node\n      args: ["+index+", stdio]\n")
	g.env = append(g.env, "MCP_E2E_TOKEN=token-for-the-server", "TELEGRAM_BOT_TOKEN=123456:gateway-bot-secret", "LAMBDACLAW_SECRET_SETTING=gateway-only")
	g.start()
	c := g.client(g.firstKey())

	fake.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{
			{ID: "call_echo", Name: "everything__echo", Arguments: `{"message":"hello from the model"}`},
			{ID: "call_env", Name: "everything__get-env", Arguments: `{}`},
			{ID: "call_untrusted", Name: "untrusted__echo", Arguments: `{"message":"needs approval"}`},
		}},
		fakellm.Reply{Content: "done"},
	)
	resp, err := c.Chat.Completions.New(context.Background(), chatParams(openai.UserMessage("use the MCP tools")))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "done" {
		t.Errorf("reply = %q, want done", got)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model got %d requests, want 2", len(reqs))
	}
	for _, name := range []string{"everything__echo", "everything__get-env", "untrusted__echo", "web_fetch"} {
		if !slices.Contains(reqs[0].Tools, name) {
			t.Errorf("the model was not offered %s: %v", name, reqs[0].Tools)
		}
	}
	results := map[string]string{}
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			results[m.ToolCallID] = m.Content
		}
	}
	if got := results["call_echo"]; got != "Echo: hello from the model" {
		t.Errorf("everything__echo result = %q", got)
	}
	// A stateless request cannot ask anyone: the untrusted tool is refused.
	if got := results["call_untrusted"]; !strings.Contains(got, "refused: untrusted__echo needs a person's approval") {
		t.Errorf("untrusted__echo result = %q, want the refusal", got)
	}
	// The server's environment is what its config names plus PATH, HOME
	// and LANG: none of the gateway's keys, tokens or settings.
	// (The scrubber hides TOKEN's value from the model: it looks like a
	// secret.)
	env := results["call_env"]
	var vars map[string]string
	if err := json.Unmarshal([]byte(env), &vars); err != nil {
		t.Fatalf("get-env: %v: %s", err, env)
	}
	want := []string{"HOME", "PATH", "TOKEN"}
	if os.Getenv("LANG") != "" {
		want = []string{"HOME", "LANG", "PATH", "TOKEN"}
	}
	if diff := cmp.Diff(want, slices.Sorted(maps.Keys(vars))); diff != "" {
		t.Errorf("the MCP server's variables (-want +got):\n%s", diff)
	}
	for _, leak := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", providerKey, "TELEGRAM_BOT_TOKEN", "gateway-bot-secret", "LAMBDACLAW_", "MCP_E2E_TOKEN"} {
		if strings.Contains(env, leak) {
			t.Errorf("the MCP server's environment holds %q:\n%s", leak, env)
		}
	}
	if strings.Contains(g.stderr.String(), "token-for-the-server") {
		t.Error("the server's secret is in the gateway's log")
	}

	// In a stateful conversation under supervised autonomy, the untrusted
	// server's tool asks a person first; /yes runs it.
	fake.Reset()
	s := session("mcp-approval")
	fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_ask", Name: "untrusted__echo", Arguments: `{"message":"approved"}`}}},
		fakellm.Reply{Content: "echoed"})
	if got := ask(t, c, "echo it", s); !strings.Contains(got, "untrusted__echo") || !strings.Contains(got, "/yes") {
		t.Fatalf("reply = %q, want the approval prompt for untrusted__echo", got)
	}
	if got := ask(t, c, "/yes", s); got != "echoed" {
		t.Errorf("reply to /yes = %q, want the model's answer", got)
	}
	reqs = fake.Requests()
	if res, ok := toolResult(reqs[len(reqs)-1], "call_ask"); !ok || res != "Echo: approved" {
		t.Errorf("untrusted__echo after /yes = %q (present %v), want Echo: approved", res, ok)
	}
}
