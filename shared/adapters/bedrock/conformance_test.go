package bedrock

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm/llmtest"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory/memorytest"
)

// TestConformance runs the provider suite against a fake of the Bedrock
// runtime's Converse and ConverseStream APIs.
func TestConformance(t *testing.T) {
	llmtest.Run(t, llmtest.Harness{Secret: converseTestSecret, Start: startConverseFake, Params: converseParams})
}

// timeTool is llmtest.TimeTool as Converse is offered it.
const timeTool = `{"toolSpec":{"name":"get_time","description":"The time.","inputSchema":{"json":{"type":"object","properties":{}}}}}`

// converseParams are the settings Converse is sent for each of the suite's
// parameter cases, or their refusal: the sampling settings in
// inferenceConfig, the tool choice in toolConfig ("none" by offering no
// tools), the format and the effort in outputConfig, the metadata and the
// user in requestMetadata. Penalties of zero are the default, so nothing;
// one call at a time is kept in the reply, not sent.
var converseParams = map[string]string{
	"sampling":            `{"inferenceConfig":{"maxTokens":64,"temperature":0.5,"topP":0.25,"stopSequences":["END","STOP"]}}`,
	"zero temperature":    `{"inferenceConfig":{"temperature":0}}`,
	"temperature above 1": llmtest.Refused,
	"seed":                llmtest.Refused,
	"penalties":           llmtest.Refused,
	"neutral penalties":   `{}`,
	"text format":         `{}`,
	"json object":         llmtest.Refused,
	"json schema": `{"outputConfig":{"textFormat":{"type":"json_schema","structure":{"jsonSchema":{"name":"person","description":"A person.","schema":` +
		mustJSON(llmtest.PersonSchema) + `}}}}}`,
	"reasoning effort":            `{"outputConfig":{"effort":"low"}}`,
	"minimal reasoning effort":    llmtest.Refused,
	"user and metadata":           `{"requestMetadata":{"team":"blue","trace":"a1:b2","user":"user-42"}}`,
	"metadata of any characters":  llmtest.Refused,
	"stored with metadata":        `{"requestMetadata":{"team":"blue"}}`,
	"tool choice auto":            `{"toolConfig":{"tools":[` + timeTool + `],"toolChoice":{"auto":{}}}}`,
	"tool choice required":        `{"toolConfig":{"tools":[` + timeTool + `],"toolChoice":{"any":{}}}}`,
	"tool choice function":        `{"toolConfig":{"tools":[` + timeTool + `],"toolChoice":{"tool":{"name":"get_time"}}}}`,
	"tool choice none":            `{}`,
	"one tool call at a time":     `{"toolConfig":{"tools":[` + timeTool + `]}}`,
	"parallel tool calls":         `{"toolConfig":{"tools":[` + timeTool + `]}}`,
	"tool settings without tools": `{}`,
}

// startConverseFake starts a fake Bedrock runtime answering as s says,
// and a Converse provider pointed at it with credentials from the
// environment.
func startConverseFake(t *testing.T, cfg llmtest.Config, s *llmtest.Script) llm.Provider {
	t.Helper()
	read := func(r *http.Request) (llmtest.Call, error) {
		call, ok := readConverseCall(t, r)
		if !ok {
			return llmtest.Call{}, fmt.Errorf("%s %s is no call to Converse", r.Method, r.URL.Path)
		}
		return call.portCall()
	}
	url := llmtest.Serve(t, cfg.Down, read, func(w http.ResponseWriter, r *http.Request, c llmtest.Call) {
		a, done := s.Next(c)
		defer done()
		answerConverse(t, w, r, c.Stream, a)
	})
	isolateAWS(t, "")
	c, err := NewConverse(context.Background(), ConverseConfig{
		Name: llmtest.Name, Region: "eu-west-3", Model: llmtest.Model, Timeout: cfg.Timeout,
		Endpoint: url, MaxReplyBytes: cfg.MaxReplyBytes, Input: cfg.Input,
	})
	if err != nil {
		t.Fatalf("NewConverse: %v", err)
	}
	return c
}

// converseBody is the body of a Converse or ConverseStream call as the
// API reference gives it: the part of it lambdaclaw sends, and nothing
// else.
type converseBody struct {
	System []struct {
		Text string `json:"text"`
	} `json:"system"`
	Messages []struct {
		Role    string `json:"role"`
		Content []struct {
			Text  *string `json:"text"`
			Image *struct {
				Format string `json:"format"`
				Source struct {
					Bytes []byte `json:"bytes"`
				} `json:"source"`
			} `json:"image"`
			Document *struct {
				Format string `json:"format"`
				Name   string `json:"name"`
				Source struct {
					Bytes []byte `json:"bytes"`
				} `json:"source"`
			} `json:"document"`
			ToolUse *struct {
				ToolUseID string          `json:"toolUseId"`
				Name      string          `json:"name"`
				Input     json.RawMessage `json:"input"`
			} `json:"toolUse"`
			ToolResult *struct {
				ToolUseID string `json:"toolUseId"`
				Content   []struct {
					Text string `json:"text"`
				} `json:"content"`
				Status string `json:"status"`
			} `json:"toolResult"`
		} `json:"content"`
	} `json:"messages"`
	ToolConfig *struct {
		Tools []struct {
			ToolSpec struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				InputSchema struct {
					JSON json.RawMessage `json:"json"`
				} `json:"inputSchema"`
			} `json:"toolSpec"`
		} `json:"tools"`
		// ToolChoice is a union: one member is set.
		ToolChoice *struct {
			Auto *struct{} `json:"auto"`
			Any  *struct{} `json:"any"`
			Tool *struct {
				Name string `json:"name"`
			} `json:"tool"`
		} `json:"toolChoice"`
	} `json:"toolConfig"`
	InferenceConfig *struct {
		MaxTokens     int      `json:"maxTokens"`
		Temperature   *float64 `json:"temperature"`
		TopP          *float64 `json:"topP"`
		StopSequences []string `json:"stopSequences"`
	} `json:"inferenceConfig"`
	OutputConfig *struct {
		Effort     string `json:"effort"`
		TextFormat *struct {
			Type      string `json:"type"`
			Structure struct {
				JSONSchema struct {
					Schema      string `json:"schema"`
					Name        string `json:"name"`
					Description string `json:"description"`
				} `json:"jsonSchema"`
			} `json:"structure"`
		} `json:"textFormat"`
	} `json:"outputConfig"`
	RequestMetadata map[string]string `json:"requestMetadata"`
}

// settings is the body of a call but its system prompt and messages.
func (call converseCall) settings() (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(call.raw, &fields); err != nil {
		return nil, err
	}
	delete(fields, "system")
	delete(fields, "messages")
	return json.Marshal(fields)
}

// portCall reads the call strictly (an unknown field is an error) into
// the port's terms: system blocks first, as system messages; the
// toolResult blocks of a user message as tool messages ahead of its text.
func (call converseCall) portCall() (llmtest.Call, error) {
	var body converseBody
	dec := json.NewDecoder(bytes.NewReader(call.raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		return llmtest.Call{}, fmt.Errorf("request %s: %w", call.raw, err)
	}
	c := llmtest.Call{Model: call.model, Stream: call.op == "converse-stream"}
	for _, s := range body.System {
		c.Messages = append(c.Messages, chat.Message{Role: chat.System, Content: s.Text})
	}
	for _, m := range body.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return c, fmt.Errorf("message of role %q", m.Role)
		}
		msg := chat.Message{Role: chat.Role(m.Role)}
		for _, b := range m.Content {
			switch {
			case b.Text != nil:
				msg.Content += *b.Text
			case b.Image != nil && m.Role == "user":
				msg.Parts = append(msg.Parts, chat.Part{Type: chat.PartImage, MediaType: "image/" + b.Image.Format, Data: b.Image.Source.Bytes})
			case b.Document != nil && m.Role == "user":
				mt := map[string]string{"pdf": "application/pdf", "txt": "text/plain", "csv": "text/csv"}[b.Document.Format]
				msg.Parts = append(msg.Parts, chat.Part{Type: chat.PartFile, MediaType: mt, Name: b.Document.Name, Data: b.Document.Source.Bytes})
			case b.ToolUse != nil:
				msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: b.ToolUse.ToolUseID, Name: b.ToolUse.Name, Arguments: string(b.ToolUse.Input)})
			case b.ToolResult != nil && m.Role == "user" && len(b.ToolResult.Content) == 1:
				c.Messages = append(c.Messages, chat.Message{Role: chat.Tool, ToolCallID: b.ToolResult.ToolUseID, Content: b.ToolResult.Content[0].Text})
			default:
				return c, fmt.Errorf("content block %+v in a message of role %s", b, m.Role)
			}
		}
		if msg.Content != "" || msg.ToolCalls != nil || msg.Parts != nil {
			c.Messages = append(c.Messages, msg)
		}
	}
	if body.ToolConfig != nil {
		for _, tool := range body.ToolConfig.Tools {
			spec := tool.ToolSpec
			c.Tools = append(c.Tools, chat.ToolDef{Name: spec.Name, Description: spec.Description, Parameters: spec.InputSchema.JSON})
		}
	}
	if body.InferenceConfig != nil {
		c.MaxTokens = body.InferenceConfig.MaxTokens
	}
	if tc := body.ToolConfig; tc != nil && tc.ToolChoice != nil {
		ch := tc.ToolChoice
		if n := btoi(ch.Auto != nil) + btoi(ch.Any != nil) + btoi(ch.Tool != nil); n != 1 {
			return c, fmt.Errorf("toolChoice %s sets %d members of its union", call.raw, n)
		}
	}
	if oc := body.OutputConfig; oc != nil && oc.TextFormat != nil && (oc.TextFormat.Type != "json_schema" || !json.Valid([]byte(oc.TextFormat.Structure.JSONSchema.Schema))) {
		return c, fmt.Errorf("textFormat of %s is not a JSON schema given as text", call.raw)
	}
	var err error
	c.Settings, err = call.settings()
	return c, err
}

// stopReasons are Bedrock's names of the port's finish reasons.
var stopReasons = map[string]string{"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens", "content_filter": "content_filtered"}

// answerConverse answers a call as a, in Bedrock's wire format.
func answerConverse(t *testing.T, w http.ResponseWriter, r *http.Request, stream bool, a llmtest.Answer) {
	switch {
	case llmtest.Hold(t, w, r, a.End):
	case a.Failure != nil && len(a.Pieces) == 0:
		writeFailure(w, *a.Failure)
	case stream:
		streamConverse(t, w, r, a)
	default:
		llmtest.WriteWhole(t, w, r, "application/json", converseOutput(a), a.End)
	}
}

// converseOutput is the answer to a Converse call holding a.
func converseOutput(a llmtest.Answer) string {
	m := llmtest.Assemble(a.Pieces)
	blocks := []any{}
	if m.Content != "" {
		blocks = append(blocks, map[string]string{"text": m.Content})
	}
	for _, c := range m.ToolCalls {
		blocks = append(blocks, map[string]any{"toolUse": map[string]any{"toolUseId": c.ID, "name": c.Name, "input": json.RawMessage(c.Arguments)}})
	}
	return llmtest.ASCIIJSON(map[string]any{
		"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": blocks}},
		"stopReason": stopReasons[a.Finish],
		"usage":      converseUsage(a.Usage),
		"metrics":    map[string]int{"latencyMs": 1},
	})
}

// streamConverse answers a ConverseStream call with event-stream frames:
// messageStart, one frame per piece (text in content block 0, tool call i
// in block i+1), then as a says.
func streamConverse(t *testing.T, w http.ResponseWriter, r *http.Request, a llmtest.Answer) {
	writeEventStream(w, append([][]byte{eventFrame("messageStart", `{"p":"abcdefghijklmnop","role":"assistant"}`)}, frames(a.Pieces)...)...)
	send := func(frame []byte) {
		w.Write(frame)
		w.(http.Flusher).Flush()
	}
	switch {
	case a.Failure != nil:
		exception := exceptions[a.Failure.Kind]
		send(exceptionFrame(strings.ToLower(exception[:1])+exception[1:], mustJSON(map[string]string{"message": a.Failure.Message})))
	case a.End == llmtest.Stalled:
		<-r.Context().Done()
	case a.End == llmtest.Dropped:
		frame := textFrame(0, " more")
		llmtest.DropStream(t, w, frame[:len(frame)/2])
	case a.End == llmtest.Unfinished:
	case a.End == llmtest.Malformed:
		send(eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":`))
	case a.End == llmtest.Endless:
		llmtest.Repeat(w, r, textFrame(0, "and on and on"))
	default:
		send(eventFrame("messageStop", mustJSON(map[string]string{"p": "abc", "stopReason": stopReasons[a.Finish]})))
		send(eventFrame("metadata", mustJSON(map[string]any{"metrics": map[string]int{"latencyMs": 1}, "usage": converseUsage(a.Usage)})))
	}
}

// frames encodes streamed pieces as ConverseStream events: text in block
// 0, tool call i in block i+1, started by its first piece.
func frames(pieces []llmtest.Piece) [][]byte {
	var out [][]byte
	for _, p := range pieces {
		if !p.IsCall {
			out = append(out, textFrame(0, p.Text))
			continue
		}
		if p.ID != "" || p.Name != "" {
			out = append(out, eventFrame("contentBlockStart", mustJSON(map[string]any{
				"contentBlockIndex": p.Call + 1, "start": map[string]any{"toolUse": map[string]string{"name": p.Name, "toolUseId": p.ID}}})))
		}
		if p.Args != "" {
			out = append(out, eventFrame("contentBlockDelta", mustJSON(map[string]any{
				"contentBlockIndex": p.Call + 1, "delta": map[string]any{"toolUse": map[string]string{"input": p.Args}}})))
		}
	}
	return out
}

// converseUsage is Bedrock's form of u.
func converseUsage(u chat.Usage) map[string]int {
	return map[string]int{"inputTokens": u.PromptTokens, "outputTokens": u.CompletionTokens, "totalTokens": u.TotalTokens}
}

// textFrame is a contentBlockDelta event with text for content block index.
func textFrame(index int, text string) []byte {
	return eventFrame("contentBlockDelta", mustJSON(map[string]any{"contentBlockIndex": index, "delta": map[string]string{"text": text}}))
}

// exceptions are Bedrock's exceptions for the kinds of failure.
var exceptions = map[llmtest.Kind]string{
	llmtest.Unauthorized:    "UnrecognizedClientException",
	llmtest.Forbidden:       "AccessDeniedException",
	llmtest.RateLimited:     "ThrottlingException",
	llmtest.ServerError:     "InternalServerException",
	llmtest.Unavailable:     "ServiceUnavailableException",
	llmtest.ContextOverflow: "ValidationException",
	llmtest.InvalidRequest:  "ValidationException",
}

// writeFailure answers with f as the Bedrock runtime does.
func writeFailure(w http.ResponseWriter, f llmtest.Failure) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	writeBedrockError(w, f.Kind.Status(), exceptions[f.Kind], f.Message)
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestEmbedderConformance runs the embedder suite against a fake of Titan
// Text Embeddings V2 on the Bedrock runtime.
func TestEmbedderConformance(t *testing.T) {
	secret, err := testCredentials.Retrieve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	memorytest.RunEmbedder(t, memorytest.EmbedHarness{Provider: providerName, Secret: secret.SecretAccessKey, Start: startTitanFake})
}

// startTitanFake starts a fake Bedrock runtime answering InvokeModel calls
// as s says, and an embedder pointed at it that makes each call once.
func startTitanFake(t *testing.T, cfg memorytest.EmbedConfig, s *memorytest.EmbedScript) memory.Embedder {
	t.Helper()
	url := llmtest.Serve(t, cfg.Down, readTitanCall, func(w http.ResponseWriter, r *http.Request, call memorytest.EmbedCall) {
		answerTitan(t, w, r, call, s.Next(call))
	})
	e, err := NewEmbedder(context.Background(), EmbedConfig{Region: "us-east-1", Credentials: testCredentials, BaseEndpoint: url, MaxAttempts: 1,
		ModelID: memorytest.EmbedModel, Dimensions: cfg.Dims, Concurrency: cfg.Batch, Timeout: cfg.Timeout})
	if err != nil {
		t.Fatalf("NewEmbedder: %v", err)
	}
	return e
}

// readTitanCall reads an InvokeModel call strictly: POST
// /model/{modelId}/invoke with Titan V2's body.
func readTitanCall(r *http.Request) (memorytest.EmbedCall, error) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/model/")
	model, ok2 := strings.CutSuffix(rest, "/invoke")
	if r.Method != http.MethodPost || !ok || !ok2 {
		return memorytest.EmbedCall{}, fmt.Errorf("%s %s, want POST /model/{modelId}/invoke", r.Method, r.URL.Path)
	}
	var req titanRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return memorytest.EmbedCall{}, fmt.Errorf("request: %w", err)
	}
	return memorytest.EmbedCall{Model: model, Dims: req.Dimensions, Texts: []string{req.InputText}}, nil
}

// answerTitan answers call as a, as Titan V2 does.
func answerTitan(t *testing.T, w http.ResponseWriter, r *http.Request, call memorytest.EmbedCall, a memorytest.EmbedAnswer) {
	switch {
	case llmtest.Hold(t, w, r, a.End):
	case a.Failure != nil:
		writeFailure(w, *a.Failure)
	default:
		v := memorytest.EmbedVector(call.Texts[0], cmp.Or(a.Dims, call.Dims))
		body := mustJSON(map[string]any{"embedding": v, "inputTextTokenCount": memorytest.EmbedTokens(call.Texts[0]), "embeddingsByType": map[string]any{"float": v}})
		llmtest.WriteWhole(t, w, r, "application/json", body, a.End)
	}
}
