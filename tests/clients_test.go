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
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
// talk to. They ask /v1/embeddings for an agent's (model "default"), as
// they ask chat for the agent.
const clientsEmbeddingModel = "fake-embedding"

// clientResult is what run.mjs prints for one scenario.
type clientResult struct {
	Scenario string          `json:"scenario"`
	OK       bool            `json:"ok"`
	Result   json.RawMessage `json:"result"`
	Error    string          `json:"error"`
	Sent     []clientRequest `json:"sent"`
}

// clientRequest is a request a client library sent to the gateway, and the
// status of the answer (0 when none came).
type clientRequest struct {
	Method string          `json:"method"`
	Path   string          `json:"path"`
	Body   json.RawMessage `json:"body"`
	Status int             `json:"status"`
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
		var r chatAnswer
		decodeResult(t, s, &r)
		wantEqual(t, "content", r.Content, "echo: [openai/chat] hello")
		wantEqual(t, "finish_reason", r.FinishReason, "stop")
		wantEqual(t, "object", r.Object, "chat.completion")
		r.Usage.check(t)
		wantCalls(t, s, 1)
	}},
	{"openai/stream", func(t *testing.T, s scenarioRun) {
		var r chatAnswer
		decodeResult(t, s, &r)
		wantEqual(t, "content", r.Content, "echo: [openai/stream] stream this answer in several pieces")
		wantEqual(t, "finish_reason", r.FinishReason, "stop")
		if r.Deltas < 2 {
			t.Errorf("the content came in %d deltas, want it streamed in several", r.Deltas)
		}
		r.Usage.check(t)
		wantCalls(t, s, 1)
	}},
	{"openai/params", func(t *testing.T, s scenarioRun) {
		var r struct {
			Parsed       map[string]string
			FinishReason string `json:"finish_reason"`
		}
		decodeResult(t, s, &r)
		// JSON mode: the fake answers {"answer": …} in JSON.
		wantEqual(t, "parsed content", r.Parsed["answer"], "echo: [openai/params] hello")
		wantEqual(t, "finish_reason", r.FinishReason, "stop")
		wantCalls(t, s, 1)
	}},
	{"openai/length", func(t *testing.T, s scenarioRun) {
		var r chatAnswer
		decodeResult(t, s, &r)
		// max_tokens 3: the fake cuts its answer at 3 tokens of 4 bytes.
		wantEqual(t, "content", r.Content, "echo: [opena")
		wantEqual(t, "finish_reason", r.FinishReason, "length")
		wantEqual(t, "usage.completion_tokens", r.Usage.CompletionTokens, 3)
		wantCalls(t, s, 1)
	}},
	{"openai/runTools", checkRunTools},
	{"openai/runToolsStream", checkRunTools},
	{"openai/runToolsSession", checkRunTools},
	{"openai/toolChoice", func(t *testing.T, s scenarioRun) {
		type answer struct {
			FinishReason string `json:"finish_reason"`
			Content      *string
			Calls        []toolCallResult
		}
		var r struct{ None, Single, Parallel answer }
		decodeResult(t, s, &r)
		echo := `echo: [openai/toolChoice] get_weather {"city": "Paris"} and get_forecast {"city": "Oslo"}`
		weather := toolCallResult{Name: "get_weather", Arguments: map[string]any{"city": "Paris"}}
		forecast := toolCallResult{Name: "get_forecast", Arguments: map[string]any{"city": "Oslo"}}
		wantEqual(t, "tool_choice none", r.None, answer{FinishReason: "stop", Content: &echo})
		wantEqual(t, "parallel_tool_calls false", r.Single, answer{FinishReason: "tool_calls", Calls: []toolCallResult{weather}})
		wantEqual(t, "parallel calls", r.Parallel, answer{FinishReason: "tool_calls", Calls: []toolCallResult{weather, forecast}})
		wantCalls(t, s, 3)
	}},
	{"openai/rejected", func(t *testing.T, s scenarioRun) {
		var r struct{ N, Clash clientError }
		decodeResult(t, s, &r)
		if r.N.Status != 400 || !regexp.MustCompile(`\bn\b`).MatchString(r.N.Message) {
			t.Errorf("n = 2: %+v, want a 400 about n", r.N)
		}
		if r.Clash.Status != 400 || !strings.Contains(r.Clash.Message, "read_file") {
			t.Errorf("a client tool named read_file: %+v, want a 400 that names it", r.Clash)
		}
		wantCalls(t, s, 0)
	}},
	{"openai/responses", func(t *testing.T, s scenarioRun) {
		var r struct {
			ID, Object, Status string
			OutputText         string `json:"output_text"`
			Usage              struct {
				InputTokens  int `json:"input_tokens"`
				OutputTokens int `json:"output_tokens"`
				TotalTokens  int `json:"total_tokens"`
			}
			Stored struct {
				ID, Status string
				OutputText string `json:"output_text"`
			}
		}
		decodeResult(t, s, &r)
		wantEqual(t, "output_text", r.OutputText, "echo: [openai/responses] hello")
		wantEqual(t, "object", r.Object, "response")
		wantEqual(t, "status", r.Status, "completed")
		if r.Usage.InputTokens <= 0 || r.Usage.OutputTokens <= 0 || r.Usage.TotalTokens != r.Usage.InputTokens+r.Usage.OutputTokens {
			t.Errorf("usage = %+v, want the model's token counts", r.Usage)
		}
		if r.Stored.ID != r.ID || r.Stored.Status != "completed" || r.Stored.OutputText != r.OutputText {
			t.Errorf("GET /v1/responses/%s = %+v, want the response created", r.ID, r.Stored)
		}
		wantCalls(t, s, 1)
	}},
	{"openai/responsesStream", func(t *testing.T, s scenarioRun) {
		var r struct {
			Types  []string
			Text   string
			Status string
		}
		decodeResult(t, s, &r)
		wantEqual(t, "streamed text", r.Text, "echo: [openai/responsesStream] stream this answer")
		wantEqual(t, "status of response.completed", r.Status, "completed")
		if len(r.Types) == 0 || r.Types[0] != "response.created" || r.Types[len(r.Types)-1] != "response.completed" {
			t.Errorf("events %v, want response.created first and response.completed last", r.Types)
		}
		for _, want := range []string{"response.output_item.added", "response.output_text.delta", "response.output_text.done", "response.output_item.done"} {
			if !slices.Contains(r.Types, want) {
				t.Errorf("no %s event among %v", want, r.Types)
			}
		}
		wantCalls(t, s, 1)
	}},
	{"openai/responsesTools", func(t *testing.T, s scenarioRun) {
		var r struct {
			Call       toolCallResult
			Status     string
			OutputText string `json:"output_text"`
		}
		decodeResult(t, s, &r)
		wantEqual(t, "function call", r.Call, toolCallResult{Name: "get_weather", Arguments: map[string]any{"city": "Paris"}})
		wantEqual(t, "status of the response with the call", r.Status, "completed")
		wantEqual(t, "output_text", r.OutputText, "tool results: sunny and 21°C in Paris")
		wantCalls(t, s, 2)
	}},
	{"openai/embeddings", func(t *testing.T, s scenarioRun) {
		var r struct {
			Object, Model string
			Usage         struct {
				PromptTokens int `json:"prompt_tokens"`
				TotalTokens  int `json:"total_tokens"`
			}
			Indexes     []int
			Floats      [][]float64
			Decoded     [][]float64
			FromBase64  []float64
			ShortLength int
		}
		decodeResult(t, s, &r)
		wantEqual(t, "object", r.Object, "list")
		wantEqual(t, "indexes", r.Indexes, []int{0, 1})
		if len(r.Floats) != 2 || len(r.Floats[0]) == 0 || len(r.Floats[0]) != len(r.Floats[1]) {
			t.Fatalf("float vectors of lengths %v, want two of the same length", lengths(r.Floats))
		}
		if slices.Equal(r.Floats[0], r.Floats[1]) {
			t.Error("two different texts have the same vector")
		}
		// base64 carries float32s: the same numbers within float32 precision.
		if !approxVectors(r.Decoded, r.Floats) {
			t.Errorf("the vectors the SDK decoded from base64 differ from the float ones")
		}
		if !approxVectors([][]float64{r.FromBase64}, r.Floats[:1]) {
			t.Errorf("encoding_format base64 decodes to %d numbers that differ from the float vector", len(r.FromBase64))
		}
		wantEqual(t, "length with dimensions 8", r.ShortLength, 8)
		if r.Usage.PromptTokens <= 0 || r.Usage.TotalTokens != r.Usage.PromptTokens {
			t.Errorf("usage = %+v, want the input's tokens", r.Usage)
		}
		wantCalls(t, s, 0)
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
	{"langchain/params", func(t *testing.T, s scenarioRun) {
		wantEqual(t, "content", field(t, s, "content"), "echo: [langchain/params] hello")
		wantCalls(t, s, 1)
	}},
	{"langchain/bindTools", func(t *testing.T, s scenarioRun) {
		var r struct {
			ToolCalls []struct {
				Name string
				Args map[string]any
			} `json:"tool_calls"`
			Content string
		}
		decodeResult(t, s, &r)
		if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "get_weather" || r.ToolCalls[0].Args["city"] != "Paris" {
			t.Errorf("AIMessage.tool_calls = %+v, want one get_weather call for Paris", r.ToolCalls)
		}
		wantEqual(t, "final content", r.Content, "tool results: sunny and 21°C in Paris")
		wantCalls(t, s, 2)
	}},
	{"langchain/structured", checkPerson},
	{"langchain/structuredTools", checkPerson},

	{"openai/image", checkImage},
	{"openai-go/image", checkImage},
	{"openai-go/tools", func(t *testing.T, s scenarioRun) {
		var r struct {
			FinishReason string `json:"finish_reason"`
			Call         toolCallResult
			Content      string
		}
		decodeResult(t, s, &r)
		wantEqual(t, "finish_reason of the call", r.FinishReason, "tool_calls")
		wantEqual(t, "tool call", r.Call, toolCallResult{Name: "get_weather", Arguments: map[string]any{"city": "Paris"}})
		wantEqual(t, "final content", r.Content, "tool results: sunny and 21°C in Paris")
		wantCalls(t, s, 2)
	}},
	{"openai-go/responses", func(t *testing.T, s scenarioRun) {
		var r struct {
			OutputText string `json:"output_text"`
			Status     string
			Streamed   string
			Types      []string
		}
		decodeResult(t, s, &r)
		wantEqual(t, "output_text", r.OutputText, "echo: [openai-go/responses] hello")
		wantEqual(t, "status", r.Status, "completed")
		wantEqual(t, "streamed text", r.Streamed, "echo: [openai-go/responses] stream this answer")
		if len(r.Types) == 0 || r.Types[0] != "response.created" || r.Types[len(r.Types)-1] != "response.completed" {
			t.Errorf("events %v, want response.created first and response.completed last", r.Types)
		}
		wantCalls(t, s, 2)
	}},
	{"openai-go/embeddings", func(t *testing.T, s scenarioRun) {
		var r struct {
			Lengths      []int
			PromptTokens int `json:"prompt_tokens"`
		}
		decodeResult(t, s, &r)
		if len(r.Lengths) != 2 || r.Lengths[0] == 0 || r.Lengths[0] != r.Lengths[1] {
			t.Errorf("vectors of lengths %v, want two of the same length", r.Lengths)
		}
		if r.PromptTokens <= 0 {
			t.Errorf("usage.prompt_tokens = %d, want the input's tokens", r.PromptTokens)
		}
		wantCalls(t, s, 0)
	}},

	{"aisdk/chatText", func(t *testing.T, s scenarioRun) { checkAIText(t, s, "echo: [aisdk/chatText] hello", false) }},
	{"aisdk/chatStream", func(t *testing.T, s scenarioRun) {
		checkAIText(t, s, "echo: [aisdk/chatStream] stream this answer in several pieces", true)
	}},
	{"aisdk/chatTools", checkAITools},
	{"aisdk/chatParams", func(t *testing.T, s scenarioRun) {
		wantEqual(t, "text", field(t, s, "text"), "echo: [aisdk/chatParams] hello")
		wantCalls(t, s, 1)
	}},
	{"aisdk/responsesText", func(t *testing.T, s scenarioRun) { checkAIText(t, s, "echo: [aisdk/responsesText] hello", false) }},
	{"aisdk/responsesStream", func(t *testing.T, s scenarioRun) {
		checkAIText(t, s, "echo: [aisdk/responsesStream] stream this answer in several pieces", true)
	}},
	{"aisdk/responsesTools", checkAITools},
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
			var results map[string]clientResult
			if lib == "openai-go" {
				results = runGoClients(t, g, key, ids)
			} else {
				results = runClients(t, g, key, ids)
			}
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

// pngDataURL is a PNG image as a data: URL, as the image scenarios send
// it (testdata/clients/openai.mjs has the same).
const pngDataURL = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="

// checkImage checks a scenario that asked about the picture pngDataURL:
// the model got the image part as the client sent it (checkForwarded
// compares the rest) and answered.
func checkImage(t *testing.T, s scenarioRun) {
	var r chatAnswer
	decodeResult(t, s, &r)
	if !strings.Contains(r.Content, "what is in this picture?") {
		t.Errorf("content %q, want the fake's echo of the question", r.Content)
	}
	wantCalls(t, s, 1)
	if len(s.calls) == 1 {
		msgs := s.calls[0].Messages
		got := msgs[len(msgs)-1].Parts
		wantEqual(t, "parts received", got, []fakellm.Part{{Type: "image_url", URL: pngDataURL, Detail: "low"}})
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
		"LAMBDACLAW_EMBEDDING_MODEL=default",
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

// scenarioResult decodes the result of scenario id of results into v; a
// scenario without a result, or failed in the client, fails t.
func scenarioResult(t *testing.T, results map[string]clientResult, id string, v any) clientResult {
	t.Helper()
	r, ok := results[id]
	switch {
	case !ok:
		t.Fatalf("no result for %s", id)
	case !r.OK:
		t.Fatalf("%s failed in the client:\n%s\nrequests sent:\n%s", id, r.Error, sentSummary(r.Sent))
	}
	if err := json.Unmarshal(r.Result, v); err != nil {
		t.Fatalf("%s result %s: %v", id, r.Result, err)
	}
	return r
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
// call: POSTs to /v1/chat/completions and /v1/responses that succeeded.
func modelRequests(sent []clientRequest) []clientRequest {
	var out []clientRequest
	for _, r := range sent {
		if r.Method == "POST" && r.Status == http.StatusOK && (strings.HasSuffix(r.Path, "/chat/completions") || strings.HasSuffix(r.Path, "/responses")) {
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
		if diff := cmp.Diff(wantConv, gotConv, ids, cmpopts.IgnoreFields(fakellm.Message{}, "ToolCallID", "Name"), cmpopts.EquateEmpty()); known != someMessages && diff != "" {
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

// chatAnswer is what the openai SDK scenarios report of a chat completion.
type chatAnswer struct {
	Object, Content string
	// Deltas counts the content chunks of a stream.
	Deltas       int
	FinishReason string `json:"finish_reason"`
	Usage        usage
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

// clientError is the status and message of a request a client saw fail.
type clientError struct {
	Status  int
	Message string
}

// toolCallResult is a tool call a client reports.
type toolCallResult struct {
	Name      string
	Arguments map[string]any
}

func checkRunTools(t *testing.T, s scenarioRun) {
	var r struct {
		Content string
		Calls   []map[string]any
		Roles   []string
	}
	decodeResult(t, s, &r)
	wantEqual(t, "local function calls", r.Calls, []map[string]any{{"city": "Paris"}})
	wantEqual(t, "final content", r.Content, "tool results: sunny and 21°C in Paris")
	wantEqual(t, "roles of the runner's messages", r.Roles, []string{"user", "assistant", "tool", "assistant"})
	wantCalls(t, s, 2)
}

// checkPerson checks withStructuredOutput: the fake answers the smallest
// value of the schema, which LangChain parses.
func checkPerson(t *testing.T, s scenarioRun) {
	var r map[string]any
	decodeResult(t, s, &r)
	wantEqual(t, "structured output", r, map[string]any{"name": "", "age": 0.0})
	wantCalls(t, s, 1)
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

func checkAITools(t *testing.T, s scenarioRun) {
	var r struct {
		Text        string
		Steps       int
		ToolCalls   []struct{ Name, Input any }
		ToolResults []string
	}
	decodeResult(t, s, &r)
	wantEqual(t, "tool calls", len(r.ToolCalls), 1)
	if len(r.ToolCalls) == 1 {
		wantEqual(t, "tool call", r.ToolCalls[0], struct{ Name, Input any }{"get_weather", map[string]any{"city": "Paris"}})
	}
	wantEqual(t, "tool results", r.ToolResults, []string{"sunny and 21°C in Paris"})
	wantEqual(t, "text", r.Text, "tool results: sunny and 21°C in Paris")
	wantEqual(t, "steps", r.Steps, 2)
	wantCalls(t, s, 2)
}

// decodeResult decodes a scenario's result into v.
func decodeResult(t *testing.T, s scenarioRun, v any) {
	t.Helper()
	if err := json.Unmarshal(s.Result, v); err != nil {
		t.Fatalf("result of %s: %v\n%s", s.Scenario, err, s.Result)
	}
}

// field returns a string field of a scenario's result.
func field(t *testing.T, s scenarioRun, name string) string {
	t.Helper()
	var m map[string]any
	decodeResult(t, s, &m)
	v, _ := m[name].(string)
	return v
}

func wantEqual[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
}

func lengths(vs [][]float64) []int {
	var out []int
	for _, v := range vs {
		out = append(out, len(v))
	}
	return out
}

// approxVectors reports whether two lists of vectors are equal within
// float32 precision.
func approxVectors(a, b [][]float64) bool {
	return slices.EqualFunc(a, b, func(x, y []float64) bool {
		return slices.EqualFunc(x, y, func(p, q float64) bool {
			return math.Abs(p-q) <= 1e-6*math.Max(1, math.Abs(q))
		})
	})
}
