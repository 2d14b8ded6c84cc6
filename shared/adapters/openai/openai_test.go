package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm/llmtest"
	"github.com/lambdaclaw/lambdaclaw/shared/core/nettest"
)

const testKey = "sk-test-0123456789abcdef"

// recorded is what the fake server saw of a request.
type recorded struct {
	path   string
	auth   string
	body   map[string]any
	header http.Header
}

// server is an httptest server speaking OpenAI's wire format through handle.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func newServer(t *testing.T, handle http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var body map[string]any
		if err := json.Unmarshal(data, &body); err != nil {
			http.Error(w, "request body is not JSON: "+err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, recorded{path: r.URL.Path, auth: r.Header.Get("Authorization"), body: body, header: r.Header.Clone()})
		s.mu.Unlock()
		handle(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *server) requests() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.reqs...)
}

func newProvider(t *testing.T, baseURL string, timeout time.Duration) *Provider {
	t.Helper()
	p, err := New(Config{Name: "test", BaseURL: baseURL + "/v1", APIKey: testKey, Model: "test-model", Timeout: timeout})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// writeSSE streams events as OpenAI does: "data: <json>" lines, each flushed.
func writeSSE(w http.ResponseWriter, events ...string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, e := range events {
		fmt.Fprintf(w, "data: %s\n\n", e)
		w.(http.Flusher).Flush()
	}
}

func chunk(delta string, finish string) string {
	fr := "null"
	if finish != "" {
		fr = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"test-model-2025","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + fr + `}],"usage":null}`
}

var hello = []chat.Message{{Role: chat.User, Content: "Hello"}}

// TestGenerateReply checks answers peculiar to OpenAI-compatible servers:
// a refusal, the model that answered, or none. Replies every provider
// gives are in the conformance suite.
func TestGenerateReply(t *testing.T) {
	tests := []struct {
		name string
		body string
		want llm.Response
	}{
		{
			name: "refusal becomes the content",
			body: `{"id":"chatcmpl-3","object":"chat.completion","created":1,"model":"test-model-2025",
				"choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`,
			want: llm.Response{
				Message:      chat.Message{Role: chat.Assistant, Content: "I can't help with that."},
				FinishReason: "stop",
				Model:        "test-model-2025",
				Provider:     "test",
			},
		},
		{
			name: "model missing from the answer is the requested one",
			body: `{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"length"}]}`,
			want: llm.Response{
				Message:      chat.Message{Role: chat.Assistant, Content: "ok"},
				FinishReason: "length",
				Model:        "test-model",
				Provider:     "test",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, tt.body) })
			p := newProvider(t, srv.URL, 5*time.Second)
			got, err := p.Generate(context.Background(), llm.Request{Messages: hello}, nil)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGenerateFillsMissingToolCallIDs(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"",
			"tool_calls":[{"type":"function","function":{"name":"a","arguments":"{}"}},{"function":{"name":"b","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}`)
	})
	got, err := newProvider(t, srv.URL, 5*time.Second).Generate(context.Background(), llm.Request{Messages: hello}, nil)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	calls := got.Message.ToolCalls
	if len(calls) != 2 {
		t.Fatalf("tool calls = %+v, want 2", calls)
	}
	if calls[0].ID == "" || calls[1].ID == "" || calls[0].ID == calls[1].ID || !strings.HasPrefix(calls[0].ID, "call_") {
		t.Errorf("generated ids %q and %q, want two distinct call_ ids", calls[0].ID, calls[1].ID)
	}
}

func TestStreamToolCallsAllAtIndexZero(t *testing.T) {
	// Some compatible servers send each complete call at index 0.
	tc := func(s string) string { return `{"tool_calls":[` + s + `]}` }
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w,
			chunk(tc(`{"index":0,"id":"call_1","type":"function","function":{"name":"a","arguments":"{\"x\":1}"}}`), ""),
			chunk(tc(`{"index":0,"id":"call_2","type":"function","function":{"name":"b","arguments":"{\"y\":2}"}}`), ""),
			chunk(`{}`, "tool_calls"),
			"[DONE]",
		)
	})
	got, err := newProvider(t, srv.URL, 5*time.Second).Generate(context.Background(), llm.Request{Messages: hello}, func(string) {})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	want := []chat.ToolCall{{ID: "call_1", Name: "a", Arguments: `{"x":1}`}, {ID: "call_2", Name: "b", Arguments: `{"y":2}`}}
	if diff := cmp.Diff(want, got.Message.ToolCalls); diff != "" {
		t.Errorf("tool calls mismatch (-want +got):\n%s", diff)
	}
}

// TestRequestWireForm checks what OpenAI's format alone says of a
// request: an assistant message that calls tools and says nothing has no
// content, a call without arguments sends "{}", a tool result no name, a
// tool without parameters none, a stream asks for usage, and the key is a
// bearer token. What every provider sends is in the conformance suite.
func TestRequestWireForm(t *testing.T) {
	req := llm.Request{
		Messages: []chat.Message{
			{Role: chat.User, Content: "Time?"},
			{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "call_t", Name: "get_time"}}},
			{Role: chat.Tool, ToolCallID: "call_t", Name: "get_time", Content: "14:05"},
		},
		Tools:  []chat.ToolDef{{Name: "get_time"}},
		Params: llm.Params{MaxTokens: 256},
	}
	var want map[string]any
	if err := json.Unmarshal([]byte(`{
		"model": "test-model",
		"messages": [
			{"role": "user", "content": "Time?"},
			{"role": "assistant", "tool_calls": [{"id": "call_t", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
			{"role": "tool", "tool_call_id": "call_t", "content": "14:05"}
		],
		"tools": [{"type": "function", "function": {"name": "get_time"}}],
		"max_tokens": 256,
		"stream": true,
		"stream_options": {"include_usage": true}
	}`), &want); err != nil {
		t.Fatal(err)
	}
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w, chunk(`{"content":"ok"}`, "stop"), "[DONE]")
	})
	if _, err := newProvider(t, srv.URL, 5*time.Second).Generate(context.Background(), req, func(string) {}); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	got := srv.requests()[0]
	if diff := cmp.Diff(want, got.body); diff != "" {
		t.Errorf("request body mismatch (-want +got):\n%s", diff)
	}
	if got.auth != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want the bearer key", got.auth)
	}
}

func TestRequestMappingMinimal(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	})
	// No API key (as for Ollama), a model override, no tools.
	p, err := New(Config{BaseURL: srv.URL + "/v1", Model: "default-model"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := p.Generate(context.Background(), llm.Request{Model: "llama3", Messages: hello}, nil); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	got := srv.requests()[0]
	want := map[string]any{
		"model":    "llama3",
		"messages": []any{map[string]any{"role": "user", "content": "Hello"}},
	}
	if diff := cmp.Diff(want, got.body); diff != "" {
		t.Errorf("request body mismatch (-want +got):\n%s", diff)
	}
	if got.auth != "" {
		t.Errorf("Authorization = %q, want none without an API key", got.auth)
	}
}

// roundTripFunc lets a test answer HTTP requests without a network.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// answeringOK is a client that answers every request with a completion
// of "ok", once see has seen the request.
func answeringOK(see func(r *http.Request) error) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if err := see(r); err != nil {
			return nil, err
		}
		return &http.Response{
			StatusCode: http.StatusOK,
			Header:     http.Header{"Content-Type": {"application/json"}},
			Body:       io.NopCloser(strings.NewReader(`{"model":"gpt","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)),
			Request:    r,
		}, nil
	})}
}

func TestOpenAIUsesMaxCompletionTokens(t *testing.T) {
	var body map[string]any
	var host string
	hc := answeringOK(func(r *http.Request) error {
		host = r.URL.Host
		data, err := io.ReadAll(r.Body)
		if err != nil {
			return err
		}
		return json.Unmarshal(data, &body)
	})
	p, err := New(Config{APIKey: testKey, Model: "gpt", HTTPClient: hc})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := p.Generate(context.Background(), llm.Request{Messages: hello, Params: llm.Params{MaxTokens: 64}}, nil); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if host != "api.openai.com" {
		t.Errorf("host = %q, want api.openai.com by default", host)
	}
	if body["max_completion_tokens"] != float64(64) || body["max_tokens"] != nil {
		t.Errorf("max_completion_tokens = %v, max_tokens = %v; want 64 and unset", body["max_completion_tokens"], body["max_tokens"])
	}
}

// TestOfficialAPIRefusesMetadata checks metadata, which OpenAI's own API
// takes only for a completion it stores: refused there, before any call,
// and sent to any other server.
func TestOfficialAPIRefusesMetadata(t *testing.T) {
	tagged := llm.Params{Metadata: map[string]string{"team": "blue"}}
	tests := []struct {
		name    string
		baseURL string
		params  llm.Params
		want    *llm.UnsupportedError
	}{
		{"OpenAI, metadata", "", tagged, &llm.UnsupportedError{Provider: "openai", Param: "metadata",
			Reason: "OpenAI takes metadata only for completions it stores: send store true with it"}},
		{"OpenAI by its URL, metadata", "https://api.openai.com/v1", tagged, &llm.UnsupportedError{Provider: "openai", Param: "metadata",
			Reason: "OpenAI takes metadata only for completions it stores: send store true with it"}},
		{"OpenAI, no metadata", "", llm.Params{User: "u1"}, nil},
		{"compatible server, metadata", "https://openrouter.ai/api/v1", tagged, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			hc := answeringOK(func(*http.Request) error { calls++; return nil })
			p, err := New(Config{BaseURL: tt.baseURL, APIKey: testKey, Model: "gpt", HTTPClient: hc})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if diff := cmp.Diff(tt.want, llmtest.Unsupported(t, llm.CheckParams(p, tt.params))); diff != "" {
				t.Errorf("CheckParams (-want +got):\n%s", diff)
			}
			_, err = p.Generate(context.Background(), llm.Request{Messages: hello, Params: tt.params}, nil)
			if refused := tt.want != nil; llm.IsUnsupported(err) != refused || (err != nil) != refused || (calls == 0) != refused {
				t.Errorf("Generate: error %v after %d calls; want it refused (before any call): %v", err, calls, refused)
			}
		})
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
		wantNm  string
	}{
		{name: "defaults", cfg: Config{Model: "m"}, wantNm: "openai"},
		{name: "named", cfg: Config{Name: "ollama", BaseURL: "http://localhost:11434/v1", Model: "llama3"}, wantNm: "ollama"},
		{name: "no model", cfg: Config{BaseURL: "http://localhost:11434/v1"}, wantErr: "model is required"},
		{name: "bad base URL", cfg: Config{BaseURL: "localhost:11434", Model: "m"}, wantErr: "not an http(s) URL"},
		{name: "negative timeout", cfg: Config{Model: "m", Timeout: -time.Second}, wantErr: "negative timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if p.Name() != tt.wantNm {
				t.Errorf("Name = %q, want %q", p.Name(), tt.wantNm)
			}
			if p.timeout != DefaultTimeout {
				t.Errorf("timeout = %v, want %v", p.timeout, DefaultTimeout)
			}
		})
	}
}

// errorCase is a failing HTTP answer and the classification it must get:
// the answers of OpenAI-compatible servers beyond those of the
// conformance suite.
type errorCase struct {
	name    string
	status  int
	header  map[string]string
	body    string
	want    llm.Error // Provider, Status, Retryable, RetryAfter, ContextOverflow
	mention string    // text the error must contain
}

var errorCases = []errorCase{
	{
		name:   "429 with retry-after-ms",
		status: 429,
		header: map[string]string{"retry-after-ms": "1500", "Retry-After": "2"},
		body:   `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`,
		want:   llm.Error{Provider: "test", Status: 429, Retryable: true, RetryAfter: 1500 * time.Millisecond},
	},
	{
		name:   "429 with Retry-After date",
		status: 429,
		header: map[string]string{"Retry-After": "Wed, 01 Jan 2025 00:00:42 GMT"},
		body:   `{"error":{"message":"slow down"}}`,
		want:   llm.Error{Provider: "test", Status: 429, Retryable: true, RetryAfter: 42 * time.Second},
	},
	{
		name:    "503 with a plain-text body",
		status:  503,
		body:    `upstream unavailable`,
		want:    llm.Error{Provider: "test", Status: 503, Retryable: true},
		mention: "Service Unavailable",
	},
	{
		name:    "408",
		status:  408,
		body:    `{"error":{"message":"request timed out"}}`,
		want:    llm.Error{Provider: "test", Status: 408, Retryable: true},
		mention: "request timed out",
	},
	{
		name:   "409",
		status: 409,
		body:   `{"error":{"message":"conflict"}}`,
		want:   llm.Error{Provider: "test", Status: 409, Retryable: true},
	},
	{
		name:   "400 context overflow by message",
		status: 400,
		body:   `{"error":{"message":"prompt exceeds the context window of this model","type":"invalid_request_error"}}`,
		want:   llm.Error{Provider: "test", Status: 400, ContextOverflow: true},
	},
	{
		name:    "400 context overflow in vLLM's format",
		status:  400,
		body:    `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}`,
		want:    llm.Error{Provider: "test", Status: 400, ContextOverflow: true},
		mention: "maximum context length is 4096",
	},
	{
		name:    "401 is not retryable and hides the key",
		status:  401,
		body:    `{"error":{"message":"Incorrect API key provided: ` + testKey + `.","type":"invalid_request_error","code":"invalid_api_key"}}`,
		want:    llm.Error{Provider: "test", Status: 401},
		mention: "Incorrect API key provided: [REDACTED]",
	},
	{
		name:    "error as a bare string",
		status:  404,
		body:    `{"error":"model \"nope\" not found, try pulling it first"}`,
		want:    llm.Error{Provider: "test", Status: 404},
		mention: `model "nope" not found`,
	},
	{
		name:    "FastAPI detail",
		status:  502,
		body:    `{"detail":"upstream connect error"}`,
		want:    llm.Error{Provider: "test", Status: 502, Retryable: true},
		mention: "upstream connect error",
	},
	{
		name:    "404 unknown model",
		status:  404,
		header:  map[string]string{"X-Request-Id": "req_123"},
		body:    `{"error":{"message":"The model 'nope' does not exist","type":"invalid_request_error","code":"model_not_found"}}`,
		want:    llm.Error{Provider: "test", Status: 404},
		mention: "[request req_123]",
	},
}

func TestErrors(t *testing.T) {
	for _, tt := range errorCases {
		for _, streaming := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, streaming), func(t *testing.T) {
				srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
					for k, v := range tt.header {
						w.Header().Set(k, v)
					}
					if strings.HasPrefix(tt.body, "{") {
						w.Header().Set("Content-Type", "application/json")
					}
					w.WriteHeader(tt.status)
					io.WriteString(w, tt.body)
				})
				p := newProvider(t, srv.URL, 5*time.Second)
				p.now = func() time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) }
				_, err := p.Generate(context.Background(), llm.Request{Messages: hello}, deltaFunc(streaming, t))
				checkError(t, err, tt.want, tt.mention)
			})
		}
	}
}

// deltaFunc returns nil for a plain call, or an onDelta that records nothing
// but must never be reached on failure paths.
func deltaFunc(streaming bool, t *testing.T) llm.OnDelta {
	if !streaming {
		return nil
	}
	return func(s string) { t.Logf("delta %q", s) }
}

// checkError asserts that err is an *llm.Error classified as want, that it
// mentions mention, and that it never reveals the API key.
func checkError(t *testing.T, err error, want llm.Error, mention string) {
	t.Helper()
	llmtest.CheckError(t, err, want, testKey, mention)
}

// TestStreamOutlivesTimeoutWhileProgressing checks that the stream timeout
// is an idle limit: a stream that keeps sending may run longer than it.
func TestStreamOutlivesTimeoutWhileProgressing(t *testing.T) {
	const timeout = 300 * time.Millisecond
	const pieces = 12
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for range pieces {
			fmt.Fprintf(w, "data: %s\n\n", chunk(`{"content":"."}`, ""))
			w.(http.Flusher).Flush()
			time.Sleep(timeout / 10)
		}
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", chunk(`{}`, "stop"))
	})
	// The pieces take 12 × timeout/10 in all: longer than the timeout.
	resp, err := newProvider(t, srv.URL, timeout).Generate(context.Background(), llm.Request{Messages: hello}, func(string) {})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if want := strings.Repeat(".", pieces); resp.Message.Content != want {
		t.Errorf("content = %q, want %q", resp.Message.Content, want)
	}
}

// TestInvalidResponses checks answers that decode but make no reply.
func TestInvalidResponses(t *testing.T) {
	tests := []struct {
		name    string
		handle  http.HandlerFunc
		want    llm.Error
		mention string
	}{
		{
			name:    "empty body",
			handle:  func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, ``) },
			want:    llm.Error{Provider: "test", Status: 200},
			mention: "invalid response from server",
		},
		{
			name:    "no choices",
			handle:  func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, `{"id":"x","choices":[]}`) },
			want:    llm.Error{Provider: "test", Status: 200},
			mention: "no choices",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t, tt.handle)
			_, err := newProvider(t, srv.URL, 5*time.Second).Generate(context.Background(), llm.Request{Messages: hello}, nil)
			checkError(t, err, tt.want, tt.mention)
		})
	}
}

// TestStreamOverflowEvent checks an error event in OpenAI's own form, its
// code a word: the conformance suite sends the status as the code, as
// OpenRouter does.
func TestStreamOverflowEvent(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeSSE(w, chunk(`{"content":"Hel"}`, ""), `{"error":{"message":"This model's maximum context length is 8192 tokens","code":"context_length_exceeded"}}`)
	})
	var deltas []string
	_, err := newProvider(t, srv.URL, 5*time.Second).Generate(context.Background(), llm.Request{Messages: hello}, func(s string) { deltas = append(deltas, s) })
	checkError(t, err, llm.Error{Provider: "test", Status: 200, ContextOverflow: true}, "maximum context length is 8192")
	if diff := cmp.Diff([]string{"Hel"}, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
}

func TestKeyInBaseURLIsRedacted(t *testing.T) {
	p, err := New(Config{Name: "test", BaseURL: nettest.RefusedURL(t) + "/" + testKey + "/v1", APIKey: testKey, Model: "m"})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	_, err = p.Generate(context.Background(), llm.Request{Messages: hello}, nil)
	checkError(t, err, llm.Error{Provider: "test", Retryable: true}, "[REDACTED]")
}

// A placeholder key, as local servers take, is not a secret: the words of
// an error that happen to equal it stay intact.
func TestPlaceholderKeyKeepsWords(t *testing.T) {
	for _, key := range []string{"ollama", "none", "x"} {
		t.Run(key, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 404, `{"error":"model \"llama3\" not found, try pulling it first: ollama pull llama3 (none found locally, x86_64)"}`)
			})
			p, err := New(Config{Name: "test", BaseURL: srv.URL + "/v1", APIKey: key, Model: "llama3"})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			_, err = p.Generate(context.Background(), llm.Request{Messages: hello}, nil)
			checkError(t, err, llm.Error{Provider: "test", Status: 404}, "ollama pull llama3 (none found locally, x86_64)")
		})
	}
}

func TestTruncateKeepsRunesWhole(t *testing.T) {
	long := "a" + strings.Repeat("é", maxErrorText) // odd offset: the cut lands mid-rune
	got := truncate(long)
	if !strings.HasSuffix(got, "…") || len(got) > maxErrorText+len("…") {
		t.Errorf("truncate gave %d bytes ending %q", len(got), got[len(got)-4:])
	}
	if !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Error("truncate cut a rune in half")
	}
}

func BenchmarkGenerate(b *testing.B) {
	body := `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		writeJSON(w, http.StatusOK, body)
	}))
	defer srv.Close()
	p, err := New(Config{BaseURL: srv.URL, Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	req := llm.Request{Messages: []chat.Message{{Role: chat.System, Content: "sys"}, {Role: chat.User, Content: "hi"}}}
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.Generate(context.Background(), req, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// The tool cache hands back the encoding of the tools it is given: a set
// is encoded once, found again in another slice of the same tools (the
// loop filters an agent's tools into a new slice each turn), and a set
// changed since, or another of the same length, gets its own.
func TestToolCache(t *testing.T) {
	var c toolCache
	a := []chat.ToolDef{{Name: "a", Parameters: json.RawMessage(`{"type":"object"}`)}}
	b := []chat.ToolDef{{Name: "b"}}
	for range 2 {
		for _, tt := range []struct {
			defs []chat.ToolDef
			want string
		}{
			{a, `[{"type":"function","function":{"name":"a","parameters":{"type":"object"}}}]`},
			{b, `[{"type":"function","function":{"name":"b"}}]`},
		} {
			got, err := c.encode(tt.defs)
			if err != nil || string(got) != tt.want {
				t.Errorf("encode(%s) = %s, %v; want %s", tt.defs[0].Name, got, err, tt.want)
			}
		}
	}
	first, _ := c.encode(a)
	again, err := c.encode(slices.Clone(a))
	if err != nil || &again[0] != &first[0] {
		t.Errorf("another slice of the same tools was encoded again (%s, %v)", again, err)
	}
	a[0].Parameters[2] = 'T' // {"Type":"object"}: the caller changed its slice
	if got, err := c.encode(a); err != nil || string(got) != `[{"type":"function","function":{"name":"a","parameters":{"Type":"object"}}}]` {
		t.Errorf("encode of a changed set = %s, %v", got, err)
	}
	strict, lax := true, false
	if s, l := must(c.encode([]chat.ToolDef{{Name: "s", Strict: &strict}})), must(c.encode([]chat.ToolDef{{Name: "s", Strict: &lax}})); string(s) == string(l) {
		t.Errorf("strict and lax tools encoded alike: %s", s)
	}
	// More slices than entries: each still gets its own encoding.
	for i := range 20 {
		name := fmt.Sprintf("t%d", i)
		got, err := c.encode([]chat.ToolDef{{Name: name}})
		if want := `[{"type":"function","function":{"name":"` + name + `"}}]`; err != nil || string(got) != want {
			t.Errorf("encode(%s) = %s, %v", name, got, err)
		}
	}
}

func must(b json.RawMessage, err error) json.RawMessage {
	if err != nil {
		panic(err)
	}
	return b
}

// BenchmarkRequestBody encodes a turn's request: a 12 KB system prompt,
// 30 messages of history and ten tools.
func BenchmarkRequestBody(b *testing.B) {
	p, err := New(Config{BaseURL: "http://127.0.0.1:1/v1", Model: "m"})
	if err != nil {
		b.Fatal(err)
	}
	req := llm.Request{Messages: []chat.Message{{Role: chat.System, Content: strings.Repeat("You are a helpful agent. ", 500)}}}
	for i := range 30 {
		req.Messages = append(req.Messages, chat.Message{Role: chat.User, Content: fmt.Sprintf("message %d with some words in it", i)})
	}
	for i := range 10 {
		req.Tools = append(req.Tools, chat.ToolDef{Name: fmt.Sprintf("tool_%d", i), Description: "Does a thing with the workspace.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"A path in the workspace."},"content":{"type":"string"}},"required":["path"]}`)})
	}
	for b.Loop() {
		if _, _, err := p.body(req, false); err != nil {
			b.Fatal(err)
		}
	}
}
