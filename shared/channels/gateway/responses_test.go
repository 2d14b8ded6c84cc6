package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/memstore"
)

// fakeThreads answers gateway.Threads with what the tests set: the
// outcome of each run, and the conversation of a session up to a run.
type fakeThreads struct {
	mu       sync.Mutex
	outcomes map[string]*agent.Result // by run id
	threads  map[string]thread        // by "session/seq"
	err      error
}

type thread struct {
	msgs   []chat.Message
	latest bool
}

func (f *fakeThreads) Outcome(_ context.Context, runID string) (agent.RunState, *agent.Result, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return agent.RunState{}, nil, f.err
	}
	res, ok := f.outcomes[runID]
	if !ok {
		return agent.RunState{}, nil, store.ErrNotFound
	}
	return agent.RunState{RunID: runID}, res, nil
}

func (f *fakeThreads) Thread(_ context.Context, sessionID string, seq int64) ([]chat.Message, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, false, f.err
	}
	th, ok := f.threads[fmt.Sprintf("%s/%d", sessionID, seq)]
	if !ok {
		return nil, false, store.ErrNotFound
	}
	return slices.Clone(th.msgs), th.latest, nil
}

// respFixture serves the Responses API: the records in a memstore, the
// runs played by the fake runner, which creates each run's session (a
// record needs it) and tells what events says; the run's outcome is what
// it told.
type respFixture struct {
	*fixture
	mem     *memstore.Store
	threads *fakeThreads

	mu     sync.Mutex
	events []agent.Event
	seqs   map[string]int64
}

func newRespFixture(t *testing.T) *respFixture {
	f := &respFixture{
		mem:     memstore.New(),
		threads: &fakeThreads{outcomes: map[string]*agent.Result{}, threads: map[string]thread{}},
		seqs:    map[string]int64{},
	}
	f.fixture = newFixture(t, func(c *gateway.Config) { c.Responses, c.Threads = f.mem, f.threads })
	f.runner.script = f.run
	return f
}

// answer sets what the next runs tell.
func (f *respFixture) answer(events ...agent.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = events
}

func (f *respFixture) run(in agent.Input) (agent.RunState, []agent.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sid := in.SessionID
	if in.Ephemeral {
		sid = agent.EphemeralPrefix + in.RunID
	} else if err := f.mem.CreateSession(context.Background(), store.Session{ID: sid, Agent: in.Agent, Owner: in.Owner}); err != nil && !errors.Is(err, store.ErrExists) {
		f.t.Errorf("create session: %v", err)
	}
	f.seqs[sid]++
	f.threads.mu.Lock()
	for _, ev := range f.events {
		switch {
		case ev.Result != nil:
			f.threads.outcomes[in.RunID] = ev.Result
		case ev.Approval != nil:
			f.threads.outcomes[in.RunID] = &agent.Result{Content: ev.Approval.Prompt, FinishReason: "stop"}
		}
	}
	f.threads.mu.Unlock()
	return agent.RunState{RunID: in.RunID, SessionID: sid, Agent: in.Agent, Seq: f.seqs[sid], Reply: in.Reply}, f.events
}

// setThread sets the conversation of a session up to the run of seq.
func (f *respFixture) setThread(sessionID string, seq int64, latest bool, msgs ...chat.Message) {
	f.threads.mu.Lock()
	defer f.threads.mu.Unlock()
	f.threads.threads[fmt.Sprintf("%s/%d", sessionID, seq)] = thread{msgs, latest}
}

func (f *respFixture) post(token, body string) *httptest.ResponseRecorder {
	f.t.Helper()
	return f.do("POST", "/v1/responses", token, body)
}

// create posts body, which must succeed, and returns the response's id
// and the run's input.
func (f *respFixture) create(body string) (string, agent.Input) {
	f.t.Helper()
	w := f.post(f.token, body)
	if w.Code != http.StatusOK {
		f.t.Fatalf("POST /v1/responses %s: %d %s", body, w.Code, w.Body)
	}
	var o struct{ ID string }
	if err := json.Unmarshal(w.Body.Bytes(), &o); err != nil {
		f.t.Fatal(err)
	}
	ins := f.runner.delivered()
	return o.ID, ins[len(ins)-1]
}

// record returns the stored record of response id.
func (f *respFixture) record(id string) store.Response {
	f.t.Helper()
	rec, err := f.mem.GetResponse(context.Background(), id)
	if err != nil {
		f.t.Fatalf("record of %s: %v", id, err)
	}
	return rec
}

// refusal is what the tests compare of a refused request.
type refusal struct {
	Status int
	Code   string
	Param  string // "" for null
}

func refusalOf(t *testing.T, w *httptest.ResponseRecorder) refusal {
	t.Helper()
	got, _ := decodeError(t, w)
	var body struct {
		Error struct{ Param *string }
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	r := refusal{Status: got.Status, Code: got.Code}
	if body.Error.Param != nil {
		r.Param = *body.Error.Param
	}
	return r
}

func badInput(code, param string) refusal { return refusal{http.StatusBadRequest, code, param} }

func toolMsg(id, result string) chat.Message {
	return chat.Message{Role: chat.Tool, ToolCallID: id, Content: result}
}

func callMsg(content string, cs ...chat.ToolCall) chat.Message {
	return chat.Message{Role: chat.Assistant, Content: content, ToolCalls: cs}
}

func userMsg(s string) chat.Message { return chat.Message{Role: chat.User, Content: s} }

var (
	weatherCall = chat.ToolCall{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Oslo"}`}
	timeCall    = chat.ToolCall{ID: "call_2", Name: "get_time", Arguments: `{}`}
)

const (
	fcWeather = `{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}`
	fcTime    = `{"type":"function_call","call_id":"call_2","name":"get_time","arguments":"{}"}`
)

func TestResponsesInput(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []chat.Message
	}{
		{"string", `"hi"`, []chat.Message{userMsg("hi")}},
		{"easy messages; developer is system", `[{"role":"system","content":"be brief"},{"role":"developer","content":"no jokes"},{"role":"user","content":"hi"}]`,
			[]chat.Message{{Role: chat.System, Content: "be brief"}, {Role: chat.System, Content: "no jokes"}, userMsg("hi")}},
		{"text parts", `[{"type":"message","role":"user","content":[{"type":"input_text","text":"Hello, "},{"type":"input_text","text":"world"}]},` +
			`{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi!","annotations":[]}]},` +
			`{"role":"user","content":"again"}]`,
			[]chat.Message{userMsg("Hello, world"), {Role: chat.Assistant, Content: "Hi!"}, userMsg("again")}},
		{"calls join the assistant message; outputs are tool messages", `[{"role":"user","content":"weather?"},` +
			`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking."}]},` + fcWeather + `,` + fcTime + `,` +
			`{"type":"function_call_output","call_id":"call_1","output":"rain"},` +
			`{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"noon"}]}]`,
			[]chat.Message{userMsg("weather?"), callMsg("Checking.", weatherCall, timeCall), toolMsg("call_1", "rain"), toolMsg("call_2", "noon")}},
		{"a call without a message before it", `[{"role":"user","content":"weather?"},` + fcWeather + `,` +
			`{"type":"function_call_output","call_id":"call_1","output":"rain"},{"role":"user","content":"thanks"}]`,
			[]chat.Message{userMsg("weather?"), callMsg("", weatherCall), toolMsg("call_1", "rain"), userMsg("thanks")}},
		{"a call left open (the loop answers it as not run)", `[{"role":"user","content":"weather?"},` + fcWeather + `,{"role":"user","content":"never mind"}]`,
			[]chat.Message{userMsg("weather?"), callMsg("", weatherCall), userMsg("never mind")}},
		{"reasoning is skipped", `[{"role":"user","content":"hi"},{"type":"reasoning","id":"rs_1","summary":[]},` + fcWeather + `,` +
			`{"type":"function_call_output","call_id":"call_1","output":"rain"}]`,
			[]chat.Message{userMsg("hi"), callMsg("", weatherCall), toolMsg("call_1", "rain")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRespFixture(t)
			f.answer(done...)
			_, in := f.create(`{"model":"default","input":` + tt.input + `}`)
			if diff := cmp.Diff(tt.want, in.Messages); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResponsesInputRefused(t *testing.T) {
	const weather = `{"role":"user","content":"weather?"},` + fcWeather
	tests := []struct {
		name  string
		input string // "" sends none
		want  refusal
	}{
		{"no input", "", badInput("missing_input", "")},
		{"no items", `[]`, badInput("missing_input", "")},
		{"only reasoning", `[{"type":"reasoning","summary":[]}]`, badInput("missing_input", "")},
		{"a number", `5`, badInput("invalid_value", "input")},
		{"an unsupported item", `[{"role":"user","content":"hi"},{"type":"web_search_call","id":"ws_1"}]`, badInput("invalid_value", "input[1].type")},
		{"an image over plain http", `[{"role":"user","content":[{"type":"input_text","text":"what is it?"},{"type":"input_image","image_url":"http://x/y.png","detail":"auto"}]}]`,
			badInput("invalid_value", "input[0].content[1].image_url")},
		{"content an object", `[{"role":"user","content":{"text":"hi"}}]`, badInput("invalid_value", "input[0].content")},
		{"role tool", `[{"role":"tool","content":"42"}]`, badInput("invalid_value", "input[0].role")},
		{"no role", `[{"type":"message","content":"hi"}]`, badInput("invalid_value", "input[0].role")},
		{"a call without call_id", `[{"role":"user","content":"hi"},{"type":"function_call","name":"get_weather","arguments":"{}"}]`, badInput("invalid_value", "input[1]")},
		{"a call with a bad name", `[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c","name":"get weather","arguments":"{}"}]`, badInput("invalid_value", "input[1]")},
		{"an output without call_id", `[` + weather + `,{"type":"function_call_output","output":"rain"}]`, badInput("invalid_value", "input[2].call_id")},
		{"an output answering no call", `[{"role":"user","content":"hi"},{"type":"function_call_output","call_id":"call_1","output":"rain"}]`, badInput("invalid_value", "input[1].call_id")},
		{"an output answering another call", `[` + weather + `,{"type":"function_call_output","call_id":"call_9","output":"rain"}]`, badInput("invalid_value", "input[2].call_id")},
		{"an output twice", `[` + weather + `,{"type":"function_call_output","call_id":"call_1","output":"rain"},{"type":"function_call_output","call_id":"call_1","output":"rain"}]`,
			badInput("invalid_value", "input[3].call_id")},
		{"an output after the call was closed", `[` + weather + `,{"role":"user","content":"never mind"},{"type":"function_call_output","call_id":"call_1","output":"rain"}]`,
			badInput("invalid_value", "input[3].call_id")},
		{"an output not text", `[` + weather + `,{"type":"function_call_output","call_id":"call_1","output":5}]`, badInput("invalid_value", "input[2].output")},
		{"a reference to nothing", `[{"type":"item_reference","id":"msg_nope"}]`, badInput("invalid_value", "input[0].id")},
		{"a reference of another kind", `[{"type":"item_reference","id":"rs_1"}]`, badInput("invalid_value", "input[0].id")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRespFixture(t)
			f.answer(done...)
			body := `{"model":"default"}`
			if tt.input != "" {
				body = `{"model":"default","input":` + tt.input + `}`
			}
			if diff := cmp.Diff(tt.want, refusalOf(t, f.post(f.token, body))); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
			if n := len(f.runner.delivered()); n != 0 {
				t.Errorf("a refused request started %d runs", n)
			}
		})
	}
}

// respWeatherTool is a client tool in the Responses shape.
const respWeatherTool = `{"type":"function","name":"get_weather","description":"Weather of a city",` +
	`"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true}`

func TestResponsesOptions(t *testing.T) {
	weather := chat.ToolDef{Name: "get_weather", Description: "Weather of a city", Strict: ptr(true),
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
	tests := []struct {
		name   string
		fields string
		want   agent.Options
	}{
		{"none", `"stream":false`, agent.Options{}},
		{"tools and a tool choice", `"tools":[` + respWeatherTool + `],"tool_choice":"required","parallel_tool_calls":false`,
			agent.Options{Tools: []chat.ToolDef{weather}, Params: llm.Params{ToolChoice: &llm.ToolChoice{Mode: "required"}, ParallelToolCalls: ptr(false)}}},
		{"a named tool choice", `"tools":[` + respWeatherTool + `],"tool_choice":{"type":"function","name":"get_weather"}`,
			agent.Options{Tools: []chat.ToolDef{weather}, Params: llm.Params{ToolChoice: &llm.ToolChoice{Mode: "function", Name: "get_weather"}}}},
		{"tool choice none, a tool without parameters", `"tools":[{"type":"function","name":"now"}],"tool_choice":"none"`,
			agent.Options{Tools: []chat.ToolDef{{Name: "now", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)}}, Params: llm.Params{ToolChoice: &llm.ToolChoice{Mode: "none"}}}},
		{"text format json_object", `"text":{"format":{"type":"json_object"}}`, agent.Options{Params: llm.Params{ResponseFormat: &llm.ResponseFormat{Type: "json_object"}}}},
		{"text format json_schema", `"text":{"format":{"type":"json_schema","name":"person","description":"a person","strict":true,"schema":{"type":"object"}},"verbosity":"medium"}`,
			agent.Options{Params: llm.Params{ResponseFormat: &llm.ResponseFormat{Type: "json_schema", Name: "person", Description: "a person", Strict: ptr(true), Schema: json.RawMessage(`{"type":"object"}`)}}}},
		{"text format text", `"text":{"format":{"type":"text"}}`, agent.Options{}},
		{"max_output_tokens, reasoning, sampling", `"max_output_tokens":50,"reasoning":{"effort":"low","summary":"auto"},"temperature":0.2,"top_p":0.9`,
			agent.Options{Params: llm.Params{MaxTokens: 50, ReasoningEffort: "low", Temperature: ptr(0.2), TopP: ptr(0.9)}}},
		{"instructions are a system message", `"instructions":"Be brief."`,
			agent.Options{System: []chat.Message{{Role: chat.System, Content: "Be brief."}}}},
		{"user is passed on; metadata stays with the response", `"metadata":{"team":"a"},"user":"u-1"`, agent.Options{Params: llm.Params{User: "u-1"}}},
		{"safety identifier stands for user", `"safety_identifier":"hash-1"`, agent.Options{Params: llm.Params{User: "hash-1"}}},
		{"accepted without effect", `"include":["message.output_text.logprobs"],"truncation":"auto","service_tier":"auto","prompt_cache_key":"k",` +
			`"prompt_cache_retention":"24h","store":true,"stream_options":{"include_obfuscation":false},"background":false,"top_logprobs":0,"conversation":null,"prompt":null`,
			agent.Options{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRespFixture(t)
			f.answer(done...)
			_, in := f.create(`{"model":"default","input":"hi",` + tt.fields + `}`)
			want := tt.want
			want.EndWithClientCalls = true
			if diff := cmp.Diff(want, in.Options); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

func TestResponsesRefused(t *testing.T) {
	tests := []struct {
		name   string
		fields string
		want   refusal
	}{
		{"background", `"background":true`, badInput("invalid_value", "background")},
		{"conversation", `"conversation":"conv_1"`, badInput("invalid_value", "conversation")},
		{"max_tool_calls", `"max_tool_calls":3`, badInput("invalid_value", "max_tool_calls")},
		{"prompt", `"prompt":{"id":"pmpt_1"}`, badInput("invalid_value", "prompt")},
		{"top_logprobs", `"top_logprobs":2`, badInput("invalid_value", "top_logprobs")},
		{"text.verbosity", `"text":{"verbosity":"low"}`, badInput("invalid_value", "text.verbosity")},
		{"an unknown field", `"frobnicate":1`, badInput("unknown_parameter", "frobnicate")},
		{"a field of the wrong type", `"store":"yes"`, badInput("invalid_type", "store")},
		{"a hosted tool", `"tools":[{"type":"web_search"}]`, badInput("invalid_value", "tools[0].type")},
		{"a tool with a bad name", `"tools":[{"type":"function","name":"get weather"}]`, badInput("invalid_value", "tools[0].name")},
		{"a tool whose parameters are not a schema", `"tools":[{"type":"function","name":"f","parameters":[1]}]`, badInput("invalid_value", "tools[0].parameters")},
		{"an unknown tool choice", `"tool_choice":"sometimes"`, badInput("invalid_value", "tool_choice")},
		{"a tool choice of another type", `"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[]}`, badInput("invalid_value", "tool_choice")},
		{"an unknown text format", `"text":{"format":{"type":"xml"}}`, badInput("invalid_value", "text.format.type")},
		{"a json_schema without name", `"text":{"format":{"type":"json_schema","schema":{"type":"object"}}}`, badInput("invalid_value", "text.format.name")},
		{"a json_schema without schema", `"text":{"format":{"type":"json_schema","name":"p"}}`, badInput("invalid_value", "text.format.schema")},
		{"max_output_tokens zero", `"max_output_tokens":0`, badInput("invalid_value", "max_output_tokens")},
		{"temperature out of range", `"temperature":2.5`, badInput("invalid_value", "temperature")},
		{"an unknown reasoning effort", `"reasoning":{"effort":"extreme"}`, badInput("invalid_value", "reasoning.effort")},
		{"too much metadata", `"metadata":{` + metadataPairs(17) + `}`, badInput("invalid_value", "metadata")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRespFixture(t)
			f.answer(done...)
			if diff := cmp.Diff(tt.want, refusalOf(t, f.post(f.token, `{"model":"default","input":"hi",`+tt.fields+`}`))); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
			if n := len(f.runner.delivered()); n != 0 {
				t.Errorf("a refused request started %d runs", n)
			}
		})
	}
	f := newRespFixture(t)
	for body, want := range map[string]refusal{
		`{"input":"hi"}`:                 badInput("missing_model", ""),
		`{"model":"ghost","input":"hi"}`: {http.StatusNotFound, "model_not_found", ""},
		`{"model":"default","input":`:    badInput("invalid_json", ""),
	} {
		if diff := cmp.Diff(want, refusalOf(t, f.post(f.token, body))); diff != "" {
			t.Errorf("%s (-want +got):\n%s", body, diff)
		}
	}
	if n := len(f.runner.delivered()); n != 0 {
		t.Errorf("a refused request started %d runs", n)
	}
}

// decodeObject decodes a JSON object and checks that its created_at, at
// any depth, is a positive number, and drops it.
func decodeObject(t *testing.T, s string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	dropCreated(t, v)
	return v
}

func dropCreated(t *testing.T, v any) {
	switch v := v.(type) {
	case map[string]any:
		if c, ok := v["created_at"]; ok {
			if n, ok := c.(float64); !ok || n <= 0 {
				t.Errorf("created_at = %v, want a positive number", c)
			}
			delete(v, "created_at")
		}
		for _, x := range v {
			dropCreated(t, x)
		}
	case []any:
		for _, x := range v {
			dropCreated(t, x)
		}
	}
}

// responseJSON is the JSON of the response R to {"model":"default",
// "input":"hi"}: in progress, with fields set over it. R stands for the
// id's suffix in fields.
func responseJSON(fields string) string {
	base := `{"id":"resp_R","object":"response","status":"in_progress","error":null,"incomplete_details":null,"output":[],"usage":null,` +
		`"model":"default","instructions":null,"max_output_tokens":null,"parallel_tool_calls":true,"previous_response_id":null,` +
		`"reasoning":{"effort":null,"summary":null},"store":true,"temperature":null,"text":{"format":{"type":"text"}},` +
		`"tool_choice":"auto","tools":[],"top_p":null,"truncation":"disabled","user":null,"metadata":{}}`
	if fields == "" {
		return base
	}
	return strings.TrimSuffix(base, "}") + "," + fields + "}"
}

// The output items and usage of the results in the shape tests.
const (
	msgItem = `{"type":"message","id":"msg_R","status":"completed","role":"assistant",` +
		`"content":[{"type":"output_text","text":"Checking.","annotations":[]}]}`
	fcItems = `{"type":"function_call","id":"fc_R_0","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Oslo\"}","status":"completed"},` +
		`{"type":"function_call","id":"fc_R_1","call_id":"call_2","name":"get_time","arguments":"{}","status":"completed"}`
	callUsage = `"usage":{"input_tokens":20,"input_tokens_details":{"cached_tokens":0},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":25}`
	textUsage = `"usage":{"input_tokens":3,"input_tokens_details":{"cached_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":5}`
)

// The results the shape tests give.
var (
	helloResult = &agent.Result{Content: "Hello", Usage: chat.Usage{PromptTokens: 3, CompletionTokens: 2}, FinishReason: "stop"}
	callsResult = &agent.Result{Content: "Checking.", ToolCalls: []chat.ToolCall{weatherCall, timeCall},
		Usage: chat.Usage{PromptTokens: 20, CompletionTokens: 5, TotalTokens: 25}, FinishReason: "tool_calls"}
	onlyCallsResult = &agent.Result{ToolCalls: []chat.ToolCall{weatherCall, timeCall},
		Usage: chat.Usage{PromptTokens: 20, CompletionTokens: 5, TotalTokens: 25}, FinishReason: "tool_calls"}
	lengthResult = &agent.Result{Content: "Hel", Usage: chat.Usage{PromptTokens: 3, CompletionTokens: 2}, FinishReason: "length"}
	failedResult = &agent.Result{Error: "the model provider failed to answer; try again in a moment (run r1)", ErrorCode: agent.CodeUpstream}
)

// responseID returns the id of the response w answered, and its suffix
// (R in the wanted JSON).
func responseID(t *testing.T, w *httptest.ResponseRecorder) (string, string) {
	t.Helper()
	var o struct{ ID string }
	if err := json.Unmarshal(w.Body.Bytes(), &o); err != nil || !strings.HasPrefix(o.ID, "resp_") {
		t.Fatalf("response %s: no resp_ id (%v)", w.Body, err)
	}
	return o.ID, strings.TrimPrefix(o.ID, "resp_")
}

// A response's shape for each kind of result, as created and as GET
// returns it later.
func TestResponseObject(t *testing.T) {
	tests := []struct {
		name   string
		events []agent.Event
		want   string // the fields over responseJSON("")
	}{
		{"text", []agent.Event{{Delta: "not streamed"}, {Result: helloResult}},
			`"status":"completed","output":[` + strings.Replace(msgItem, "Checking.", "Hello", 1) + `],` + textUsage},
		{"text and calls", []agent.Event{{Result: callsResult}}, `"status":"completed","output":[` + msgItem + `,` + fcItems + `],` + callUsage},
		{"calls only", []agent.Event{{Result: onlyCallsResult}}, `"status":"completed","output":[` + fcItems + `],` + callUsage},
		{"cut at max_output_tokens", []agent.Event{{Result: lengthResult}},
			`"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[` +
				strings.Replace(strings.Replace(msgItem, "Checking.", "Hel", 1), "completed", "incomplete", 1) + `],` + textUsage},
		{"empty", []agent.Event{{Result: &agent.Result{FinishReason: "stop"}}},
			`"status":"completed","output":[` + strings.Replace(msgItem, "Checking.", "", 1) + `],` +
				`"usage":{"input_tokens":0,"input_tokens_details":{"cached_tokens":0},"output_tokens":0,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":0}`},
		{"waiting for an approval", []agent.Event{{Approval: &store.Approval{Prompt: "Approve?"}}},
			`"status":"completed","output":[` + strings.Replace(msgItem, "Checking.", "Approve?", 1) + `],` +
				`"usage":{"input_tokens":0,"input_tokens_details":{"cached_tokens":0},"output_tokens":0,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":0}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRespFixture(t)
			f.answer(tt.events...)
			w := f.post(f.token, `{"model":"default","input":"hi"}`)
			if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("status %d, Content-Type %q: %s", w.Code, w.Header().Get("Content-Type"), w.Body)
			}
			id, r := responseID(t, w)
			want := decodeObject(t, strings.ReplaceAll(responseJSON(tt.want), "_R", "_"+r))
			if diff := cmp.Diff(want, decodeObject(t, w.Body.String())); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			got := f.do("GET", "/v1/responses/"+id, f.token, "")
			if diff := cmp.Diff(want, decodeObject(t, got.Body.String())); got.Code != http.StatusOK || diff != "" {
				t.Errorf("GET: status %d (-want +got):\n%s", got.Code, diff)
			}
		})
	}
}

// A response repeats what its request asked, as created and as GET
// returns it.
func TestResponseEcho(t *testing.T) {
	f := newRespFixture(t)
	f.answer(agent.Event{Result: helloResult})
	asked := `"model":"lambdaclaw/default","instructions":"Be brief.","max_output_tokens":100,"parallel_tool_calls":false,` +
		`"reasoning":{"effort":"low","summary":"auto"},"temperature":0.5,"top_p":0.9,"truncation":"auto","user":"u-1","metadata":{"team":"a"},` +
		`"text":{"format":{"type":"json_schema","name":"p","schema":{"type":"object"},"strict":true}},` +
		`"tool_choice":{"type":"function","name":"get_weather"},"tools":[` + respWeatherTool + `]`
	w := f.post(f.token, `{"input":"hi",`+asked+`}`)
	id, r := responseID(t, w)
	want := decodeObject(t, strings.ReplaceAll(responseJSON(`"status":"completed","output":[`+strings.Replace(msgItem, "Checking.", "Hello", 1)+`],`+textUsage+`,`+asked), "_R", "_"+r))
	if diff := cmp.Diff(want, decodeObject(t, w.Body.String())); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	got := f.do("GET", "/v1/responses/"+id, f.token, "")
	if diff := cmp.Diff(want, decodeObject(t, got.Body.String())); diff != "" {
		t.Errorf("GET (-want +got):\n%s", diff)
	}
}

// A failed run is an HTTP error for the request that waited for it, as
// OpenAI answers a failed synchronous request; the stored response says
// it failed and why.
func TestResponseFailed(t *testing.T) {
	f := newRespFixture(t)
	f.answer(agent.Event{Result: failedResult})
	w := f.post(f.token, `{"model":"default","input":"hi"}`)
	got, msg := decodeError(t, w)
	if diff := cmp.Diff(apiErr{http.StatusBadGateway, "server_error", "upstream_error"}, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if want := failedResult.Error + " (request id " + w.Header().Get(gateway.RequestIDHeader) + ")"; msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
	in := f.runner.delivered()[0]
	id := "resp_" + in.RunID
	want := decodeObject(t, strings.ReplaceAll(responseJSON(`"status":"failed","error":{"code":"upstream_error","message":"`+failedResult.Error+`"}`), "_R", "_"+in.RunID))
	w = f.do("GET", "/v1/responses/"+id, f.token, "")
	if diff := cmp.Diff(want, decodeObject(t, w.Body.String())); w.Code != http.StatusOK || diff != "" {
		t.Errorf("GET: status %d (-want +got):\n%s", w.Code, diff)
	}
}

// A response whose run still works is in progress.
func TestResponseInProgress(t *testing.T) {
	f := newRespFixture(t)
	f.answer(done...)
	id, in := f.create(`{"model":"default","input":"hi"}`)
	f.threads.mu.Lock()
	f.threads.outcomes[in.RunID] = nil
	f.threads.mu.Unlock()
	want := decodeObject(t, strings.ReplaceAll(responseJSON(""), "_R", "_"+in.RunID))
	w := f.do("GET", "/v1/responses/"+id, f.token, "")
	if diff := cmp.Diff(want, decodeObject(t, w.Body.String())); w.Code != http.StatusOK || diff != "" {
		t.Errorf("GET: status %d (-want +got):\n%s", w.Code, diff)
	}
}

// streamEvents parses a Responses API event stream: each event's name is
// its data's type, and the sequence numbers count from 0. It returns the
// data of each event without its sequence number or created_at.
func streamEvents(t *testing.T, body string) []map[string]any {
	t.Helper()
	if !strings.HasSuffix(body, "\n\n") {
		t.Errorf("stream does not end with a blank line: %q", body)
	}
	var out []map[string]any
	for i, ev := range strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n") {
		name, data, ok := strings.Cut(ev, "\n")
		name, ok1 := strings.CutPrefix(name, "event: ")
		data, ok2 := strings.CutPrefix(data, "data: ")
		if !ok || !ok1 || !ok2 || strings.Contains(data, "\n") {
			t.Fatalf("event %d %q is not an event line and a data line", i, ev)
		}
		v := decodeObject(t, data)
		if v["type"] != name {
			t.Errorf("event %d is named %q, its type is %v", i, name, v["type"])
		}
		if v["sequence_number"] != float64(i) {
			t.Errorf("event %d has sequence_number %v", i, v["sequence_number"])
		}
		delete(v, "sequence_number")
		out = append(out, v)
	}
	return out
}

func TestResponsesStream(t *testing.T) {
	inProgress := responseJSON("")
	created := `{"type":"response.created","response":` + inProgress + `}`
	progress := `{"type":"response.in_progress","response":` + inProgress + `}`
	msgAdded := `{"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"msg_R","status":"in_progress","role":"assistant","content":[]}}`
	partAdded := `{"type":"response.content_part.added","item_id":"msg_R","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`
	delta := func(s string) string {
		return `{"type":"response.output_text.delta","item_id":"msg_R","output_index":0,"content_index":0,"delta":"` + s + `","logprobs":[]}`
	}
	// msgDone closes the message of text; its item has status.
	msgDone := func(text, status string) []string {
		part := `{"type":"output_text","text":"` + text + `","annotations":[]}`
		return []string{
			`{"type":"response.output_text.done","item_id":"msg_R","output_index":0,"content_index":0,"text":"` + text + `","logprobs":[]}`,
			`{"type":"response.content_part.done","item_id":"msg_R","output_index":0,"content_index":0,"part":` + part + `}`,
			`{"type":"response.output_item.done","output_index":0,"item":{"type":"message","id":"msg_R","status":"` + status + `","role":"assistant","content":[` + part + `]}}`,
		}
	}
	// call streams the i-th call at output index at.
	call := func(i, at int, c chat.ToolCall) []string {
		args, _ := json.Marshal(c.Arguments)
		item := func(status, args string) string {
			return fmt.Sprintf(`{"type":"function_call","id":"fc_R_%d","call_id":"%s","name":"%s","arguments":%s,"status":"%s"}`, i, c.ID, c.Name, args, status)
		}
		return []string{
			fmt.Sprintf(`{"type":"response.output_item.added","output_index":%d,"item":%s}`, at, item("in_progress", `""`)),
			fmt.Sprintf(`{"type":"response.function_call_arguments.delta","item_id":"fc_R_%d","output_index":%d,"delta":%s}`, i, at, args),
			fmt.Sprintf(`{"type":"response.function_call_arguments.done","item_id":"fc_R_%d","output_index":%d,"name":"%s","arguments":%s}`, i, at, c.Name, args),
			fmt.Sprintf(`{"type":"response.output_item.done","output_index":%d,"item":%s}`, at, item("completed", string(args))),
		}
	}
	final := func(typ, fields string) string {
		return `{"type":"response.` + typ + `","response":` + responseJSON(fields) + `}`
	}
	seq := func(parts ...any) []string {
		var out []string
		for _, p := range parts {
			switch p := p.(type) {
			case string:
				out = append(out, p)
			case []string:
				out = append(out, p...)
			}
		}
		return out
	}
	emptyUsage := `"usage":{"input_tokens":0,"input_tokens_details":{"cached_tokens":0},"output_tokens":0,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":0}`
	emptyMsg := strings.Replace(msgItem, "Checking.", "", 1)
	tests := []struct {
		name   string
		events []agent.Event
		want   []string
	}{
		{"text", []agent.Event{{Delta: "Hel"}, {Delta: "lo"}, {Result: helloResult}},
			seq(created, progress, msgAdded, partAdded, delta("Hel"), delta("lo"), msgDone("Hello", "completed"),
				final("completed", `"status":"completed","output":[`+strings.Replace(msgItem, "Checking.", "Hello", 1)+`],`+textUsage))},
		{"text not streamed by the run", []agent.Event{{Result: helloResult}},
			seq(created, progress, msgAdded, partAdded, delta("Hello"), msgDone("Hello", "completed"),
				final("completed", `"status":"completed","output":[`+strings.Replace(msgItem, "Checking.", "Hello", 1)+`],`+textUsage))},
		{"text and calls", []agent.Event{{Delta: "Checking."}, {Result: callsResult}},
			seq(created, progress, msgAdded, partAdded, delta("Checking."), msgDone("Checking.", "completed"), call(0, 1, weatherCall), call(1, 2, timeCall),
				final("completed", `"status":"completed","output":[`+msgItem+`,`+fcItems+`],`+callUsage))},
		{"calls only", []agent.Event{{Result: onlyCallsResult}},
			seq(created, progress, call(0, 0, weatherCall), call(1, 1, timeCall),
				final("completed", `"status":"completed","output":[`+fcItems+`],`+callUsage))},
		// Text streamed that the answer does not keep (calls the model
		// wrote as text): the message was announced, so it stays, empty.
		{"streamed text the answer drops", []agent.Event{{Delta: "<tool_call>"}, {Result: onlyCallsResult}},
			seq(created, progress, msgAdded, partAdded, delta("<tool_call>"), msgDone("", "completed"), call(0, 1, weatherCall), call(1, 2, timeCall),
				final("completed", `"status":"completed","output":[`+emptyMsg+`,`+fcItems+`],`+callUsage))},
		{"empty answer", []agent.Event{{Result: &agent.Result{FinishReason: "stop"}}},
			seq(created, progress, msgAdded, partAdded, msgDone("", "completed"),
				final("completed", `"status":"completed","output":[`+emptyMsg+`],`+emptyUsage))},
		{"cut at max_output_tokens", []agent.Event{{Delta: "Hel"}, {Result: lengthResult}},
			seq(created, progress, msgAdded, partAdded, delta("Hel"), msgDone("Hel", "incomplete"),
				final("incomplete", `"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[`+
					strings.Replace(strings.Replace(msgItem, "Checking.", "Hel", 1), "completed", "incomplete", 1)+`],`+textUsage))},
		{"failure before content", []agent.Event{{Result: failedResult}},
			seq(created, progress, final("failed", `"status":"failed","error":{"code":"upstream_error","message":"`+failedResult.Error+` (request id REQID)"}`))},
		{"failure after content", []agent.Event{{Delta: "Hel"}, {Result: failedResult}},
			seq(created, progress, msgAdded, partAdded, delta("Hel"),
				final("failed", `"status":"failed","error":{"code":"upstream_error","message":"`+failedResult.Error+` (request id REQID)"}`))},
		{"waiting for an approval", []agent.Event{{Approval: &store.Approval{Prompt: "Approve?"}}},
			seq(created, progress, msgAdded, partAdded, delta("Approve?"), msgDone("Approve?", "completed"),
				final("completed", `"status":"completed","output":[`+strings.Replace(msgItem, "Checking.", "Approve?", 1)+`],`+emptyUsage))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newRespFixture(t)
			f.answer(tt.events...)
			w := f.post(f.token, `{"model":"default","stream":true,"input":"hi"}`)
			if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/event-stream" {
				t.Fatalf("status %d, Content-Type %q: %s", w.Code, w.Header().Get("Content-Type"), w.Body)
			}
			in := f.runner.delivered()[0]
			if !in.Stream {
				t.Error("Input.Stream is false for a streamed response")
			}
			r := strings.NewReplacer("_R", "_"+in.RunID, "REQID", w.Header().Get(gateway.RequestIDHeader))
			var want []map[string]any
			for _, ev := range tt.want {
				want = append(want, decodeObject(t, r.Replace(ev)))
			}
			if diff := cmp.Diff(want, streamEvents(t, w.Body.String())); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// previousFixture has one stored response of the default agent, in
// session sid at seq 1, whose conversation is convo.
func previousFixture(t *testing.T) (f *respFixture, prevID, sid string, convo []chat.Message) {
	f = newRespFixture(t)
	f.answer(agent.Event{Result: callsResult})
	prevID, in := f.create(`{"model":"default","input":"weather?"}`)
	convo = []chat.Message{userMsg("weather?"), callMsg("Checking.", weatherCall, timeCall)}
	f.setThread(in.SessionID, 1, true, convo...)
	f.answer(done...)
	return f, prevID, in.SessionID, convo
}

// previous_response_id continues the previous response's session when it
// is its conversation's latest response; otherwise (an earlier one, or
// store false) the conversation so far opens the new run's input.
func TestResponsesPrevious(t *testing.T) {
	outputs := `[{"type":"function_call_output","call_id":"call_1","output":"rain"},{"type":"function_call_output","call_id":"call_2","output":"noon"}]`
	answered := []chat.Message{toolMsg("call_1", "rain"), toolMsg("call_2", "noon")}
	tests := []struct {
		name   string
		latest bool
		store  string
		input  string
		// want is the run's input after the conversation so far (branch
		// or stateless), or alone (continued).
		want      []chat.Message
		continued bool
	}{
		{"the latest response: the same session", true, "true", outputs, answered, true},
		{"the latest response, a new message instead of outputs", true, "true", `"never mind"`, []chat.Message{userMsg("never mind")}, true},
		{"an earlier response: a branch", false, "true", outputs, answered, false},
		{"store false: stateless", true, "false", outputs, answered, false},
		{"store false, an earlier response", false, "false", `"never mind"`, []chat.Message{userMsg("never mind")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, prevID, sid, convo := previousFixture(t)
			f.setThread(sid, 1, tt.latest, convo...)
			body := fmt.Sprintf(`{"model":"default","previous_response_id":%q,"store":%s,"input":%s}`, prevID, tt.store, tt.input)
			w := f.post(f.token, body)
			if w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			id, _ := responseID(t, w)
			in := f.runner.delivered()[1]
			want := tt.want
			if !tt.continued {
				want = append(slices.Clone(convo), want...)
			}
			if diff := cmp.Diff(want, in.Messages); diff != "" {
				t.Errorf("input (-want +got):\n%s", diff)
			}
			stored := tt.store == "true"
			switch {
			case tt.continued && in.SessionID != sid:
				t.Errorf("session %q, want the previous response's %q", in.SessionID, sid)
			case !tt.continued && stored && (in.SessionID == sid || in.SessionID != agent.SessionID("default", "responses:key:k-full/"+id)):
				t.Errorf("session %q, want a new one of its own", in.SessionID)
			case in.Ephemeral == stored || in.Interactive != stored:
				t.Errorf("ephemeral %v, interactive %v; want a durable interactive run exactly when stored", in.Ephemeral, in.Interactive)
			}
			got := f.do("GET", "/v1/responses/"+id, f.token, "")
			if !stored {
				if got.Code != http.StatusNotFound {
					t.Errorf("GET of a response not stored: %d %s", got.Code, got.Body)
				}
				return
			}
			var o struct {
				PreviousResponseID string `json:"previous_response_id"`
			}
			if err := json.Unmarshal(got.Body.Bytes(), &o); err != nil || o.PreviousResponseID != prevID {
				t.Errorf("GET: previous_response_id %q (%v), want %q", o.PreviousResponseID, err, prevID)
			}
			if rec := f.record(id); rec.PreviousID != prevID || rec.SessionID != in.SessionID || rec.Seq != f.seqs[in.SessionID] {
				t.Errorf("record %+v, want it in session %s at seq %d after %s", rec, in.SessionID, f.seqs[in.SessionID], prevID)
			}
		})
	}
}

// The outputs that continue a response answer exactly the calls it left
// open, continued, branched or stateless; a refused request starts
// nothing.
func TestResponsesOutputsMustMatch(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  refusal
	}{
		{"an unknown call", `[{"type":"function_call_output","call_id":"call_9","output":"x"}]`, badInput("invalid_value", "input[0].call_id")},
		{"one call of two", `[{"type":"function_call_output","call_id":"call_1","output":"rain"}]`, badInput("invalid_value", "input")},
		{"one call, then a message", `[{"type":"function_call_output","call_id":"call_1","output":"rain"},{"role":"user","content":"and?"}]`, badInput("invalid_value", "input")},
		{"the same call twice", `[{"type":"function_call_output","call_id":"call_1","output":"rain"},{"type":"function_call_output","call_id":"call_1","output":"rain"}]`,
			badInput("invalid_value", "input[1].call_id")},
	}
	for _, tt := range tests {
		for _, mode := range []struct {
			name   string
			latest bool
			store  string
		}{{"continued", true, "true"}, {"branched", false, "true"}, {"stateless", true, "false"}} {
			t.Run(tt.name+" "+mode.name, func(t *testing.T) {
				f, prevID, sid, convo := previousFixture(t)
				f.setThread(sid, 1, mode.latest, convo...)
				body := fmt.Sprintf(`{"model":"default","previous_response_id":%q,"store":%s,"input":%s}`, prevID, mode.store, tt.input)
				if diff := cmp.Diff(tt.want, refusalOf(t, f.post(f.token, body))); diff != "" {
					t.Errorf("refusal (-want +got):\n%s", diff)
				}
				if n := len(f.runner.delivered()); n != 1 {
					t.Errorf("%d runs, want only the first", n)
				}
			})
		}
	}
}

func TestResponsesPreviousRefused(t *testing.T) {
	notFound := badInput("previous_response_not_found", "previous_response_id")
	tests := []struct {
		name string
		edit func(f *respFixture, prevID, sid string) (token, body string)
		want refusal
	}{
		{"unknown", func(f *respFixture, _, _ string) (string, string) {
			return f.token, `{"model":"default","previous_response_id":"resp_nope","input":"hi"}`
		}, notFound},
		{"another key's", func(f *respFixture, prevID, _ string) (string, string) {
			other := f.addKey(store.APIKey{ID: "k-other", Autonomy: "full"})
			return other, `{"model":"default","previous_response_id":"` + prevID + `","input":"hi"}`
		}, notFound},
		{"deleted", func(f *respFixture, prevID, _ string) (string, string) {
			if w := f.do("DELETE", "/v1/responses/"+prevID, f.token, ""); w.Code != http.StatusOK {
				f.t.Fatalf("DELETE: %d %s", w.Code, w.Body)
			}
			return f.token, `{"model":"default","previous_response_id":"` + prevID + `","input":"hi"}`
		}, notFound},
		{"its conversation gone", func(f *respFixture, prevID, sid string) (string, string) {
			f.threads.mu.Lock()
			delete(f.threads.threads, sid+"/1")
			f.threads.mu.Unlock()
			return f.token, `{"model":"default","previous_response_id":"` + prevID + `","input":"hi"}`
		}, notFound},
		{"another model's", func(f *respFixture, prevID, _ string) (string, string) {
			return f.token, `{"model":"writer","previous_response_id":"` + prevID + `","input":"hi"}`
		}, badInput("invalid_value", "previous_response_id")},
		{"the store fails", func(f *respFixture, prevID, _ string) (string, string) {
			f.threads.err = errors.New("store down")
			return f.token, `{"model":"default","previous_response_id":"` + prevID + `","input":"hi"}`
		}, refusal{http.StatusInternalServerError, "internal_error", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, prevID, sid, _ := previousFixture(t)
			token, body := tt.edit(f, prevID, sid)
			if diff := cmp.Diff(tt.want, refusalOf(t, f.post(token, body))); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
			if n := len(f.runner.delivered()); n != 1 {
				t.Errorf("%d runs, want only the first", n)
			}
		})
	}
}

// item_reference names an output item of one of the key's stored
// responses; its type may be left out.
func TestResponsesItemReference(t *testing.T) {
	f, prevID, _, _ := previousFixture(t)
	r := strings.TrimPrefix(prevID, "resp_")
	ref := func(id string) string { return `{"type":"item_reference","id":"` + id + `"}` }
	_, in := f.create(`{"model":"default","store":false,"input":[{"role":"user","content":"weather?"},` + ref("msg_"+r) + `,` + ref("fc_"+r+"_0") + `,{"id":"fc_` + r + `_1"},` +
		`{"type":"function_call_output","call_id":"call_1","output":"rain"},{"type":"function_call_output","call_id":"call_2","output":"noon"}]}`)
	want := []chat.Message{userMsg("weather?"), callMsg("Checking.", weatherCall, timeCall), toolMsg("call_1", "rain"), toolMsg("call_2", "noon")}
	if diff := cmp.Diff(want, in.Messages); diff != "" {
		t.Errorf("input (-want +got):\n%s", diff)
	}
	other := f.addKey(store.APIKey{ID: "k-other", Autonomy: "full"})
	for _, tt := range []struct {
		name, token, id string
	}{
		{"another key's", other, "msg_" + r},
		{"another key's call", other, "fc_" + r + "_0"},
		{"a call it does not have", f.token, "fc_" + r + "_2"},
		{"a call without index", f.token, "fc_" + r},
		{"a response that does not exist", f.token, "msg_nope"},
	} {
		w := f.post(tt.token, `{"model":"default","input":[`+ref(tt.id)+`]}`)
		if diff := cmp.Diff(badInput("invalid_value", "input[0].id"), refusalOf(t, w)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
	// A response whose run has not answered yet has no items yet.
	f.threads.mu.Lock()
	f.threads.outcomes[strings.TrimPrefix(prevID, "resp_")] = nil
	f.threads.mu.Unlock()
	if diff := cmp.Diff(badInput("invalid_value", "input[0].id"), refusalOf(t, f.post(f.token, `{"model":"default","input":[`+ref("msg_"+r)+`]}`))); diff != "" {
		t.Errorf("an item not made yet (-want +got):\n%s", diff)
	}
	if n := len(f.runner.delivered()); n != 2 {
		t.Errorf("%d runs, want 2: refused references start nothing", n)
	}
}

// A response is its key's: another key's GET and DELETE find nothing and
// change nothing. DELETE removes the record; then it is not found.
func TestResponsesOwnership(t *testing.T) {
	f, prevID, _, _ := previousFixture(t)
	other := f.addKey(store.APIKey{ID: "k-other", Autonomy: "full"})
	notFound := refusal{http.StatusNotFound, "response_not_found", ""}
	for _, method := range []string{"GET", "DELETE"} {
		if diff := cmp.Diff(notFound, refusalOf(t, f.do(method, "/v1/responses/"+prevID, other, ""))); diff != "" {
			t.Errorf("another key's %s (-want +got):\n%s", method, diff)
		}
	}
	if w := f.do("GET", "/v1/responses/"+prevID, f.token, ""); w.Code != http.StatusOK {
		t.Fatalf("the owner's GET after another key's DELETE: %d %s", w.Code, w.Body)
	}
	w := f.do("DELETE", "/v1/responses/"+prevID, f.token, "")
	if diff := cmp.Diff(map[string]any{"id": prevID, "object": "response.deleted", "deleted": true}, decodeObject(t, w.Body.String())); w.Code != http.StatusOK || diff != "" {
		t.Errorf("DELETE: %d (-want +got):\n%s", w.Code, diff)
	}
	for _, method := range []string{"GET", "DELETE"} {
		if diff := cmp.Diff(notFound, refusalOf(t, f.do(method, "/v1/responses/"+prevID, f.token, ""))); diff != "" {
			t.Errorf("%s after DELETE (-want +got):\n%s", method, diff)
		}
	}
	if _, err := f.mem.GetResponse(context.Background(), prevID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("record after DELETE: %v", err)
	}
}

// Without the stores the Responses API is not served.
func TestResponsesNotConfigured(t *testing.T) {
	f := newFixture(t)
	for _, ep := range []struct{ method, path string }{{"POST", "/v1/responses"}, {"GET", "/v1/responses/resp_1"}, {"DELETE", "/v1/responses/resp_1"}} {
		if got, _ := decodeError(t, f.do(ep.method, ep.path, f.token, `{"model":"default","input":"hi"}`)); got.Status != http.StatusNotFound {
			t.Errorf("%s %s = %d, want 404", ep.method, ep.path, got.Status)
		}
	}
}
