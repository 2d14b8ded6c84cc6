package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// frame is any server frame; fields a frame type does not have stay zero.
type frame struct {
	Type       string      `json:"type"`
	ID         string      `json:"id,omitempty"`
	RunID      string      `json:"run_id,omitempty"`
	SessionID  string      `json:"session_id,omitempty"`
	Duplicate  *bool       `json:"duplicate,omitempty"`
	Text       string      `json:"text,omitempty"`
	ApprovalID string      `json:"approval_id,omitempty"`
	Tools      []string    `json:"tools,omitempty"`
	Prompt     string      `json:"prompt,omitempty"`
	Usage      *chat.Usage `json:"usage,omitempty"`
	Code       string      `json:"code,omitempty"`
	Message    string      `json:"message,omitempty"`
}

// ignoreMessage leaves error messages out of comparisons; errFrame checks
// that they are not empty.
var ignoreMessage = cmpopts.IgnoreFields(frame{}, "Message")

// wsServer serves the fixture's gateway over a real listener; it shuts the
// gateway's WebSocket connections down after the test, before the fixture
// checks that no subscription is left.
func (f *fixture) wsServer() string {
	f.t.Helper()
	g := f.g
	srv := httptest.NewServer(g)
	f.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := g.Shutdown(ctx); err != nil {
			f.t.Errorf("Shutdown: %v", err)
		}
		srv.Close()
	})
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
}

type wsClient struct {
	t *testing.T
	c *websocket.Conn
}

// dial connects with token ("" sends no Authorization header).
func dial(t *testing.T, url, token string) (*wsClient, *http.Response, error) {
	t.Helper()
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		return nil, resp, err
	}
	c.SetReadLimit(-1)
	t.Cleanup(func() { c.CloseNow() })
	return &wsClient{t: t, c: c}, resp, nil
}

func mustDial(t *testing.T, url, token string) *wsClient {
	t.Helper()
	c, _, err := dial(t, url, token)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	return c
}

func (c *wsClient) sendRaw(typ websocket.MessageType, b string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.c.Write(ctx, typ, []byte(b)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

func (c *wsClient) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(websocket.MessageText, string(b))
}

// message sends a message frame; empty fields are left out.
func (c *wsClient) message(id, agentName, user, text string) {
	c.t.Helper()
	c.send(map[string]string{"type": "message", "id": id, "agent": agentName, "user": user, "text": text})
}

func (c *wsClient) read() frame {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	typ, b, err := c.c.Read(ctx)
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	if typ != websocket.MessageText {
		c.t.Fatalf("frame type %v, want text", typ)
	}
	var fr frame
	if err := json.Unmarshal(b, &fr); err != nil {
		c.t.Fatalf("frame %s: %v", b, err)
	}
	if fr.Type == "error" && fr.Message == "" {
		c.t.Errorf("error frame without a message: %s", b)
	}
	return fr
}

// readN reads n frames.
func (c *wsClient) readN(n int) []frame {
	c.t.Helper()
	var out []frame
	for range n {
		out = append(out, c.read())
	}
	return out
}

func yes() *bool { v := true; return &v }
func no() *bool  { v := false; return &v }

func TestWSUnauthorized(t *testing.T) {
	f := newFixture(t)
	url := f.wsServer()
	revoked := time.Now()
	revokedKey := f.addKey(store.APIKey{ID: "k-old", RevokedAt: &revoked})
	for name, token := range map[string]string{"no key": "", "garbage": "nope", "revoked": revokedKey} {
		t.Run(name, func(t *testing.T) {
			_, resp, err := dial(t, url, token)
			if err == nil {
				t.Fatal("dial succeeded")
			}
			if resp == nil || resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("dial: %v, response %+v; want 401", err, resp)
			}
			body, _ := io.ReadAll(resp.Body)
			var e struct {
				Error struct{ Code string } `json:"error"`
			}
			if json.Unmarshal(body, &e) != nil || e.Error.Code != "invalid_api_key" {
				t.Errorf("body %s: want OpenAI error JSON with code invalid_api_key", body)
			}
		})
	}
	if len(f.runner.delivered()) != 0 {
		t.Error("an unauthorized connection delivered a message")
	}
}

func TestWSMessageStreams(t *testing.T) {
	f := newFixture(t)
	f.runner.events = []agent.Event{
		{Delta: "Hel"}, {Delta: "lo"},
		{Result: &agent.Result{Content: "Hello", Usage: chat.Usage{PromptTokens: 3, CompletionTokens: 2}}},
	}
	supervised := f.addKey(store.APIKey{ID: "k-sup", Autonomy: "supervised", RatePerMinute: 10})
	c := mustDial(t, f.wsServer(), supervised)
	c.message("m1", "", "alice", "hi")
	got := c.readN(4)

	in := f.runner.delivered()
	if len(in) != 1 {
		t.Fatalf("runner got %d inputs, want 1", len(in))
	}
	runID, session := in[0].RunID, wsSession("default", "k-sup", "alice")
	want := []frame{
		{Type: "ack", ID: "m1", RunID: runID, SessionID: session, Duplicate: no()},
		{Type: "delta", RunID: runID, Text: "Hel"},
		{Type: "delta", RunID: runID, Text: "lo"},
		{Type: "final", RunID: runID, Text: "Hello", Usage: &chat.Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
	if len(runID) != 32 || strings.Trim(runID, "0123456789abcdef") != "" {
		t.Errorf("run id %q: want 32 hex digits derived from the client id", runID)
	}
	wantIn := agent.Input{
		RunID: runID, SessionID: session, Agent: "default", Owner: "key:k-sup",
		Messages: []chat.Message{{Role: chat.User, Content: "hi"}},
		Autonomy: tool.Supervised, Stream: true, Interactive: true,
		Reply: agent.Reply{Channel: "ws", To: in[0].Reply.To},
	}
	if diff := cmp.Diff(wantIn, in[0]); diff != "" {
		t.Errorf("input (-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(in[0].Reply.To, "ws:") || len(in[0].Reply.To) < 10 {
		t.Errorf("reply address %q: want ws:<connection id>", in[0].Reply.To)
	}

	// The user defaults to the key's id, and one connection can talk to
	// several agents.
	c.message("m2", "lambdaclaw/coder", "", "hi")
	ack := c.read()
	if want := wsSession("coder", "k-sup", "k-sup"); ack.Type != "ack" || ack.SessionID != want {
		t.Errorf("ack %+v: want session %s", ack, want)
	}
	c.readN(3)
	if in := f.runner.delivered(); in[1].Agent != "coder" {
		t.Errorf("agent = %q, want coder", in[1].Agent)
	}
}

func TestWSDuplicateID(t *testing.T) {
	runs := fakeRuns{}
	f := newFixture(t, func(c *gateway.Config) { c.Runs = runs })
	f.runner.events = done
	url := f.wsServer()
	c := mustDial(t, url, f.token)
	c.message("same", "", "bob", "hi")
	first := c.readN(2)
	runID := first[0].RunID

	c.message("same", "", "bob", "hi")
	if diff := cmp.Diff(frame{Type: "ack", ID: "same", RunID: runID, SessionID: first[0].SessionID, Duplicate: yes()}, c.read()); diff != "" {
		t.Errorf("repeated id (-want +got):\n%s", diff)
	}
	// After a reconnect too.
	c2 := mustDial(t, url, f.token)
	c2.message("same", "", "bob", "hi")
	if got := c2.read(); got.Type != "ack" || got.Duplicate == nil || !*got.Duplicate || got.RunID != runID {
		t.Errorf("repeated id on a new connection: %+v, want a duplicate ack of run %s", got, runID)
	}
	if n := len(f.runner.delivered()); n != 1 {
		t.Errorf("runner got %d inputs, want 1", n)
	}

	// The same client id from another user is another message.
	c2.message("same", "", "carol", "hi")
	if got := c2.readN(2); got[0].Duplicate == nil || *got[0].Duplicate || got[0].RunID == runID {
		t.Errorf("another user's id: %+v, want a new run", got[0])
	}

	// A run the gateway does not remember (it restarted) is found in the
	// store: nothing is delivered.
	g2, err := gateway.New(gateway.Config{Runner: f.runner, Events: f.hub, Keys: f.keys, Runs: runs, Agents: func() []string { return testAgents }})
	if err != nil {
		t.Fatal(err)
	}
	f.g = g2
	runs[runID] = store.Run{ID: runID, SessionID: first[0].SessionID, Status: store.RunDone, State: []byte(`{"run_id":"` + runID + `","session_id":"` + first[0].SessionID + `"}`)}
	c3 := mustDial(t, f.wsServer(), f.token)
	c3.message("same", "", "bob", "hi")
	if diff := cmp.Diff(frame{Type: "ack", ID: "same", RunID: runID, SessionID: first[0].SessionID, Duplicate: yes()}, c3.read()); diff != "" {
		t.Errorf("repeated id after a restart (-want +got):\n%s", diff)
	}
	if n := len(f.runner.delivered()); n != 2 {
		t.Errorf("runner got %d inputs, want 2", n)
	}
}

// fakeRuns is a store of runs by id.
type fakeRuns map[string]store.Run

func (r fakeRuns) GetRun(_ context.Context, id string) (store.Run, error) {
	run, ok := r[id]
	if !ok {
		return store.Run{}, store.ErrNotFound
	}
	return run, nil
}

// approvalScript parks the first message's run on an approval; a "/yes"
// resumes it, as agent.Driver.Deliver does.
func approvalScript(parked *agent.RunState) func(agent.Input) (agent.RunState, []agent.Event) {
	return func(in agent.Input) (agent.RunState, []agent.Event) {
		if _, ok := agent.ParseDecision(in.Messages[0].Content); ok && parked.RunID != "" {
			return *parked, []agent.Event{{Delta: "Written."}, {Result: &agent.Result{Content: "Written."}}}
		}
		*parked = agent.RunState{RunID: in.RunID, SessionID: in.SessionID, Agent: in.Agent, Reply: in.Reply}
		ap := store.Approval{ID: in.RunID + "-0", RunID: in.RunID, Tools: []string{"write_file"}, Prompt: "Approval needed. Reply /yes"}
		return *parked, []agent.Event{{Delta: "Let me write it."}, {Approval: &ap}}
	}
}

func TestWSApprovalInBand(t *testing.T) {
	f := newFixture(t)
	var parked agent.RunState
	f.runner.script = approvalScript(&parked)
	url := f.wsServer()
	c := mustDial(t, url, f.token)
	c.message("m1", "", "dana", "write the file")
	got := c.readN(3)
	runID := parked.RunID
	want := []frame{
		{Type: "ack", ID: "m1", RunID: runID, SessionID: parked.SessionID, Duplicate: no()},
		{Type: "delta", RunID: runID, Text: "Let me write it."},
		{Type: "approval", RunID: runID, ApprovalID: runID + "-0", Tools: []string{"write_file"}, Prompt: "Approval needed. Reply /yes"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("frames (-want +got):\n%s", diff)
	}
	c.message("m2", "", "dana", "/yes")
	want = []frame{
		{Type: "ack", ID: "m2", RunID: runID, SessionID: parked.SessionID, Duplicate: no()},
		{Type: "delta", RunID: runID, Text: "Written."},
		{Type: "final", RunID: runID, Text: "Written.", Usage: &chat.Usage{}},
	}
	if diff := cmp.Diff(want, c.readN(3)); diff != "" {
		t.Errorf("after /yes (-want +got):\n%s", diff)
	}
	if in := f.runner.delivered(); len(in) != 2 || in[1].Messages[0].Content != "/yes" || in[1].SessionID != parked.SessionID {
		t.Errorf("inputs %+v: want the answer delivered to the same session", in)
	}
}

// A run parked by one connection and answered from another reports to the
// answering connection too.
func TestWSApprovalAnsweredElsewhere(t *testing.T) {
	f := newFixture(t)
	var parked agent.RunState
	f.runner.script = approvalScript(&parked)
	url := f.wsServer()
	a := mustDial(t, url, f.token)
	a.message("m1", "", "erin", "write the file")
	a.readN(3)
	a.c.Close(websocket.StatusNormalClosure, "")

	b := mustDial(t, url, f.token)
	b.message("m2", "", "erin", "/yes")
	got := b.readN(3)
	if got[0].RunID != parked.RunID || got[2].Type != "final" || got[2].RunID != parked.RunID {
		t.Errorf("frames %+v: want the parked run's ack and final", got)
	}
}

func TestWSReset(t *testing.T) {
	f := newFixture(t)
	c := mustDial(t, f.wsServer(), f.token)
	c.send(map[string]string{"type": "reset", "id": "r1", "agent": "writer", "user": "fay"})
	session := wsSession("writer", "k-full", "fay")
	if diff := cmp.Diff(frame{Type: "ack", ID: "r1", SessionID: session, Duplicate: no()}, c.read()); diff != "" {
		t.Errorf("reset (-want +got):\n%s", diff)
	}
	f.runner.mu.Lock()
	f.runner.resetErr = agent.ErrBusy
	f.runner.mu.Unlock()
	c.send(map[string]string{"type": "reset", "id": "r2", "user": "fay"})
	if diff := cmp.Diff(frame{Type: "error", ID: "r2", Code: "busy"}, c.read(), ignoreMessage); diff != "" {
		t.Errorf("reset while busy (-want +got):\n%s", diff)
	}
	f.runner.mu.Lock()
	defer f.runner.mu.Unlock()
	if diff := cmp.Diff([]string{session, wsSession("default", "k-full", "fay")}, f.runner.resets); diff != "" {
		t.Errorf("resets (-want +got):\n%s", diff)
	}
}

func TestWSBadFrames(t *testing.T) {
	f := newFixture(t)
	f.runner.events = done
	writerOnly := f.addKey(store.APIKey{ID: "k-writer", Agents: []string{"writer"}})
	url := f.wsServer()
	c := mustDial(t, url, f.token)
	tests := []struct {
		name string
		send func()
		want frame
	}{
		{"malformed JSON", func() { c.sendRaw(websocket.MessageText, `{"type":"message",`) }, frame{Type: "error", Code: "invalid_json"}},
		{"not an object", func() { c.sendRaw(websocket.MessageText, `[1]`) }, frame{Type: "error", Code: "invalid_json"}},
		{"binary frame", func() { c.sendRaw(websocket.MessageBinary, `{"type":"message"}`) }, frame{Type: "error", Code: "invalid_frame"}},
		{"unknown type", func() { c.send(map[string]string{"type": "dance", "id": "x1"}) }, frame{Type: "error", ID: "x1", Code: "unknown_type"}},
		{"no type", func() { c.send(map[string]string{"id": "x2"}) }, frame{Type: "error", ID: "x2", Code: "unknown_type"}},
		{"empty text", func() { c.message("x3", "", "", "  ") }, frame{Type: "error", ID: "x3", Code: "invalid_message"}},
		{"unknown agent", func() { c.message("x4", "ghost", "", "hi") }, frame{Type: "error", ID: "x4", Code: "model_not_found"}},
		{"id too long", func() { c.message(strings.Repeat("i", 257), "", "", "hi") }, frame{Type: "error", Code: "invalid_message"}},
		{"user too long", func() { c.message("x5", "", strings.Repeat("u", 257), "hi") }, frame{Type: "error", ID: "x5", Code: "invalid_message"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.send()
			if diff := cmp.Diff(tt.want, c.read(), ignoreMessage); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	w := mustDial(t, url, writerOnly)
	w.message("y1", "default", "", "hi")
	if diff := cmp.Diff(frame{Type: "error", ID: "y1", Code: "model_not_found"}, w.read(), ignoreMessage); diff != "" {
		t.Errorf("agent the key may not use (-want +got):\n%s", diff)
	}
	// The connection survives every bad frame.
	c.message("ok", "", "", "hi")
	if got := c.readN(2); got[0].Type != "ack" || got[1].Type != "final" {
		t.Errorf("after bad frames: %+v, want ack and final", got)
	}
	if n := len(f.runner.delivered()); n != 1 {
		t.Errorf("runner got %d inputs, want 1", n)
	}
}

func TestWSRunFails(t *testing.T) {
	f := newFixture(t)
	f.runner.events = []agent.Event{{Result: &agent.Result{Error: "HTTP 500", ErrorCode: agent.CodeUpstream}}}
	c := mustDial(t, f.wsServer(), f.token)
	c.message("m1", "", "", "hi")
	got := c.readN(2)
	if diff := cmp.Diff(frame{Type: "error", RunID: got[0].RunID, Code: "upstream_error"}, got[1], ignoreMessage); diff != "" {
		t.Errorf("failed run (-want +got):\n%s", diff)
	}
	f.runner.mu.Lock()
	f.runner.err = errors.New("store down")
	f.runner.mu.Unlock()
	c.message("m2", "", "", "hi")
	if diff := cmp.Diff(frame{Type: "error", ID: "m2", Code: "internal_error"}, c.read(), ignoreMessage); diff != "" {
		t.Errorf("delivery fails (-want +got):\n%s", diff)
	}
	f.runner.mu.Lock()
	f.runner.err = fmt.Errorf("enqueue: %w", store.ErrStorageFull)
	f.runner.mu.Unlock()
	c.message("m3", "", "", "hi")
	if diff := cmp.Diff(frame{Type: "error", ID: "m3", Code: "storage_full", Message: agent.StorageFullMessage}, c.read()); diff != "" {
		t.Errorf("storage full (-want +got):\n%s", diff)
	}
}

func TestWSRateLimit(t *testing.T) {
	f := newFixture(t)
	f.runner.events = done
	c := mustDial(t, f.wsServer(), f.token)
	f.limiter.mu.Lock()
	f.limiter.wait = 3 * time.Second
	f.limiter.mu.Unlock()
	c.message("m1", "", "", "hi")
	if diff := cmp.Diff(frame{Type: "error", ID: "m1", Code: "rate_limit_exceeded"}, c.read(), ignoreMessage); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	f.limiter.mu.Lock()
	f.limiter.wait = 0
	calls := len(f.limiter.calls)
	f.limiter.mu.Unlock()
	if calls != 2 {
		t.Errorf("limiter calls = %d, want 2 (the upgrade and the message)", calls)
	}
	c.message("m2", "", "", "hi")
	if got := c.read(); got.Type != "ack" {
		t.Errorf("after the limit: %+v, want ack", got)
	}
	c.read()
}

func TestWSRevokedKeyCloses(t *testing.T) {
	f := newFixture(t)
	c := mustDial(t, f.wsServer(), f.token)
	f.keys.mu.Lock()
	for h, k := range f.keys.byHash {
		now := time.Now()
		k.RevokedAt = &now
		f.keys.byHash[h] = k
	}
	f.keys.mu.Unlock()
	c.message("m1", "", "", "hi")
	if diff := cmp.Diff(frame{Type: "error", ID: "m1", Code: "invalid_api_key"}, c.read(), ignoreMessage); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	_, _, err := c.c.Read(context.Background())
	if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Errorf("read after revocation: %v, want close status 1008", err)
	}
}

func TestWSFrameTooBig(t *testing.T) {
	f := newFixture(t, func(c *gateway.Config) { c.MaxBodyBytes = 64 })
	c := mustDial(t, f.wsServer(), f.token)
	c.message("m1", "", "", strings.Repeat("x", 100))
	_, _, err := c.c.Read(context.Background())
	if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Errorf("read after a big frame: %v, want close status 1009", err)
	}
}

func TestWSShutdown(t *testing.T) {
	f := newFixture(t)
	url := f.wsServer()
	c := mustDial(t, url, f.token)
	errc := make(chan error, 1)
	go func() {
		_, _, err := c.c.Read(context.Background())
		errc <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.g.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-errc; websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Errorf("read during shutdown: %v, want close status 1001", err)
	}
	if _, resp, err := dial(t, url, f.token); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("dial after shutdown: %v, want 503", err)
	}
}

// wsSession is the session of user, under the key of that id, with agent.
func wsSession(agentName, keyID, user string) string {
	_, s := agent.Identity{}.Session(agentName, "ws", keyID, user)
	return s
}

// TestWSKeyAsSubprotocol connects as a browser does: the key offered as a
// subprotocol, which the server answers with "lambdaclaw", never the key.
func TestWSKeyAsSubprotocol(t *testing.T) {
	f := newFixture(t)
	url := f.wsServer()
	dialWith := func(protocols ...string) (*websocket.Conn, *http.Response, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: protocols})
	}
	c, resp, err := dialWith("lambdaclaw", "lambdaclaw.key."+f.token)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.CloseNow()
	if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != "lambdaclaw" {
		t.Errorf("selected subprotocol %q, want lambdaclaw", got)
	}
	if c.Subprotocol() != "lambdaclaw" {
		t.Errorf("Subprotocol() = %q", c.Subprotocol())
	}
	c.Close(websocket.StatusNormalClosure, "")

	for name, protocols := range map[string][]string{
		"key without the protocol": {"lambdaclaw.key." + f.token},
		"unknown key":              {"lambdaclaw", "lambdaclaw.key.lc_nope"},
		"protocol only":            {"lambdaclaw"},
	} {
		t.Run(name, func(t *testing.T) {
			_, resp, err := dialWith(protocols...)
			if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("dial: %v, response %+v; want 401", err, resp)
			}
		})
	}
	// Only /ws reads a key from the subprotocol header.
	r := httptest.NewRequest("GET", "/v1/models", nil)
	r.Header.Set("Sec-WebSocket-Protocol", "lambdaclaw, lambdaclaw.key."+f.token)
	w := httptest.NewRecorder()
	f.g.ServeHTTP(w, r)
	if w.Code != http.StatusUnauthorized {
		t.Errorf("GET /v1/models with the key as a subprotocol: %d, want 401", w.Code)
	}
}
