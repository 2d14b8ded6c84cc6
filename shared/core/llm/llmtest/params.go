package llmtest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// TimeTool is the tool the parameter cases offer when they offer one.
var TimeTool = chat.ToolDef{Name: "get_time", Description: "The time.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}

// PersonSchema is the schema of the json_schema case.
const PersonSchema = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"],"additionalProperties":false}`

// paramsCase is the parameters of a request, and the tools it offers.
type paramsCase struct {
	name   string
	params llm.Params
	tools  []chat.ToolDef
}

// paramsCases are the parameters a provider must send, or refuse before
// any call; Harness.Params states which, by each case's name. Between
// them they set every field of llm.Params, and some to values a provider
// may not take.
func paramsCases() []paramsCase {
	f := func(v float64) *float64 { return &v }
	seed := int64(7)
	no := false
	yes := true
	offered := []chat.ToolDef{TimeTool}
	return []paramsCase{
		{name: "sampling", params: llm.Params{MaxTokens: 64, Temperature: f(0.5), TopP: f(0.25), Stop: []string{"END", "STOP"}}},
		{name: "zero temperature", params: llm.Params{Temperature: f(0)}},
		{name: "temperature above 1", params: llm.Params{Temperature: f(1.5)}},
		{name: "seed", params: llm.Params{Seed: &seed}},
		{name: "penalties", params: llm.Params{PresencePenalty: f(0.5), FrequencyPenalty: f(-0.5)}},
		{name: "neutral penalties", params: llm.Params{PresencePenalty: f(0), FrequencyPenalty: f(0)}},
		{name: "text format", params: llm.Params{ResponseFormat: &llm.ResponseFormat{Type: llm.FormatText}}},
		{name: "json object", params: llm.Params{ResponseFormat: &llm.ResponseFormat{Type: llm.FormatJSONObject}}},
		{name: "json schema", params: llm.Params{ResponseFormat: &llm.ResponseFormat{
			Type: llm.FormatJSONSchema, Name: "person", Description: "A person.", Schema: json.RawMessage(PersonSchema), Strict: &yes,
		}}},
		{name: "reasoning effort", params: llm.Params{ReasoningEffort: "low"}},
		{name: "minimal reasoning effort", params: llm.Params{ReasoningEffort: "minimal"}},
		{name: "user and metadata", params: llm.Params{User: "user-42", Metadata: map[string]string{"team": "blue", "trace": "a1:b2"}}},
		{name: "metadata of any characters", params: llm.Params{Metadata: map[string]string{"note": "déjà vu!"}}},
		{name: "stored with metadata", params: llm.Params{Store: &yes, Metadata: map[string]string{"team": "blue"}}},
		{name: "tool choice auto", tools: offered, params: llm.Params{ToolChoice: &llm.ToolChoice{Mode: llm.ToolsAuto}}},
		{name: "tool choice required", tools: offered, params: llm.Params{ToolChoice: &llm.ToolChoice{Mode: llm.ToolsRequired}}},
		{name: "tool choice function", tools: offered, params: llm.Params{ToolChoice: &llm.ToolChoice{Mode: llm.ToolsFunction, Name: TimeTool.Name}}},
		{name: "tool choice none", tools: offered, params: llm.Params{ToolChoice: &llm.ToolChoice{Mode: llm.ToolsNone}}},
		{name: "one tool call at a time", tools: offered, params: llm.Params{ParallelToolCalls: &no}},
		{name: "parallel tool calls", tools: offered, params: llm.Params{ParallelToolCalls: &yes}},
		{name: "tool settings without tools", params: llm.Params{ToolChoice: &llm.ToolChoice{Mode: llm.ToolsAuto}, ParallelToolCalls: &no}},
	}
}

// Unsupported returns err as the *llm.UnsupportedError it must be, nil
// when err is nil; any other error fails t.
func Unsupported(t *testing.T, err error) *llm.UnsupportedError {
	t.Helper()
	if err == nil {
		return nil
	}
	u, ok := err.(*llm.UnsupportedError)
	if !ok {
		t.Fatalf("error %v (%T), want an *llm.UnsupportedError", err, err)
	}
	return u
}

// testParams checks, for each parameter case, that the provider either
// sends the settings its harness states, streamed or not, or refuses the
// parameters as its harness says: llm.CheckParams with an
// *llm.UnsupportedError naming the provider, the parameter and why, and
// Generate with a provider's error that wraps it, is not retryable and
// makes no call.
func testParams(t *testing.T, h Harness) {
	cases := paramsCases()
	known := map[string]bool{}
	for _, tc := range cases {
		known[tc.name] = true
	}
	for name := range h.Params {
		if !known[name] {
			t.Errorf("Harness.Params states %q, which is no parameter case", name)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, ok := h.Params[tc.name]
			if !ok {
				t.Fatal("Harness.Params does not state what the provider sends for this case")
			}
			req := llm.Request{Messages: hello.Messages, Tools: tc.tools, Params: tc.params}
			modes(t, func(t *testing.T, stream bool) {
				p, s := h.start(t, Config{}, Answer{Pieces: []Piece{Text("ok")}, Finish: "stop", Usage: usage})
				checked := llm.CheckParams(p, tc.params)
				_, _, err := generate(t, p, req, stream)
				calls := s.received()
				if want == Refused {
					var u *llm.UnsupportedError
					if !errors.As(checked, &u) || u.Provider != Name || u.Param == "" || u.Reason == "" {
						t.Fatalf("CheckParams = %#v, want an *llm.UnsupportedError of provider %s with a parameter and a reason", checked, Name)
					}
					h.checkError(t, err, llm.Error{}, u.Error())
					if !llm.IsUnsupported(err) {
						t.Errorf("Generate's error %v does not wrap an *llm.UnsupportedError", err)
					}
					if len(calls) != 0 {
						t.Errorf("%d calls made with parameters the provider refuses", len(calls))
					}
					return
				}
				if checked != nil {
					t.Fatalf("CheckParams = %v, want none: the harness says the provider sends these", checked)
				}
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
				if len(calls) != 1 {
					t.Fatalf("%d calls, want 1", len(calls))
				}
				if got := string(calls[0].call.Settings); !sameJSON(want, got) {
					t.Errorf("settings sent:\n%s\nwant:\n%s", got, want)
				}
			})
		})
	}
}
