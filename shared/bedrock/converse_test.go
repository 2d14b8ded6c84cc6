package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/shared/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/llm"
)

const (
	converseTestModel  = "anthropic.claude-test-v1:0"
	converseTestKeyID  = "AKIDCONVERSETEST"
	converseTestSecret = "converse/test/SECRET/0123456789abcdefghij"
)

// converseCall is what the fake Bedrock runtime received.
type converseCall struct {
	// op is "converse" or "converse-stream".
	op, model string
	auth      string
	// body is the JSON body, numbers kept as json.Number.
	body map[string]any
}

// fakeBedrock is an httptest server speaking the Bedrock runtime's wire
// format for Converse (POST /model/{modelId}/converse, JSON) and
// ConverseStream (POST /model/{modelId}/converse-stream, answered with
// event-stream frames). answer writes the response to each call.
type fakeBedrock struct {
	*httptest.Server
	mu    sync.Mutex
	calls []converseCall
}

func newFakeBedrock(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, op string)) *fakeBedrock {
	t.Helper()
	f := &fakeBedrock{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/model/")
		i := strings.LastIndex(rest, "/")
		if r.Method != http.MethodPost || !ok || i < 0 || (rest[i+1:] != "converse" && rest[i+1:] != "converse-stream") {
			writeBedrockError(w, http.StatusNotFound, "UnknownOperationException", "")
			return
		}
		model, err := url.PathUnescape(rest[:i])
		if err != nil {
			t.Errorf("model id %q: %v", rest[:i], err)
		}
		data, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("reading body: %v", err)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var body map[string]any
		if err := dec.Decode(&body); err != nil {
			t.Errorf("request body %q is not JSON: %v", data, err)
		}
		op := rest[i+1:]
		f.mu.Lock()
		f.calls = append(f.calls, converseCall{op: op, model: model, auth: r.Header.Get("Authorization"), body: body})
		f.mu.Unlock()
		answer(w, r, op)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeBedrock) recorded() []converseCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]converseCall(nil), f.calls...)
}

// writeBedrockError answers as Bedrock's restJson1 protocol does: the
// status, the error type in X-Amzn-ErrorType, the message in the body.
func writeBedrockError(w http.ResponseWriter, status int, errType, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", errType+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	w.Header().Set("X-Amzn-Requestid", "req-err-1")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"message": msg})
}

func writeConverseJSON(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Requestid", "req-1")
	io.WriteString(w, body)
}

// isolateAWS points the SDK's default configuration at static credentials
// in the environment and nothing else: no shared files, no instance role.
func isolateAWS(t *testing.T, region string) {
	t.Helper()
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": converseTestKeyID, "AWS_SECRET_ACCESS_KEY": converseTestSecret, "AWS_SESSION_TOKEN": "",
		"AWS_REGION": region, "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "", "AWS_DEFAULT_PROFILE": "",
		"AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": "",
	} {
		t.Setenv(k, v)
	}
}

// newTestConverse builds a provider the way production does (IAM
// credentials from the default chain), pointed at endpoint.
func newTestConverse(t *testing.T, endpoint string, timeout time.Duration) *Converse {
	t.Helper()
	isolateAWS(t, "")
	c, err := NewConverse(context.Background(), ConverseConfig{Name: "bedrock-test", Region: "eu-west-3", Model: converseTestModel, Timeout: timeout, Endpoint: endpoint})
	if err != nil {
		t.Fatalf("NewConverse: %v", err)
	}
	return c
}

var helloBedrock = []chat.Message{{Role: chat.User, Content: "Hello"}}

// sameJSON reports whether two JSON texts hold the same value.
func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Errorf("%q is not JSON: %v", a, err)
		return false
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Errorf("%q is not JSON: %v", b, err)
		return false
	}
	return cmp.Equal(x, y)
}

// checkResponse compares responses, tool call arguments as JSON values.
func checkResponse(t *testing.T, got, want llm.Response) {
	t.Helper()
	if len(got.Message.ToolCalls) == len(want.Message.ToolCalls) {
		for i := range got.Message.ToolCalls {
			if sameJSON(t, got.Message.ToolCalls[i].Arguments, want.Message.ToolCalls[i].Arguments) {
				got.Message.ToolCalls[i].Arguments = want.Message.ToolCalls[i].Arguments
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

func TestConverseReply(t *testing.T) {
	tests := []struct {
		name string
		body string
		want llm.Response
	}{
		{
			name: "text",
			body: `{"output":{"message":{"role":"assistant","content":[{"text":"Hello"},{"text":" there!"}]}},
				"stopReason":"end_turn","usage":{"inputTokens":12,"outputTokens":4,"totalTokens":16},"metrics":{"latencyMs":321}}`,
			want: llm.Response{
				Message:      chat.Message{Role: chat.Assistant, Content: "Hello there!"},
				Usage:        chat.Usage{PromptTokens: 12, CompletionTokens: 4, TotalTokens: 16},
				FinishReason: "stop", Model: converseTestModel, Provider: "bedrock-test",
			},
		},
		{
			name: "tool calls",
			body: `{"output":{"message":{"role":"assistant","content":[{"text":"Let me check."},
				{"toolUse":{"toolUseId":"tooluse_a","name":"get_weather","input":{"city":"Paris","days":3,"id":12345678901234567890}}},
				{"toolUse":{"toolUseId":"tooluse_b","name":"get_time","input":{}}}]}},
				"stopReason":"tool_use","usage":{"inputTokens":30,"outputTokens":20},"metrics":{"latencyMs":500}}`,
			want: llm.Response{
				Message: chat.Message{Role: chat.Assistant, Content: "Let me check.", ToolCalls: []chat.ToolCall{
					{ID: "tooluse_a", Name: "get_weather", Arguments: `{"city":"Paris","days":3,"id":12345678901234567890}`},
					{ID: "tooluse_b", Name: "get_time", Arguments: `{}`},
				}},
				Usage:        chat.Usage{PromptTokens: 30, CompletionTokens: 20, TotalTokens: 50},
				FinishReason: "tool_calls", Model: converseTestModel, Provider: "bedrock-test",
			},
		},
		{
			name: "max tokens",
			body: `{"output":{"message":{"role":"assistant","content":[{"text":"Once upon"}]}},"stopReason":"max_tokens",
				"usage":{"inputTokens":3,"outputTokens":2,"totalTokens":5},"metrics":{"latencyMs":1}}`,
			want: llm.Response{
				Message:      chat.Message{Role: chat.Assistant, Content: "Once upon"},
				Usage:        chat.Usage{PromptTokens: 3, CompletionTokens: 2, TotalTokens: 5},
				FinishReason: "length", Model: converseTestModel, Provider: "bedrock-test",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) { writeConverseJSON(w, tt.body) })
			c := newTestConverse(t, f.URL, 5*time.Second)
			got, err := c.Generate(context.Background(), llm.Request{Messages: helloBedrock}, nil)
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			checkResponse(t, got, tt.want)
			if tt.name == "tool calls" && !strings.Contains(got.Message.ToolCalls[0].Arguments, `12345678901234567890`) {
				t.Errorf("large integer not kept exactly: %s", got.Message.ToolCalls[0].Arguments)
			}
			calls := f.recorded()
			if len(calls) != 1 {
				t.Fatalf("%d calls, want 1", len(calls))
			}
			call := calls[0]
			if call.op != "converse" || call.model != converseTestModel {
				t.Errorf("call to %s of model %q, want converse of %q", call.op, call.model, converseTestModel)
			}
			// Signed with SigV4 for the bedrock service in the configured region.
			if want := "AWS4-HMAC-SHA256 Credential=" + converseTestKeyID + "/"; !strings.HasPrefix(call.auth, want) ||
				!strings.Contains(call.auth, "/eu-west-3/bedrock/aws4_request") {
				t.Errorf("Authorization = %q, want SigV4 for bedrock in eu-west-3", call.auth)
			}
			if strings.Contains(call.auth, converseTestSecret) {
				t.Error("the secret key was sent")
			}
			want := map[string]any{"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"text": "Hello"}}}}}
			if diff := cmp.Diff(want, call.body); diff != "" {
				t.Errorf("body (-want +got):\n%s (no system, no toolConfig, no inferenceConfig expected)", diff)
			}
		})
	}
}

func TestConverseStreamReply(t *testing.T) {
	f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) {
		if op != "converse-stream" {
			t.Errorf("op = %s, want converse-stream", op)
		}
		writeEventStream(w,
			eventFrame("messageStart", `{"p":"abcdefghijklmnop","role":"assistant"}`),
			eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hel"},"p":"abcd"}`),
			eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"lo, "},"p":"abcdefg"}`),
			eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"wörld!"},"p":"ab"}`),
			eventFrame("contentBlockStop", `{"contentBlockIndex":0,"p":"abcdefghijkl"}`),
			eventFrame("messageStop", `{"p":"abc","stopReason":"end_turn"}`),
			eventFrame("metadata", `{"metrics":{"latencyMs":412},"p":"abcdef","usage":{"inputTokens":9,"outputTokens":3,"totalTokens":12}}`),
		)
	})
	c := newTestConverse(t, f.URL, 5*time.Second)
	var deltas []string
	got, err := c.Generate(context.Background(), llm.Request{Messages: helloBedrock}, func(s string) { deltas = append(deltas, s) })
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if diff := cmp.Diff([]string{"Hel", "lo, ", "wörld!"}, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	checkResponse(t, got, llm.Response{
		Message:      chat.Message{Role: chat.Assistant, Content: "Hello, wörld!"},
		Usage:        chat.Usage{PromptTokens: 9, CompletionTokens: 3, TotalTokens: 12},
		FinishReason: "stop", Model: converseTestModel, Provider: "bedrock-test",
	})
}

func TestConverseStreamToolCall(t *testing.T) {
	f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) {
		writeEventStream(w,
			eventFrame("messageStart", `{"role":"assistant"}`),
			eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Let me check."}}`),
			eventFrame("contentBlockStop", `{"contentBlockIndex":0}`),
			eventFrame("contentBlockStart", `{"contentBlockIndex":1,"start":{"toolUse":{"name":"get_weather","toolUseId":"tooluse_a"}}}`),
			eventFrame("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":""}}}`),
			eventFrame("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"ci"}}}`),
			eventFrame("contentBlockStart", `{"contentBlockIndex":2,"start":{"toolUse":{"name":"get_time","toolUseId":"tooluse_b"}}}`),
			// Pieces are keyed by block index, so interleaving is harmless.
			eventFrame("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"ty\": \"Pa"}}}`),
			eventFrame("contentBlockDelta", `{"contentBlockIndex":2,"delta":{"toolUse":{"input":"{\"tz\":"}}}`),
			eventFrame("contentBlockDelta", `{"contentBlockIndex":1,"delta":{"toolUse":{"input":"ris\", \"days\": 3}"}}}`),
			eventFrame("contentBlockStop", `{"contentBlockIndex":1}`),
			eventFrame("contentBlockDelta", `{"contentBlockIndex":2,"delta":{"toolUse":{"input":" \"UTC\"}"}}}`),
			eventFrame("contentBlockStop", `{"contentBlockIndex":2}`),
			eventFrame("contentBlockStart", `{"contentBlockIndex":3,"start":{"toolUse":{"name":"list_dir","toolUseId":"tooluse_c"}}}`),
			eventFrame("contentBlockStop", `{"contentBlockIndex":3}`),
			eventFrame("messageStop", `{"stopReason":"tool_use"}`),
			eventFrame("metadata", `{"metrics":{"latencyMs":900},"usage":{"inputTokens":40,"outputTokens":25,"totalTokens":65}}`),
		)
	})
	c := newTestConverse(t, f.URL, 5*time.Second)
	var deltas []string
	got, err := c.Generate(context.Background(), llm.Request{Messages: helloBedrock}, func(s string) { deltas = append(deltas, s) })
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if diff := cmp.Diff([]string{"Let me check."}, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	if got.Message.ToolCalls[0].Arguments != `{"city": "Paris", "days": 3}` {
		t.Errorf("assembled input = %q, want the pieces joined in order", got.Message.ToolCalls[0].Arguments)
	}
	checkResponse(t, got, llm.Response{
		Message: chat.Message{Role: chat.Assistant, Content: "Let me check.", ToolCalls: []chat.ToolCall{
			{ID: "tooluse_a", Name: "get_weather", Arguments: `{"city":"Paris","days":3}`},
			{ID: "tooluse_b", Name: "get_time", Arguments: `{"tz":"UTC"}`},
			{ID: "tooluse_c", Name: "list_dir", Arguments: `{}`},
		}},
		Usage:        chat.Usage{PromptTokens: 40, CompletionTokens: 25, TotalTokens: 65},
		FinishReason: "tool_calls", Model: converseTestModel, Provider: "bedrock-test",
	})
}

// TestConverseRequestMapping checks the JSON body Bedrock receives for a
// history with system messages in two places, consecutive messages of one
// role, tool calls and their results (one failed), and tools.
func TestConverseRequestMapping(t *testing.T) {
	history := []chat.Message{
		{Role: chat.System, Content: "You are helpful."},
		{Role: chat.User, Content: "Hi"},
		{Role: chat.User, Content: "Are you there?"},
		{Role: chat.Assistant, Content: "Let me look.", ToolCalls: []chat.ToolCall{
			{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris","id":12345678901234567890,"ratio":0.25}`},
			{ID: "call_2", Name: "read_file", Arguments: ""},
		}},
		{Role: chat.User, Content: "Quick, please."},
		{Role: chat.Tool, ToolCallID: "call_1", Name: "get_weather", Content: "Sunny"},
		{Role: chat.Tool, ToolCallID: "call_2", Name: "read_file", Content: "error: no such file"},
		{Role: chat.System, Content: "Summary of the earlier conversation: the user likes Paris."},
		{Role: chat.Assistant, Content: ""},
		{Role: chat.User, Content: "Thanks"},
		{Role: chat.Assistant, Content: "You're welcome."},
		{Role: chat.Assistant, Content: "Anything else?"},
		{Role: chat.User, Content: "No."},
	}
	tools := []chat.ToolDef{
		{Name: "get_weather", Description: "Weather for a city.", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string","maxLength":100}},"required":["city"]}`)},
		{Name: "read_file", Parameters: nil},
	}
	const want = `{
		"system": [{"text": "You are helpful."}, {"text": "Summary of the earlier conversation: the user likes Paris."}],
		"messages": [
			{"role": "user", "content": [{"text": "Hi"}, {"text": "Are you there?"}]},
			{"role": "assistant", "content": [
				{"text": "Let me look."},
				{"toolUse": {"toolUseId": "call_1", "name": "get_weather", "input": {"city": "Paris", "id": 12345678901234567890, "ratio": 0.25}}},
				{"toolUse": {"toolUseId": "call_2", "name": "read_file", "input": {}}}
			]},
			{"role": "user", "content": [
				{"toolResult": {"toolUseId": "call_1", "content": [{"text": "Sunny"}], "status": "success"}},
				{"toolResult": {"toolUseId": "call_2", "content": [{"text": "error: no such file"}], "status": "error"}},
				{"text": "Quick, please."},
				{"text": "Thanks"}
			]},
			{"role": "assistant", "content": [{"text": "You're welcome."}, {"text": "Anything else?"}]},
			{"role": "user", "content": [{"text": "No."}]}
		],
		"toolConfig": {"tools": [
			{"toolSpec": {"name": "get_weather", "description": "Weather for a city.",
				"inputSchema": {"json": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 100}}, "required": ["city"]}}}},
			{"toolSpec": {"name": "read_file", "inputSchema": {"json": {"type": "object", "properties": {}}}}}
		]},
		"inferenceConfig": {"maxTokens": 256}
	}`
	dec := json.NewDecoder(strings.NewReader(want))
	dec.UseNumber()
	var wantBody map[string]any
	if err := dec.Decode(&wantBody); err != nil {
		t.Fatal(err)
	}
	for _, streaming := range []bool{false, true} {
		name := "converse"
		if streaming {
			name = "converse-stream"
		}
		t.Run(name, func(t *testing.T) {
			f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) {
				if op == "converse-stream" {
					writeEventStream(w, eventFrame("messageStart", `{"role":"assistant"}`), eventFrame("messageStop", `{"stopReason":"end_turn"}`))
					return
				}
				writeConverseJSON(w, `{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2},"metrics":{"latencyMs":1}}`)
			})
			c := newTestConverse(t, f.URL, 5*time.Second)
			var onDelta llm.OnDelta
			if streaming {
				onDelta = func(string) {}
			}
			req := llm.Request{Model: "us.anthropic.claude-other-v2:0", Messages: history, Tools: tools, MaxTokens: 256}
			if _, err := c.Generate(context.Background(), req, onDelta); err != nil {
				t.Fatalf("Generate: %v", err)
			}
			calls := f.recorded()
			if len(calls) != 1 {
				t.Fatalf("%d calls, want 1", len(calls))
			}
			if calls[0].op != name || calls[0].model != "us.anthropic.claude-other-v2:0" {
				t.Errorf("call to %s of %q, want %s of the request's model", calls[0].op, calls[0].model, name)
			}
			if diff := cmp.Diff(wantBody, calls[0].body); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

// checkLLMError asserts err is an *llm.Error classified as want, whose text
// mentions each of mention and never the secret key.
func checkLLMError(t *testing.T, err error, want llm.Error, mention ...string) *llm.Error {
	t.Helper()
	var le *llm.Error
	if !errors.As(err, &le) {
		t.Fatalf("error %v (%T) is not an *llm.Error", err, err)
	}
	if le.Provider != "bedrock-test" || le.Status != want.Status || le.Retryable != want.Retryable ||
		le.ContextOverflow != want.ContextOverflow || le.RetryAfter != want.RetryAfter {
		t.Errorf("error = {Provider %q Status %d Retryable %v ContextOverflow %v RetryAfter %s}, want {bedrock-test %d %v %v %s} (%v)",
			le.Provider, le.Status, le.Retryable, le.ContextOverflow, le.RetryAfter,
			want.Status, want.Retryable, want.ContextOverflow, want.RetryAfter, err)
	}
	for _, m := range mention {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not mention %q", err, m)
		}
	}
	if strings.Contains(err.Error(), converseTestSecret) {
		t.Errorf("error %q shows the secret key", err)
	}
	return le
}

func TestConverseHTTPErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		errType string
		msg     string
		header  http.Header
		want    llm.Error
		mention []string
	}{
		{"throttling", 429, "ThrottlingException", "Too many requests, please wait before trying again.", nil,
			llm.Error{Status: 429, Retryable: true}, []string{"ThrottlingException", "Too many requests", "req-err-1"}},
		{"throttling with Retry-After", 429, "ThrottlingException", "Too many tokens, please wait before trying again.", http.Header{"Retry-After": {"7"}},
			llm.Error{Status: 429, Retryable: true, RetryAfter: 7 * time.Second}, []string{"ThrottlingException"}},
		{"service unavailable", 503, "ServiceUnavailableException", "Service is unavailable. Try again later.", nil,
			llm.Error{Status: 503, Retryable: true}, []string{"ServiceUnavailableException"}},
		{"model not ready", 429, "ModelNotReadyException", "Model is not ready to serve inference requests.", nil,
			llm.Error{Status: 429, Retryable: true}, []string{"ModelNotReadyException"}},
		{"internal server error", 500, "InternalServerException", "Internal server error", nil,
			llm.Error{Status: 500, Retryable: true}, []string{"InternalServerException"}},
		{"model timeout", 408, "ModelTimeoutException", "Model has timed out in processing the request.", nil,
			llm.Error{Status: 408, Retryable: true}, []string{"ModelTimeoutException"}},
		{"unknown 5xx", 502, "BadGatewayException", "bad gateway", nil,
			llm.Error{Status: 502, Retryable: true}, []string{"502"}},
		{"input too long", 400, "ValidationException", "Input is too long for requested model.", nil,
			llm.Error{Status: 400, ContextOverflow: true}, []string{"ValidationException", "too long"}},
		{"prompt too long", 400, "ValidationException", "The model returned the following errors: prompt is too long: 215000 tokens > 200000 maximum", nil,
			llm.Error{Status: 400, ContextOverflow: true}, []string{"ValidationException"}},
		{"context length", 400, "ValidationException", "This model's maximum context length is 8192 tokens.", nil,
			llm.Error{Status: 400, ContextOverflow: true}, []string{"maximum context length"}},
		{"other validation", 400, "ValidationException", "A conversation must start with a user message. Try again with a conversation that starts with a user message.", nil,
			llm.Error{Status: 400}, []string{"ValidationException", "must start with a user message"}},
		{"access denied", 403, "AccessDeniedException", "You don't have access to the model with the specified model ID.", nil,
			llm.Error{Status: 403}, []string{"AccessDeniedException", "don't have access"}},
		{"model not found", 404, "ResourceNotFoundException", "Could not resolve the foundation model from the provided model identifier.", nil,
			llm.Error{Status: 404}, []string{"ResourceNotFoundException"}},
		{"quota", 400, "ServiceQuotaExceededException", "Your request exceeds the service quota for your account.", nil,
			llm.Error{Status: 400}, []string{"ServiceQuotaExceededException"}},
	}
	for _, tt := range tests {
		for _, streaming := range []bool{false, true} {
			name := tt.name
			if streaming {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) {
					for k, v := range tt.header {
						w.Header()[k] = v
					}
					writeBedrockError(w, tt.status, tt.errType, tt.msg)
				})
				c := newTestConverse(t, f.URL, 5*time.Second)
				var onDelta llm.OnDelta
				if streaming {
					onDelta = func(string) {}
				}
				_, err := c.Generate(context.Background(), llm.Request{Messages: helloBedrock}, onDelta)
				checkLLMError(t, err, tt.want, tt.mention...)
				if n := len(f.recorded()); n != 1 {
					t.Errorf("%d calls, want 1: retrying is the llm wrappers' job", n)
				}
			})
		}
	}
}

func TestConverseThrottlingIsInspectable(t *testing.T) {
	f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) {
		writeBedrockError(w, 429, "ThrottlingException", "Too many requests")
	})
	c := newTestConverse(t, f.URL, 5*time.Second)
	_, err := c.Generate(context.Background(), llm.Request{Messages: helloBedrock}, nil)
	var te *types.ThrottlingException
	if !errors.As(err, &te) {
		t.Errorf("errors.As(%v, *types.ThrottlingException) = false", err)
	}
	if !llm.IsRetryable(err) {
		t.Errorf("IsRetryable(%v) = false", err)
	}
}

func TestConverseStreamCutOff(t *testing.T) {
	partial := eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":" more"}}`)
	tests := []struct {
		name string
		tail []byte
	}{
		{"between frames", nil},
		{"inside a frame", partial[:len(partial)/2]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) {
				writeEventStream(w,
					eventFrame("messageStart", `{"role":"assistant"}`),
					eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Partial"}}`),
				)
				w.Write(tt.tail)
			})
			c := newTestConverse(t, f.URL, 5*time.Second)
			var deltas []string
			_, err := c.Generate(context.Background(), llm.Request{Messages: helloBedrock}, func(s string) { deltas = append(deltas, s) })
			checkLLMError(t, err, llm.Error{Status: 200, Retryable: true}, "cut off")
			if diff := cmp.Diff([]string{"Partial"}, deltas); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConverseStreamConnectionDropped(t *testing.T) {
	f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) {
		writeEventStream(w, eventFrame("messageStart", `{"role":"assistant"}`))
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		conn.Close() // no final chunk: the body ends in the middle of the transfer
	})
	c := newTestConverse(t, f.URL, 5*time.Second)
	_, err := c.Generate(context.Background(), llm.Request{Messages: helloBedrock}, func(string) {})
	checkLLMError(t, err, llm.Error{Status: 200, Retryable: true})
}

func TestConverseStreamException(t *testing.T) {
	tests := []struct {
		name, exception, msg string
		want                 llm.Error
		mention              []string
	}{
		{"throttling", "throttlingException", "Too many tokens, please wait before trying again.",
			llm.Error{Status: 429, Retryable: true}, []string{"error in stream", "ThrottlingException", "Too many tokens"}},
		{"model stream error", "modelStreamErrorException", "Model stream error. Retry your request.",
			llm.Error{Status: 424, Retryable: true}, []string{"ModelStreamErrorException"}},
		{"internal", "internalServerException", "Internal server error",
			llm.Error{Status: 500, Retryable: true}, []string{"InternalServerException"}},
		{"service unavailable", "serviceUnavailableException", "Service unavailable",
			llm.Error{Status: 503, Retryable: true}, []string{"ServiceUnavailableException"}},
		{"validation overflow", "validationException", "Input is too long for requested model.",
			llm.Error{Status: 400, ContextOverflow: true}, []string{"ValidationException"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) {
				writeEventStream(w,
					eventFrame("messageStart", `{"role":"assistant"}`),
					eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hel"}}`),
					exceptionFrame(tt.exception, `{"message":"`+tt.msg+`"}`),
					eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"never read"}}`),
				)
			})
			c := newTestConverse(t, f.URL, 5*time.Second)
			var deltas []string
			_, err := c.Generate(context.Background(), llm.Request{Messages: helloBedrock}, func(s string) { deltas = append(deltas, s) })
			checkLLMError(t, err, tt.want, tt.mention...)
			if diff := cmp.Diff([]string{"Hel"}, deltas); diff != "" {
				t.Errorf("deltas (-want +got):\n%s", diff)
			}
		})
	}
}

// manualTimer stands in for the provider's timeout timer: it fires only
// when the test calls fire, and records every duration it was set to.
type manualTimer struct {
	mu      sync.Mutex
	f       func()
	set     []time.Duration
	stopped bool
}

func (m *manualTimer) afterFunc(d time.Duration, f func()) timer {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.f, m.stopped = f, false
	m.set = append(m.set, d)
	return m
}

func (m *manualTimer) Reset(d time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopped = false
	m.set = append(m.set, d)
	return true
}

func (m *manualTimer) Stop() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopped = true
	return true
}

// fire runs the timer's function as if its time had come.
func (m *manualTimer) fire() {
	m.mu.Lock()
	f := m.f
	if m.stopped {
		f = nil
	}
	m.mu.Unlock()
	if f != nil {
		f()
	}
}

func (m *manualTimer) durations() []time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]time.Duration(nil), m.set...)
}

// TestConverseTimeout ends calls that wait on a silent server, either by
// firing the provider's timer (set anew by every event of a stream) or by
// the caller's cancel. No real time passes: the timer fires when the test
// knows the call is waiting.
func TestConverseTimeout(t *testing.T) {
	const timeout = 100 * time.Millisecond
	started := [][]byte{
		eventFrame("messageStart", `{"role":"assistant"}`),
		eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"Hi"}}`),
	}
	tests := []struct {
		name   string
		stream bool
		// frames are what the server sends before it falls silent.
		frames [][]byte
		// cancel ends the wait by the caller's cancel instead of the timer.
		cancel  bool
		want    llm.Error
		mention string
		// timer lists what the timer was set to: at the start, then
		// after each event.
		timer []time.Duration
	}{
		{"no response", false, nil, false, llm.Error{Retryable: true}, "no response within 100ms", []time.Duration{timeout}},
		{"stream gets no response", true, nil, false, llm.Error{Retryable: true}, "no response within 100ms", []time.Duration{timeout}},
		{"stream stalls", true, started, false, llm.Error{Status: 200, Retryable: true}, "stalled for 100ms", []time.Duration{timeout, timeout, timeout}},
		{"caller cancels", false, nil, true, llm.Error{}, "abandoned", []time.Duration{timeout}},
		{"caller cancels stream", true, started, true, llm.Error{Status: 200}, "abandoned", []time.Duration{timeout, timeout, timeout}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// waiting is signalled once the call waits on the silent
			// server: by the server when it sends nothing, else by the
			// client when it has the streamed text.
			waiting := make(chan struct{}, 1)
			signal := func() {
				select {
				case waiting <- struct{}{}:
				default:
				}
			}
			f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) {
				if len(tt.frames) > 0 {
					writeEventStream(w, tt.frames...)
				} else {
					signal()
				}
				<-r.Context().Done()
			})
			c := newTestConverse(t, f.URL, timeout)
			var idle manualTimer
			c.afterFunc = idle.afterFunc
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			defer close(done)
			go func() {
				select {
				case <-waiting:
				case <-done:
					return
				}
				if tt.cancel {
					cancel()
				} else {
					idle.fire()
				}
			}()
			var onDelta llm.OnDelta
			if tt.stream {
				onDelta = func(string) { signal() }
			}
			_, err := c.Generate(ctx, llm.Request{Messages: helloBedrock}, onDelta)
			le := checkLLMError(t, err, tt.want, tt.mention)
			if !tt.cancel && !errors.Is(le, context.DeadlineExceeded) {
				t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
			}
			if diff := cmp.Diff(tt.timer, idle.durations()); diff != "" {
				t.Errorf("timer settings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConverseRequestBodyOutlivesCall makes the late read of a request
// body that net/http's connection writer does when the response came
// before it finished the request: after the SDK has closed the body, that
// read must end cleanly. An error there makes net/http close the
// connection under the answer being read (a streamed answer then ends in
// "use of closed network connection").
func TestConverseRequestBodyOutlivesCall(t *testing.T) {
	tests := []struct {
		name   string
		stream bool
		answer func(w http.ResponseWriter)
	}{
		{"converse", false, func(w http.ResponseWriter) {
			writeConverseJSON(w, `{"output":{"message":{"role":"assistant","content":[{"text":"hi"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2},"metrics":{"latencyMs":1}}`)
		}},
		{"converse stream", true, func(w http.ResponseWriter) {
			writeEventStream(w,
				eventFrame("messageStart", `{"role":"assistant"}`),
				eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"hi"}}`),
				eventFrame("messageStop", `{"stopReason":"end_turn"}`),
			)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bodies []io.ReadCloser
			client := bedrockruntime.New(bedrockruntime.Options{
				Region:      "eu-west-3",
				Credentials: credentials.NewStaticCredentialsProvider(converseTestKeyID, converseTestSecret, ""),
				Retryer:     aws.NopRetryer{},
				HTTPClient: smithyhttp.ClientDoFunc(func(r *http.Request) (*http.Response, error) {
					bodies = append(bodies, r.Body)
					rec := httptest.NewRecorder()
					tt.answer(rec)
					return rec.Result(), nil
				}),
			})
			c, err := NewConverse(context.Background(), ConverseConfig{Name: "bedrock-test", Model: converseTestModel, Client: client})
			if err != nil {
				t.Fatalf("NewConverse: %v", err)
			}
			var onDelta llm.OnDelta
			if tt.stream {
				onDelta = func(string) {}
			}
			got, err := c.Generate(context.Background(), llm.Request{Messages: helloBedrock}, onDelta)
			if err != nil || got.Message.Content != "hi" {
				t.Fatalf("Generate = %+v, %v", got, err)
			}
			var late []error
			for _, b := range bodies {
				_, err := io.Copy(io.Discard, b)
				late = append(late, err)
			}
			if diff := cmp.Diff([]error{nil}, late, cmpopts.EquateErrors()); diff != "" {
				t.Errorf("reading the request body after the call (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConverseConnectionRefused(t *testing.T) {
	f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) {})
	endpoint := f.URL
	f.Close()
	c := newTestConverse(t, endpoint, 5*time.Second)
	_, err := c.Generate(context.Background(), llm.Request{Messages: helloBedrock}, nil)
	checkLLMError(t, err, llm.Error{Retryable: true}, "connection failed")
}

func TestConverseGivenClient(t *testing.T) {
	f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) {
		writeConverseJSON(w, `{"output":{"message":{"role":"assistant","content":[{"text":"hi"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2},"metrics":{"latencyMs":1}}`)
	})
	client := bedrockruntime.New(bedrockruntime.Options{
		Region:      "ap-southeast-2",
		Credentials: credentials.NewStaticCredentialsProvider(converseTestKeyID, converseTestSecret, ""),
		Retryer:     aws.NopRetryer{},
	})
	c, err := NewConverse(context.Background(), ConverseConfig{Name: "bedrock-test", Model: converseTestModel, Client: client, Endpoint: f.URL})
	if err != nil {
		t.Fatalf("NewConverse: %v", err)
	}
	got, err := c.Generate(context.Background(), llm.Request{Messages: helloBedrock}, nil)
	if err != nil || got.Message.Content != "hi" {
		t.Fatalf("Generate = %+v, %v", got, err)
	}
	if auth := f.recorded()[0].auth; !strings.Contains(auth, "/ap-southeast-2/bedrock/aws4_request") {
		t.Errorf("Authorization = %q, want the client's region", auth)
	}
}

func TestNewConverse(t *testing.T) {
	t.Run("region from AWS_REGION", func(t *testing.T) {
		isolateAWS(t, "us-west-2")
		f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) {
			writeConverseJSON(w, `{"output":{"message":{"role":"assistant","content":[{"text":"hi"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2},"metrics":{"latencyMs":1}}`)
		})
		c, err := NewConverse(context.Background(), ConverseConfig{Model: converseTestModel, Endpoint: f.URL})
		if err != nil {
			t.Fatalf("NewConverse: %v", err)
		}
		if c.Name() != "bedrock" {
			t.Errorf("Name() = %q, want bedrock", c.Name())
		}
		if _, err := c.Generate(context.Background(), llm.Request{Messages: helloBedrock}, nil); err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if auth := f.recorded()[0].auth; !strings.Contains(auth, "/us-west-2/bedrock/aws4_request") {
			t.Errorf("Authorization = %q, want region us-west-2", auth)
		}
	})
	tests := []struct {
		name string
		cfg  ConverseConfig
		want string
	}{
		{"no model", ConverseConfig{Region: "us-east-1"}, "model is required"},
		{"no region", ConverseConfig{Model: converseTestModel}, "no region"},
		{"negative timeout", ConverseConfig{Region: "us-east-1", Model: converseTestModel, Timeout: -time.Second}, "negative timeout"},
		{"bad endpoint", ConverseConfig{Region: "us-east-1", Model: converseTestModel, Endpoint: "localhost:9"}, "not an http(s) URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			isolateAWS(t, "")
			_, err := NewConverse(context.Background(), tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewConverse = %v, want an error mentioning %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), converseTestSecret) {
				t.Errorf("error %q shows the secret key", err)
			}
		})
	}
}

func TestConverseBadRequest(t *testing.T) {
	c := newTestConverse(t, "http://127.0.0.1:9", time.Second)
	for name, req := range map[string]llm.Request{
		"tool result without id": {Messages: []chat.Message{{Role: chat.Tool, Content: "x"}}},
		"unknown role":           {Messages: []chat.Message{{Role: "narrator", Content: "x"}}},
		"tool without name":      {Messages: helloBedrock, Tools: []chat.ToolDef{{Description: "x"}}},
		"bad schema":             {Messages: helloBedrock, Tools: []chat.ToolDef{{Name: "t", Parameters: json.RawMessage(`{"type":`)}}},
	} {
		_, err := c.Generate(context.Background(), req, nil)
		var le *llm.Error
		if !errors.As(err, &le) || le.Retryable || le.Status != 0 {
			t.Errorf("%s: Generate = %v, want a non-retryable *llm.Error before any call", name, err)
		}
	}
}

func TestConverseInvalidToolArguments(t *testing.T) {
	in, err := converseInput(llm.Request{Messages: []chat.Message{
		{Role: chat.User, Content: "go"},
		{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "t", Arguments: `{"unclosed": `}, {ID: "c2", Name: "t", Arguments: `[1,2]`}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{`{"invalid_arguments":"{\"unclosed\": "}`, `{"invalid_arguments":"[1,2]"}`} {
		b := in.Messages[1].Content[i].(*types.ContentBlockMemberToolUse).Value
		got, err := documentJSON(b.Input)
		if err != nil || !sameJSON(t, got, want) {
			t.Errorf("input %d = %s, %v; want %s", i, got, err, want)
		}
	}
}

// TestConverseWithRetry checks the provider under the llm wrappers: a
// throttled call is retried by llm.WithRetry and then succeeds.
func TestConverseWithRetry(t *testing.T) {
	var mu sync.Mutex
	n := 0
	f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) {
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if first {
			writeBedrockError(w, http.StatusTooManyRequests, "ThrottlingException", "Too many requests, please wait before trying again.")
			return
		}
		writeEventStream(w,
			eventFrame("messageStart", `{"role":"assistant"}`),
			eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"ok"}}`),
			eventFrame("contentBlockStop", `{"contentBlockIndex":0}`),
			eventFrame("messageStop", `{"stopReason":"end_turn"}`),
			eventFrame("metadata", `{"usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2},"metrics":{"latencyMs":1}}`))
	})
	p := llm.WithRetry(newTestConverse(t, f.URL, 5*time.Second), 3, time.Millisecond, 10*time.Millisecond)
	got, err := p.Generate(context.Background(), llm.Request{Messages: helloBedrock}, func(string) {})
	if err != nil || got.Message.Content != "ok" {
		t.Fatalf("Generate = %+v, %v; want ok after one retry", got, err)
	}
	if calls := len(f.recorded()); calls != 2 {
		t.Errorf("%d calls, want 2", calls)
	}
}
