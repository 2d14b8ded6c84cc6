package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// fakeKeys finds keys in a map by hash.
type fakeKeys struct {
	mu     sync.Mutex
	byHash map[string]store.APIKey
	err    error
}

func (f *fakeKeys) KeyByHash(_ context.Context, hash string) (store.APIKey, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return store.APIKey{}, f.err
	}
	k, ok := f.byHash[hash]
	if !ok {
		return store.APIKey{}, store.ErrNotFound
	}
	return k, nil
}

// fakeLimiter denies every request when wait is set, and records calls.
type fakeLimiter struct {
	mu    sync.Mutex
	wait  time.Duration
	calls []limitCall
}

type limitCall struct {
	Key   string
	Limit int
}

func (f *fakeLimiter) Allow(key string, limit int) (bool, time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, limitCall{key, limit})
	return f.wait == 0, f.wait
}

// trackingHub is an agent.Hub that remembers which keys have subscribers.
type trackingHub struct {
	*agent.Hub
	mu     sync.Mutex
	active map[string]bool
}

func (h *trackingHub) Subscribe(key string) *agent.Subscription {
	h.mu.Lock()
	h.active[key] = true
	h.mu.Unlock()
	return h.Hub.Subscribe(key)
}

func (h *trackingHub) Attach(key string, s *agent.Subscription) {
	h.mu.Lock()
	h.active[key] = true
	h.mu.Unlock()
	h.Hub.Attach(key, s)
}

func (h *trackingHub) Unsubscribe(key string, s *agent.Subscription) {
	h.mu.Lock()
	delete(h.active, key)
	h.mu.Unlock()
	h.Hub.Unsubscribe(key, s)
}

// isActive reports whether key has a subscriber.
func (h *trackingHub) isActive(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.active[key]
}

// activeKeys returns the keys with subscribers.
func (h *trackingHub) activeKeys() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var keys []string
	for k := range h.active {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// fakeRunner records its inputs and publishes events to the hub as if the
// run had happened at once. script, when set, decides per input which run
// answers (an existing run's state resumes it) and what it reports.
type fakeRunner struct {
	t      *testing.T
	hub    *trackingHub
	events []agent.Event
	err    error
	script func(in agent.Input) (agent.RunState, []agent.Event)

	mu       sync.Mutex
	inputs   []agent.Input
	resets   []string
	resetErr error
}

func (r *fakeRunner) Deliver(_ context.Context, in agent.Input, subscribe func(string)) (agent.RunState, error) {
	if in.RunID == "" {
		in.RunID = agent.NewID()
	}
	r.mu.Lock()
	r.inputs = append(r.inputs, in)
	err, events, script := r.err, r.events, r.script
	r.mu.Unlock()
	if err != nil {
		return agent.RunState{}, err
	}
	st := agent.RunState{RunID: in.RunID, SessionID: in.SessionID, Agent: in.Agent, Reply: in.Reply}
	if script != nil {
		st, events = script(in)
	}
	subscribe(st.RunID)
	if !r.hub.isActive(agent.RunKey(st.RunID)) {
		r.t.Errorf("run %q started before the gateway subscribed to it", st.RunID)
	}
	for _, ev := range events {
		switch {
		case ev.Result != nil:
			r.hub.Finish(st, *ev.Result)
		case ev.Approval != nil:
			r.hub.Approval(st, *ev.Approval)
		default:
			r.hub.Delta(st, ev.Delta)
		}
	}
	return st, nil
}

func (r *fakeRunner) Reset(_ context.Context, sessionID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resets = append(r.resets, sessionID)
	return r.resetErr
}

// delivered returns the inputs so far.
func (r *fakeRunner) delivered() []agent.Input {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.inputs)
}

type fixture struct {
	t       *testing.T
	g       *gateway.Gateway
	runner  *fakeRunner
	hub     *trackingHub
	keys    *fakeKeys
	limiter *fakeLimiter
	// token is a key allowed everything, with full autonomy.
	token string
}

var testAgents = []string{"default", "coder", "writer"}

func newFixture(t *testing.T, edit ...func(*gateway.Config)) *fixture {
	t.Helper()
	hub := &trackingHub{Hub: agent.NewHub(), active: map[string]bool{}}
	f := &fixture{
		t:       t,
		hub:     hub,
		runner:  &fakeRunner{t: t, hub: hub},
		keys:    &fakeKeys{byHash: map[string]store.APIKey{}},
		limiter: &fakeLimiter{},
	}
	cfg := gateway.Config{
		Runner: f.runner, Events: hub, Keys: f.keys, Limiter: f.limiter,
		Agents: func() []string { return slices.Clone(testAgents) },
	}
	for _, e := range edit {
		e(&cfg)
	}
	g, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.g = g
	f.token = f.addKey(store.APIKey{ID: "k-full", Autonomy: "full", RatePerMinute: 60})
	t.Cleanup(func() {
		if keys := hub.activeKeys(); len(keys) != 0 {
			t.Errorf("subscriptions left behind: %v", keys)
		}
	})
	return f
}

// addKey stores k under a fresh key and returns the key.
func (f *fixture) addKey(k store.APIKey) string {
	f.t.Helper()
	key, hash, prefix, err := apikey.New()
	if err != nil {
		f.t.Fatal(err)
	}
	k.Hash, k.Prefix = hash, prefix
	f.keys.mu.Lock()
	f.keys.byHash[hash] = k
	f.keys.mu.Unlock()
	return key
}

// do sends a request; token "" sends no Authorization header. hdr holds
// header name/value pairs.
func (f *fixture) do(method, path, token, body string, hdr ...string) *httptest.ResponseRecorder {
	f.t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	f.g.ServeHTTP(w, r)
	return w
}

// apiErr is what the tests compare of an error response.
type apiErr struct {
	Status int
	Type   string
	Code   string
}

// decodeError checks that w holds OpenAI's error JSON, exactly
// {"error":{"message","type","param","code"}} with a null param, and
// returns its status, type and code, and its message.
func decodeError(t *testing.T, w *httptest.ResponseRecorder) (apiErr, string) {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var body map[string]map[string]json.RawMessage
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("error body %q: %v", w.Body, err)
	}
	if len(body) != 1 || body["error"] == nil {
		t.Fatalf("error body %s: want one member, error", w.Body)
	}
	e := body["error"]
	var fields []string
	for k := range e {
		fields = append(fields, k)
	}
	slices.Sort(fields)
	if diff := cmp.Diff([]string{"code", "message", "param", "type"}, fields); diff != "" {
		t.Errorf("error fields (-want +got):\n%s", diff)
	}
	var param *string
	if err := json.Unmarshal(e["param"], &param); err != nil {
		t.Errorf("param = %s, want null or a string", e["param"])
	}
	var typ, code, msg string
	_ = json.Unmarshal(e["type"], &typ)
	_ = json.Unmarshal(e["code"], &code)
	_ = json.Unmarshal(e["message"], &msg)
	if msg == "" {
		t.Error("error message is empty")
	}
	return apiErr{Status: w.Code, Type: typ, Code: code}, msg
}

func TestNewRequiresDependencies(t *testing.T) {
	hub := agent.NewHub()
	full := gateway.Config{Runner: &fakeRunner{}, Events: hub, Keys: &fakeKeys{}, Agents: func() []string { return nil }}
	if _, err := gateway.New(full); err != nil {
		t.Fatalf("New with all dependencies: %v", err)
	}
	for name, edit := range map[string]func(*gateway.Config){
		"Runner": func(c *gateway.Config) { c.Runner = nil },
		"Events": func(c *gateway.Config) { c.Events = nil },
		"Keys":   func(c *gateway.Config) { c.Keys = nil },
		"Agents": func(c *gateway.Config) { c.Agents = nil },
	} {
		c := full
		edit(&c)
		if _, err := gateway.New(c); err == nil {
			t.Errorf("New without %s succeeded", name)
		}
	}
}

func TestUnauthorized(t *testing.T) {
	f := newFixture(t)
	revoked := time.Now()
	revokedKey := f.addKey(store.APIKey{ID: "k-old", Autonomy: "full", RevokedAt: &revoked})
	unknown, _, _, err := apikey.New()
	if err != nil {
		t.Fatal(err)
	}
	want := apiErr{http.StatusUnauthorized, "invalid_request_error", "invalid_api_key"}
	tests := []struct {
		name string
		auth string // the Authorization header; "" sends none
	}{
		{"no header", ""},
		{"empty bearer", "Bearer "},
		{"basic auth", "Basic " + f.token},
		{"lower-case scheme", "bearer " + f.token},
		{"garbage key", "Bearer not-a-key"},
		{"unknown key", "Bearer " + unknown},
		{"revoked key", "Bearer " + revokedKey},
	}
	for _, tt := range tests {
		for _, ep := range []struct{ method, path, body string }{
			{"POST", "/v1/chat/completions", `{"model":"default","messages":[{"role":"user","content":"hi"}]}`},
			{"GET", "/v1/models", ""},
		} {
			t.Run(tt.name+" "+ep.path, func(t *testing.T) {
				r := httptest.NewRequest(ep.method, ep.path, strings.NewReader(ep.body))
				if tt.auth != "" {
					r.Header.Set("Authorization", tt.auth)
				}
				w := httptest.NewRecorder()
				f.g.ServeHTTP(w, r)
				got, _ := decodeError(t, w)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("response (-want +got):\n%s", diff)
				}
			})
		}
	}
	if len(f.runner.inputs) != 0 || len(f.limiter.calls) != 0 {
		t.Errorf("unauthorized requests reached the runner (%d) or limiter (%d)", len(f.runner.inputs), len(f.limiter.calls))
	}
}

func TestKeyLookupFails(t *testing.T) {
	f := newFixture(t)
	f.keys.err = errors.New("store unreachable")
	got, _ := decodeError(t, f.do("GET", "/v1/models", f.token, ""))
	if diff := cmp.Diff(apiErr{http.StatusInternalServerError, "server_error", "internal_error"}, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

func TestRateLimited(t *testing.T) {
	tests := []struct {
		wait       time.Duration
		retryAfter string
	}{
		{1500 * time.Millisecond, "2"},
		{time.Second, "1"},
		{time.Millisecond, "1"},
		{42 * time.Second, "42"},
	}
	for _, tt := range tests {
		t.Run(tt.wait.String(), func(t *testing.T) {
			f := newFixture(t)
			f.limiter.wait = tt.wait
			w := f.do("POST", "/v1/chat/completions", f.token, `{"model":"default","messages":[{"role":"user","content":"hi"}]}`)
			got, msg := decodeError(t, w)
			if diff := cmp.Diff(apiErr{http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded"}, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if ra := w.Header().Get("Retry-After"); ra != tt.retryAfter {
				t.Errorf("Retry-After = %q, want %q", ra, tt.retryAfter)
			}
			if !strings.Contains(msg, "60 requests per minute") {
				t.Errorf("message %q does not state the limit", msg)
			}
			if diff := cmp.Diff([]limitCall{{"k-full", 60}}, f.limiter.calls); diff != "" {
				t.Errorf("limiter calls (-want +got):\n%s", diff)
			}
			if len(f.runner.inputs) != 0 {
				t.Error("a rate-limited request started a run")
			}
		})
	}
}

// agentCreated is when the test agents were created; writer's time is
// not known.
var agentCreated = map[string]time.Time{
	"default": time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
	"coder":   time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC),
}

// modelEntry is an entry of /v1/models.
type modelEntry struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
}

func entryOf(name string) modelEntry {
	var created int64
	if t, ok := agentCreated[name]; ok {
		created = t.Unix()
	}
	return modelEntry{ID: name, Object: "model", Created: created, OwnedBy: "lambdaclaw"}
}

func withCreated(c *gateway.Config) {
	c.Created = func(name string) time.Time { return agentCreated[name] }
}

func TestModels(t *testing.T) {
	f := newFixture(t, withCreated)
	tests := []struct {
		name  string
		token string
		want  []modelEntry
	}{
		{"all agents", f.token, []modelEntry{entryOf("default"), entryOf("coder"), entryOf("writer")}},
		{"allowed agents only", f.addKey(store.APIKey{ID: "k1", Agents: []string{"writer", "default", "ghost"}}), []modelEntry{entryOf("default"), entryOf("writer")}},
		{"no allowed agent exists", f.addKey(store.APIKey{ID: "k2", Agents: []string{"ghost"}}), []modelEntry{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Twice: the created times do not change from one request
			// to the next.
			for range 2 {
				w := f.do("GET", "/v1/models", tt.token, "")
				if w.Code != http.StatusOK {
					t.Fatalf("status %d: %s", w.Code, w.Body)
				}
				var list struct {
					Object string       `json:"object"`
					Data   []modelEntry `json:"data"`
				}
				if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil {
					t.Fatal(err)
				}
				if list.Object != "list" || list.Data == nil {
					t.Errorf("body %s: want object list with a data array", w.Body)
				}
				if diff := cmp.Diff(tt.want, list.Data); diff != "" {
					t.Errorf("models (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestUnknownEndpoint(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct{ method, path string }{
		{"GET", "/v1/nope"},
		{"POST", "/v1/audio/speech"},
		{"GET", "/v1/embeddings"},
		{"GET", "/v1/"},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			got, _ := decodeError(t, f.do(tt.method, tt.path, f.token, ""))
			if diff := cmp.Diff(apiErr{http.StatusNotFound, "invalid_request_error", "not_found"}, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHealth(t *testing.T) {
	type health struct {
		Status     string            `json:"status"`
		Components map[string]string `json:"components"`
	}
	tests := []struct {
		name       string
		components func() map[string]string
		want       health
	}{
		{"no late components", nil, health{Status: "ok"}},
		{"a sandbox starting", func() map[string]string { return map[string]string{"sandbox": "starting"} },
			health{Status: "ok", Components: map[string]string{"sandbox": "starting"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *gateway.Config) { c.Components = tt.components })
			w := f.do("GET", "/health", "", "")
			var got health
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusOK {
				t.Fatalf("GET /health = %d %s (%v), want 200", w.Code, w.Body, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("GET /health (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRetrieveModel(t *testing.T) {
	f := newFixture(t, withCreated)
	limited := f.addKey(store.APIKey{ID: "k-writer", Agents: []string{"writer"}})
	tests := []struct {
		path  string
		token string
		want  modelEntry // zero for a 404
	}{
		{"/v1/models/coder", f.token, entryOf("coder")},
		{"/v1/models/lambdaclaw/coder", f.token, entryOf("coder")},
		{"/v1/models/writer", f.token, entryOf("writer")},
		{"/v1/models/writer", limited, entryOf("writer")},
		{"/v1/models/coder", limited, modelEntry{}},
		{"/v1/models/nope", f.token, modelEntry{}},
	}
	for _, tt := range tests {
		w := f.do("GET", tt.path, tt.token, "")
		if tt.want == (modelEntry{}) {
			got, _ := decodeError(t, w)
			if diff := cmp.Diff(apiErr{http.StatusNotFound, "invalid_request_error", "model_not_found"}, got); diff != "" {
				t.Errorf("GET %s (-want +got):\n%s", tt.path, diff)
			}
			continue
		}
		var got modelEntry
		if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != http.StatusOK {
			t.Errorf("GET %s = %d %s (%v)", tt.path, w.Code, w.Body, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", tt.path, diff)
		}
	}
}

const hiBody = `{"model":"default","messages":[{"role":"user","content":"hi"}]}`

// holdRuns makes every run whose message is "hold" wait until release is
// closed; arrived receives one value per held run.
func holdRuns(f *fixture) (arrived chan struct{}, release chan struct{}) {
	arrived, release = make(chan struct{}, 16), make(chan struct{})
	f.runner.script = func(in agent.Input) (agent.RunState, []agent.Event) {
		if in.Messages[len(in.Messages)-1].Content == "hold" {
			arrived <- struct{}{}
			<-release
		}
		return agent.RunState{RunID: in.RunID}, []agent.Event{{Result: &agent.Result{Content: "ok"}}}
	}
	return arrived, release
}

func TestConcurrentRequestsPerKey(t *testing.T) {
	f := newFixture(t, func(c *gateway.Config) { c.MaxConcurrentPerKey = 2 })
	other := f.addKey(store.APIKey{ID: "k-other", Autonomy: "full", RatePerMinute: 60})
	arrived, release := holdRuns(f)
	hold := `{"model":"default","messages":[{"role":"user","content":"hold"}]}`

	var wg sync.WaitGroup
	held := make([]*httptest.ResponseRecorder, 2)
	for i := range held {
		wg.Go(func() { held[i] = f.do("POST", "/v1/chat/completions", f.token, hold) })
	}
	for range held {
		<-arrived
	}

	// The key's third request is refused, whatever the endpoint.
	for _, ep := range []struct{ method, path, body string }{
		{"POST", "/v1/chat/completions", hiBody},
		{"GET", "/v1/models", ""},
	} {
		w := f.do(ep.method, ep.path, f.token, ep.body)
		got, msg := decodeError(t, w)
		if diff := cmp.Diff(apiErr{http.StatusTooManyRequests, "rate_limit_error", "concurrency_limit_exceeded"}, got); diff != "" {
			t.Errorf("%s %s over the limit (-want +got):\n%s", ep.method, ep.path, diff)
		}
		if w.Header().Get("Retry-After") != "1" || !strings.Contains(msg, "2 requests in flight") {
			t.Errorf("Retry-After %q, message %q: want 1 and the limit", w.Header().Get("Retry-After"), msg)
		}
	}
	// Another key is not affected.
	if w := f.do("POST", "/v1/chat/completions", other, hiBody); w.Code != http.StatusOK {
		t.Errorf("another key: %d %s", w.Code, w.Body)
	}
	// Refused requests were not counted against the rate limit.
	if n := len(f.limiter.calls); n != 3 {
		t.Errorf("limiter saw %d requests, want 3 (the admitted ones)", n)
	}

	close(release)
	wg.Wait()
	for i, w := range held {
		if w.Code != http.StatusOK {
			t.Errorf("held request %d: %d %s", i, w.Code, w.Body)
		}
	}
	// Finished requests give their slots back.
	for i := range 3 {
		if w := f.do("POST", "/v1/chat/completions", f.token, hiBody); w.Code != http.StatusOK {
			t.Errorf("request %d after the others finished: %d %s", i, w.Code, w.Body)
		}
	}
}

func TestNoConcurrencyLimitByDefault(t *testing.T) {
	f := newFixture(t)
	arrived, release := holdRuns(f)
	hold := `{"model":"default","messages":[{"role":"user","content":"hold"}]}`
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if w := f.do("POST", "/v1/chat/completions", f.token, hold); w.Code != http.StatusOK {
				t.Errorf("%d %s", w.Code, w.Body)
			}
		})
	}
	for range 10 {
		<-arrived
	}
	close(release)
	wg.Wait()
}

func TestWebSocketsPerKey(t *testing.T) {
	f := newFixture(t, func(c *gateway.Config) {
		c.MaxWebSocketsPerKey = 1
		c.MaxConcurrentPerKey = 1
	})
	f.runner.events = []agent.Event{{Result: &agent.Result{Content: "ok"}}}
	other := f.addKey(store.APIKey{ID: "k-other", Autonomy: "full", RatePerMinute: 60})
	url := f.wsServer()

	first := mustDial(t, url, f.token)
	_, resp, err := dial(t, url, f.token)
	if err == nil {
		t.Fatal("a second WebSocket of the same key was accepted")
	}
	if resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second WebSocket: err %v, response %+v; want 429", err, resp)
	}
	var body struct {
		Error struct{ Code, Message string }
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &body); err != nil || body.Error.Code != "websocket_limit_exceeded" || !strings.Contains(body.Error.Message, "1 WebSocket connections open") {
		t.Errorf("refusal body %s: want code websocket_limit_exceeded and the limit", b)
	}
	// Another key may connect, and an open WebSocket takes no request slot.
	mustDial(t, url, other)
	if w := f.do("POST", "/v1/chat/completions", f.token, hiBody); w.Code != http.StatusOK {
		t.Errorf("a request while the key's WebSocket is open: %d %s", w.Code, w.Body)
	}
	first.message("m1", "", "", "hi")
	if got := first.readN(2); got[1].Type != "final" {
		t.Errorf("the open WebSocket stopped working: %+v", got)
	}

	// Closing the connection gives its slot back once the server has
	// seen the close.
	first.c.CloseNow()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, resp, err := dial(t, url, f.token)
		if err == nil {
			break
		}
		if resp == nil || resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("reconnect after close: %v (response %+v)", err, resp)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var generatedID = regexp.MustCompile(`^req_[a-z2-7]{26}$`)

func TestRequestIDs(t *testing.T) {
	f := newFixture(t)
	f.runner.events = []agent.Event{{Result: &agent.Result{Content: "ok"}}}
	seen := map[string]bool{}
	for _, tt := range []struct {
		name, method, path, token, body string
		status                          int
	}{
		{"health", "GET", "/health", "", "", http.StatusOK},
		{"models", "GET", "/v1/models", f.token, "", http.StatusOK},
		{"completion", "POST", "/v1/chat/completions", f.token, hiBody, http.StatusOK},
		{"no key", "GET", "/v1/models", "", "", http.StatusUnauthorized},
		{"bad request", "POST", "/v1/chat/completions", f.token, "{", http.StatusBadRequest},
		{"unknown endpoint", "GET", "/v1/nothing", f.token, "", http.StatusNotFound},
	} {
		w := f.do(tt.method, tt.path, tt.token, tt.body)
		id := w.Header().Get(gateway.RequestIDHeader)
		if w.Code != tt.status || !generatedID.MatchString(id) || seen[id] {
			t.Errorf("%s: status %d, %s %q; want %d and a new generated id", tt.name, w.Code, gateway.RequestIDHeader, id, tt.status)
		}
		seen[id] = true
	}

	for _, tt := range []struct{ sent, want string }{
		{"trace-42_a.b", "trace-42_a.b"},
		{strings.Repeat("a", 64), strings.Repeat("a", 64)},
		{strings.Repeat("a", 65), ""},
		{"has space", ""},
		{"line\nbreak", ""},
		{"quote\"", ""},
		{"(request id evil)", ""},
		{"ümlaut", ""},
	} {
		got := f.do("GET", "/health", "", "", gateway.RequestIDHeader, tt.sent).Header().Get(gateway.RequestIDHeader)
		if tt.want == "" && !generatedID.MatchString(got) || tt.want != "" && got != tt.want {
			t.Errorf("client sent %q: got id %q, want %q (empty: a generated one)", tt.sent, got, tt.want)
		}
	}
}

// logTo makes the gateway log JSON lines to buf.
func logTo(buf *bytes.Buffer) func(*gateway.Config) {
	return func(c *gateway.Config) { c.Log = slog.New(slog.NewJSONHandler(buf, nil)) }
}

// logLine returns the log line whose msg is msg.
func logLine(t *testing.T, logs, msg string) map[string]any {
	t.Helper()
	for line := range strings.SplitSeq(strings.TrimSpace(logs), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == msg {
			return m
		}
	}
	t.Fatalf("no log line %q in:\n%s", msg, logs)
	return nil
}

func TestServerErrorsQuoteTheRequestID(t *testing.T) {
	var logs bytes.Buffer
	f := newFixture(t, logTo(&logs))
	f.keys.err = fmt.Errorf("dial tcp 10.0.0.7:5432: connection refused")
	w := f.do("GET", "/v1/models", f.token, "")
	_, msg := decodeError(t, w)
	id := w.Header().Get(gateway.RequestIDHeader)
	if want := "could not check the API key (request id " + id + ")"; w.Code != http.StatusInternalServerError || msg != want {
		t.Errorf("= %d %q, want 500 %q", w.Code, msg, want)
	}
	if line := logLine(t, logs.String(), "key lookup failed"); line["request_id"] != id {
		t.Errorf("log line %v does not carry request_id %s", line, id)
	}
}

// A failed run's error, which the loop writes for users (agent's
// TestFailureToldGenerically), reaches the client with the request id,
// and the log line joins the request id to the run's.
func TestRunFailureQuotesTheRequestID(t *testing.T) {
	const told = "the model provider failed to answer; try again in a moment (run r1)"
	for _, tt := range []struct {
		name   string
		events []agent.Event
		stream bool
	}{
		{"json", nil, false},
		{"stream before content", nil, true},
		{"stream after content", []agent.Event{{Delta: "Hel"}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			f := newFixture(t, logTo(&logs))
			f.runner.events = append(tt.events, agent.Event{Result: &agent.Result{Error: told, ErrorCode: agent.CodeUpstream}})
			w := f.do("POST", "/v1/chat/completions", f.token, fmt.Sprintf(`{"model":"default","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, tt.stream))
			id := w.Header().Get(gateway.RequestIDHeader)
			var msg string
			if tt.events == nil {
				var got apiErr
				got, msg = decodeError(t, w)
				if diff := cmp.Diff(apiErr{http.StatusBadGateway, "server_error", "upstream_error"}, got); diff != "" {
					t.Errorf("response (-want +got):\n%s", diff)
				}
			} else {
				data := sseData(t, w.Body.String())
				var ev struct {
					Error struct{ Message, Code string }
				}
				if len(data) < 2 || json.Unmarshal([]byte(data[len(data)-2]), &ev) != nil || ev.Error.Code != "upstream_error" || data[len(data)-1] != "[DONE]" {
					t.Fatalf("stream %q: want an upstream_error event, then [DONE]", data)
				}
				msg = ev.Error.Message
			}
			if want := told + " (request id " + id + ")"; msg != want {
				t.Errorf("message %q, want %q", msg, want)
			}
			line := logLine(t, logs.String(), "run failed")
			if line["request_id"] != id || line["code"] != "upstream_error" {
				t.Errorf("log line %v: want request_id %s and the code", line, id)
			}
		})
	}
}

// GET /metrics is the operator's: admin keys read it; any other key,
// read_only or full, gets 403; no key 401.
func TestMetricsAdminOnly(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "lambdaclaw_turns_total 3\n") })
	f := newFixture(t, func(c *gateway.Config) { c.Metrics = metrics })
	admin := f.addKey(store.APIKey{ID: "k-admin", Autonomy: "supervised", RatePerMinute: 60, Admin: true})
	readOnly := f.addKey(store.APIKey{ID: "k-ro", Autonomy: "read_only", RatePerMinute: 60})
	for _, tc := range []struct {
		name, token string
		want        apiErr
	}{
		{"no key", "", apiErr{http.StatusUnauthorized, "invalid_request_error", "invalid_api_key"}},
		{"read_only key", readOnly, apiErr{http.StatusForbidden, "permission_error", "admin_required"}},
		{"full key, not admin", f.token, apiErr{http.StatusForbidden, "permission_error", "admin_required"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := f.do("GET", "/metrics", tc.token, "")
			got, msg := decodeError(t, w)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("GET /metrics (-want +got):\n%s", diff)
			}
			if strings.Contains(w.Body.String(), "lambdaclaw_turns_total") {
				t.Errorf("the metrics leaked: %s", w.Body)
			}
			if tc.want.Status == http.StatusForbidden && !strings.Contains(msg, "admin key") {
				t.Errorf("message %q does not say an admin key is needed", msg)
			}
		})
	}
	if w := f.do("GET", "/metrics", admin, ""); w.Code != http.StatusOK || w.Body.String() != "lambdaclaw_turns_total 3\n" {
		t.Errorf("GET /metrics with an admin key: %d %q", w.Code, w.Body)
	}
}
