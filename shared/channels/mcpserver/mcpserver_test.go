package mcpserver

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// fakeLoop answers every message at once with "echo: " and the text,
// unless it holds its runs, which release answers, or refuses them with
// err; it records what it was given.
type fakeLoop struct {
	hub  *agent.Hub
	mu   sync.Mutex
	in   []agent.Input
	hold bool
	held agent.RunState
	err  error
}

func (f *fakeLoop) Deliver(_ context.Context, in agent.Input, subscribe func(string)) (agent.RunState, error) {
	if f.err != nil {
		return agent.RunState{}, f.err
	}
	st := agent.RunState{RunID: agent.NewID(), SessionID: in.SessionID, Reply: in.Reply}
	subscribe(st.RunID)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.in = append(f.in, in)
	if f.hold {
		f.held = st
		return st, nil
	}
	f.hub.Delta(st, "echo: ")
	f.hub.Finish(st, agent.Result{Content: "echo: " + in.Messages[0].Content})
	return st, nil
}

// release answers the run held last.
func (f *fakeLoop) release(text string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hub.Finish(f.held, agent.Result{Content: text})
}

func (f *fakeLoop) Reset(context.Context, string) error { return nil }

func (f *fakeLoop) inputs() []agent.Input {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.in)
}

// fakeStore has no sessions; the approval pending in every session is
// pending.
type fakeStore struct {
	pending store.Approval
	keys    map[string]store.APIKey
}

func (s *fakeStore) GetSession(context.Context, string) (store.Session, error) {
	return store.Session{}, store.ErrNotFound
}

func (s *fakeStore) Messages(context.Context, string) ([]store.Message, error) { return nil, nil }

func (s *fakeStore) PendingApproval(context.Context, string) (store.Approval, error) {
	if s.pending.ID == "" {
		return store.Approval{}, store.ErrNotFound
	}
	return s.pending, nil
}

func (s *fakeStore) KeyByHash(_ context.Context, hash string) (store.APIKey, error) {
	if k, ok := s.keys[hash]; ok {
		return k, nil
	}
	return store.APIKey{}, store.ErrNotFound
}

type agentSet map[string]*agent.Agent

func (a agentSet) Agent(name string) (*agent.Agent, bool) {
	x, ok := a[name]
	return x, ok
}

// Keys of the tests: one for every agent, one for "other" only.
const (
	keyAll   = "lc_AllAgentsKeyOfTheMCPServerTests000000000000"
	keyOther = "lc_OtherAgentKeyOfTheMCPServerTests00000000000"
)

type testServer struct {
	url   string
	loop  *fakeLoop
	store *fakeStore
}

func newTestServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	hub := agent.NewHub()
	ts := &testServer{loop: &fakeLoop{hub: hub}, store: &fakeStore{keys: map[string]store.APIKey{
		apikey.Hash(keyAll):   {ID: "key_all", Autonomy: "supervised"},
		apikey.Hash(keyOther): {ID: "key_other", Autonomy: "supervised", Agents: []string{"other"}},
	}}}
	agents := agentSet{"default": {Name: "default"}, "other": {Name: "other"}}
	cfg.Runner, cfg.Events, cfg.Sessions, cfg.Agents = ts.loop, hub, ts.store, agents
	cfg.Names = func() []string { return []string{"default", "other"} }
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Runner: ts.loop, Events: hub, Keys: ts.store, Agents: cfg.Names, MCP: h})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	ts.url = srv.URL + "/mcp"
	return ts
}

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

func (ts *testServer) connect(t testing.TB, key string) *mcp.ClientSession {
	t.Helper()
	transport := &mcp.StreamableClientTransport{Endpoint: ts.url, HTTPClient: &http.Client{Transport: bearer(key)}, MaxRetries: -1}
	s, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(t.Context(), transport, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestChatRefuses: a chat call with bad arguments is an error result that
// says what is wrong, and delivers nothing.
func TestChatRefuses(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.store.pending = store.Approval{ID: "run1-1", Tools: []string{"write_file"}}
	s := ts.connect(t, keyOther)
	yes := mcp.InputResponseMap{approvalInput: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "yes"}}}
	for _, tt := range []struct {
		name    string
		params  mcp.CallToolParams
		wantErr string
	}{
		// No agent is the agent default, which this key may not use.
		{"no agent", mcp.CallToolParams{Arguments: map[string]any{"message": "hi"}}, `the agent "default" does not exist or this key may not use it`},
		{"empty agent", mcp.CallToolParams{Arguments: map[string]any{"agent": "", "message": "hi"}}, `the agent "default" does not exist or this key may not use it`},
		{"unknown agent", mcp.CallToolParams{Arguments: map[string]any{"agent": "nobody", "message": "hi"}}, `the agent "nobody" does not exist or this key may not use it`},
		{"agent of another key", mcp.CallToolParams{Arguments: map[string]any{"agent": "default", "message": "hi"}}, `the agent "default" does not exist or this key may not use it`},
		{"no message", mcp.CallToolParams{Arguments: map[string]any{"agent": "other", "message": " "}}, `"message" is required`},
		{"long session key", mcp.CallToolParams{Arguments: map[string]any{"agent": "other", "message": "hi", "session_key": strings.Repeat("k", agent.MaxSessionKey+1)}}, `"session_key" is longer than 256 bytes`},
		{"control characters", mcp.CallToolParams{Arguments: map[string]any{"agent": "other", "message": "hi", "session_key": "a\nb"}}, `"session_key" has a control character (U+000A at byte 1)`},
		{"a tab", mcp.CallToolParams{Arguments: map[string]any{"agent": "other", "message": "hi", "session_key": "a\tb"}}, `"session_key" has a control character (U+0009 at byte 1)`},
		{"unknown argument", mcp.CallToolParams{Arguments: map[string]any{"agent": "other", "message": "hi", "model": "x"}}, `unexpected additional properties ["model"]`},
		{"foreign request state", mcp.CallToolParams{Arguments: map[string]any{"agent": "other", "message": "hi"}, RequestState: "forged", InputResponses: yes}, "requestState is not one this server made"},
		{"no answer", mcp.CallToolParams{Arguments: map[string]any{"agent": "other", "message": "hi"}, RequestState: "approval:run1-1"}, "the call carries no answer to the approval question"},
		{"stale approval", mcp.CallToolParams{Arguments: map[string]any{"agent": "other", "message": "hi"}, RequestState: "approval:run0-1", InputResponses: yes}, "the approval this answer is for is no longer pending"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.params
			p.Name = "chat"
			res, err := s.CallTool(t.Context(), &p)
			if err != nil {
				t.Fatal(err)
			}
			if text := resultText(res); !res.IsError || !strings.Contains(text, tt.wantErr) {
				t.Errorf("result %q (error %v), want an error containing %q", text, res.IsError, tt.wantErr)
			}
		})
	}
	if in := ts.loop.inputs(); len(in) != 0 {
		t.Errorf("the refused calls delivered %d messages", len(in))
	}
}

// TestChatStorageFull: a message the store has no room for is an error
// result that says so.
func TestChatStorageFull(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.loop.err = fmt.Errorf("enqueue: %w", store.ErrStorageFull)
	s := ts.connect(t, keyOther)
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"agent": "other", "message": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := resultText(res); !res.IsError || text != agent.StorageFullMessage {
		t.Errorf("result %q (error %v), want the error %q", text, res.IsError, agent.StorageFullMessage)
	}
}

// TestChatInput: a chat call delivers the message into the key's
// conversation named by session_key, with the key's autonomy, and an
// answer to an approval as the conversation's /yes, /no or /always.
func TestChatInput(t *testing.T) {
	ts := newTestServer(t, Config{})
	ts.store.pending = store.Approval{ID: "run1-1", Tools: []string{"write_file"}}
	s := ts.connect(t, keyOther)
	answer := func(r *mcp.ElicitResult) mcp.InputResponseMap { return mcp.InputResponseMap{approvalInput: r} }
	calls := []mcp.CallToolParams{
		{Arguments: map[string]any{"agent": "other", "message": "hello"}},
		{Arguments: map[string]any{"agent": "lambdaclaw/other", "message": "hello", "session_key": "notes"}},
		{Arguments: map[string]any{"agent": "other", "message": "write it"}, RequestState: "approval:run1-1", InputResponses: answer(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "always"}})},
		{Arguments: map[string]any{"agent": "other", "message": "write it"}, RequestState: "approval:run1-1", InputResponses: answer(&mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "no"}})},
		{Arguments: map[string]any{"agent": "other", "message": "write it"}, RequestState: "approval:run1-1", InputResponses: answer(&mcp.ElicitResult{Action: "decline"})},
		{Arguments: map[string]any{"agent": "other", "message": "write it"}, RequestState: "approval:run1-1", InputResponses: answer(&mcp.ElicitResult{Action: "cancel"})},
	}
	for _, p := range calls {
		p.Name = "chat"
		res, err := s.CallTool(t.Context(), &p)
		if err != nil || res.IsError {
			t.Fatalf("chat %v: %v %q", p.Arguments, err, resultText(res))
		}
	}
	var got []string
	for _, in := range ts.loop.inputs() {
		got = append(got, fmt.Sprintf("%s %s %s %s %q", in.Agent, in.Owner, in.SessionID, in.Autonomy, in.Messages[0].Content))
		if !in.Interactive || !in.Stream || in.Reply.Channel != gateway.Channel {
			t.Errorf("input %+v: want an interactive, streamed run replying on %q", in, gateway.Channel)
		}
	}
	_, mcpSession := agent.Identity{}.Session("other", Channel, "key_other", DefaultSessionKey)
	_, notes := agent.Identity{}.Session("other", Channel, "key_other", "notes")
	want := []string{
		"other key:key_other " + mcpSession + ` supervised "hello"`,
		"other key:key_other " + notes + ` supervised "hello"`,
		"other key:key_other " + mcpSession + ` supervised "/always"`,
		"other key:key_other " + mcpSession + ` supervised "/no"`,
		"other key:key_other " + mcpSession + ` supervised "/no"`,
		"other key:key_other " + mcpSession + ` supervised "/no"`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delivered (-want +got):\n%s", diff)
	}
}

// post sends one JSON-RPC message to /mcp with key and, when not empty,
// an MCP session id; it returns the status and the session id answered.
func post(t *testing.T, url, key, session, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set(sessionHeader, session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get(sessionHeader)
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// TestSessionsOfAKey: an MCP session answers only the key that opened it,
// and a key holds at most MaxSessionsPerKey open.
func TestSessionsOfAKey(t *testing.T) {
	ts := newTestServer(t, Config{MaxSessionsPerKey: 2})
	var sessions []string
	for range 2 {
		status, id := post(t, ts.url, keyAll, "", initialize)
		if status != http.StatusOK || id == "" {
			t.Fatalf("initialize: status %d, session %q", status, id)
		}
		sessions = append(sessions, id)
	}
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	if status, _ := post(t, ts.url, keyOther, sessions[0], list); status != http.StatusForbidden {
		t.Errorf("another key in the session: status %d, want 403", status)
	}
	if status, _ := post(t, ts.url, keyAll, sessions[0], list); status != http.StatusOK {
		t.Errorf("the key in its session: status %d, want 200", status)
	}
	if status, _ := post(t, ts.url, keyAll, "", initialize); status != http.StatusTooManyRequests {
		t.Errorf("a third session: status %d, want 429", status)
	}
	if status, id := post(t, ts.url, keyOther, "", initialize); status != http.StatusOK || id == "" {
		t.Errorf("another key's session: status %d, session %q", status, id)
	}
	req, _ := http.NewRequest(http.MethodDelete, ts.url, nil)
	req.Header.Set("Authorization", "Bearer "+keyAll)
	req.Header.Set(sessionHeader, sessions[1])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if status, id := post(t, ts.url, keyAll, "", initialize); status != http.StatusOK || id == "" {
		t.Errorf("a session after one was closed: status %d, session %q", status, id)
	}
}

// TestChatKeepAlive: a call whose run stays silent gets empty progress
// notifications, Progress counting up, until the answer.
func TestChatKeepAlive(t *testing.T) {
	ts := newTestServer(t, Config{KeepAlive: time.Millisecond})
	ts.loop.hold = true
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		defer mu.Unlock()
		if got = append(got, r.Params); len(got) == 2 {
			ts.loop.release("done at last") // the answer comes only after two keep-alives
		}
	}}
	transport := &mcp.StreamableClientTransport{Endpoint: ts.url, HTTPClient: &http.Client{Transport: bearer(keyAll)}, MaxRetries: -1}
	s, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(t.Context(), transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.CallTool(t.Context(), &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"agent": "default", "message": "think long"}, Meta: mcp.Meta{"progressToken": "p"}})
	if err != nil || resultText(res) != "done at last" {
		t.Fatalf("chat = %v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, p := range got[:2] {
		if p.Message != "" || p.Progress != float64(i+1) || p.ProgressToken != "p" {
			t.Errorf("notification %d = %+v, want an empty one with progress %d", i, p, i+1)
		}
	}
}

// BenchmarkChat measures what a chat call costs on top of its run: the
// MCP request over HTTP through the gateway, the delivery, and following
// the run's events (the fake loop answers at once).
func BenchmarkChat(b *testing.B) {
	ts := newTestServer(b, Config{})
	s := ts.connect(b, keyAll)
	p := &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"agent": "default", "message": "hi"}}
	for b.Loop() {
		res, err := s.CallTool(b.Context(), p)
		if err != nil || res.IsError {
			b.Fatalf("chat: %v %v", res, err)
		}
	}
}

// TestCloseMakesNothing: closing a server that no request reached does not
// make the MCP server (its tools' schemas) only to find it has no session.
func TestCloseMakesNothing(t *testing.T) {
	hub := agent.NewHub()
	h, err := New(Config{Runner: &fakeLoop{hub: hub}, Events: hub, Sessions: &fakeStore{}, Agents: agentSet{},
		Names: func() []string { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	h.Close()
	if h.server != nil {
		t.Error("Close made the MCP server")
	}
}
