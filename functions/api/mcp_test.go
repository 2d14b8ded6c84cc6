package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/apigw"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// front serves the function's handler over HTTP as API Gateway does: each
// request becomes a proxy event, and the streamed response is copied to
// the client as it comes.
func front(t *testing.T, h apigw.StreamHandler) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ev := events.APIGatewayProxyRequest{
			Resource: r.URL.Path, Path: r.URL.Path, HTTPMethod: r.Method, Body: string(body),
			Headers: map[string]string{}, MultiValueHeaders: map[string][]string{},
			RequestContext: events.APIGatewayProxyRequestContext{Stage: "prod", DomainName: r.Host, HTTPMethod: r.Method, ResourcePath: r.URL.Path, Path: "/prod" + r.URL.Path},
		}
		for k, v := range r.Header {
			ev.Headers[k], ev.MultiValueHeaders[k] = strings.Join(v, ","), v
		}
		resp, err := h(r.Context(), ev)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		for k, v := range resp.Headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(resp.StatusCode)
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			w.Write(buf[:n])
			w.(http.Flusher).Flush()
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// callText calls a tool and returns its text and whether it is an error
// result.
func callText(t *testing.T, s *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// writeModel is the fake model of the protocol tests: told "write it",
// it writes the file path; after a tool it says "The tool ran."; else it
// echoes, in pieces.
func writeModel(path string) func(fakellm.Request) fakellm.Reply {
	return func(r fakellm.Request) fakellm.Reply {
		last := r.Messages[len(r.Messages)-1]
		switch {
		case last.Role == "tool":
			return fakellm.Reply{Content: "The tool ran."}
		case last.Content == "write it":
			args, _ := json.Marshal(map[string]string{"path": path, "content": "written"})
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_w", Name: "write_file", Arguments: string(args)}}}
		}
		return fakellm.Reply{Content: "echo: " + r.LastUser(), ChunkSize: 4}
	}
}

// TestMCP drives the api function's /mcp, behind a front that stands in
// for the streaming REST API, with the Go SDK's client: the server is
// stateless (no MCP session: the next request may reach another
// instance), the key is required, chat runs the conversation's turns on
// the state machine, an approval is asked by a multi round-trip
// elicitation, and another key sees none of the history.
func TestMCP(t *testing.T) {
	env, h := setup(t)
	env.PlayStep(t)
	env.LLM.SetDefault(writeModel("aws.txt"))
	url := front(t, h) + "/mcp"
	connect := func(key string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) (*mcp.ClientSession, error) {
		transport := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer(key)}, MaxRetries: -1}
		return mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: elicit}).Connect(t.Context(), transport, nil)
	}

	for _, key := range []string{"", "lc_not_a_key"} {
		resp, err := (&http.Client{Transport: bearer(key)}).Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("key %q: status %d, want 401", key, resp.StatusCode)
		}
	}

	// No MCP session to stream to or to end.
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, url, nil)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := (&http.Client{Transport: bearer(cloudtest.SampleKey)}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s /mcp: status %d, want 405", method, resp.StatusCode)
		}
	}

	var mu sync.Mutex
	var elicited []string
	asked := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(elicited)
	}
	s, err := connect(cloudtest.SampleKey, func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		mu.Lock()
		defer mu.Unlock()
		elicited = append(elicited, r.Params.Message)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "yes"}}, nil
	})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer s.Close()
	if id := s.ID(); id != "" {
		t.Errorf("MCP session id %q: want none, the server is stateless", id)
	}
	tools, err := s.ListTools(t.Context(), nil)
	if err != nil || len(tools.Tools) != 4 {
		t.Fatalf("tools: %v, %v", tools, err)
	}
	if text, isErr := callText(t, s, "chat", map[string]any{"agent": "default", "message": "Remember teal."}); isErr || text != "echo: Remember teal." {
		t.Errorf("chat = %q (error %v)", text, isErr)
	}
	if text, isErr := callText(t, s, "chat", map[string]any{"agent": "default", "message": "write it"}); isErr || text != "The tool ran." || len(asked()) != 1 {
		t.Errorf("chat with an approval = %q (error %v), elicited %q; want one elicitation, then the answer", text, isErr, asked())
	}
	if text, _ := callText(t, s, "history", map[string]any{"agent": "default"}); !strings.Contains(text, "Remember teal.") || !strings.Contains(text, "The tool ran.") {
		t.Errorf("history = %s: want the conversation", text)
	}
	var history struct{ Messages []json.RawMessage }
	text, _ := callText(t, s, "history", map[string]any{"agent": "default", "limit": 1})
	if err := json.Unmarshal([]byte(text), &history); err != nil || len(history.Messages) != 1 {
		t.Errorf("history with limit 1 = %s, %v", text, err)
	}

	// The api function may read the memory it searches.
	if text, isErr := callText(t, s, "memory_search", map[string]any{"agent": "default", "query": "teal"}); isErr {
		t.Errorf("memory_search = %s", text)
	}

	otherKey, _, err := apikey.Create(t.Context(), env.Store, store.APIKey{Name: "other", Autonomy: "supervised"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := connect(otherKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if text, isErr := callText(t, other, "history", map[string]any{"agent": "default"}); isErr || text != `{"messages":[],"truncated":false}` {
		t.Errorf("another key's history = %s (error %v), want nothing", text, isErr)
	}
}
