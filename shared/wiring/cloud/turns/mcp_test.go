package turns_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/turns"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

// remoteMCP is a streamable HTTP MCP server with one tool, echo, that
// answers only requests with the bearer token.
func remoteMCP(t *testing.T, token string) string {
	s := sdk.NewServer(&sdk.Implementation{Name: "remote", Version: "1"}, nil)
	type in struct {
		Message string `json:"message"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "remote: " + a.Message}}}, nil, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		// The function's registry keeps its session (and its event
		// stream) open: a Lambda function's instance is never shut down.
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

func TestMCPServers(t *testing.T) {
	for _, tc := range []struct {
		name, value, agents, err string
	}{
		{name: "stdio", value: `{"servers":{"local":{"command":"node","args":["server.js"]}}}`,
			err: "MCP_CONFIG: config: mcp.servers.local: stdio servers (command) run only in the local server; on AWS use an HTTP server (url)"},
		{name: "unknown setting", value: `{"servers":{"remote":{"uri":"https://x"}}}`, err: `MCP_CONFIG: json: unknown field "uri"`},
		{name: "bad start", value: `{"servers":{},"start":"soon"}`, err: "mcp.start is \"soon\""},
		{name: "unknown server", value: `{"servers":{}}`, agents: `{"default":{"mcp":["remote"]}}`, err: `agent "default": mcp: unknown MCP server "remote"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloudtest.Setup(t)
			t.Setenv(cloud.MCPVar, tc.value)
			t.Setenv("AGENTS_CONFIG", tc.agents)
			if _, err := turns.New(t.Context(), nil); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("New = %v, want an error with %q", err, tc.err)
			}
		})
	}

	t.Run("http", func(t *testing.T) {
		cloudtest.Setup(t)
		t.Setenv("REMOTE_TOKEN", "s3cret-token")
		t.Setenv(cloud.MCPVar, `{"start":"eager","servers":{"remote":{"url":"`+remoteMCP(t, "s3cret-token")+`","headers":{"Authorization":"Bearer ${REMOTE_TOKEN}"}}}}`)
		t.Setenv("AGENTS_CONFIG", `{"research":{"mcp":[]}}`)
		r, err := turns.New(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		def, _ := r.Agents.Agent("default")
		echo, ok := def.Registry().Get("remote__echo")
		if !ok {
			t.Fatalf("the default agent has no remote__echo: %v", def.Registry().Definitions())
		}
		if got, err := echo.Call(t.Context(), tool.Env{}, []byte(`{"message":"hi"}`)); err != nil || got != "remote: hi" {
			t.Errorf("remote__echo = %q, %v", got, err)
		}
		research, _ := r.Agents.Agent("research")
		if _, ok := research.Registry().Get("remote__echo"); ok {
			t.Error("the agent with mcp: [] has the MCP tools")
		}
	})
	// On AWS a header's ${VAR} is the secret MCP_SECRET_<VAR> names (the
	// stack creates <stack>/mcp/<VAR>), read once per container, ahead
	// of a variable of the same name; a secret without a value fails its
	// server only.
	t.Run("secret", func(t *testing.T) {
		cloudtest.Setup(t)
		sm := cloudtest.NewSecrets(t, map[string]string{"Lambdaclaw/mcp/REMOTE_TOKEN": "s3cret-token\n", "Lambdaclaw/mcp/UNSET_TOKEN": ""})
		t.Setenv("SECRETSMANAGER_ENDPOINT", sm.URL)
		t.Setenv("REMOTE_TOKEN", "not-the-secret")
		t.Setenv("MCP_SECRET_REMOTE_TOKEN", "Lambdaclaw/mcp/REMOTE_TOKEN")
		t.Setenv("MCP_SECRET_UNSET_TOKEN", "Lambdaclaw/mcp/UNSET_TOKEN") // created without a value
		t.Setenv(cloud.MCPVar, `{"start":"eager","servers":{`+
			`"remote":{"url":"`+remoteMCP(t, "s3cret-token")+`","headers":{"Authorization":"Bearer ${REMOTE_TOKEN}"}},`+
			`"other":{"url":"`+remoteMCP(t, "other-token")+`","headers":{"Authorization":"Bearer ${UNSET_TOKEN}"}}}}`)
		r, err := turns.New(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		def, _ := r.Agents.Agent("default")
		echo, ok := def.Registry().Get("remote__echo")
		if !ok {
			t.Fatalf("the default agent has no remote__echo: %v", def.Registry().Definitions())
		}
		for range 2 {
			if got, err := echo.Call(t.Context(), tool.Env{}, []byte(`{"message":"hi"}`)); err != nil || got != "remote: hi" {
				t.Errorf("remote__echo = %q, %v", got, err)
			}
		}
		if _, ok := def.Registry().Get("other__echo"); ok {
			t.Error("the server whose secret has no value has tools")
		}
		if n := sm.Calls("Lambdaclaw/mcp/REMOTE_TOKEN"); n != 1 {
			t.Errorf("the secret was read %d times, want once", n)
		}
		if n := sm.Calls("Lambdaclaw/mcp/UNSET_TOKEN"); n == 0 {
			t.Error("the secret without a value was never read")
		}
	})

	// A function that calls no model (ws, telegram, scheduler) runs no
	// turn: it starts no server and reads no secret, even eager.
	t.Run("no model", func(t *testing.T) {
		cloudtest.Setup(t)
		sm := cloudtest.NewSecrets(t, map[string]string{"Lambdaclaw/mcp/REMOTE_TOKEN": "s3cret-token"})
		for k, v := range map[string]string{"SECRETSMANAGER_ENDPOINT": sm.URL, "MCP_SECRET_REMOTE_TOKEN": "Lambdaclaw/mcp/REMOTE_TOKEN",
			"DEFAULT_PROVIDER": "", "OPENAI_BASE_URL": "", "OPENAI_MODEL": "", "OPENAI_API_KEY": ""} {
			t.Setenv(k, v)
		}
		t.Setenv(cloud.MCPVar, `{"start":"eager","servers":{"remote":{"url":"`+remoteMCP(t, "s3cret-token")+`","headers":{"Authorization":"Bearer ${REMOTE_TOKEN}"}}}}`)
		t.Setenv("AGENTS_CONFIG", `{"research":{"mcp":["remote"]}}`)
		if _, err := turns.New(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		if n := sm.Calls("Lambdaclaw/mcp/REMOTE_TOKEN"); n != 0 {
			t.Errorf("a function without a model read the secret %d times", n)
		}
	})
}
