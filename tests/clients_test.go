package tests

// The gateway as the clients people build agents with see it (issue 12):
// the official openai SDK, LangChain JS (@langchain/openai) and the Vercel
// AI SDK (ai with @ai-sdk/openai), at the exact versions of
// testdata/clients/package-lock.json, and openai-go run scenarios against
// the real `lambdaclaw serve` and the fake model, which plays along with
// the clients' tool loops (fakellm.ToolUser).
//
// A JavaScript scenario is a function of testdata/clients/<lib>.mjs;
// run.mjs runs a library's scenarios in one node process (loading a
// library costs about a second, a scenario a few milliseconds) and prints,
// per scenario, what the client saw and every request it sent. Besides
// the checks of its own, every scenario must pass on to the model what the
// client asked for: the conversation, the client's system and developer
// messages, its tools with their whole definitions and every parameter
// (see checkForwarded).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// clientsDir is the Node project of the JavaScript clients; its
// install.sh installs them (make test runs it).
const clientsDir = "testdata/clients"

// clientsEmbeddingModel is the embedding model of the gateway the clients
// talk to, and the model they ask /v1/embeddings for.
const clientsEmbeddingModel = "fake-embedding"

// clientResult is what run.mjs prints for one scenario.
type clientResult struct {
	Scenario string          `json:"scenario"`
	OK       bool            `json:"ok"`
	Result   json.RawMessage `json:"result"`
	Error    string          `json:"error"`
	Sent     []clientRequest `json:"sent"`
}

// clientRequest is a request a client library sent to the gateway.
type clientRequest struct {
	Method string          `json:"method"`
	Path   string          `json:"path"`
	Body   json.RawMessage `json:"body"`
}

// clientScenario is a scenario of a client library and what it must show.
type clientScenario struct {
	id    string // "lib/name": the function name of testdata/clients/lib.mjs
	check func(t *testing.T, s scenarioRun)
}

// scenarioRun is a scenario's result with the model calls it caused.
type scenarioRun struct {
	clientResult
	// calls are the requests that reached the fake model whose messages
	// carry the scenario's tag, in arrival order.
	calls []fakellm.Request
}

var clientScenarios = []clientScenario{
	{"openai/chat", func(t *testing.T, s scenarioRun) {
		var r struct {
			Object, Content string
			FinishReason    string `json:"finish_reason"`
			Usage           usage
		}
		decodeResult(t, s, &r)
		wantEqual(t, "content", r.Content, "echo: [openai/chat] hello")
		wantEqual(t, "finish_reason", r.FinishReason, "stop")
		wantEqual(t, "object", r.Object, "chat.completion")
		r.Usage.check(t)
		wantCalls(t, s, 1)
	}},
	{"openai/stream", func(t *testing.T, s scenarioRun) {
		var r struct {
			Content      string
			Deltas       int
			FinishReason string `json:"finish_reason"`
			Usage        usage
		}
		decodeResult(t, s, &r)
		wantEqual(t, "content", r.Content, "echo: [openai/stream] stream this answer in several pieces")
		wantEqual(t, "finish_reason", r.FinishReason, "stop")
		if r.Deltas < 2 {
			t.Errorf("the content came in %d deltas, want it streamed in several", r.Deltas)
		}
		r.Usage.check(t)
		wantCalls(t, s, 1)
	}},
	{"openai/models", func(t *testing.T, s scenarioRun) {
		var r struct {
			IDs []string
			One struct {
				ID, Object string
				OwnedBy    string `json:"owned_by"`
				Created    int64
			}
		}
		decodeResult(t, s, &r)
		if !slices.Contains(r.IDs, "default") {
			t.Errorf("models.list = %v, want the default agent", r.IDs)
		}
		if r.One.ID != "default" || r.One.Object != "model" || r.One.OwnedBy == "" || r.One.Created <= 0 {
			t.Errorf("models.retrieve = %+v, want the default agent with owned_by and created", r.One)
		}
		wantCalls(t, s, 0)
	}},

	{"langchain/invoke", func(t *testing.T, s scenarioRun) {
		var r struct {
			Content      string
			FinishReason string `json:"finish_reason"`
			Usage        struct {
				InputTokens  int `json:"input_tokens"`
				OutputTokens int `json:"output_tokens"`
			}
		}
		decodeResult(t, s, &r)
		wantEqual(t, "content", r.Content, "echo: [langchain/invoke] hello")
		wantEqual(t, "finish_reason", r.FinishReason, "stop")
		if r.Usage.InputTokens <= 0 || r.Usage.OutputTokens <= 0 {
			t.Errorf("usage_metadata = %+v, want the token counts", r.Usage)
		}
		wantCalls(t, s, 1)
	}},
	{"langchain/stream", func(t *testing.T, s scenarioRun) {
		var r struct {
			Content string
			Chunks  int
		}
		decodeResult(t, s, &r)
		wantEqual(t, "content", r.Content, "echo: [langchain/stream] stream this answer in several pieces")
		if r.Chunks < 2 {
			t.Errorf("the answer came in %d chunks, want several", r.Chunks)
		}
		wantCalls(t, s, 1)
	}},

	{"aisdk/chatText", func(t *testing.T, s scenarioRun) { checkAIText(t, s, "echo: [aisdk/chatText] hello", false) }},
	{"aisdk/chatStream", func(t *testing.T, s scenarioRun) {
		checkAIText(t, s, "echo: [aisdk/chatStream] stream this answer in several pieces", true)
	}},
}

// TestClients runs every client scenario against one gateway: each
// JavaScript library in a node process of its own, the libraries in
// parallel.
func TestClients(t *testing.T) {
	t.Parallel()
	requireClients(t)
	fake := newFake(t)
	fake.SetDefault(fakellm.ToolUser)
	g := startGateway(t, fake, "embeddings:\n  type: openai\n  base_url: "+fake.URL+"/v1\n  api_key: {env: OPENAI_API_KEY}\n  model: "+clientsEmbeddingModel+"\n")
	key := g.firstKey()

	var libs []string
	byLib := map[string][]clientScenario{}
	for _, sc := range clientScenarios {
		lib, _, _ := strings.Cut(sc.id, "/")
		if byLib[lib] == nil {
			libs = append(libs, lib)
		}
		byLib[lib] = append(byLib[lib], sc)
	}
	for _, lib := range libs {
		t.Run(lib, func(t *testing.T) {
			t.Parallel()
			scenarios := byLib[lib]
			var ids []string
			for _, sc := range scenarios {
				ids = append(ids, sc.id)
			}
			results := runClients(t, g, key, ids)
			for _, sc := range scenarios {
				_, name, _ := strings.Cut(sc.id, "/")
				t.Run(name, func(t *testing.T) {
					res, ok := results[sc.id]
					if !ok {
						t.Fatalf("the client run printed no result for %s", sc.id)
					}
					if !res.OK {
						t.Fatalf("%s failed in the client:\n%s\nrequests sent:\n%s", sc.id, res.Error, sentSummary(res.Sent))
					}
					run := scenarioRun{clientResult: res, calls: tagged(fake.Requests(), "["+sc.id+"]")}
					sc.check(t, run)
					checkForwarded(t, run)
				})
			}
		})
	}
}

// requireClients fails the test unless node runs and node_modules holds
// the clients installed from the current package-lock.json.
func requireClients(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not on PATH: the client tests run the JavaScript clients with Node.js 20 or later (apt-get install nodejs npm)")
	}
	lock, err := os.ReadFile(filepath.Join(clientsDir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(lock)
	stamp, err := os.ReadFile(filepath.Join(clientsDir, "node_modules", ".lock-sha256"))
	if err != nil || strings.TrimSpace(string(stamp)) != hex.EncodeToString(sum[:]) {
		t.Fatalf("the JavaScript clients are not installed from tests/%s/package-lock.json: run bash tests/%s/install.sh (make test does)", clientsDir, clientsDir)
	}
}

// runClients runs scenarios in one node process and returns their results
// by id. A scenario that fails makes node exit with status 1, which is no
// error here; any other failure of the run is.
func runClients(t *testing.T, g *gateway, key string, ids []string) map[string]clientResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", append([]string{"run.mjs"}, ids...)...)
	cmd.Dir = clientsDir
	// Only what node needs: no OPENAI_* variable or LangChain tracing
	// setting of the environment reaches the clients.
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"LAMBDACLAW_URL=" + g.addr + "/v1",
		"LAMBDACLAW_KEY=" + key,
		"LAMBDACLAW_MODEL=default",
		"LAMBDACLAW_EMBEDDING_MODEL=" + clientsEmbeddingModel,
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) {
		t.Fatalf("node run.mjs: %v\nstderr:\n%s", err, tail(stderr.String(), 4000))
	}
	results := map[string]clientResult{}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var r clientResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("node run.mjs printed a line that is not a result: %q", sc.Text())
		}
		results[r.Scenario] = r
	}
	if len(results) != len(ids) {
		t.Errorf("node run.mjs printed %d results for %d scenarios\nstderr:\n%s", len(results), len(ids), tail(stderr.String(), 4000))
	}
	return results
}

// tagged returns the requests with a message that contains tag.
func tagged(reqs []fakellm.Request, tag string) []fakellm.Request {
	var out []fakellm.Request
	for _, r := range reqs {
		if slices.ContainsFunc(r.Messages, func(m fakellm.Message) bool { return strings.Contains(m.Content, tag) }) {
			out = append(out, r)
		}
	}
	return out
}

func sentSummary(sent []clientRequest) string {
	var b strings.Builder
	for _, r := range sent {
		b.WriteString("  " + r.Method + " " + r.Path + " " + tail(string(r.Body), 2000) + "\n")
	}
	return b.String()
}

// modelRequests are the requests a client sent that each make a model
// call: POSTs to /v1/chat/completions and /v1/responses.
func modelRequests(sent []clientRequest) []clientRequest {
	var out []clientRequest
	for _, r := range sent {
		if r.Method == "POST" && (strings.HasSuffix(r.Path, "/chat/completions") || strings.HasSuffix(r.Path, "/responses")) {
			out = append(out, r)
		}
	}
	return out
}

// wantCalls checks that a scenario made n model calls.
func wantCalls(t *testing.T, s scenarioRun, n int) {
	t.Helper()
	if len(s.calls) != n {
		t.Errorf("the model was called %d times, want %d", len(s.calls), n)
	}
}

// checkForwarded checks that every model request of a client reached the
// model as the client sent it: the tools with their whole definitions, the
// parameters, the conversation and the client's system and developer
// messages. The client's requests and the model calls are paired in order
// (a scenario makes one request at a time, and the fake calls no built-in
// tool).
func checkForwarded(t *testing.T, s scenarioRun) {
	t.Helper()
	sent := modelRequests(s.Sent)
	if len(sent) != len(s.calls) {
		t.Errorf("the client made %d model requests and the model got %d calls; want one call each", len(sent), len(s.calls))
		return
	}
	for i, r := range sent {
		want, known := asChat(t, r)
		got := s.calls[i]
		for _, tool := range want.ToolDefs {
			checkTool(t, i, tool, got.ToolDefs)
		}
		if diff := cmp.Diff(forwardable(want.Params), forwardable(got.Params), jsonEqual, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("call %d: the parameters that reached the model differ from the client's (-client +model):\n%s", i, diff)
		}
		wantConv, gotConv := conversation(want.Messages), conversation(got.Messages)
		if known == lastMessages && len(gotConv) >= len(wantConv) {
			gotConv = gotConv[len(gotConv)-len(wantConv):] // the server adds the earlier turns
		}
		ids := cmpopts.IgnoreFields(fakellm.ToolCall{}, "ID")
		if diff := cmp.Diff(wantConv, gotConv, ids, cmpopts.IgnoreFields(fakellm.Message{}, "ToolCallID"), cmpopts.EquateEmpty()); known != someMessages && diff != "" {
			t.Errorf("call %d: the conversation that reached the model differs from the client's (-client +model):\n%s", i, diff)
		}
		var system strings.Builder
		for _, m := range got.Messages {
			if m.Role == "system" || m.Role == "developer" {
				system.WriteString(m.Content + "\n")
			}
		}
		for _, m := range want.Messages {
			if (m.Role == "system" || m.Role == "developer") && !strings.Contains(system.String(), m.Content) {
				t.Errorf("call %d: the client's %s message %q is not in the model's system prompt", i, m.Role, m.Content)
			}
		}
	}
}

// checkTool checks that a tool of the client was offered to the model with
// the same description, parameters and (when the client set it)
// strictness.
func checkTool(t *testing.T, call int, want fakellm.Tool, offered []fakellm.Tool) {
	t.Helper()
	i := slices.IndexFunc(offered, func(o fakellm.Tool) bool { return o.Name == want.Name })
	if i < 0 {
		var names []string
		for _, o := range offered {
			names = append(names, o.Name)
		}
		t.Errorf("call %d: the client's tool %s was not offered to the model; offered: %v", call, want.Name, names)
		return
	}
	got := offered[i]
	if want.Strict == nil {
		got.Strict = nil
	}
	if diff := cmp.Diff(want, got, jsonEqual); diff != "" {
		t.Errorf("call %d: tool %s reached the model changed (-client +model):\n%s", call, want.Name, diff)
	}
}

// jsonEqual compares JSON documents by value.
var jsonEqual = cmp.Transformer("json", func(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	return v
})

// forwardable normalises the parameters that mean the same to a model: n
// (only n = 1 is accepted, which is the default), tool_choice auto (the
// default with tools), the text response format (the default), and
// max_tokens, which a provider may get as max_completion_tokens.
func forwardable(p fakellm.Params) fakellm.Params {
	p.N = nil
	if p.ToolChoice.Mode == fakellm.ToolChoiceAuto {
		p.ToolChoice = fakellm.ToolChoice{}
	}
	if p.ResponseFormat != nil && p.ResponseFormat.Type == "text" {
		p.ResponseFormat = nil
	}
	if p.MaxCompletionTokens != nil {
		p.MaxTokens, p.MaxCompletionTokens = p.MaxCompletionTokens, nil
	}
	return p
}

// How much of the conversation the model gets a client's request shows.
type shown int

const (
	allMessages  shown = iota // the whole conversation
	lastMessages              // its end: the server holds the earlier turns (previous_response_id)
	someMessages              // some of it: the input refers to items the server stored
)

// asChat reads a client's model request as the Chat Completions request it
// stands for, and how much of the conversation its messages are.
func asChat(t *testing.T, r clientRequest) (fakellm.Request, shown) {
	t.Helper()
	if strings.HasSuffix(r.Path, "/chat/completions") {
		req, invalid := fakellm.ParseRequest(r.Body)
		if invalid != "" {
			t.Errorf("the client sent a request the OpenAI API would reject: %s\nbody: %s", invalid, r.Body)
		}
		return req, allMessages
	}
	return responsesAsChat(t, r.Body)
}

// responsesBody is the part of a Responses API request that reaches the
// model.
type responsesBody struct {
	Instructions       string          `json:"instructions"`
	Input              json.RawMessage `json:"input"`
	PreviousResponseID string          `json:"previous_response_id"`
	Tools              []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      *bool           `json:"strict"`
	} `json:"tools"`
	Temperature     *float64 `json:"temperature"`
	TopP            *float64 `json:"top_p"`
	MaxOutputTokens *int     `json:"max_output_tokens"`
	Text            *struct {
		Format *struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Strict      *bool           `json:"strict"`
		} `json:"format"`
	} `json:"text"`
	Reasoning *struct {
		Effort string `json:"effort"`
	} `json:"reasoning"`
	User              string            `json:"user"`
	Metadata          map[string]string `json:"metadata"`
	ToolChoice        json.RawMessage   `json:"tool_choice"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls"`
}

// responsesItem is an item of a Responses API input.
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// responsesAsChat maps a Responses API request onto Chat Completions:
// instructions are a system message, input items are messages, function
// calls and their outputs are tool calls and tool messages, and the
// parameters take their Chat Completions names.
func responsesAsChat(t *testing.T, body []byte) (fakellm.Request, shown) {
	t.Helper()
	var b responsesBody
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("Responses API request: %v\nbody: %s", err, body)
	}
	var req fakellm.Request
	known := allMessages
	if b.PreviousResponseID != "" {
		known = lastMessages
	}
	if b.Instructions != "" {
		req.Messages = append(req.Messages, fakellm.Message{Role: "system", Content: b.Instructions})
	}
	var text string
	if json.Unmarshal(b.Input, &text) == nil {
		req.Messages = append(req.Messages, user(text))
	} else {
		var items []responsesItem
		if err := json.Unmarshal(b.Input, &items); err != nil {
			t.Fatalf("Responses API input: %v\nbody: %s", err, body)
		}
		for _, it := range items {
			switch it.Type {
			case "message", "":
				req.Messages = append(req.Messages, fakellm.Message{Role: it.Role, Content: partsText(it.Content)})
			case "function_call":
				last := len(req.Messages) - 1
				if last < 0 || req.Messages[last].Role != "assistant" {
					req.Messages = append(req.Messages, fakellm.Message{Role: "assistant"})
					last++
				}
				req.Messages[last].ToolCalls = append(req.Messages[last].ToolCalls, fakellm.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments})
			case "function_call_output":
				req.Messages = append(req.Messages, fakellm.Message{Role: "tool", ToolCallID: it.CallID, Content: partsText(it.Output)})
			case "item_reference":
				known = someMessages
			case "reasoning":
			default:
				t.Errorf("Responses API input item of type %q: the test cannot map it onto Chat Completions", it.Type)
			}
		}
	}
	for _, tool := range b.Tools {
		if tool.Type == "function" {
			req.ToolDefs = append(req.ToolDefs, fakellm.Tool{Name: tool.Name, Description: tool.Description, Parameters: tool.Parameters, Strict: tool.Strict})
		}
	}
	p := fakellm.Params{Temperature: b.Temperature, TopP: b.TopP, MaxTokens: b.MaxOutputTokens, User: b.User, Metadata: b.Metadata, ParallelToolCalls: b.ParallelToolCalls}
	if b.Reasoning != nil {
		p.ReasoningEffort = b.Reasoning.Effort
	}
	if b.Text != nil && b.Text.Format != nil {
		f := b.Text.Format
		p.ResponseFormat = &fakellm.ResponseFormat{Type: f.Type}
		if f.Type == "json_schema" {
			p.ResponseFormat.JSONSchema = &fakellm.JSONSchemaFormat{Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict}
		}
	}
	if len(b.ToolChoice) > 0 {
		var named struct{ Type, Name string }
		if json.Unmarshal(b.ToolChoice, &p.ToolChoice.Mode) != nil {
			if err := json.Unmarshal(b.ToolChoice, &named); err != nil || named.Type != "function" {
				t.Errorf("Responses API tool_choice %s: the test cannot map it onto Chat Completions", b.ToolChoice)
			}
			p.ToolChoice = fakellm.ToolChoice{Mode: fakellm.ToolChoiceFunction, Name: named.Name}
		}
	}
	req.Params = p
	return req, known
}

// partsText flattens a content that is a string or an array of text parts.
func partsText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct{ Text string }
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// usage is Chat Completions' token usage.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func (u usage) check(t *testing.T) {
	t.Helper()
	if u.PromptTokens <= 0 || u.CompletionTokens <= 0 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("usage = %+v, want the model's token counts", u)
	}
}

// checkAIText checks the text of generateText or, when streamed, of
// streamText, which must come in several deltas.
func checkAIText(t *testing.T, s scenarioRun, want string, streamed bool) {
	var r struct {
		Text         string
		Deltas       int
		FinishReason string
		Usage        struct{ InputTokens, OutputTokens int }
	}
	decodeResult(t, s, &r)
	wantEqual(t, "text", r.Text, want)
	wantEqual(t, "finishReason", r.FinishReason, "stop")
	if streamed && r.Deltas < 2 {
		t.Errorf("the text came in %d deltas, want several", r.Deltas)
	}
	if r.Usage.InputTokens <= 0 || r.Usage.OutputTokens <= 0 {
		t.Errorf("usage = %+v, want the token counts", r.Usage)
	}
	wantCalls(t, s, 1)
}

// decodeResult decodes a scenario's result into v.
func decodeResult(t *testing.T, s scenarioRun, v any) {
	t.Helper()
	if err := json.Unmarshal(s.Result, v); err != nil {
		t.Fatalf("result of %s: %v\n%s", s.Scenario, err, s.Result)
	}
}

func wantEqual[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}
