package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

func ptr[T any](v T) *T { return &v }

// withFields is a one-message request to the default agent with extra
// top-level fields.
func withFields(fields string) string {
	return `{"model":"default","messages":[{"role":"user","content":"hi"}],` + fields + `}`
}

const weatherTool = `{"type":"function","function":{"name":"get_weather","description":"Weather of a city",` +
	`"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}`

func TestRequestOptions(t *testing.T) {
	weather := chat.ToolDef{Name: "get_weather", Description: "Weather of a city",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
	tests := []struct {
		name   string
		fields string
		want   agent.Options
	}{
		{"none", `"stream":false`, agent.Options{}},
		{"sampling", `"temperature":0,"top_p":0.5,"seed":7,"presence_penalty":-2,"frequency_penalty":2`,
			agent.Options{Params: llm.Params{Temperature: ptr(0.0), TopP: ptr(0.5), Seed: ptr(int64(7)), PresencePenalty: ptr(-2.0), FrequencyPenalty: ptr(2.0)}}},
		{"max_tokens", `"max_tokens":50`, agent.Options{Params: llm.Params{MaxTokens: 50}}},
		{"max_completion_tokens", `"max_completion_tokens":60`, agent.Options{Params: llm.Params{MaxTokens: 60}}},
		{"both max agreeing", `"max_tokens":60,"max_completion_tokens":60`, agent.Options{Params: llm.Params{MaxTokens: 60}}},
		{"stop string", `"stop":"END"`, agent.Options{Params: llm.Params{Stop: []string{"END"}}}},
		{"stop array", `"stop":["a","b","c","d"]`, agent.Options{Params: llm.Params{Stop: []string{"a", "b", "c", "d"}}}},
		{"json object", `"response_format":{"type":"json_object"}`, agent.Options{Params: llm.Params{ResponseFormat: &llm.ResponseFormat{Type: "json_object"}}}},
		{"text format", `"response_format":{"type":"text"}`, agent.Options{}},
		{"json schema", `"response_format":{"type":"json_schema","json_schema":{"name":"person","strict":true,"schema":{"type":"object"}}}`,
			agent.Options{Params: llm.Params{ResponseFormat: &llm.ResponseFormat{Type: "json_schema", Name: "person", Strict: ptr(true), Schema: json.RawMessage(`{"type":"object"}`)}}}},
		{"reasoning, user, metadata", `"reasoning_effort":"low","user":"u-1","metadata":{"team":"a"}`,
			agent.Options{Params: llm.Params{ReasoningEffort: "low", User: "u-1", Metadata: map[string]string{"team": "a"}}}},
		{"safety identifier stands for user", `"safety_identifier":"hash-1"`, agent.Options{Params: llm.Params{User: "hash-1"}}},
		{"ignored fields", `"service_tier":"auto","prompt_cache_key":"k","n":1,"logprobs":false,"modalities":["text"],"stream_options":null`, agent.Options{}},
		{"store passed on", `"store":true,"metadata":{"a":"b"}`, agent.Options{Params: llm.Params{Store: ptr(true), Metadata: map[string]string{"a": "b"}}}},
		{"tools", `"tools":[` + weatherTool + `],"tool_choice":"required","parallel_tool_calls":false`,
			agent.Options{Tools: []chat.ToolDef{weather}, Params: llm.Params{ToolChoice: &llm.ToolChoice{Mode: "required"}, ParallelToolCalls: ptr(false)}}},
		{"named tool choice", `"tools":[` + weatherTool + `],"tool_choice":{"type":"function","function":{"name":"get_weather"}}`,
			agent.Options{Tools: []chat.ToolDef{weather}, Params: llm.Params{ToolChoice: &llm.ToolChoice{Mode: "function", Name: "get_weather"}}}},
		{"tool without parameters", `"tools":[{"type":"function","function":{"name":"now"}}],"tool_choice":"none"`,
			agent.Options{Tools: []chat.ToolDef{{Name: "now", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}}, Params: llm.Params{ToolChoice: &llm.ToolChoice{Mode: "none"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.runner.events = done
			if w := f.do("POST", "/v1/chat/completions", f.token, withFields(tt.fields)); w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			if diff := cmp.Diff(tt.want, f.runner.inputs[0].Options); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRequestOptionsRefused(t *testing.T) {
	tests := []struct {
		name, fields, param, code string
	}{
		{"unknown field", `"temprature":1`, "temprature", "unknown_parameter"},
		{"temperature above 2", `"temperature":2.5`, "temperature", "invalid_value"},
		{"temperature a string", `"temperature":"hot"`, "temperature", "invalid_type"},
		{"top_p above 1", `"top_p":1.1`, "top_p", "invalid_value"},
		{"penalty below -2", `"presence_penalty":-3`, "presence_penalty", "invalid_value"},
		{"max_tokens zero", `"max_tokens":0`, "max_tokens", "invalid_value"},
		{"max tokens disagreeing", `"max_tokens":5,"max_completion_tokens":6`, "max_completion_tokens", "invalid_value"},
		{"five stops", `"stop":["a","b","c","d","e"]`, "stop", "invalid_value"},
		{"stop a number", `"stop":5`, "stop", "invalid_value"},
		{"n above 1", `"n":2`, "n", "invalid_value"},
		{"logprobs", `"logprobs":true`, "logprobs", "invalid_value"},
		{"logit_bias", `"logit_bias":{"50256":-100}`, "logit_bias", "invalid_value"},
		{"audio modality", `"modalities":["text","audio"]`, "modalities", "invalid_value"},
		{"functions", `"functions":[{"name":"f"}]`, "functions", "invalid_value"},
		{"bad reasoning effort", `"reasoning_effort":"max"`, "reasoning_effort", "invalid_value"},
		{"too much metadata", `"metadata":{` + metadataPairs(17) + `}`, "metadata", "invalid_value"},
		{"bad response format", `"response_format":{"type":"yaml"}`, "response_format.type", "invalid_value"},
		{"json schema without schema", `"response_format":{"type":"json_schema","json_schema":{"name":"x"}}`, "response_format.json_schema.schema", "invalid_value"},
		{"json schema bad name", `"response_format":{"type":"json_schema","json_schema":{"name":"a b","schema":{}}}`, "response_format.json_schema.name", "invalid_value"},
		{"tool of another type", `"tools":[{"type":"web_search"}]`, "tools[0].type", "invalid_value"},
		{"tool name with spaces", `"tools":[{"type":"function","function":{"name":"get weather"}}]`, "tools[0].function.name", "invalid_value"},
		{"tool parameters not an object", `"tools":[{"type":"function","function":{"name":"f","parameters":[1]}}]`, "tools[0].function.parameters", "invalid_value"},
		{"bad tool choice", `"tool_choice":"sometimes"`, "tool_choice", "invalid_value"},
		{"tool choice object without name", `"tool_choice":{"type":"function"}`, "tool_choice", "invalid_value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.runner.events = done
			w := f.do("POST", "/v1/chat/completions", f.token, withFields(tt.fields))
			got, _ := decodeError(t, w)
			want := apiErr{http.StatusBadRequest, "invalid_request_error", tt.code}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			var body struct {
				Error struct{ Param *string }
			}
			_ = json.Unmarshal(w.Body.Bytes(), &body)
			if body.Error.Param == nil || *body.Error.Param != tt.param {
				t.Errorf("param = %v, want %q", body.Error.Param, tt.param)
			}
			if len(f.runner.inputs) != 0 {
				t.Errorf("a refused request started a run: %+v", f.runner.inputs)
			}
		})
	}
}

func metadataPairs(n int) string {
	var pairs []string
	for i := range n {
		pairs = append(pairs, `"k`+strings.Repeat("x", i)+`":"v"`)
	}
	return strings.Join(pairs, ",")
}

// A run that refuses what it was asked (a client tool named like the
// agent's, a parameter the provider cannot honour) is a 400.
func TestInputErrorIs400(t *testing.T) {
	f := newFixture(t)
	f.runner.err = &agent.InputError{Message: `tools[0]: "shell" is the name of a tool of agent "default"; give your tool another name`}
	got, _ := decodeError(t, f.do("POST", "/v1/chat/completions", f.token, helloBody))
	if diff := cmp.Diff(apiErr{http.StatusBadRequest, "invalid_request_error", "invalid_value"}, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
}

// calls is a run that hands the client two calls of its tools.
var calls = []agent.Event{{Result: &agent.Result{
	ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}, {ID: "call_2", Name: "get_time", Arguments: `{}`}},
	Usage:     chat.Usage{PromptTokens: 9, CompletionTokens: 4, TotalTokens: 13}, FinishReason: "tool_calls"}}}

func TestToolCallsAnswer(t *testing.T) {
	f := newFixture(t)
	f.runner.events = calls
	w := f.do("POST", "/v1/chat/completions", f.token, withFields(`"tools":[`+weatherTool+`]`))
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	var got struct {
		Choices []struct {
			Message      map[string]json.RawMessage `json:"message"`
			FinishReason string                     `json:"finish_reason"`
		} `json:"choices"`
		Usage map[string]int `json:"usage"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	m := got.Choices[0].Message
	wantCalls := `[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},` +
		`{"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{}"}}]`
	if diff := cmp.Diff(map[string]string{"role": `"assistant"`, "content": "null", "tool_calls": wantCalls}, stringsOf(m)); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
	if got.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("finish_reason = %q, want tool_calls", got.Choices[0].FinishReason)
	}
	if got.Usage["total_tokens"] != 13 {
		t.Errorf("usage = %v", got.Usage)
	}
}

func stringsOf(m map[string]json.RawMessage) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

func TestToolCallsStream(t *testing.T) {
	f := newFixture(t)
	f.runner.events = append([]agent.Event{{Delta: "Let me check."}}, calls...)
	w := f.do("POST", "/v1/chat/completions", f.token, withFields(`"stream":true,"tools":[`+weatherTool+`]`))
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	var deltas []string
	var finish []string
	for line := range strings.SplitSeq(w.Body.String(), "\n\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta        json.RawMessage `json:"delta"`
				FinishReason *string         `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		for _, ch := range c.Choices {
			deltas = append(deltas, string(ch.Delta))
			if ch.FinishReason != nil {
				finish = append(finish, *ch.FinishReason)
			}
		}
	}
	want := []string{
		`{"role":"assistant"}`,
		`{"content":"Let me check."}`,
		`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},` +
			`{"index":1,"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{}"}}]}`,
		`{}`,
	}
	if diff := cmp.Diff(want, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"tool_calls"}, finish); diff != "" {
		t.Errorf("finish reasons (-want +got):\n%s", diff)
	}
}

// In a stateful session, a request that ends with tool results hands the
// run exactly those results; the client's system messages go with the
// run, not into history.
func TestStatefulToolResults(t *testing.T) {
	f := newFixture(t)
	f.runner.events = done
	body := `{"model":"default","messages":[
		{"role":"system","content":"be brief"},
		{"role":"user","content":"weather in Oslo and time?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}},{"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"call_1","content":"rain"},
		{"role":"tool","tool_call_id":"call_2","content":"noon"}]}`
	if w := f.do("POST", "/v1/chat/completions", f.token, body, gateway.SessionHeader, "u1"); w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	in := f.runner.inputs[0]
	want := []chat.Message{{Role: chat.Tool, ToolCallID: "call_1", Content: "rain"}, {Role: chat.Tool, ToolCallID: "call_2", Content: "noon"}}
	if diff := cmp.Diff(want, in.Messages); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]chat.Message{{Role: chat.System, Content: "be brief"}}, in.Options.System); diff != "" {
		t.Errorf("system (-want +got):\n%s", diff)
	}
}
