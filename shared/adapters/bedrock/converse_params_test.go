package bedrock

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm/llmtest"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest/awsmodel"
)

// TestConverseCheckParams checks what Converse refuses, and the values at
// the edges of what it takes.
func TestConverseCheckParams(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	seed := int64(1)
	no := false
	refused := func(param, reason string) *llm.UnsupportedError {
		return &llm.UnsupportedError{Provider: "bedrock-test", Param: param, Reason: reason}
	}
	many := func(n int, prefix string) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[fmt.Sprintf("%s%d", prefix, i)] = "v"
		}
		return m
	}
	const chars = "Bedrock takes keys of 1 to 256 letters, digits, spaces and :_@$#=/+,-."
	tests := []struct {
		name   string
		params llm.Params
		want   *llm.UnsupportedError
	}{
		{"nothing", llm.Params{}, nil},
		{"what Converse carries", llm.Params{MaxTokens: 1 << 40, Temperature: f(1), TopP: f(0), Stop: []string{"a", "b", "c", "d", "e"},
			ReasoningEffort: "xhigh", ParallelToolCalls: &no, ToolChoice: &llm.ToolChoice{Mode: llm.ToolsNone},
			ResponseFormat: &llm.ResponseFormat{Type: llm.FormatJSONSchema, Schema: json.RawMessage(`{"type":"object"}`)}}, nil},
		{"effort max", llm.Params{ReasoningEffort: "max"}, nil},
		{"seed", llm.Params{Seed: &seed}, refused("seed", "Converse takes no seed")},
		{"presence penalty", llm.Params{PresencePenalty: f(0.1)}, refused("presence_penalty", "Converse has no presence penalty")},
		{"frequency penalty", llm.Params{PresencePenalty: f(0), FrequencyPenalty: f(-2)}, refused("frequency_penalty", "Converse has no frequency penalty")},
		{"temperature above 1", llm.Params{Temperature: f(1.01)}, refused("temperature", "Bedrock takes a temperature from 0 to 1")},
		{"negative temperature", llm.Params{Temperature: f(-0.5)}, refused("temperature", "Bedrock takes a temperature from 0 to 1")},
		{"top_p above 1", llm.Params{TopP: f(2)}, refused("top_p", "Bedrock takes a top_p from 0 to 1")},
		{"too many stop sequences", llm.Params{Stop: make([]string, 2501)}, refused("stop", "Bedrock takes at most 2500 stop sequences")},
		{"empty stop sequence", llm.Params{Stop: []string{"END", ""}}, refused("stop", "Bedrock takes no empty stop sequence")},
		{"minimal effort", llm.Params{ReasoningEffort: "minimal"}, refused("reasoning_effort", "Converse's effort levels are low, medium, high, xhigh and max")},
		{"no effort", llm.Params{ReasoningEffort: "none"}, refused("reasoning_effort", "Converse's effort levels are low, medium, high, xhigh and max")},
		{"text format", llm.Params{ResponseFormat: &llm.ResponseFormat{Type: llm.FormatText}}, nil},
		{"json object", llm.Params{ResponseFormat: &llm.ResponseFormat{Type: llm.FormatJSONObject}},
			refused("response_format.type", "Converse has no json_object format, only json_schema: give the reply's schema")},
		{"json schema without schema", llm.Params{ResponseFormat: &llm.ResponseFormat{Type: llm.FormatJSONSchema, Name: "x"}},
			refused("response_format.json_schema.schema", "Bedrock needs the schema of a json_schema format")},
		{"unknown format", llm.Params{ResponseFormat: &llm.ResponseFormat{Type: "yaml"}}, refused("response_format.type", `unknown format "yaml"`)},
		{"metadata of every character Bedrock takes", llm.Params{User: "jo@example.com", Metadata: map[string]string{
			"a-Z_0:9 @$#=/+,-.\t": "x y\nz", "empty": "", "long": strings.Repeat("v", 256), strings.Repeat("k", 256): "v",
		}}, nil},
		{"16 entries", llm.Params{Metadata: many(16, "k")}, nil},
		{"15 entries and the user", llm.Params{User: "u1", Metadata: many(15, "k")}, nil},
		{"16 entries and the user", llm.Params{User: "u1", Metadata: many(16, "k")},
			refused("metadata", "Bedrock's requestMetadata holds at most 16 entries, the user included")},
		{"the user in the metadata too", llm.Params{User: "u1", Metadata: map[string]string{"user": "u1"}}, nil},
		{"another user in the metadata", llm.Params{User: "u1", Metadata: map[string]string{"user": "u2"}},
			refused("user", `Bedrock carries the user in requestMetadata["user"], which the metadata already sets`)},
		{"user of other characters", llm.Params{User: "Zoë"},
			refused("user", "Bedrock carries the user in requestMetadata, whose values are up to 256 letters, digits, spaces and :_@$#=/+,-.")},
		{"user too long", llm.Params{User: strings.Repeat("u", 257)},
			refused("user", "Bedrock carries the user in requestMetadata, whose values are up to 256 letters, digits, spaces and :_@$#=/+,-.")},
		{"empty key", llm.Params{Metadata: map[string]string{"": "v"}}, refused("metadata", `key "": `+chars)},
		{"key too long", llm.Params{Metadata: map[string]string{strings.Repeat("k", 257): "v"}}, refused("metadata", fmt.Sprintf("key %q: %s", strings.Repeat("k", 257), chars))},
		{"key of other characters", llm.Params{Metadata: map[string]string{"b": "ok", "a!": "v"}}, refused("metadata", `key "a!": `+chars)},
		{"value of other characters", llm.Params{Metadata: map[string]string{"note": "déjà vu"}},
			refused("metadata", `the value of "note": Bedrock takes values of up to 256 letters, digits, spaces and :_@$#=/+,-.`)},
		{"value too long", llm.Params{Metadata: map[string]string{"note": strings.Repeat("v", 257)}},
			refused("metadata", `the value of "note": Bedrock takes values of up to 256 letters, digits, spaces and :_@$#=/+,-.`)},
	}
	c := &Converse{name: "bedrock-test"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, llmtest.Unsupported(t, llm.CheckParams(c, tt.params))); diff != "" {
				t.Errorf("CheckParams (-want +got):\n%s", diff)
			}
		})
	}
}

// converseAnswer answers a call, streamed or not, with a message of text
// and toolUse blocks (names, each with an empty input) and stopReason.
func converseAnswer(text string, stopReason string, tools ...string) func(w http.ResponseWriter, r *http.Request, op string) {
	return func(w http.ResponseWriter, r *http.Request, op string) {
		if op == "converse-stream" {
			frames := [][]byte{eventFrame("messageStart", `{"role":"assistant"}`), textFrame(0, text)}
			for i, name := range tools {
				frames = append(frames, eventFrame("contentBlockStart", fmt.Sprintf(
					`{"contentBlockIndex":%d,"start":{"toolUse":{"name":%q,"toolUseId":"tooluse_%d"}}}`, i+1, name, i)))
			}
			frames = append(frames, eventFrame("messageStop", fmt.Sprintf(`{"stopReason":%q}`, stopReason)),
				eventFrame("metadata", `{"usage":{"inputTokens":5,"outputTokens":2,"totalTokens":7},"metrics":{"latencyMs":1}}`))
			writeEventStream(w, frames...)
			return
		}
		blocks := []string{fmt.Sprintf(`{"text":%q}`, text)}
		for i, name := range tools {
			blocks = append(blocks, fmt.Sprintf(`{"toolUse":{"toolUseId":"tooluse_%d","name":%q,"input":{}}}`, i, name))
		}
		writeConverseJSON(w, fmt.Sprintf(`{"output":{"message":{"role":"assistant","content":[%s]}},"stopReason":%q,
			"usage":{"inputTokens":5,"outputTokens":2,"totalTokens":7},"metrics":{"latencyMs":1}}`, strings.Join(blocks, ","), stopReason))
	}
}

// TestConverseWithholdsTools checks the tools of a conversation that holds
// tool calls when none may be called ("none", or no tools offered): the
// placeholder Bedrock needs is offered instead, and a call the model makes
// anyway is dropped, the reply finishing with "stop".
func TestConverseWithholdsTools(t *testing.T) {
	history := []chat.Message{
		{Role: chat.User, Content: "Time?"},
		{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "call_t", Name: "get_time", Arguments: "{}"}}},
		{Role: chat.Tool, ToolCallID: "call_t", Content: "14:05"},
	}
	tools := []chat.ToolDef{{Name: "get_time"}}
	const placeholder = `{"tools":[{"toolSpec":{"name":"no_tool_available","description":"No tool can be called now. Do not call this; answer in text.",
		"inputSchema":{"json":{"type":"object","properties":{}}}}}]}`
	tests := []struct {
		name   string
		req    llm.Request
		config string // the toolConfig sent, "" for none
	}{
		{"none, with tool calls", llm.Request{Messages: history, Tools: tools, Params: llm.Params{ToolChoice: &llm.ToolChoice{Mode: llm.ToolsNone}}}, placeholder},
		{"no tools, with tool calls", llm.Request{Messages: history}, placeholder},
		{"none, without tool calls", llm.Request{Messages: helloBedrock, Tools: tools, Params: llm.Params{ToolChoice: &llm.ToolChoice{Mode: llm.ToolsNone}}}, ""},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				f := newFakeBedrock(t, converseAnswer("It is 14:05.", "tool_use", "no_tool_available", "get_time"))
				var onDelta llm.OnDelta
				if stream {
					onDelta = func(string) {}
				}
				got, err := newTestConverse(t, f.URL, 5*time.Second).Generate(context.Background(), tt.req, onDelta)
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				want := chat.Message{Role: chat.Assistant, Content: "It is 14:05."}
				if diff := cmp.Diff(want, got.Message); diff != "" || got.FinishReason != "stop" {
					t.Errorf("reply (-want +got):\n%s\nfinish reason %q, want stop", diff, got.FinishReason)
				}
				config, sent := f.recorded()[0].body["toolConfig"]
				switch {
				case tt.config == "" && sent:
					t.Errorf("toolConfig %v sent, want none", config)
				case tt.config != "":
					b, _ := json.Marshal(config)
					if !sameJSON(t, tt.config, string(b)) {
						t.Errorf("toolConfig sent:\n%s\nwant:\n%s", b, tt.config)
					}
				}
			})
		}
	}
}

// TestConverseOneToolCallAtATime checks parallel_tool_calls false, which
// Converse cannot send: a reply keeps its first call only.
func TestConverseOneToolCallAtATime(t *testing.T) {
	no, yes := false, true
	tools := []chat.ToolDef{{Name: "get_time"}, {Name: "get_weather"}}
	tests := []struct {
		name     string
		parallel *bool
		calls    []string
		want     []string
	}{
		{"one at a time", &no, []string{"get_time", "get_weather"}, []string{"get_time"}},
		{"one at a time, one call", &no, []string{"get_weather"}, []string{"get_weather"}},
		{"in parallel", &yes, []string{"get_time", "get_weather"}, []string{"get_time", "get_weather"}},
		{"unset", nil, []string{"get_time", "get_weather"}, []string{"get_time", "get_weather"}},
	}
	for _, tt := range tests {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tt.name, stream), func(t *testing.T) {
				f := newFakeBedrock(t, converseAnswer("Checking.", "tool_use", tt.calls...))
				var onDelta llm.OnDelta
				if stream {
					onDelta = func(string) {}
				}
				req := llm.Request{Messages: helloBedrock, Tools: tools, Params: llm.Params{ParallelToolCalls: tt.parallel}}
				got, err := newTestConverse(t, f.URL, 5*time.Second).Generate(context.Background(), req, onDelta)
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				var names []string
				for _, c := range got.Message.ToolCalls {
					names = append(names, c.Name)
				}
				if diff := cmp.Diff(tt.want, names); diff != "" || got.FinishReason != "tool_calls" {
					t.Errorf("calls (-want +got):\n%s\nfinish reason %q, want tool_calls", diff, got.FinishReason)
				}
			})
		}
	}
}

// TestConverseSchemaSentAsText checks that a json_schema format's schema
// is sent as the compact text of its JSON, as outputConfig takes it.
func TestConverseSchemaSentAsText(t *testing.T) {
	f := newFakeBedrock(t, converseAnswer(`{"name":"Ada"}`, "end_turn"))
	req := llm.Request{Messages: helloBedrock, Params: llm.Params{ResponseFormat: &llm.ResponseFormat{
		Type: llm.FormatJSONSchema, Schema: json.RawMessage("{\n  \"type\": \"object\",\n  \"properties\": {\"name\": {\"type\": \"string\"}}\n}"),
	}}}
	got, err := newTestConverse(t, f.URL, 5*time.Second).Generate(context.Background(), req, nil)
	if err != nil || got.Message.Content != `{"name":"Ada"}` {
		t.Fatalf("Generate = %q, %v; want the JSON reply", got.Message.Content, err)
	}
	want := map[string]any{"textFormat": map[string]any{"type": "json_schema", "structure": map[string]any{
		"jsonSchema": map[string]any{"schema": `{"type":"object","properties":{"name":{"type":"string"}}}`}}}}
	if diff := cmp.Diff(want, f.recorded()[0].body["outputConfig"]); diff != "" {
		t.Errorf("outputConfig (-want +got):\n%s", diff)
	}
}

// TestFinishReason checks every stop reason Bedrock documents (the
// StopReason enum of botocore's model): each in OpenAI's words, but the
// malformed ones, which have none and pass through.
func TestFinishReason(t *testing.T) {
	want := map[string]string{
		"end_turn":                      "stop",
		"stop_sequence":                 "stop",
		"tool_use":                      "tool_calls",
		"max_tokens":                    "length",
		"model_context_window_exceeded": "length",
		"guardrail_intervened":          "content_filter",
		"content_filtered":              "content_filter",
		"malformed_model_output":        "malformed_model_output",
		"malformed_tool_use":            "malformed_tool_use",
	}
	reasons := awsmodel.Load(t, "bedrock-runtime").Enum("StopReason")
	if len(reasons) == 0 {
		t.Fatal("the model has no StopReason enum")
	}
	for _, r := range reasons {
		w, ok := want[r]
		if !ok {
			t.Errorf("stop reason %q: no finish reason stated", r)
			continue
		}
		if got := finishReason(r); got != w {
			t.Errorf("finishReason(%q) = %q, want %q", r, got, w)
		}
	}
}
