package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// mcpModel is the fake model of the MCP server tests: it writes a file,
// or stores a memory, when asked to, says "The tool ran." after a tool,
// and otherwise echoes in small pieces, so that the reply streams.
func mcpModel(r fakellm.Request) fakellm.Reply {
	last := r.Messages[len(r.Messages)-1]
	switch {
	case last.Role == "tool":
		return fakellm.Reply{Content: "The tool ran.", ChunkSize: 3}
	case strings.HasPrefix(last.Content, "write "):
		name := strings.TrimPrefix(last.Content, "write ")
		args, _ := json.Marshal(map[string]string{"path": name, "content": "written over MCP"})
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_" + strings.ReplaceAll(name, ".", "_"), Name: "write_file", Arguments: string(args)}}}
	case strings.HasPrefix(last.Content, "remember "):
		args, _ := json.Marshal(map[string]string{"text": strings.TrimPrefix(last.Content, "remember ")})
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_remember", Name: "memory_store", Arguments: string(args)}}}
	}
	return fakellm.Reply{Content: "echo: " + r.LastUser(), ChunkSize: 3}
}

// bearerClient is an HTTP client that sends key with every request.
func bearerClient(key string) *http.Client {
	return &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+key)
		return http.DefaultTransport.RoundTrip(r)
	})}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// mcpClient is a Go SDK client session of the gateway's /mcp with key.
// Its progress notifications accumulate in progress; elicit, when set,
// answers elicitations (and makes the client announce that it can).
type mcpClient struct {
	*mcp.ClientSession
	mu       sync.Mutex
	progress []string
	elicited []string
	// notify is signalled at each progress notification.
	notify chan struct{}
}

func connectMCP(t *testing.T, transport mcp.Transport, elicit func(*mcp.ElicitRequest) *mcp.ElicitResult) *mcpClient {
	t.Helper()
	return connectMCPVersion(t, transport, elicit, "")
}

// connectMCPVersion is connectMCP asking for a protocol version; "" is
// the SDK's newest.
func connectMCPVersion(t *testing.T, transport mcp.Transport, elicit func(*mcp.ElicitRequest) *mcp.ElicitResult, version string) *mcpClient {
	t.Helper()
	c := &mcpClient{notify: make(chan struct{}, 1)}
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		c.mu.Lock()
		c.progress = append(c.progress, r.Params.Message)
		c.mu.Unlock()
		select {
		case c.notify <- struct{}{}:
		default:
		}
	}}
	if elicit != nil {
		opts.ElicitationHandler = func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.mu.Lock()
			c.elicited = append(c.elicited, r.Params.Message)
			c.mu.Unlock()
			return elicit(r), nil
		}
	}
	s, err := mcp.NewClient(&mcp.Implementation{Name: "lambdaclaw-test", Version: "1"}, opts).Connect(t.Context(), transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	c.ClientSession = s
	return c
}

func httpMCP(g *gateway, key string) mcp.Transport {
	return &mcp.StreamableClientTransport{Endpoint: g.addr + "/mcp", HTTPClient: bearerClient(key), MaxRetries: -1}
}

// call calls a tool and returns its text and whether it is an error
// result; a protocol error fails the test.
func (c *mcpClient) call(t *testing.T, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := c.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args, Meta: mcp.Meta{"progressToken": name}})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// asked returns the elicitations' messages so far.
func (c *mcpClient) asked() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.elicited)
}

// waitProgress waits until the progress messages received make text,
// and forgets them. The client handles notifications apart from results,
// so the last may follow the result of their call. It fails the test
// when the messages received are not text in several pieces.
func (c *mcpClient) waitProgress(t *testing.T, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		c.mu.Lock()
		p := c.progress
		c.mu.Unlock()
		joined := strings.Join(p, "")
		switch {
		case joined == text && len(p) >= 2:
			c.mu.Lock()
			c.progress = nil
			c.mu.Unlock()
			return
		case !strings.HasPrefix(text, joined):
			t.Fatalf("progress %q: want %q in pieces", p, text)
		}
		select {
		case <-c.notify:
		case <-ctx.Done():
			t.Fatalf("progress %q: want %q in several pieces", p, text)
		}
	}
}

// TestMCPServer drives the gateway's /mcp with the Go SDK's client: the
// key is required, the tools are listed, chat returns the agent's reply
// and streams it as progress, agents_list honours the key's agents,
// history and memory_search show a key only its own, and approvals are
// answered by elicitation or, without it, by /yes in the next call.
func TestMCPServer(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	fake.SetDefault(mcpModel)
	g := startGateway(t, fake, "")
	key := g.firstKey() // supervised, every agent

	t.Run("unauthorized", func(t *testing.T) {
		for _, auth := range []string{"", "Bearer lc_not_a_key"} {
			req, _ := http.NewRequest(http.MethodPost, g.addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("Authorization %q: status %d, want 401", auth, resp.StatusCode)
			}
		}
		_, err := mcp.NewClient(&mcp.Implementation{Name: "x", Version: "1"}, nil).Connect(t.Context(), httpMCP(g, "lc_not_a_key"), nil)
		if err == nil {
			t.Error("the Go SDK client connected with a bad key")
		}
	})

	c := connectMCP(t, httpMCP(g, key), nil)
	t.Run("listTools", func(t *testing.T) {
		res, err := c.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		slices.Sort(names)
		if diff := cmp.Diff([]string{"agents_list", "chat", "history", "memory_search"}, names); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		// agent is optional (the agent "default"), and the schemas say so.
		required := map[string][]string{}
		for _, tl := range res.Tools {
			var schema struct {
				Required   []string
				Properties map[string]struct{ Description string }
			}
			b, _ := json.Marshal(tl.InputSchema)
			if err := json.Unmarshal(b, &schema); err != nil {
				t.Fatal(err)
			}
			required[tl.Name] = schema.Required
			if tl.Name != "agents_list" && !strings.Contains(schema.Properties["agent"].Description, "default") {
				t.Errorf("%s's agent is described %q: want its default", tl.Name, schema.Properties["agent"].Description)
			}
		}
		want := map[string][]string{"agents_list": nil, "chat": {"message"}, "history": nil, "memory_search": {"query"}}
		if diff := cmp.Diff(want, required, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("required arguments (-want +got):\n%s", diff)
		}
	})

	t.Run("chat", func(t *testing.T) {
		text, isErr := c.call(t, "chat", map[string]any{"agent": "default", "message": "hello over MCP"})
		if isErr || text != "echo: hello over MCP" {
			t.Fatalf("chat = %q (error %v), want the agent's reply", text, isErr)
		}
		c.waitProgress(t, text)
		// The same session_key continues the conversation.
		c.call(t, "chat", map[string]any{"agent": "default", "message": "second turn"})
		reqs := fake.Requests()
		got := conversation(reqs[len(reqs)-1].Messages)
		want := []fakellm.Message{user("hello over MCP"), assistant("echo: hello over MCP"), user("second turn")}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("second turn's conversation (-want +got):\n%s", diff)
		}
		if text, isErr := c.call(t, "chat", map[string]any{"agent": "nobody", "message": "hi"}); !isErr || !strings.Contains(text, `"nobody" does not exist`) {
			t.Errorf("chat with an unknown agent = %q (error %v)", text, isErr)
		}
		// A call that names no agent talks to "default", in the same
		// conversation.
		if text, isErr := c.call(t, "chat", map[string]any{"message": "no agent named"}); isErr || text != "echo: no agent named" {
			t.Fatalf("chat without agent = %q (error %v), want the default agent's reply", text, isErr)
		}
		reqs = fake.Requests()
		want = append(want, assistant("echo: second turn"), user("no agent named"))
		if diff := cmp.Diff(want, conversation(reqs[len(reqs)-1].Messages)); diff != "" {
			t.Errorf("conversation of a chat without agent (-want +got):\n%s", diff)
		}
	})

	g.cli(t, "agent", "create", "other")
	otherKey := g.createKey(t, "--name", "other-only", "--agents", "other")
	stranger := g.createKey(t, "--name", "stranger")
	t.Run("agents_list", func(t *testing.T) {
		for _, tt := range []struct {
			key  string
			want string
		}{
			{key, `{"agents":[{"name":"default"},{"name":"other"}]}`},
			{otherKey, `{"agents":[{"name":"other"}]}`},
		} {
			text, isErr := connectMCP(t, httpMCP(g, tt.key), nil).call(t, "agents_list", nil)
			if isErr || text != tt.want {
				t.Errorf("agents_list = %s (error %v), want %s", text, isErr, tt.want)
			}
		}
		text, isErr := connectMCP(t, httpMCP(g, otherKey), nil).call(t, "chat", map[string]any{"agent": "default", "message": "hi"})
		if !isErr || !strings.Contains(text, "this key may not use it") {
			t.Errorf("chat with an agent the key may not use = %q (error %v)", text, isErr)
		}
	})

	t.Run("ownership", func(t *testing.T) {
		if text, isErr := c.call(t, "chat", map[string]any{"agent": "default", "message": "remember the plumber comes on Tuesday"}); isErr || text != "The tool ran." {
			t.Fatalf("chat = %q (error %v)", text, isErr)
		}
		var h struct {
			Messages []struct{ Role, Content string }
		}
		for _, args := range []map[string]any{{"agent": "default"}, {}} {
			text, _ := c.call(t, "history", args)
			if err := json.Unmarshal([]byte(text), &h); err != nil || len(h.Messages) < 4 || h.Messages[0].Content != "hello over MCP" {
				t.Errorf("history %v = %s, %v: want the conversation", args, text, err)
			}
			args["query"] = "plumber"
			if text, _ := c.call(t, "memory_search", args); !strings.Contains(text, "Tuesday") {
				t.Errorf("memory_search %v = %s: want the stored memory", args, text)
			}
		}
		s := connectMCP(t, httpMCP(g, stranger), nil)
		if text, isErr := s.call(t, "history", map[string]any{"agent": "default"}); isErr || text != `{"messages":[],"truncated":false}` {
			t.Errorf("another key's history = %s (error %v), want nothing", text, isErr)
		}
		if text, isErr := s.call(t, "memory_search", map[string]any{"agent": "default", "query": "plumber"}); isErr || strings.Contains(text, "Tuesday") {
			t.Errorf("another key's memory_search = %s (error %v), want no hit", text, isErr)
		}
	})

	t.Run("approval with /yes", func(t *testing.T) {
		path := filepath.Join(g.workspace(), "yes.txt")
		text, isErr := c.call(t, "chat", map[string]any{"agent": "default", "message": "write yes.txt", "session_key": "approvals"})
		if isErr || !strings.Contains(text, "write_file") || !strings.Contains(text, "/yes") {
			t.Fatalf("chat = %q (error %v), want the approval question", text, isErr)
		}
		if _, err := os.Stat(path); err == nil {
			t.Fatal("yes.txt was written before the approval")
		}
		text, isErr = c.call(t, "chat", map[string]any{"agent": "default", "message": "/yes", "session_key": "approvals"})
		if isErr || text != "The tool ran." {
			t.Errorf("after /yes: %q (error %v)", text, isErr)
		}
		if data, err := os.ReadFile(path); err != nil || string(data) != "written over MCP" {
			t.Errorf("yes.txt = %q, %v; want it written after /yes", data, err)
		}
	})

	t.Run("approval with elicitation", func(t *testing.T) {
		for _, tt := range []struct {
			file    string
			answer  *mcp.ElicitResult
			written bool
		}{
			{"elicit-yes.txt", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "yes"}}, true},
			{"elicit-no.txt", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "no"}}, false},
			{"elicit-decline.txt", &mcp.ElicitResult{Action: "decline"}, false},
		} {
			e := connectMCP(t, httpMCP(g, key), func(*mcp.ElicitRequest) *mcp.ElicitResult { return tt.answer })
			text, isErr := e.call(t, "chat", map[string]any{"agent": "default", "message": "write " + tt.file, "session_key": tt.file})
			if isErr || text != "The tool ran." {
				t.Errorf("%s: chat = %q (error %v), want the answer after the approval", tt.file, text, isErr)
			}
			if asked := e.asked(); len(asked) != 1 || !strings.Contains(asked[0], "write_file") {
				t.Errorf("%s: elicited %q, want the approval question once", tt.file, asked)
			}
			_, err := os.Stat(filepath.Join(g.workspace(), tt.file))
			if written := err == nil; written != tt.written {
				t.Errorf("%s: written %v, want %v", tt.file, written, tt.written)
			}
		}
	})
}

// TestMCPServeStdio runs `lambdaclaw mcp serve --stdio` as a desktop
// client does, with the Go SDK's CommandTransport: the same tools, the
// agent's reply with its progress; a bad key ends it with the reason.
func TestMCPServeStdio(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	fake.SetDefault(mcpModel)
	g := startGateway(t, fake, "")
	key := g.firstKey()
	command := func(key string) *exec.Cmd {
		cmd := exec.Command(binary, "mcp", "serve", "--stdio")
		cmd.Env = append(slices.Clone(g.env), "LAMBDACLAW_API_KEY="+key, "LAMBDACLAW_ADDR="+g.addr)
		return cmd
	}
	c := connectMCP(t, &mcp.CommandTransport{Command: command(key)}, nil)
	res, err := c.ListTools(t.Context(), nil)
	if err != nil || len(res.Tools) != 4 {
		t.Fatalf("tools over stdio: %v, %v", res, err)
	}
	text, isErr := c.call(t, "chat", map[string]any{"agent": "default", "message": "hello over stdio"})
	if isErr || text != "echo: hello over stdio" {
		t.Errorf("chat over stdio = %q (error %v)", text, isErr)
	}
	c.waitProgress(t, text)

	// The gateway restarts, and loses its MCP sessions: mcp serve opens a
	// new one, and the client carries on, on both protocols.
	oldCmd := command(key)
	var oldStderr syncBuffer
	oldCmd.Stderr = &oldStderr
	old := connectMCPVersion(t, &mcp.CommandTransport{Command: oldCmd}, nil, "2025-11-25")
	old.call(t, "agents_list", nil)
	g.stop()
	g.start()
	for _, client := range []*mcpClient{c, old} {
		text, isErr := client.call(t, "chat", map[string]any{"agent": "default", "message": "after a restart"})
		if isErr || text != "echo: after a restart" {
			t.Errorf("chat after the gateway restarted = %q (error %v)", text, isErr)
		}
	}
	old.Close() // waits for the process, and its stderr
	if !strings.Contains(oldStderr.String(), "the gateway lost the MCP session; opening a new one") {
		t.Errorf("mcp serve's stderr %q: want it to tell that it opened a new session", oldStderr.String())
	}

	// Approvals asked over stdio: in the result on the current protocol,
	// and as the server's own request, relayed both ways, on 2025-11-25.
	allow := func(*mcp.ElicitRequest) *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "yes"}}
	}
	for _, version := range []string{"", "2025-11-25"} {
		e := connectMCPVersion(t, &mcp.CommandTransport{Command: command(key)}, allow, version)
		file := "stdio" + version + ".txt"
		text, isErr := e.call(t, "chat", map[string]any{"agent": "default", "message": "write " + file, "session_key": file})
		if isErr || text != "The tool ran." || len(e.asked()) != 1 {
			t.Errorf("protocol %q: chat = %q (error %v), elicited %q; want one elicitation, then the answer", version, text, isErr, e.asked())
		}
		if _, err := os.Stat(filepath.Join(g.workspace(), file)); err != nil {
			t.Errorf("protocol %q: %s not written after the approval: %v", version, file, err)
		}
	}

	cmd := command("lc_not_a_key")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "the server refused the API key") {
		t.Errorf("mcp serve with a bad key: %v, stderr %q; want it to exit telling the key was refused", err, stderr.String())
	}
}

// TestMCPServerTypeScript drives /mcp with the official TypeScript SDK's
// client (tests/testdata/clients/mcp.mjs): no key or a bad key is
// refused, the tools are listed, chat returns the agent's reply with its
// progress, agents_list honours the key's agents, and an approval is
// asked with elicitation.
func TestMCPServerTypeScript(t *testing.T) {
	t.Parallel()
	requireClients(t)
	fake := newFake(t)
	fake.SetDefault(mcpModel)
	g := startGateway(t, fake, "")
	key := g.firstKey()
	g.cli(t, "agent", "create", "other")
	otherKey := g.createKey(t, "--name", "other-only", "--agents", "other")

	results := runClients(t, g, key, []string{"mcp/unauthorized", "mcp/listTools", "mcp/chat", "mcp/elicit"})
	for id, r := range runClients(t, g, otherKey, []string{"mcp/agentsList"}) {
		results[id] = r
	}
	result := func(t *testing.T, id string, v any) clientResult {
		t.Helper()
		return scenarioResult(t, results, id, v)
	}

	t.Run("unauthorized", func(t *testing.T) {
		var got struct{ Errors []*string }
		r := result(t, "mcp/unauthorized", &got)
		if len(got.Errors) != 2 || got.Errors[0] == nil || got.Errors[1] == nil {
			t.Fatalf("errors %v: want both connections refused", got.Errors)
		}
		if len(r.Sent) < 2 {
			t.Errorf("requests sent:\n%s\nwant one for each connection", sentSummary(r.Sent))
		}
		for _, s := range r.Sent {
			if s.Status != http.StatusUnauthorized {
				t.Errorf("%s %s answered %d, want 401", s.Method, s.Path, s.Status)
			}
		}
	})
	t.Run("listTools", func(t *testing.T) {
		var got struct {
			Tools []struct {
				Name     string
				Required []string
			}
		}
		result(t, "mcp/listTools", &got)
		want := `[{agents_list []} {chat [message]} {history []} {memory_search [query]}]`
		if s := fmt.Sprint(got.Tools); s != want {
			t.Errorf("tools %s, want %s", s, want)
		}
	})
	t.Run("chat", func(t *testing.T) {
		var got struct {
			Text     string
			IsError  bool
			Progress []string
		}
		result(t, "mcp/chat", &got)
		if got.IsError || got.Text != "echo: hello from TypeScript" {
			t.Errorf("chat = %q (error %v)", got.Text, got.IsError)
		}
		if len(got.Progress) < 2 || strings.Join(got.Progress, "") != got.Text {
			t.Errorf("progress %q: want the reply in several pieces", got.Progress)
		}
	})
	t.Run("agentsList", func(t *testing.T) {
		var got struct {
			Structured json.RawMessage
			IsError    bool
		}
		result(t, "mcp/agentsList", &got)
		if got.IsError || string(got.Structured) != `{"agents":[{"name":"other"}]}` {
			t.Errorf("agents_list = %s (error %v), want the one agent of the key", got.Structured, got.IsError)
		}
	})
	t.Run("elicit", func(t *testing.T) {
		var got struct {
			Text    string
			IsError bool
			Asked   []string
		}
		result(t, "mcp/elicit", &got)
		if got.IsError || got.Text != "The tool ran." || len(got.Asked) != 1 || !strings.Contains(got.Asked[0], "write_file") {
			t.Errorf("chat = %q (error %v), asked %q: want one elicitation, then the answer", got.Text, got.IsError, got.Asked)
		}
		if data, err := os.ReadFile(filepath.Join(g.workspace(), "ts-elicit.txt")); err != nil || string(data) != "written over MCP" {
			t.Errorf("ts-elicit.txt = %q, %v; want it written once allowed", data, err)
		}
	})
}
