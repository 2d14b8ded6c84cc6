package openai

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm/llmtest"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory/memorytest"
)

// TestConformance runs the provider suite against a fake of OpenAI's chat
// completions API.
func TestConformance(t *testing.T) {
	llmtest.Run(t, llmtest.Harness{Secret: testKey, Start: startChatFake, Params: chatParams})
}

// timeTool is llmtest.TimeTool as a chat completions request offers it.
const timeTool = `{"type":"function","function":{"name":"get_time","description":"The time.","parameters":{"type":"object","properties":{}}}}`

// chatParams are the settings a compatible server is sent for each of
// the suite's parameter cases: every one as given, under OpenAI's name;
// the tool choice and parallel_tool_calls only with tools.
var chatParams = map[string]string{
	"sampling":            `{"max_tokens":64,"temperature":0.5,"top_p":0.25,"stop":["END","STOP"]}`,
	"zero temperature":    `{"temperature":0}`,
	"temperature above 1": `{"temperature":1.5}`,
	"seed":                `{"seed":7}`,
	"penalties":           `{"presence_penalty":0.5,"frequency_penalty":-0.5}`,
	"neutral penalties":   `{"presence_penalty":0,"frequency_penalty":0}`,
	"text format":         `{"response_format":{"type":"text"}}`,
	"json object":         `{"response_format":{"type":"json_object"}}`,
	"json schema": `{"response_format":{"type":"json_schema","json_schema":{"name":"person","description":"A person.","schema":` +
		llmtest.PersonSchema + `,"strict":true}}}`,
	"reasoning effort":            `{"reasoning_effort":"low"}`,
	"minimal reasoning effort":    `{"reasoning_effort":"minimal"}`,
	"user and metadata":           `{"user":"user-42","metadata":{"team":"blue","trace":"a1:b2"}}`,
	"metadata of any characters":  `{"metadata":{"note":"déjà vu!"}}`,
	"stored with metadata":        `{"store":true,"metadata":{"team":"blue"}}`,
	"tool choice auto":            `{"tools":[` + timeTool + `],"tool_choice":"auto"}`,
	"tool choice required":        `{"tools":[` + timeTool + `],"tool_choice":"required"}`,
	"tool choice function":        `{"tools":[` + timeTool + `],"tool_choice":{"type":"function","function":{"name":"get_time"}}}`,
	"tool choice none":            `{"tools":[` + timeTool + `],"tool_choice":"none"}`,
	"one tool call at a time":     `{"tools":[` + timeTool + `],"parallel_tool_calls":false}`,
	"parallel tool calls":         `{"tools":[` + timeTool + `],"parallel_tool_calls":true}`,
	"tool settings without tools": `{}`,
}

// startChatFake starts a fake chat completions endpoint answering as s
// says, and a provider pointed at it.
func startChatFake(t *testing.T, cfg llmtest.Config, s *llmtest.Script) llm.Provider {
	t.Helper()
	url := llmtest.Serve(t, cfg.Down, readChatRequest, func(w http.ResponseWriter, r *http.Request, req chatRequest) {
		a, done := s.Next(req.call())
		defer done()
		answerChat(t, w, r, req, a)
	})
	p, err := New(Config{Name: llmtest.Name, BaseURL: url + "/v1", APIKey: testKey, Model: llmtest.Model, Timeout: cfg.Timeout, MaxReplyBytes: cfg.MaxReplyBytes, Input: cfg.Input})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

// chatRequest is a chat completions request as OpenAI documents it: the
// part of it lambdaclaw sends, and nothing else.
type chatRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Role       string       `json:"role"`
		Content    *wireContent `json:"content"`
		ToolCallID string       `json:"tool_call_id"`
		ToolCalls  []wireCall   `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	MaxTokens           int `json:"max_tokens"`
	MaxCompletionTokens int `json:"max_completion_tokens"`
	// settings is the body but the model, the messages and the stream
	// switches.
	settings json.RawMessage
}

// settingNames are the fields of a request besides the conversation and
// the stream switches that lambdaclaw sends, by OpenAI's names. The suite
// compares their values.
var settingNames = []string{
	"tools", "max_tokens", "max_completion_tokens", "temperature", "top_p", "stop", "seed", "presence_penalty",
	"frequency_penalty", "response_format", "reasoning_effort", "user", "metadata", "store", "tool_choice", "parallel_tool_calls",
}

// checkToolChoice checks a tool choice as OpenAI takes it: one of its
// modes, or {"type": "function", "function": {"name": ...}}, and with
// parallel_tool_calls only with tools.
func checkToolChoice(settings map[string]json.RawMessage) error {
	choice, hasChoice := settings["tool_choice"]
	_, hasParallel := settings["parallel_tool_calls"]
	if _, hasTools := settings["tools"]; !hasTools && (hasChoice || hasParallel) {
		return errors.New("tool_choice or parallel_tool_calls without tools")
	}
	if !hasChoice {
		return nil
	}
	var mode string
	if json.Unmarshal(choice, &mode) == nil {
		if mode != "auto" && mode != "none" && mode != "required" {
			return fmt.Errorf("tool_choice %q", mode)
		}
		return nil
	}
	var fn struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	dec := json.NewDecoder(bytes.NewReader(choice))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fn); err != nil || fn.Type != "function" || fn.Function.Name == "" {
		return fmt.Errorf("tool_choice %s is neither a mode nor a function", choice)
	}
	return nil
}

// wireCall is a tool call as OpenAI writes it: in a message, or as a
// streamed delta with its index and only the fields it brings.
type wireCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// readChatRequest reads a POST to /v1/chat/completions strictly: an
// unknown field, or a tool or call that is not a function, is an error.
func readChatRequest(r *http.Request) (chatRequest, error) {
	var req chatRequest
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		return req, fmt.Errorf("%s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
	}
	data, err := io.ReadAll(r.Body)
	if err != nil {
		return req, err
	}
	// The settings are set apart, and the rest read strictly.
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return req, fmt.Errorf("request %s: %w", data, err)
	}
	settings := map[string]json.RawMessage{}
	for _, name := range settingNames {
		if v, ok := fields[name]; ok {
			settings[name] = v
			if name != "tools" && name != "max_tokens" && name != "max_completion_tokens" {
				delete(fields, name)
			}
		}
	}
	if err := checkToolChoice(settings); err != nil {
		return req, err
	}
	rest, err := json.Marshal(fields)
	if err != nil {
		return req, err
	}
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("request %s: %w", data, err)
	}
	if req.settings, err = json.Marshal(settings); err != nil {
		return req, err
	}
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			if c.Type != "function" || c.Index != nil {
				return req, fmt.Errorf("tool call %+v is not a function call", c)
			}
		}
	}
	for _, tool := range req.Tools {
		if tool.Type != "function" {
			return req, fmt.Errorf("tool of type %q", tool.Type)
		}
	}
	if req.Stream != (req.StreamOptions != nil) {
		return req, errors.New("stream_options without stream, or the reverse")
	}
	return req, nil
}

// wireContent is a message's content as Chat Completions documents it: a
// string, or an array of text, image_url, input_audio and file parts,
// read strictly into the port's text and parts.
type wireContent struct {
	text  string
	parts []chat.Part
}

func (c *wireContent) UnmarshalJSON(data []byte) error {
	if json.Unmarshal(data, &c.text) == nil {
		return nil
	}
	var parts []struct {
		Type     string  `json:"type"`
		Text     *string `json:"text"`
		ImageURL *struct {
			URL    string `json:"url"`
			Detail string `json:"detail"`
		} `json:"image_url"`
		InputAudio *struct {
			Data   []byte `json:"data"`
			Format string `json:"format"`
		} `json:"input_audio"`
		File *struct {
			Filename string `json:"filename"`
			FileData string `json:"file_data"`
		} `json:"file"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&parts); err != nil {
		return fmt.Errorf("content %s: %w", data, err)
	}
	for _, p := range parts {
		var err error
		switch {
		case p.Type == "text" && p.Text != nil:
			c.text += *p.Text
		case p.Type == "image_url" && p.ImageURL != nil:
			part := chat.Part{Type: chat.PartImage, URL: p.ImageURL.URL, Detail: p.ImageURL.Detail}
			if strings.HasPrefix(part.URL, "data:") {
				part.MediaType, part.Data, err = fromDataURL(part.URL)
				part.URL = ""
			}
			c.parts = append(c.parts, part)
		case p.Type == "input_audio" && p.InputAudio != nil:
			c.parts = append(c.parts, chat.Part{Type: chat.PartAudio, MediaType: map[string]string{"wav": "audio/wav", "mp3": "audio/mpeg"}[p.InputAudio.Format], Data: p.InputAudio.Data})
		case p.Type == "file" && p.File != nil:
			part := chat.Part{Type: chat.PartFile, Name: p.File.Filename}
			part.MediaType, part.Data, err = fromDataURL(p.File.FileData)
			c.parts = append(c.parts, part)
		default:
			return fmt.Errorf("content part %s is none of Chat Completions' input parts", data)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// fromDataURL reads a base64 data: URL.
func fromDataURL(u string) (string, []byte, error) {
	header, data, ok := strings.Cut(strings.TrimPrefix(u, "data:"), ";base64,")
	if !ok || !strings.HasPrefix(u, "data:") {
		return "", nil, fmt.Errorf("%.40q is no base64 data: URL", u)
	}
	b, err := base64.StdEncoding.DecodeString(data)
	return header, b, err
}

// call is the request in the port's terms.
func (req chatRequest) call() llmtest.Call {
	c := llmtest.Call{Model: req.Model, Stream: req.Stream, MaxTokens: max(req.MaxTokens, req.MaxCompletionTokens), Settings: req.settings}
	for _, m := range req.Messages {
		msg := chat.Message{Role: chat.Role(m.Role), ToolCallID: m.ToolCallID}
		if m.Content != nil {
			msg.Content, msg.Parts = m.Content.text, m.Content.parts
		}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		c.Messages = append(c.Messages, msg)
	}
	for _, tool := range req.Tools {
		c.Tools = append(c.Tools, chat.ToolDef{Name: tool.Function.Name, Description: tool.Function.Description, Parameters: tool.Function.Parameters})
	}
	return c
}

// answerChat answers req as a, in OpenAI's wire format.
func answerChat(t *testing.T, w http.ResponseWriter, r *http.Request, req chatRequest, a llmtest.Answer) {
	switch {
	case llmtest.Hold(t, w, r, a.End):
	case a.Failure != nil && len(a.Pieces) == 0:
		writeFailure(w, *a.Failure)
	case req.Stream:
		streamChat(t, w, r, req, a)
	default:
		llmtest.WriteWhole(t, w, r, "application/json", completion(req.Model, a), a.End)
	}
}

// completion is a chat.completion object holding a.
func completion(model string, a llmtest.Answer) string {
	m := llmtest.Assemble(a.Pieces)
	message := map[string]any{"role": "assistant", "content": m.Content, "refusal": nil}
	if len(m.ToolCalls) > 0 {
		calls := make([]wireCall, len(m.ToolCalls))
		for i, c := range m.ToolCalls {
			calls[i].ID, calls[i].Type = c.ID, "function"
			calls[i].Function.Name, calls[i].Function.Arguments = c.Name, c.Arguments
		}
		message["tool_calls"] = calls
		if m.Content == "" {
			message["content"] = nil
		}
	}
	return llmtest.ASCIIJSON(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": message, "logprobs": nil, "finish_reason": a.Finish}},
		"usage":   wireUsage(a.Usage),
	})
}

// streamChat answers with server-sent chat.completion.chunk events: the
// role, one chunk per piece, then as a says.
func streamChat(t *testing.T, w http.ResponseWriter, r *http.Request, req chatRequest, a llmtest.Answer) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	send := func(data string) {
		fmt.Fprintf(w, "data: %s\n\n", data)
		w.(http.Flusher).Flush()
	}
	send(chatChunk(req.Model, map[string]any{"role": "assistant", "content": ""}, ""))
	for _, p := range a.Pieces {
		send(chatChunk(req.Model, pieceDelta(p), ""))
	}
	switch {
	case a.Failure != nil:
		// As OpenRouter sends it: the status as the code.
		send(mustJSON(map[string]any{"error": map[string]any{"message": a.Failure.Message, "code": a.Failure.Kind.Status()}}))
	case a.End == llmtest.Stalled:
		<-r.Context().Done()
	case a.End == llmtest.Dropped:
		llmtest.DropStream(t, w, []byte(`data: {"id":"chatcmpl-1","obj`))
	case a.End == llmtest.Unfinished:
	case a.End == llmtest.Malformed:
		send(`{"choices": [ {"delta": `)
	case a.End == llmtest.Endless:
		llmtest.Repeat(w, r, []byte("data: "+chatChunk(req.Model, map[string]any{"content": "and on and on"}, "")+"\n\n"))
	default:
		send(chatChunk(req.Model, map[string]any{}, a.Finish))
		if req.StreamOptions.IncludeUsage {
			send(mustJSON(map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": req.Model,
				"choices": []any{}, "usage": wireUsage(a.Usage)}))
		}
		send("[DONE]")
	}
}

// chatChunk is a chat.completion.chunk with delta, and finish as its
// finish reason when set.
func chatChunk(model string, delta map[string]any, finish string) string {
	var reason any
	if finish != "" {
		reason = finish
	}
	return mustJSON(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": reason}},
	})
}

// pieceDelta is the delta of a streamed piece: content, or a tool call's
// delta carrying what the piece brings.
func pieceDelta(p llmtest.Piece) map[string]any {
	if !p.IsCall {
		return map[string]any{"content": p.Text}
	}
	c := wireCall{Index: &p.Call, ID: p.ID}
	if p.ID != "" {
		c.Type = "function"
	}
	c.Function.Name, c.Function.Arguments = p.Name, p.Args
	return map[string]any{"tool_calls": []wireCall{c}}
}

func wireUsage(u chat.Usage) map[string]int {
	return map[string]int{"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "total_tokens": u.TotalTokens}
}

// writeFailure answers with f as OpenAI does: its status, and the error's
// message, type and code.
func writeFailure(w http.ResponseWriter, f llmtest.Failure) {
	typ, code := "invalid_request_error", any(nil)
	switch f.Kind {
	case llmtest.Unauthorized:
		code = "invalid_api_key"
	case llmtest.Forbidden:
		code = "model_not_found"
	case llmtest.RateLimited:
		typ, code = "requests", "rate_limit_exceeded"
	case llmtest.ServerError, llmtest.Unavailable:
		typ = "server_error"
	case llmtest.ContextOverflow:
		code = "context_length_exceeded"
	}
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	writeJSON(w, f.Kind.Status(), mustJSON(map[string]any{"error": map[string]any{"message": f.Message, "type": typ, "param": nil, "code": code}}))
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestEmbedderConformance runs the embedder suite against a fake of
// OpenAI's embeddings API.
func TestEmbedderConformance(t *testing.T) {
	memorytest.RunEmbedder(t, memorytest.EmbedHarness{Provider: llmtest.Name, Secret: testKey, Start: startEmbeddingsFake})
}

// startEmbeddingsFake starts a fake /v1/embeddings endpoint answering as s
// says, and an embedder pointed at it.
func startEmbeddingsFake(t *testing.T, cfg memorytest.EmbedConfig, s *memorytest.EmbedScript) memory.Embedder {
	t.Helper()
	url := llmtest.Serve(t, cfg.Down, readEmbeddingsRequest, func(w http.ResponseWriter, r *http.Request, call memorytest.EmbedCall) {
		answerEmbeddings(t, w, r, call, s.Next(call))
	})
	e, err := NewEmbedder(EmbedConfig{Name: llmtest.Name, BaseURL: url + "/v1", APIKey: testKey, Model: memorytest.EmbedModel,
		Dimensions: cfg.Dims, BatchSize: cfg.Batch, Timeout: cfg.Timeout})
	if err != nil {
		t.Fatalf("NewEmbedder: %v", err)
	}
	return e
}

// readEmbeddingsRequest reads a POST to /v1/embeddings strictly: the texts
// as an array, vectors asked for as floats.
func readEmbeddingsRequest(r *http.Request) (memorytest.EmbedCall, error) {
	var req struct {
		Input          []string `json:"input"`
		Model          string   `json:"model"`
		Dimensions     int      `json:"dimensions"`
		EncodingFormat string   `json:"encoding_format"`
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		return memorytest.EmbedCall{}, fmt.Errorf("%s %s, want POST /v1/embeddings", r.Method, r.URL.Path)
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return memorytest.EmbedCall{}, fmt.Errorf("request: %w", err)
	}
	if req.EncodingFormat != "float" {
		return memorytest.EmbedCall{}, fmt.Errorf("encoding_format %q, want float", req.EncodingFormat)
	}
	return memorytest.EmbedCall{Model: req.Model, Dims: req.Dimensions, Texts: req.Input}, nil
}

// answerEmbeddings answers call as a: the embeddings in reverse order of
// their index, to show that the index, not the position, places them.
func answerEmbeddings(t *testing.T, w http.ResponseWriter, r *http.Request, call memorytest.EmbedCall, a memorytest.EmbedAnswer) {
	switch {
	case llmtest.Hold(t, w, r, a.End):
	case a.Failure != nil:
		writeFailure(w, *a.Failure)
	default:
		data := make([]any, 0, len(call.Texts))
		tokens := 0
		for i := len(call.Texts) - 1; i >= 0; i-- {
			v := memorytest.EmbedVector(call.Texts[i], cmp.Or(a.Dims, call.Dims))
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": v})
			tokens += memorytest.EmbedTokens(call.Texts[i])
		}
		body := mustJSON(map[string]any{"object": "list", "data": data, "model": call.Model, "usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens}})
		llmtest.WriteWhole(t, w, r, "application/json", body, a.End)
	}
}
