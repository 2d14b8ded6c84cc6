package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/apigw"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

func setup(t *testing.T) (*cloudtest.Env, apigw.StreamHandler) {
	env := cloudtest.Setup(t)
	h, err := handler(t.Context())
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	return env, h
}

// invoke sends a sample request and returns the streamed response with
// its whole body.
func invoke(t *testing.T, h apigw.StreamHandler, ev events.APIGatewayProxyRequest) (*events.LambdaFunctionURLStreamingResponse, string) {
	t.Helper()
	resp, err := h(t.Context(), ev)
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func sample(t *testing.T, name string) events.APIGatewayProxyRequest {
	var ev events.APIGatewayProxyRequest
	cloudtest.LoadEvent(t, "api/"+name, &ev)
	return ev
}

type completion struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
}

func decode(t *testing.T, body string) completion {
	t.Helper()
	var c completion
	if err := json.Unmarshal([]byte(body), &c); err != nil {
		t.Fatalf("response %q: %v", body, err)
	}
	return c
}

// TestHealthWireFormat reads the response as API Gateway does: a JSON
// prelude, eight NUL bytes, then the body.
func TestHealthWireFormat(t *testing.T) {
	_, h := setup(t)
	resp, err := h(t.Context(), sample(t, "health.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(resp)
	if err != nil {
		t.Fatal(err)
	}
	prelude, body, ok := bytes.Cut(raw, make([]byte, 8))
	if !ok {
		t.Fatalf("no 8-NUL delimiter in %q", raw)
	}
	var p struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(prelude, &p); err != nil {
		t.Fatalf("prelude %q: %v", prelude, err)
	}
	if p.StatusCode != http.StatusOK || p.Headers["Content-Type"] != "application/json" {
		t.Errorf("prelude = %+v", p)
	}
	if !strings.Contains(string(body), `"status":"ok"`) {
		t.Errorf("body = %q", body)
	}
}

// TestModels also checks that responses keep the gateway's request id
// through API Gateway's streaming format.
func TestModels(t *testing.T) {
	_, h := setup(t)
	resp, body := invoke(t, h, sample(t, "models.json"))
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"id":"default"`) {
		t.Errorf("GET /v1/models = %d %s", resp.StatusCode, body)
	}
	first := resp.Headers[gateway.RequestIDHeader]
	ev := sample(t, "models.json")
	ev.Headers["Authorization"] = "Bearer lc_wrong"
	ev.MultiValueHeaders["Authorization"] = []string{"Bearer lc_wrong"}
	resp, body = invoke(t, h, ev)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("with a wrong key: %d %s", resp.StatusCode, body)
	}
	second := resp.Headers[gateway.RequestIDHeader]
	if !strings.HasPrefix(first, "req_") || !strings.HasPrefix(second, "req_") || first == second {
		t.Errorf("request ids %q and %q: want two different generated ids", first, second)
	}
}

// TestStatelessCompletion runs inline: nothing goes through Step
// Functions, nothing stays in the table.
func TestStatelessCompletion(t *testing.T) {
	env, h := setup(t)
	resp, body := invoke(t, h, sample(t, "chat-completions.json"))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if got := decode(t, body).Choices[0].Message.Content; got != "echo: What is a lambda?" {
		t.Errorf("content = %q", got)
	}
	if started := env.SFN.Started(); len(started) != 0 {
		t.Errorf("a stateless request started executions %v", started)
	}
	reqs := env.LLM.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests", len(reqs))
	}
	var roles []string
	for _, m := range reqs[0].Messages {
		roles = append(roles, m.Role)
	}
	// The workspace templates and the skills, then the client's messages.
	if n := len(roles); n < 4 || roles[n-2] != "system" || roles[n-1] != "user" || !strings.HasPrefix(reqs[0].Messages[0].Content, "## IDENTITY.md") {
		t.Errorf("request messages: %v; first %q", roles, reqs[0].Messages[0].Content)
	}
}

func TestStreamingCompletion(t *testing.T) {
	_, h := setup(t)
	resp, body := invoke(t, h, sample(t, "chat-completions-stream.json"))
	if resp.StatusCode != http.StatusOK || resp.Headers["Content-Type"] != "text/event-stream" {
		t.Fatalf("status %d, headers %v", resp.StatusCode, resp.Headers)
	}
	var content string
	var usage bool
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				TotalTokens int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		for _, c := range chunk.Choices {
			content += c.Delta.Content
		}
		usage = usage || (chunk.Usage != nil && chunk.Usage.TotalTokens > 0)
	}
	if content != "echo: Stream me a greeting." || !usage || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("streamed %q (usage %v):\n%s", content, usage, body)
	}
}

// TestStatefulCompletion sends the session sample twice: each goes
// through the state machine (played by the fake with the step handler),
// the response waits for the run, and the second turn sees the first.
func TestStatefulCompletion(t *testing.T) {
	env, h := setup(t)
	env.PlayStep(t)

	ev := sample(t, "chat-completions-session.json")
	resp, body := invoke(t, h, ev)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if got := decode(t, body).Choices[0].Message.Content; got != "echo: Remember that my favourite colour is teal." {
		t.Errorf("content = %q", got)
	}
	ev.Body = `{"model":"default","messages":[{"role":"user","content":"What is my favourite colour?"}]}`
	resp, body = invoke(t, h, ev)
	if got := decode(t, body).Choices[0].Message.Content; resp.StatusCode != http.StatusOK || got != "echo: What is my favourite colour?" {
		t.Errorf("second turn: %d %q", resp.StatusCode, got)
	}
	started := env.SFN.Started()
	if len(started) != 2 {
		t.Fatalf("executions %v, want one per turn", started)
	}
	for _, name := range started {
		if e := env.SFN.Wait(name, 5*time.Second); e.Err != nil {
			t.Errorf("execution %s: %v", name, e.Err)
		}
	}
	reqs := env.LLM.Requests()
	var convo []string
	for _, m := range reqs[len(reqs)-1].Messages {
		if m.Role != "system" {
			convo = append(convo, m.Role+": "+m.Content)
		}
	}
	want := []string{
		"user: Remember that my favourite colour is teal.",
		"assistant: echo: Remember that my favourite colour is teal.",
		"user: What is my favourite colour?",
	}
	if diff := cmp.Diff(want, convo); diff != "" {
		t.Errorf("second turn's conversation (-want +got):\n%s", diff)
	}
	_, sid := agent.Identity{}.Session("default", "api", env.Key.ID, ev.Headers[gateway.SessionHeader])
	msgs, err := env.Store.Messages(t.Context(), sid)
	if err != nil || len(msgs) != 4 {
		t.Errorf("history in the table: %d messages, %v; want 4", len(msgs), err)
	}
}

// TestSessionBelongsToKey sends the session sample with a second key: it
// meets a session of its own, and the first key's history stays unseen.
func TestSessionBelongsToKey(t *testing.T) {
	env, h := setup(t)
	env.PlayStep(t)
	const otherKey = "lc_OtherKeyOfTheOwnershipTest00000000000000000" // 46 characters, as keys are
	other := store.APIKey{ID: "key_other", Name: "other", Hash: apikey.Hash(otherKey), Prefix: otherKey[:9], Autonomy: "supervised", CreatedAt: time.Now().UTC()}
	if err := env.Store.CreateKey(t.Context(), other); err != nil {
		t.Fatal(err)
	}

	ev := sample(t, "chat-completions-session.json")
	if resp, body := invoke(t, h, ev); resp.StatusCode != http.StatusOK {
		t.Fatalf("first key: status %d: %s", resp.StatusCode, body)
	}
	ev.Headers["Authorization"] = "Bearer " + otherKey
	ev.MultiValueHeaders["Authorization"] = []string{"Bearer " + otherKey}
	ev.Body = `{"model":"default","messages":[{"role":"user","content":"What is my favourite colour?"}]}`
	if resp, body := invoke(t, h, ev); resp.StatusCode != http.StatusOK {
		t.Fatalf("second key: status %d: %s", resp.StatusCode, body)
	}
	for _, name := range env.SFN.Started() {
		if e := env.SFN.Wait(name, 5*time.Second); e.Err != nil {
			t.Errorf("execution %s: %v", name, e.Err)
		}
	}
	reqs := env.LLM.Requests()
	for _, m := range reqs[len(reqs)-1].Messages {
		if strings.Contains(m.Content, "teal") {
			t.Errorf("the second key's turn saw the first key's history: %q", m.Content)
		}
	}
	for _, k := range []store.APIKey{env.Key, other} {
		owner, sid := agent.Identity{}.Session("default", "api", k.ID, ev.Headers[gateway.SessionHeader])
		sess, err := env.Store.GetSession(t.Context(), sid)
		if err != nil || sess.Owner != owner {
			t.Errorf("session of %s = %+v, %v; want owned by %s", k.ID, sess, err, owner)
		}
	}
}

// titanFake stands in for the Bedrock runtime: it answers Titan Text
// Embeddings V2 calls with a vector whose first value is the text's
// length, and counts a token per word. It records the calls.
type titanFake struct {
	*httptest.Server
	mu    sync.Mutex
	calls []titanCall
}

type titanCall struct {
	Path       string
	Text       string
	Dimensions int
}

func newTitanFake(t *testing.T) *titanFake {
	f := &titanFake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			InputText  string `json:"inputText"`
			Dimensions int    `json:"dimensions"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("Titan request: %v", err)
		}
		f.mu.Lock()
		f.calls = append(f.calls, titanCall{r.URL.Path, req.InputText, req.Dimensions})
		f.mu.Unlock()
		v := make([]float32, req.Dimensions)
		v[0] = float32(len(req.InputText))
		json.NewEncoder(w).Encode(map[string]any{"embedding": v, "inputTextTokenCount": len(strings.Fields(req.InputText))})
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *titanFake) received() []titanCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]titanCall(nil), f.calls...)
}

// TestEmbeddings sends the embeddings sample: the api function embeds
// with the Titan model BEDROCK_EMBED_MODEL names, at the length asked
// for, with Titan's token counts; a length Titan does not make and an
// agent the key may not use are refused without a call.
func TestEmbeddings(t *testing.T) {
	env := cloudtest.Setup(t)
	titan := newTitanFake(t)
	t.Setenv("BEDROCK_EMBED_MODEL", "amazon.titan-embed-text-v2:0")
	t.Setenv("BEDROCK_ENDPOINT", titan.URL)
	t.Setenv("AGENTS_CONFIG", `{"writer":{}}`)
	h, err := handler(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	resp, body := invoke(t, h, sample(t, "embeddings.json"))
	if resp.StatusCode != http.StatusOK || resp.Headers["Content-Type"] != "application/json" {
		t.Fatalf("status %d, headers %v: %s", resp.StatusCode, resp.Headers, body)
	}
	var got struct {
		Object string `json:"object"`
		Data   []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
		Model string         `json:"model"`
		Usage map[string]int `json:"usage"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("answer %q: %v", body, err)
	}
	texts := []string{"What is a lambda?", "A function without a name."}
	if len(got.Data) != 2 || got.Object != "list" || got.Model != "default" {
		t.Fatalf("answer %s: want a list of 2 embeddings of model default", body)
	}
	for i, d := range got.Data {
		if d.Index != i || len(d.Embedding) != 256 || d.Embedding[0] != float32(len(texts[i])) {
			t.Errorf("data[%d]: index %d, %d dimensions, first %v; want the vector of %q at 256", i, d.Index, len(d.Embedding), d.Embedding[0], texts[i])
		}
	}
	if diff := cmp.Diff(map[string]int{"prompt_tokens": 9, "total_tokens": 9}, got.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	calls := titan.received()
	if len(calls) != 2 {
		t.Fatalf("%d Titan calls, want 2", len(calls))
	}
	for _, c := range calls {
		if c.Path != "/model/amazon.titan-embed-text-v2:0/invoke" || c.Dimensions != 256 {
			t.Errorf("Titan call %+v, want the model at 256 dimensions", c)
		}
	}

	const writerKey = "lc_WriterKeyOfTheEmbeddingsTest000000000000000"
	writer := store.APIKey{ID: "key_writer", Name: "writer", Hash: apikey.Hash(writerKey), Prefix: writerKey[:9],
		Agents: []string{"writer"}, Autonomy: "supervised", CreatedAt: time.Now().UTC()}
	if err := env.Store.CreateKey(t.Context(), writer); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, key, body string
		status          int
		code            string
	}{
		{"a length Titan does not make", cloudtest.SampleKey, `{"model":"default","input":"a","dimensions":300}`, http.StatusBadRequest, "invalid_dimensions"},
		{"an agent the key may not use", writerKey, `{"model":"default","input":"a"}`, http.StatusNotFound, "model_not_found"},
	} {
		ev := sample(t, "embeddings.json")
		ev.Headers["Authorization"] = "Bearer " + tt.key
		ev.MultiValueHeaders["Authorization"] = []string{"Bearer " + tt.key}
		ev.Body = tt.body
		resp, body := invoke(t, h, ev)
		if c := decode(t, body); resp.StatusCode != tt.status || c.Error == nil || c.Error.Code != tt.code {
			t.Errorf("%s: %d %s, want %d %s", tt.name, resp.StatusCode, body, tt.status, tt.code)
		}
	}
	if n := len(titan.received()); n != 2 {
		t.Errorf("%d Titan calls after the refused requests, want still 2", n)
	}
	ev := sample(t, "embeddings.json")
	ev.Headers["Authorization"] = "Bearer " + writerKey
	ev.MultiValueHeaders["Authorization"] = []string{"Bearer " + writerKey}
	ev.Body = `{"model":"writer","input":"a"}`
	if resp, body := invoke(t, h, ev); resp.StatusCode != http.StatusOK {
		t.Errorf("the key's own agent: %d %s", resp.StatusCode, body)
	}
}

// TestEmbeddingsNotConfigured: without BEDROCK_EMBED_MODEL the endpoint
// says so.
func TestEmbeddingsNotConfigured(t *testing.T) {
	cloudtest.Setup(t)
	t.Setenv("BEDROCK_EMBED_MODEL", "")
	h, err := handler(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	resp, body := invoke(t, h, sample(t, "embeddings.json"))
	if c := decode(t, body); resp.StatusCode != http.StatusBadRequest || c.Error == nil || c.Error.Code != "embeddings_not_configured" {
		t.Errorf("%d %s, want 400 embeddings_not_configured", resp.StatusCode, body)
	}
}

// TestModelsCreated: the agents of a deployment were created with its
// table, the same time in every answer.
func TestModelsCreated(t *testing.T) {
	env := cloudtest.Setup(t)
	t.Setenv("AGENTS_CONFIG", `{"writer":{}}`)
	h, err := handler(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	created := env.Store.Created().Unix()
	want := []map[string]any{
		{"id": "default", "object": "model", "created": float64(created), "owned_by": "lambdaclaw"},
		{"id": "writer", "object": "model", "created": float64(created), "owned_by": "lambdaclaw"},
	}
	for range 2 {
		resp, body := invoke(t, h, sample(t, "models.json"))
		var list struct {
			Data []map[string]any `json:"data"`
		}
		if err := json.Unmarshal([]byte(body), &list); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/models = %d %s (%v)", resp.StatusCode, body, err)
		}
		if diff := cmp.Diff(want, list.Data); diff != "" {
			t.Errorf("models (-want +got):\n%s", diff)
		}
	}
}

// response is what the tests read of a Responses API response.
type response struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Output []struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		CallID  string `json:"call_id"`
		Name    string `json:"name"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage *struct {
		InputTokens int `json:"input_tokens"`
		TotalTokens int `json:"total_tokens"`
	} `json:"usage"`
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
}

// text is the text of the response's message, if any.
func (r response) text() string {
	for _, o := range r.Output {
		if o.Type == "message" && len(o.Content) > 0 {
			return o.Content[0].Text
		}
	}
	return ""
}

// respond sends the responses sample with body and returns the answer,
// which must be 200.
func respond(t *testing.T, h apigw.StreamHandler, body string) (response, string) {
	t.Helper()
	ev := sample(t, "responses.json")
	if body != "" {
		ev.Body = body
	}
	resp, raw := invoke(t, h, ev)
	var r response
	if err := json.Unmarshal([]byte(raw), &r); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/responses %s = %d %s (%v)", ev.Body, resp.StatusCode, raw, err)
	}
	return r, raw
}

// getResponse sends the GET sample for id and returns the status and body.
func getResponse(t *testing.T, h apigw.StreamHandler, id string) (int, string) {
	t.Helper()
	ev := sample(t, "responses-get.json")
	ev.Path = "/v1/responses/" + id
	ev.PathParameters = map[string]string{"id": id}
	ev.RequestContext.Path = "/prod" + ev.Path
	resp, body := invoke(t, h, ev)
	return resp.StatusCode, body
}

// convo is the conversation of the last model call, without system
// messages.
func convo(env *cloudtest.Env) []string {
	reqs := env.LLM.Requests()
	var out []string
	for _, m := range reqs[len(reqs)-1].Messages {
		switch {
		case m.Role == "system":
		case m.Role == "tool":
			out = append(out, "tool "+m.ToolCallID+": "+m.Content)
		case len(m.ToolCalls) > 0:
			out = append(out, m.Role+": "+m.Content+" calls "+m.ToolCalls[0].ID)
		default:
			out = append(out, m.Role+": "+m.Content)
		}
	}
	return out
}

// A response with store false runs inline, like a stateless completion:
// nothing goes through Step Functions, and nothing is kept.
func TestResponsesStateless(t *testing.T) {
	env, h := setup(t)
	r, _ := respond(t, h, `{"model":"default","store":false,"instructions":"Answer in one sentence.","input":"What is a lambda?"}`)
	if r.Status != "completed" || r.text() != "echo: What is a lambda?" || r.Usage == nil || r.Usage.TotalTokens == 0 {
		t.Errorf("response = %+v", r)
	}
	if started := env.SFN.Started(); len(started) != 0 {
		t.Errorf("a response not stored started executions %v", started)
	}
	if status, body := getResponse(t, h, r.ID); status != http.StatusNotFound {
		t.Errorf("GET of a response not stored = %d %s", status, body)
	}
	reqs := env.LLM.Requests()
	if len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "Answer in one sentence.") {
		t.Errorf("%d model calls, want one with the instructions", len(reqs))
	}
}

// A stored response goes through the state machine; GET returns it;
// previous_response_id continues its session; a function call round trip
// goes through the state machine too, the response with the call kept as
// such.
func TestResponsesStored(t *testing.T) {
	env, h := setup(t)
	env.PlayStep(t)

	first, raw := respond(t, h, "")
	if first.Status != "completed" || first.text() != "echo: What is a lambda?" {
		t.Errorf("response = %s", raw)
	}
	if status, body := getResponse(t, h, first.ID); status != http.StatusOK || body != raw {
		t.Errorf("GET = %d\n%s\nwant\n%s", status, body, raw)
	}
	second, _ := respond(t, h, `{"model":"default","previous_response_id":"`+first.ID+`","input":"And a closure?"}`)
	if second.text() != "echo: And a closure?" {
		t.Errorf("second response = %+v", second)
	}
	want := []string{"user: What is a lambda?", "assistant: echo: What is a lambda?", "user: And a closure?"}
	if diff := cmp.Diff(want, convo(env)); diff != "" {
		t.Errorf("second model call's conversation (-want +got):\n%s", diff)
	}

	env.LLM.Enqueue(
		fakellm.Reply{Content: "Let me check.", ToolCalls: []fakellm.ToolCall{{ID: "call_oslo", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}},
		fakellm.Reply{Content: "Rain in Oslo."},
	)
	const tools = `"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]`
	third, raw := respond(t, h, `{"model":"default","previous_response_id":"`+second.ID+`","input":"Weather in Oslo?",`+tools+`}`)
	if len(third.Output) != 2 || third.Output[1].Type != "function_call" || third.Output[1].CallID != "call_oslo" || third.text() != "Let me check." {
		t.Fatalf("response with a call = %s", raw)
	}
	if status, body := getResponse(t, h, third.ID); status != http.StatusOK || body != raw {
		t.Errorf("GET of the response with a call = %d\n%s\nwant\n%s", status, body, raw)
	}
	fourth, _ := respond(t, h, `{"model":"default","previous_response_id":"`+third.ID+`",`+tools+`,`+
		`"input":[{"type":"function_call_output","call_id":"call_oslo","output":"rain, 4°C"}]}`)
	if fourth.text() != "Rain in Oslo." {
		t.Errorf("answer after the output = %+v", fourth)
	}
	want = append(want, "assistant: echo: And a closure?", "user: Weather in Oslo?", "assistant: Let me check. calls call_oslo", "tool call_oslo: rain, 4°C")
	if diff := cmp.Diff(want, convo(env)); diff != "" {
		t.Errorf("conversation after the output (-want +got):\n%s", diff)
	}
	started := env.SFN.Started()
	if len(started) != 4 {
		t.Errorf("executions %v, want one per response", started)
	}
	for _, name := range started {
		if e := env.SFN.Wait(name, 5*time.Second); e.Err != nil {
			t.Errorf("execution %s: %v", name, e.Err)
		}
	}
	// All four are in one session of the key.
	rec, err := env.Store.GetResponse(t.Context(), fourth.ID)
	if err != nil {
		t.Fatal(err)
	}
	if msgs, err := env.Store.Messages(t.Context(), rec.SessionID); err != nil || len(msgs) != 8 {
		t.Errorf("history of the session: %d messages, %v; want 8", len(msgs), err)
	}
	if rec.Owner != "key:"+env.Key.ID || rec.PreviousID != third.ID {
		t.Errorf("record %+v", rec)
	}
}
