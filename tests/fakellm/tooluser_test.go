package fakellm

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
)

// post sends a raw chat completions body and returns the status and body.
func postChat(t *testing.T, s *Server, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func ptr[T any](v T) *T { return &v }

func TestParamsAndToolsRecorded(t *testing.T) {
	s := New()
	defer s.Close()
	status, body := postChat(t, s, `{"model":"fake-model","messages":[{"role":"developer","content":"answer in json"},{"role":"user","content":"q"}],
		"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather of a city","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true}}],
		"temperature":0.5,"top_p":0.9,"max_tokens":100,"max_completion_tokens":90,"stop":"END","seed":7,
		"presence_penalty":0.1,"frequency_penalty":-0.2,"n":1,
		"response_format":{"type":"json_schema","json_schema":{"name":"out","description":"d","schema":{"type":"object"},"strict":true}},
		"reasoning_effort":"low","user":"u-1","metadata":{"k":"v"},"store":true,
		"tool_choice":{"type":"function","function":{"name":"get_weather"}},"parallel_tool_calls":false}`)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	got := s.Requests()[0]
	want := Params{
		Temperature: ptr(0.5), TopP: ptr(0.9), MaxTokens: ptr(100), MaxCompletionTokens: ptr(90),
		Stop: Stop{"END"}, Seed: ptr(int64(7)), PresencePenalty: ptr(0.1), FrequencyPenalty: ptr(-0.2), N: ptr(1),
		ResponseFormat: &ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchemaFormat{
			Name: "out", Description: "d", Schema: json.RawMessage(`{"type":"object"}`), Strict: ptr(true)}},
		ReasoningEffort: "low", User: "u-1", Metadata: map[string]string{"k": "v"}, Store: ptr(true),
		ToolChoice:        ToolChoice{Mode: ToolChoiceFunction, Name: "get_weather"},
		ParallelToolCalls: ptr(false),
	}
	if diff := cmp.Diff(want, got.Params); diff != "" {
		t.Errorf("params (-want +got):\n%s", diff)
	}
	wantTools := []Tool{{
		Name: "get_weather", Description: "Weather of a city", Strict: ptr(true),
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
	}}
	if diff := cmp.Diff(wantTools, got.ToolDefs); diff != "" {
		t.Errorf("tool definitions (-want +got):\n%s", diff)
	}

	// A stop array and a tool_choice string.
	postChat(t, s, `{"model":"m","messages":[{"role":"user","content":"q"}],"stop":["a","b"],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"}`)
	got = s.Requests()[1]
	if diff := cmp.Diff(Params{Stop: Stop{"a", "b"}, ToolChoice: ToolChoice{Mode: ToolChoiceRequired}}, got.Params); diff != "" {
		t.Errorf("params (-want +got):\n%s", diff)
	}
}

func TestParamsRejectedAsTheRealAPIDoes(t *testing.T) {
	const tools = `"tools":[{"type":"function","function":{"name":"f"}}]`
	cases := []struct{ name, fields, want string }{
		{"temperature above 2", `"temperature":2.5`, "Invalid 'temperature'"},
		{"top_p above 1", `"top_p":1.5`, "Invalid 'top_p'"},
		{"five stop sequences", `"stop":["a","b","c","d","e"]`, "Invalid 'stop'"},
		{"stop of the wrong type", `"stop":5`, "stop: expected a string or an array"},
		{"tool_choice of the wrong type", `"tool_choice":{"type":"file_search"}`, "tool_choice: expected"},
		{"temperature of the wrong type", `"temperature":"hot"`, "Invalid type for 'temperature'"},
		{"tool_choice without tools", `"tool_choice":"auto"`, "only allowed when 'tools' are specified"},
		{"parallel_tool_calls without tools", `"parallel_tool_calls":true`, "only allowed when 'tools' are specified"},
		{"unknown tool_choice", tools + `,"tool_choice":"always"`, "Supported values are: 'none', 'auto', and 'required'"},
		{"tool_choice of a tool not offered", tools + `,"tool_choice":{"type":"function","function":{"name":"g"}}`, "function 'g' is not among the 'tools'"},
		{"json_object without the word json", `"response_format":{"type":"json_object"}`, "must contain the word 'json'"},
		{"json_schema without a name", `"response_format":{"type":"json_schema","json_schema":{"schema":{}}}`, "response_format.json_schema.name"},
		{"metadata without store", `"metadata":{"k":"v"}`, "only allowed when 'store' is enabled"},
		{"unknown response format", `"response_format":{"type":"xml"}`, "response_format.type"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New()
			defer s.Close()
			s.Enqueue(Reply{Content: "not used"})
			status, body := postChat(t, s, `{"model":"m","messages":[{"role":"user","content":"q"}],`+c.fields+`}`)
			if status != http.StatusBadRequest || !strings.Contains(body, c.want) {
				t.Errorf("got %d %s, want 400 with %q", status, body, c.want)
			}
			if s.Requests()[0].Invalid == "" || s.Pending() != 1 {
				t.Errorf("Invalid = %q, pending = %d: want the request marked invalid and no reply used", s.Requests()[0].Invalid, s.Pending())
			}
		})
	}
}

func TestStopAndMaxTokens(t *testing.T) {
	s := New()
	defer s.Close()
	c := newClient(s)
	cases := []struct {
		name      string
		content   string
		params    func(*openai.ChatCompletionNewParams)
		want      string
		finish    string
		maxTokens int64 // the exact completion tokens, when cut
	}{
		{"stop sequence", "one two END three", func(p *openai.ChatCompletionNewParams) {
			p.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"XX", "END"}}
		}, "one two ", "stop", 0},
		{"max_tokens", "0123456789abcdefghij", func(p *openai.ChatCompletionNewParams) { p.MaxTokens = openai.Int(3) }, "0123456789ab", "length", 3},
		{"max_completion_tokens", "0123456789abcdefghij", func(p *openai.ChatCompletionNewParams) { p.MaxCompletionTokens = openai.Int(2) }, "01234567", "length", 2},
		{"max_tokens not reached", "0123", func(p *openai.ChatCompletionNewParams) { p.MaxTokens = openai.Int(1) }, "0123", "stop", 0},
		{"cut on a rune boundary", "añbcdé", func(p *openai.ChatCompletionNewParams) { p.MaxTokens = openai.Int(1) }, "añb", "length", 1},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			params := openai.ChatCompletionNewParams{Model: "fake-model", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")}}
			tc.params(&params)
			s.Enqueue(Reply{Content: tc.content})
			got := complete(t, c, params, stream)
			if got.Choices[0].Message.Content != tc.want || string(got.Choices[0].FinishReason) != tc.finish {
				t.Errorf("%s (stream %v): content %q finish %q, want %q %q", tc.name, stream, got.Choices[0].Message.Content, got.Choices[0].FinishReason, tc.want, tc.finish)
			}
			if tc.maxTokens > 0 && got.Usage.CompletionTokens != tc.maxTokens {
				t.Errorf("%s (stream %v): completion tokens = %d, want %d", tc.name, stream, got.Usage.CompletionTokens, tc.maxTokens)
			}
		}
	}
}

var weather = Tool{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer","minimum":1}},"required":["city"]}`)}
var clock = Tool{Name: "clock"}

func TestToolUser(t *testing.T) {
	userSays := func(text string) []Message {
		return []Message{{Role: "system", Content: "sys"}, {Role: "user", Content: text}}
	}
	jsonFormat := &ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchemaFormat{Name: "p", Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"number"}}}`)}}
	cases := []struct {
		name string
		req  Request
		want Reply
	}{
		{"no tools: echo", Request{Messages: userSays("hi get_weather")}, Reply{Content: "echo: hi get_weather"}},
		{"named tool with arguments", Request{Messages: userSays(`use get_weather {"city": "Paris"} please`), ToolDefs: []Tool{clock, weather}},
			Reply{ToolCalls: []ToolCall{{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}},
		{"named tool without arguments gets the schema's minimal value", Request{Messages: userSays("get_weather now"), ToolDefs: []Tool{weather}},
			Reply{ToolCalls: []ToolCall{{Name: "get_weather", Arguments: `{"city":"","days":1}`}}}},
		{"a tool without parameters gets {}", Request{Messages: userSays("clock?"), ToolDefs: []Tool{weather, clock}},
			Reply{ToolCalls: []ToolCall{{Name: "clock", Arguments: `{}`}}}},
		{"part of a word is no mention", Request{Messages: userSays("my_get_weather and get_weathers and alarmclock"), ToolDefs: []Tool{weather, clock}},
			Reply{Content: "echo: my_get_weather and get_weathers and alarmclock"}},
		{"several tools, in the order named", Request{Messages: userSays(`clock then get_weather {"city":"Oslo"}`), ToolDefs: []Tool{weather, clock}},
			Reply{ToolCalls: []ToolCall{{Name: "clock", Arguments: `{}`}, {Name: "get_weather", Arguments: `{"city":"Oslo"}`}}}},
		{"parallel_tool_calls false keeps the first", Request{Messages: userSays("clock then get_weather"), ToolDefs: []Tool{weather, clock}, Params: Params{ParallelToolCalls: ptr(false)}},
			Reply{ToolCalls: []ToolCall{{Name: "clock", Arguments: `{}`}}}},
		{"tool_choice none", Request{Messages: userSays("clock"), ToolDefs: []Tool{clock}, Params: Params{ToolChoice: ToolChoice{Mode: ToolChoiceNone}}},
			Reply{Content: "echo: clock"}},
		{"tool_choice required with no tool named calls the first", Request{Messages: userSays("anything"), ToolDefs: []Tool{clock, weather}, Params: Params{ToolChoice: ToolChoice{Mode: ToolChoiceRequired}}},
			Reply{ToolCalls: []ToolCall{{Name: "clock", Arguments: `{}`}}}},
		{"tool_choice function calls it unnamed", Request{Messages: userSays("anything"), ToolDefs: []Tool{clock, weather}, Params: Params{ToolChoice: ToolChoice{Mode: ToolChoiceFunction, Name: "get_weather"}}},
			Reply{ToolCalls: []ToolCall{{Name: "get_weather", Arguments: `{"city":"","days":1}`}}}},
		{"tool results end the conversation: answer with them", Request{ToolDefs: []Tool{weather}, Messages: []Message{
			{Role: "user", Content: "get_weather"},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "a", Name: "get_weather"}, {ID: "b", Name: "get_weather"}}},
			{Role: "tool", ToolCallID: "a", Content: "sunny"}, {Role: "tool", ToolCallID: "b", Content: "rain"}}},
			Reply{Content: "tool results: sunny; rain"}},
		{"json_schema answer", Request{Messages: userSays("who"), Params: Params{ResponseFormat: jsonFormat}}, Reply{Content: `{"age":0,"name":""}`}},
		{"json_object answer", Request{Messages: userSays("json please"), Params: Params{ResponseFormat: &ResponseFormat{Type: "json_object"}}}, Reply{Content: `{"answer":"echo: json please"}`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, ToolUser(c.req)); diff != "" {
				t.Errorf("reply (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMinimal(t *testing.T) {
	cases := []struct{ schema, want string }{
		{`{"type":"object","properties":{"s":{"type":"string","minLength":2},"n":{"type":"number"},"b":{"type":"boolean"},"a":{"type":"array","items":{"type":"integer"},"minItems":2},"z":{"type":"null"}}}`,
			`{"a":[0,0],"b":false,"n":0,"s":"aa","z":null}`},
		{`{"enum":["red","green"]}`, `"red"`},
		{`{"const":42}`, `42`},
		{`{"type":"string","default":"x"}`, `"x"`},
		{`{"anyOf":[{"type":"integer","exclusiveMinimum":3},{"type":"string"}]}`, `4`},
		{`{"type":["null","number"],"minimum":0.5}`, `0.5`},
		{`{"properties":{"p":{"$ref":"#/$defs/pt"}},"$defs":{"pt":{"type":"object","properties":{"x":{"type":"number"}}}}}`, `{"p":{"x":0}}`},
		{`{"$ref":"#"}`, `null`}, // endless recursion is cut
		{`not json`, `null`},
		{`true`, `null`},
	}
	for _, c := range cases {
		if got := string(Minimal(json.RawMessage(c.schema))); got != c.want {
			t.Errorf("Minimal(%s) = %s, want %s", c.schema, got, c.want)
		}
	}
}

// TestToolUserRoundTrip runs a client's tool loop against the fake with
// ToolUser as the default responder.
func TestToolUserRoundTrip(t *testing.T) {
	s := New()
	defer s.Close()
	s.SetDefault(ToolUser)
	c := newClient(s)
	ctx := context.Background()
	tool := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:       "get_weather",
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}},
	})
	params := openai.ChatCompletionNewParams{
		Model:    "fake-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(`get_weather {"city":"Paris"}`)},
		Tools:    []openai.ChatCompletionToolUnionParam{tool},
	}
	resp, err := c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	msg := resp.Choices[0].Message
	if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` {
		t.Fatalf("message = %s, want a get_weather call for Paris", msg.RawJSON())
	}
	params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage("sunny, 21°C", msg.ToolCalls[0].ID))
	resp, err = c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "tool results: sunny, 21°C" {
		t.Errorf("final answer = %q", got)
	}
}
