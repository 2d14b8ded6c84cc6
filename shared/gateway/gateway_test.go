package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lambdaclaw/lambdaclaw/shared/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/store"
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
	if string(e["param"]) != "null" {
		t.Errorf("param = %s, want null", e["param"])
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

func TestModels(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		name  string
		token string
		want  []string
	}{
		{"all agents", f.token, []string{"default", "coder", "writer"}},
		{"allowed agents only", f.addKey(store.APIKey{ID: "k1", Agents: []string{"writer", "default", "ghost"}}), []string{"default", "writer"}},
		{"no allowed agent exists", f.addKey(store.APIKey{ID: "k2", Agents: []string{"ghost"}}), []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := f.do("GET", "/v1/models", tt.token, "")
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			var list struct {
				Object string `json:"object"`
				Data   []struct {
					ID      string `json:"id"`
					Object  string `json:"object"`
					Created int64  `json:"created"`
					OwnedBy string `json:"owned_by"`
				} `json:"data"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil {
				t.Fatal(err)
			}
			if list.Object != "list" || list.Data == nil {
				t.Errorf("body %s: want object list with a data array", w.Body)
			}
			ids := []string{}
			for _, m := range list.Data {
				ids = append(ids, m.ID)
				if m.Object != "model" || m.OwnedBy != "lambdaclaw" || m.Created == 0 {
					t.Errorf("model %+v: want object model, owned_by lambdaclaw, a created time", m)
				}
			}
			if diff := cmp.Diff(tt.want, ids); diff != "" {
				t.Errorf("model ids (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnknownEndpoint(t *testing.T) {
	f := newFixture(t)
	for _, tt := range []struct{ method, path string }{
		{"GET", "/v1/nope"},
		{"POST", "/v1/embeddings"},
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
	f := newFixture(t)
	w := f.do("GET", "/health", "", "")
	var body struct {
		Status string `json:"status"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != http.StatusOK || body.Status != "ok" {
		t.Errorf("GET /health = %d %s (%v), want 200 with status ok", w.Code, w.Body, err)
	}
}

func TestRetrieveModel(t *testing.T) {
	f := newFixture(t)
	tests := []struct {
		path string
		code int
		id   string
	}{
		{"/v1/models/coder", http.StatusOK, "coder"},
		{"/v1/models/lambdaclaw/coder", http.StatusOK, "coder"},
		{"/v1/models/nope", http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		w := f.do("GET", tt.path, f.token, "")
		if w.Code != tt.code {
			t.Errorf("GET %s: status %d, want %d: %s", tt.path, w.Code, tt.code, w.Body)
			continue
		}
		var m struct{ ID, Object string }
		json.Unmarshal(w.Body.Bytes(), &m)
		if tt.code == http.StatusOK && (m.ID != tt.id || m.Object != "model") {
			t.Errorf("GET %s = %s", tt.path, w.Body)
		}
	}
}
