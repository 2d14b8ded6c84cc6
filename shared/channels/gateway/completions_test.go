package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

const helloBody = `{"model":"default","messages":[{"role":"user","content":"hi"}]}`

// done is a run that answers "Hello".
var done = []agent.Event{{Result: &agent.Result{Content: "Hello", Usage: chat.Usage{PromptTokens: 3, CompletionTokens: 2}}}}

func TestBadRequests(t *testing.T) {
	badRequest := func(code string) apiErr { return apiErr{http.StatusBadRequest, "invalid_request_error", code} }
	notFound := apiErr{http.StatusNotFound, "invalid_request_error", "model_not_found"}
	tests := []struct {
		name string
		body string
		hdr  []string
		want apiErr
	}{
		{"malformed JSON", `{"model":"default",`, nil, badRequest("invalid_json")},
		{"not an object", `[1,2]`, nil, badRequest("invalid_json")},
		{"messages not an array", `{"model":"default","messages":"hi"}`, nil, badRequest("invalid_type")},
		{"empty body", ``, nil, badRequest("invalid_json")},
		{"missing model", `{"messages":[{"role":"user","content":"hi"}]}`, nil, badRequest("missing_model")},
		{"empty messages", `{"model":"default","messages":[]}`, nil, badRequest("invalid_messages")},
		{"no messages", `{"model":"default"}`, nil, badRequest("invalid_messages")},
		{"bad role", `{"model":"default","messages":[{"role":"robot","content":"hi"}]}`, nil, badRequest("invalid_messages")},
		{"missing role", `{"model":"default","messages":[{"content":"hi"}]}`, nil, badRequest("invalid_messages")},
		{"tool message without tool_call_id", `{"model":"default","messages":[{"role":"user","content":"hi"},{"role":"tool","content":"42"}]}`, nil, badRequest("invalid_messages")},
		{"image over plain http", `{"model":"default","messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"http://x/y.png"}}]}]}`, nil, badRequest("invalid_value")},
		{"content a number", `{"model":"default","messages":[{"role":"user","content":5}]}`, nil, badRequest("invalid_value")},
		{"unknown model", `{"model":"ghost","messages":[{"role":"user","content":"hi"}]}`, nil, notFound},
		{"unknown prefixed model", `{"model":"lambdaclaw/ghost","messages":[{"role":"user","content":"hi"}]}`, nil, notFound},
		{"other prefix", `{"model":"openai/default","messages":[{"role":"user","content":"hi"}]}`, nil, notFound},
		{"stateful, last message from assistant", `{"model":"default","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`,
			[]string{gateway.SessionHeader, "u1"}, badRequest("invalid_messages")},
		{"stateful, last message a system message", `{"model":"default","messages":[{"role":"system","content":"be brief"}]}`,
			[]string{gateway.SessionHeader, "u1"}, badRequest("invalid_messages")},
		{"stateful, session key too long", helloBody,
			[]string{gateway.SessionHeader, strings.Repeat("k", 257)}, badRequest("invalid_session_key")},
		{"stateful, a tab in the session key", helloBody,
			[]string{gateway.SessionHeader, "user\t1"}, badRequest("invalid_session_key")},
		{"stateful, a control character in the session key", helloBody,
			[]string{gateway.SessionHeader, "user\x001"}, badRequest("invalid_session_key")},
		{"stateful, invalid UTF-8 in the session key", helloBody,
			[]string{gateway.SessionHeader, "user\xff1"}, badRequest("invalid_session_key")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.runner.events = done
			got, _ := decodeError(t, f.do("POST", "/v1/chat/completions", f.token, tt.body, tt.hdr...))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if len(f.runner.inputs) != 0 {
				t.Errorf("a rejected request started a run: %+v", f.runner.inputs)
			}
		})
	}
}

func TestModelNotAllowedForKey(t *testing.T) {
	f := newFixture(t)
	f.runner.events = done
	limited := f.addKey(store.APIKey{ID: "k-writer", Agents: []string{"writer"}})
	for _, model := range []string{"default", "lambdaclaw/default"} {
		got, msg := decodeError(t, f.do("POST", "/v1/chat/completions", limited, `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
		if diff := cmp.Diff(apiErr{http.StatusNotFound, "invalid_request_error", "model_not_found"}, got); diff != "" {
			t.Errorf("model %s (-want +got):\n%s", model, diff)
		}
		if !strings.Contains(msg, model) {
			t.Errorf("message %q does not name the model %q", msg, model)
		}
	}
	if w := f.do("POST", "/v1/chat/completions", limited, `{"model":"writer","messages":[{"role":"user","content":"hi"}]}`); w.Code != http.StatusOK {
		t.Errorf("allowed model: status %d: %s", w.Code, w.Body)
	}
}

func TestBodyTooLarge(t *testing.T) {
	f := newFixture(t, func(c *gateway.Config) { c.MaxBodyBytes = 64 })
	f.runner.events = done
	body := `{"model":"default","messages":[{"role":"user","content":"` + strings.Repeat("x", 100) + `"}]}`
	got, _ := decodeError(t, f.do("POST", "/v1/chat/completions", f.token, body))
	if diff := cmp.Diff(apiErr{http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large"}, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if w := f.do("POST", "/v1/chat/completions", f.token, helloBody); w.Code != http.StatusOK {
		t.Errorf("small body: status %d: %s", w.Code, w.Body)
	}
}

func TestDefaultMaxBodyBytes(t *testing.T) {
	f := newFixture(t) // MaxBodyBytes left zero
	f.runner.events = done
	body := `{"model":"default","messages":[{"role":"user","content":"` + strings.Repeat("x", 500<<10) + `"}]}`
	if w := f.do("POST", "/v1/chat/completions", f.token, body); w.Code != http.StatusOK {
		t.Errorf("500 KiB body with the default limit: status %d: %.200s", w.Code, w.Body)
	}
	big := `{"model":"default","messages":[{"role":"user","content":"` + strings.Repeat("x", 2<<20) + `"}]}`
	if w := f.do("POST", "/v1/chat/completions", f.token, big); w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("2 MiB body with the default limit: status %d, want 413", w.Code)
	}
}

// ignoreRunID leaves the generated run id out of Input comparisons.
var ignoreRunID = cmpopts.IgnoreFields(agent.Input{}, "RunID")

func TestStatefulInput(t *testing.T) {
	f := newFixture(t)
	f.runner.events = done
	body := `{"model":"lambdaclaw/coder","messages":[
		{"role":"system","content":"be brief"},
		{"role":"user","content":"first"},
		{"role":"assistant","content":"ok"},
		{"role":"user","content":[{"type":"text","text":"sec"},{"type":"text","text":"ond"}]}]}`
	for range 2 {
		if w := f.do("POST", "/v1/chat/completions", f.token, body, gateway.SessionHeader, "user-1"); w.Code != http.StatusOK {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	maxKey := strings.Repeat("k", 256)
	if w := f.do("POST", "/v1/chat/completions", f.token, body, gateway.SessionHeader, maxKey); w.Code != http.StatusOK {
		t.Fatalf("256-byte session key: status %d: %s", w.Code, w.Body)
	}
	in := func(sessionKey string) agent.Input {
		return agent.Input{
			SessionID: agent.SessionID("coder", "api:k-full/"+sessionKey), Agent: "coder", Owner: "key:k-full",
			Messages: []chat.Message{{Role: chat.User, Content: "second"}},
			Autonomy: tool.Full, Interactive: true, Reply: agent.Reply{Channel: "http"},
			Options: agent.Options{System: []chat.Message{{Role: chat.System, Content: "be brief"}}},
		}
	}
	want := []agent.Input{in("user-1"), in("user-1"), in(maxKey)}
	if diff := cmp.Diff(want, f.runner.inputs, ignoreRunID); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
	if a, b := f.runner.inputs[0].RunID, f.runner.inputs[1].RunID; a == "" || a == b {
		t.Errorf("run ids %q and %q: want distinct, non-empty", a, b)
	}
}

func TestStatelessInput(t *testing.T) {
	f := newFixture(t)
	f.runner.events = done
	body := `{"model":"default","temperature":0.2,"messages":[
		{"role":"developer","content":"be brief"},
		{"role":"system","content":[{"type":"text","text":"use tools"}]},
		{"role":"user","content":"weather?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
		{"role":"tool","tool_call_id":"c1","name":"get_weather","content":"rain"},
		{"role":"user","content":"thanks"}]}`
	if w := f.do("POST", "/v1/chat/completions", f.token, body); w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	want := []agent.Input{{
		Agent: "default", Owner: "key:k-full", Ephemeral: true,
		Messages: []chat.Message{
			{Role: chat.System, Content: "be brief"},
			{Role: chat.System, Content: "use tools"},
			{Role: chat.User, Content: "weather?"},
			{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}},
			{Role: chat.Tool, ToolCallID: "c1", Name: "get_weather", Content: "rain"},
			{Role: chat.User, Content: "thanks"},
		},
		Autonomy: tool.Full, Reply: agent.Reply{Channel: "http"},
		Options: agent.Options{Params: llm.Params{Temperature: ptr(0.2)}},
	}}
	if diff := cmp.Diff(want, f.runner.inputs, ignoreRunID); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
}

func TestAutonomyFromKey(t *testing.T) {
	tests := []struct {
		autonomy string
		want     tool.Autonomy
	}{
		{"full", tool.Full},
		{"supervised", tool.Supervised},
		{"read_only", tool.ReadOnly},
		{"", tool.ReadOnly},
		{"root", tool.ReadOnly},
	}
	for _, tt := range tests {
		t.Run(tt.autonomy, func(t *testing.T) {
			f := newFixture(t)
			f.runner.events = done
			key := f.addKey(store.APIKey{ID: "k", Autonomy: tt.autonomy})
			if w := f.do("POST", "/v1/chat/completions", key, helloBody); w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			if got := f.runner.inputs[0].Autonomy; got != tt.want {
				t.Errorf("Autonomy = %v, want %v", got, tt.want)
			}
		})
	}
}

// normalize decodes a JSON object, checks that its "created" member, if
// any, is a positive number, and drops it.
func normalize(t *testing.T, s string) any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	if c, ok := v["created"]; ok {
		if n, ok := c.(float64); !ok || n <= 0 {
			t.Errorf("created = %v, want a positive number", c)
		}
		delete(v, "created")
	}
	return v
}

func TestCompletion(t *testing.T) {
	f := newFixture(t)
	f.runner.events = []agent.Event{
		{Delta: "ignored when not streaming"},
		{Result: &agent.Result{Content: "Hello", Usage: chat.Usage{PromptTokens: 3, CompletionTokens: 2}}},
	}
	w := f.do("POST", "/v1/chat/completions", f.token, `{"model":"lambdaclaw/default","messages":[{"role":"user","content":"hi"}]}`)
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, Content-Type %q: %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	if got := f.runner.inputs[0].Agent; got != "default" {
		t.Errorf("agent = %q, want default", got)
	}
	want := fmt.Sprintf(`{"id":"chatcmpl-%s","object":"chat.completion","model":"lambdaclaw/default",
		"choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}],
		"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`, f.runner.inputs[0].RunID)
	if diff := cmp.Diff(normalize(t, want), normalize(t, w.Body.String())); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

func TestCompletionClientGone(t *testing.T) {
	f := newFixture(t) // the run publishes nothing
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(helloBody)).WithContext(ctx)
	r.Header.Set("Authorization", "Bearer "+f.token)
	w := httptest.NewRecorder()
	f.g.ServeHTTP(w, r) // must return, not wait for the run
	if len(f.runner.inputs) != 1 {
		t.Errorf("started %d runs, want 1", len(f.runner.inputs))
	}
}

// TestRunErrors checks each failure's status and message: the run's error,
// which the loop writes for users, and for server errors the request id.
func TestRunErrors(t *testing.T) {
	tests := []struct {
		name     string
		startErr error
		result   *agent.Result
		want     apiErr
		msg      string // how the message starts
	}{
		{"no provider", nil, &agent.Result{Error: "no LLM provider is configured: set OPENAI_API_KEY", ErrorCode: agent.CodeNoProvider},
			apiErr{http.StatusServiceUnavailable, "server_error", "provider_not_configured"}, "no LLM provider is configured"},
		{"upstream", nil, &agent.Result{Error: "the model provider failed to answer (run r1)", ErrorCode: agent.CodeUpstream},
			apiErr{http.StatusBadGateway, "server_error", "upstream_error"}, "the model provider failed"},
		{"internal", nil, &agent.Result{Error: "an internal error stopped this reply (run r1)", ErrorCode: agent.CodeInternal},
			apiErr{http.StatusInternalServerError, "server_error", "internal_error"}, "an internal error stopped this reply"},
		{"unknown agent at start", fmt.Errorf("%w %q", agent.ErrUnknownAgent, "default"), nil,
			apiErr{http.StatusNotFound, "invalid_request_error", "model_not_found"}, "unknown agent"},
		{"start fails", errors.New("store down"), nil,
			apiErr{http.StatusInternalServerError, "server_error", "internal_error"}, "could not start the run"},
		{"storage full", fmt.Errorf("enqueue: sqlite: enqueue run %q: write input 0: %w", "r1", store.ErrStorageFull), nil,
			apiErr{http.StatusInsufficientStorage, "server_error", "storage_full"}, "the server's storage is full: the message was not saved"},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", tt.name, stream), func(t *testing.T) {
				f := newFixture(t)
				f.runner.err = tt.startErr
				if tt.result != nil {
					f.runner.events = []agent.Event{{Result: tt.result}}
				}
				body := fmt.Sprintf(`{"model":"default","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream)
				w := f.do("POST", "/v1/chat/completions", f.token, body)
				got, msg := decodeError(t, w)
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("response (-want +got):\n%s", diff)
				}
				if !strings.HasPrefix(msg, tt.msg) {
					t.Errorf("message %q, want it to start with %q", msg, tt.msg)
				}
				suffix := " (request id " + w.Header().Get(gateway.RequestIDHeader) + ")"
				if got.Status >= 500 != strings.HasSuffix(msg, suffix) {
					t.Errorf("message %q: want the suffix %q exactly on server errors", msg, suffix)
				}
			})
		}
	}
}

// sseData returns the data of each event of an SSE body.
func sseData(t *testing.T, body string) []string {
	t.Helper()
	if !strings.HasSuffix(body, "\n\n") {
		t.Errorf("SSE body does not end with a blank line: %q", body)
	}
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok || strings.Contains(data, "\n") {
			t.Fatalf("event %q is not one data line", ev)
		}
		out = append(out, data)
	}
	return out
}

func TestStream(t *testing.T) {
	result := &agent.Result{Content: "Hello", Usage: chat.Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 6}}
	// RUNID and REQID stand for the run and request ids in the wanted
	// events.
	chunk := func(choice string) string {
		return `{"id":"chatcmpl-RUNID","object":"chat.completion.chunk","model":"lambdaclaw/default","choices":[` + choice + `]}`
	}
	role := chunk(`{"index":0,"delta":{"role":"assistant"},"finish_reason":null}`)
	content := func(s string) string {
		return chunk(`{"index":0,"delta":{"content":"` + s + `"},"finish_reason":null}`)
	}
	finish := chunk(`{"index":0,"delta":{},"finish_reason":"stop"}`)
	usage := `{"id":"chatcmpl-RUNID","object":"chat.completion.chunk","model":"lambdaclaw/default","choices":[],
		"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":6}}`
	tests := []struct {
		name    string
		options string
		events  []agent.Event
		want    []string
	}{
		{
			name:   "content",
			events: []agent.Event{{Delta: "Hel"}, {Delta: "lo"}, {Result: result}},
			want:   []string{role, content("Hel"), content("lo"), finish, "[DONE]"},
		},
		{
			name:    "content with usage",
			options: `,"stream_options":{"include_usage":true}`,
			events:  []agent.Event{{Delta: "Hel"}, {Delta: ""}, {Delta: "lo"}, {Result: result}},
			want:    []string{role, content("Hel"), content("lo"), finish, usage, "[DONE]"},
		},
		{
			name:    "usage not asked for",
			options: `,"stream_options":{"include_usage":false}`,
			events:  []agent.Event{{Delta: "Hello"}, {Result: result}},
			want:    []string{role, content("Hello"), finish, "[DONE]"},
		},
		{
			name:   "failure after content",
			events: []agent.Event{{Delta: "Hel"}, {Result: &agent.Result{Error: "the model provider failed to answer (run r1)", ErrorCode: agent.CodeUpstream}}},
			want: []string{role, content("Hel"),
				`{"error":{"message":"the model provider failed to answer (run r1) (request id REQID)","type":"server_error","param":null,"code":"upstream_error"}}`, "[DONE]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.runner.events = tt.events
			w := f.do("POST", "/v1/chat/completions", f.token, `{"model":"lambdaclaw/default","stream":true`+tt.options+`,"messages":[{"role":"user","content":"hi"}]}`)
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			if ct := w.Header().Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("Content-Type = %q, want text/event-stream", ct)
			}
			if !f.runner.inputs[0].Stream {
				t.Error("Input.Stream is false for a streaming request")
			}
			got := sseData(t, w.Body.String())
			if len(got) != len(tt.want) {
				t.Fatalf("got %d events, want %d:\n%s", len(got), len(tt.want), w.Body)
			}
			for i := range got {
				want := strings.NewReplacer("RUNID", f.runner.inputs[0].RunID, "REQID", w.Header().Get(gateway.RequestIDHeader)).Replace(tt.want[i])
				if want == "[DONE]" || got[i] == "[DONE]" {
					if got[i] != want {
						t.Errorf("event %d = %q, want %q", i, got[i], want)
					}
					continue
				}
				if diff := cmp.Diff(normalize(t, want), normalize(t, got[i])); diff != "" {
					t.Errorf("event %d (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}
