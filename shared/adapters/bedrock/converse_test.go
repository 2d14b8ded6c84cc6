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
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm/llmtest"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest/awsmodel"
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
	// body is the JSON body, numbers kept as json.Number; raw is its text.
	body map[string]any
	raw  []byte
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
		call, ok := readConverseCall(t, r)
		if !ok {
			writeBedrockError(w, http.StatusNotFound, "UnknownOperationException", "")
			return
		}
		dec := json.NewDecoder(bytes.NewReader(call.raw))
		dec.UseNumber()
		if err := dec.Decode(&call.body); err != nil {
			t.Errorf("request body %q is not JSON: %v", call.raw, err)
		}
		f.mu.Lock()
		f.calls = append(f.calls, call)
		f.mu.Unlock()
		answer(w, r, call.op)
	}))
	t.Cleanup(f.Close)
	return f
}

// readConverseCall reads a call to Converse or ConverseStream: its
// operation, model, authorization and body text. ok is false for a request to
// anything else.
func readConverseCall(t *testing.T, r *http.Request) (call converseCall, ok bool) {
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/model/")
	i := strings.LastIndex(rest, "/")
	if r.Method != http.MethodPost || !ok || i < 0 || (rest[i+1:] != "converse" && rest[i+1:] != "converse-stream") {
		return call, false
	}
	model, err := url.PathUnescape(rest[:i])
	if err != nil {
		t.Errorf("model id %q: %v", rest[:i], err)
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("reading body: %v", err)
	}
	if err := modelRefuses(t, r, data); err != nil {
		t.Errorf("Bedrock would refuse this request: %v", err)
	}
	return converseCall{op: rest[i+1:], model: model, auth: r.Header.Get("Authorization"), raw: data}, true
}

// modelRefuses returns what botocore's model of Bedrock Runtime refuses
// in r, whose body is body (awsmodel: required members, lengths,
// patterns, enums, unions, unknown members); nil when nothing. One
// member is let through: outputConfig.effort, which the API has and the
// botocore of the project's machines (1.43) does not yet.
func modelRefuses(t *testing.T, r *http.Request, body []byte) error {
	t.Helper()
	m := awsmodel.Load(t, "bedrock-runtime")
	op, in, err := m.FromREST(r, "", body)
	if err != nil {
		return err
	}
	err = m.Validate(op, in)
	if err == nil {
		return nil
	}
	all := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		all = joined.Unwrap()
	}
	var refused []error
	for _, e := range all {
		if v, ok := e.(*awsmodel.Violation); !ok || v.Path != "outputConfig.effort" {
			refused = append(refused, e)
		}
	}
	return errors.Join(refused...)
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

// TestConverseReply checks what Bedrock alone does with a Converse call:
// the model in the path, the SigV4 signature, the body without the
// optional parts, text in several blocks, tool input kept to the digit
// and a total of tokens made when missing. Replies every provider gives
// are in the conformance suite.
func TestConverseReply(t *testing.T) {
	tests := []struct {
		name string
		body string
		want llm.Response
	}{
		{
			name: "text in blocks",
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

// TestConverseStreamToolUseWithoutInput checks a streamed toolUse block
// that ends without input, a call of a tool that takes no arguments: its
// arguments are an empty object.
func TestConverseStreamToolUseWithoutInput(t *testing.T) {
	f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) {
		writeEventStream(w,
			eventFrame("messageStart", `{"role":"assistant"}`),
			eventFrame("contentBlockStart", `{"contentBlockIndex":0,"start":{"toolUse":{"name":"list_dir","toolUseId":"tooluse_c"}}}`),
			eventFrame("contentBlockStop", `{"contentBlockIndex":0}`),
			eventFrame("messageStop", `{"stopReason":"tool_use"}`),
		)
	})
	got, err := newTestConverse(t, f.URL, 5*time.Second).Generate(context.Background(), llm.Request{Messages: helloBedrock}, func(string) {})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if diff := cmp.Diff([]chat.ToolCall{{ID: "tooluse_c", Name: "list_dir", Arguments: "{}"}}, got.Message.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
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
			req := llm.Request{Model: "us.anthropic.claude-other-v2:0", Messages: history, Tools: tools, Params: llm.Params{MaxTokens: 256}}
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
	want.Provider = "bedrock-test"
	return llmtest.CheckError(t, err, want, converseTestSecret, mention...)
}

// TestConverseHTTPErrors checks the exceptions of Bedrock beyond those of
// the conformance suite, and the text of an error: the exception, its
// message and the request id.
func TestConverseHTTPErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		errType string
		msg     string
		want    llm.Error
		mention []string
	}{
		{"throttling", 429, "ThrottlingException", "Too many requests, please wait before trying again.",
			llm.Error{Status: 429, Retryable: true}, []string{"ThrottlingException", "Too many requests", "req-err-1"}},
		{"model not ready", 429, "ModelNotReadyException", "Model is not ready to serve inference requests.",
			llm.Error{Status: 429, Retryable: true}, []string{"ModelNotReadyException"}},
		{"model timeout", 408, "ModelTimeoutException", "Model has timed out in processing the request.",
			llm.Error{Status: 408, Retryable: true}, []string{"ModelTimeoutException"}},
		{"unknown 5xx", 502, "BadGatewayException", "bad gateway",
			llm.Error{Status: 502, Retryable: true}, []string{"502"}},
		{"input too long", 400, "ValidationException", "Input is too long for requested model.",
			llm.Error{Status: 400, ContextOverflow: true}, []string{"ValidationException", "too long"}},
		{"prompt too long", 400, "ValidationException", "The model returned the following errors: prompt is too long: 215000 tokens > 200000 maximum",
			llm.Error{Status: 400, ContextOverflow: true}, []string{"ValidationException"}},
		{"model not found", 404, "ResourceNotFoundException", "Could not resolve the foundation model from the provided model identifier.",
			llm.Error{Status: 404}, []string{"ResourceNotFoundException"}},
		{"quota", 400, "ServiceQuotaExceededException", "Your request exceeds the service quota for your account.",
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
	if !awsapi.HasCode(err, "ThrottlingException") {
		t.Errorf("awsapi.Code(%v) = %q, want ThrottlingException", err, awsapi.Code(err))
	}
	if !llm.IsRetryable(err) {
		t.Errorf("IsRetryable(%v) = false", err)
	}
}

// TestConverseStreamCutOff checks a stream whose body ends cleanly in the
// middle of an event-stream frame.
func TestConverseStreamCutOff(t *testing.T) {
	partial := eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":" more"}}`)
	tests := []struct {
		name string
		tail []byte
	}{
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

// TestConverseStreamException checks exceptions in the middle of a stream
// beyond those of the conformance suite, and the text of their error.
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

// TestConverseTimeout checks the provider's timer: set once for a call,
// set anew by every event of a stream, and telling a call that got no
// answer from a stream that stalled. No real time passes: the timer fires
// when the test knows the call is waiting. The conformance suite times
// calls out for real.
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
		frames  [][]byte
		want    llm.Error
		mention string
		// timer lists what the timer was set to: at the start, then
		// after each event.
		timer []time.Duration
	}{
		{"no response", false, nil, llm.Error{Retryable: true}, "no response within 100ms", []time.Duration{timeout}},
		{"stream stalls", true, started, llm.Error{Status: 200, Retryable: true}, "stalled for 100ms", []time.Duration{timeout, timeout, timeout}},
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
			done := make(chan struct{})
			defer close(done)
			go func() {
				select {
				case <-waiting:
				case <-done:
					return
				}
				idle.fire()
			}()
			var onDelta llm.OnDelta
			if tt.stream {
				onDelta = func(string) { signal() }
			}
			_, err := c.Generate(context.Background(), llm.Request{Messages: helloBedrock}, onDelta)
			le := checkLLMError(t, err, tt.want, tt.mention)
			if !errors.Is(le, context.DeadlineExceeded) {
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
// before it finished the request: after the call has returned, that
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
			cfg := &aws.Config{
				Region:           "eu-west-3",
				Credentials:      credentials.NewStaticCredentialsProvider(converseTestKeyID, converseTestSecret, ""),
				RetryMaxAttempts: 1,
				HTTPClient: smithyhttp.ClientDoFunc(func(r *http.Request) (*http.Response, error) {
					bodies = append(bodies, r.Body)
					rec := httptest.NewRecorder()
					tt.answer(rec)
					return rec.Result(), nil
				}),
			}
			c, err := NewConverse(context.Background(), ConverseConfig{Name: "bedrock-test", Model: converseTestModel, AWS: cfg})
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

func TestConverseGivenConfig(t *testing.T) {
	f := newFakeBedrock(t, func(w http.ResponseWriter, r *http.Request, op string) {
		writeConverseJSON(w, `{"output":{"message":{"role":"assistant","content":[{"text":"hi"}]}},"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2},"metrics":{"latencyMs":1}}`)
	})
	cfg := &aws.Config{
		Region:           "ap-southeast-2",
		Credentials:      credentials.NewStaticCredentialsProvider(converseTestKeyID, converseTestSecret, ""),
		RetryMaxAttempts: 1,
	}
	c, err := NewConverse(context.Background(), ConverseConfig{Name: "bedrock-test", Model: converseTestModel, AWS: cfg, Endpoint: f.URL})
	if err != nil {
		t.Fatalf("NewConverse: %v", err)
	}
	got, err := c.Generate(context.Background(), llm.Request{Messages: helloBedrock}, nil)
	if err != nil || got.Message.Content != "hi" {
		t.Fatalf("Generate = %+v, %v", got, err)
	}
	if auth := f.recorded()[0].auth; !strings.Contains(auth, "/ap-southeast-2/bedrock/aws4_request") {
		t.Errorf("Authorization = %q, want the configuration's region", auth)
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

func TestConverseInvalidToolArguments(t *testing.T) {
	in, err := converseInput(llm.Request{Messages: []chat.Message{
		{Role: chat.User, Content: "go"},
		{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "c1", Name: "t", Arguments: `{"unclosed": `}, {ID: "c2", Name: "t", Arguments: `[1,2]`}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{`{"invalid_arguments":"{\"unclosed\": "}`, `{"invalid_arguments":"[1,2]"}`} {
		b := in.Messages[1].Content[i].ToolUse
		got, err := documentJSON(b.Input)
		if err != nil || !sameJSON(t, got, want) {
			t.Errorf("input %d = %s, %v; want %s", i, got, err, want)
		}
	}
}
