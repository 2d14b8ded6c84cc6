package openai

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// request is the body of a chat completions call in OpenAI's wire form.
type request struct {
	Model    string    `json:"model"`
	Messages []message `json:"messages"`
	// Tools is spliced in encoded, after the rest (see body).
	Tools json.RawMessage `json:"-"`
	// Params go under their JSON names, which are OpenAI's, but for those
	// the fields below shadow (encoding/json takes the shallower of two
	// fields of one name), to send them in OpenAI's shape.
	llm.Params
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	ResponseFormat      *responseFormat `json:"response_format,omitempty"`
	// ToolChoice is "auto", "none", "required" or a functionChoice. It and
	// ParallelToolCalls are sent with tools only: OpenAI refuses them alone.
	ToolChoice        any            `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool          `json:"parallel_tool_calls,omitempty"`
	Stream            bool           `json:"stream,omitempty"`
	StreamOptions     *streamOptions `json:"stream_options,omitempty"`
}

// responseFormat is the format a reply must take: text, a JSON object, or
// JSON that follows a schema.
type responseFormat struct {
	Type       string      `json:"type"`
	JSONSchema *jsonSchema `json:"json_schema,omitempty"`
}

// jsonSchema is a json_schema format; OpenAI requires its name.
type jsonSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// functionChoice is a tool choice that forces a call of one function.
type functionChoice struct {
	Type     string       `json:"type"`
	Function functionName `json:"function"`
}

type functionName struct {
	Name string `json:"name"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// message is one message of a request. Content is its text, or an
// array of contentParts when it carries media; it is left out only for
// an assistant message that calls tools and says nothing.
type message struct {
	Role       string     `json:"role"`
	Content    any        `json:"content,omitempty"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// body encodes req as the JSON body of a call, and returns the model it
// names.
func (p *Provider) body(req llm.Request, streaming bool) ([]byte, string, error) {
	r := request{Model: cmp.Or(req.Model, p.model), Messages: make([]message, 0, len(req.Messages)), Stream: streaming}
	for i, m := range req.Messages {
		msg, err := wireMessage(m)
		if err != nil {
			return nil, "", fmt.Errorf("message %d: %w", i, err)
		}
		r.Messages = append(r.Messages, msg)
	}
	if err := req.ToolChoice.Check(req.Tools); err != nil {
		return nil, "", err
	}
	if len(req.Tools) > 0 {
		tools, err := p.tools.encode(req.Tools)
		if err != nil {
			return nil, "", err
		}
		r.Tools = tools
		r.ToolChoice = toolChoice(req.ToolChoice)
		r.ParallelToolCalls = req.ParallelToolCalls
	}
	p.setParams(&r, req.Params)
	if streaming {
		r.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, "", fmt.Errorf("encode request: %w", err)
	}
	if len(r.Tools) > 0 {
		// Spliced rather than marshalled: encoding/json would check and
		// compact the cached encoding again on every call.
		b = append(append(append(b[:len(b)-1], `,"tools":`...), r.Tools...), '}')
	}
	return b, r.Model, nil
}

// setParams sets the parameters of a call but its tool choice, each
// under OpenAI's name and in its shape; those unset are left out.
func (p *Provider) setParams(r *request, params llm.Params) {
	r.Params = params
	if params.MaxTokens > 0 {
		if p.official {
			r.MaxCompletionTokens = params.MaxTokens
		} else {
			r.MaxTokens = params.MaxTokens
		}
	}
	if f := params.ResponseFormat; f != nil {
		r.ResponseFormat = &responseFormat{Type: f.Type}
		if f.Type == llm.FormatJSONSchema {
			r.ResponseFormat.JSONSchema = &jsonSchema{Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict}
		}
	}
}

// toolChoice is c in OpenAI's shape: a mode's name, or the function to
// call; nil leaves the choice to the model.
func toolChoice(c *llm.ToolChoice) any {
	switch {
	case c == nil:
		return nil
	case c.Mode == llm.ToolsFunction:
		return functionChoice{Type: "function", Function: functionName{Name: c.Name}}
	}
	return c.Mode
}

func wireMessage(m chat.Message) (message, error) {
	out := message{Role: string(m.Role), Content: &m.Content}
	switch m.Role {
	case chat.System:
	case chat.User:
		if len(m.Parts) > 0 {
			parts, err := wireParts(m)
			if err != nil {
				return message{}, err
			}
			out.Content = parts
		}
	case chat.Assistant:
		if len(m.ToolCalls) > 0 && m.Content == "" {
			out.Content = nil
		}
		for _, tc := range m.ToolCalls {
			args := cmp.Or(tc.Arguments, "{}")
			out.ToolCalls = append(out.ToolCalls, toolCall{ID: tc.ID, Type: "function", Function: functionCall{Name: tc.Name, Arguments: args}})
		}
	case chat.Tool:
		if m.ToolCallID == "" {
			return message{}, errors.New("tool result has no tool_call_id")
		}
		out.ToolCallID = m.ToolCallID
	default:
		return message{}, fmt.Errorf("unknown role %q", m.Role)
	}
	return out, nil
}

// contentPart is a part of a message's content in Chat Completions'
// shape: text, image_url, input_audio or file.
type contentPart struct {
	Type       string      `json:"type"`
	Text       *string     `json:"text,omitempty"`
	ImageURL   *imageURL   `json:"image_url,omitempty"`
	InputAudio *inputAudio `json:"input_audio,omitempty"`
	File       *fileData   `json:"file,omitempty"`
}

type imageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type inputAudio struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}

type fileData struct {
	Filename string `json:"filename,omitempty"`
	FileData string `json:"file_data"`
}

// audioFormats are the formats of input_audio by media type.
var audioFormats = map[string]string{"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}

// wireParts is a user message's content as parts: its text, then its
// media as the client sent them (an image's URL or data: URL, audio as
// base64, a file as a data: URL).
func wireParts(m chat.Message) ([]contentPart, error) {
	var out []contentPart
	if m.Content != "" {
		out = append(out, contentPart{Type: "text", Text: &m.Content})
	}
	for i, p := range m.Parts {
		switch p.Type {
		case chat.PartImage:
			u := p.URL
			if u == "" {
				u = p.DataURL()
			}
			out = append(out, contentPart{Type: "image_url", ImageURL: &imageURL{URL: u, Detail: p.Detail}})
		case chat.PartAudio:
			format, ok := audioFormats[p.MediaType]
			if !ok {
				return nil, fmt.Errorf("part %d: audio of type %q: input_audio takes wav or mp3", i, p.MediaType)
			}
			out = append(out, contentPart{Type: "input_audio", InputAudio: &inputAudio{Data: base64.StdEncoding.EncodeToString(p.Data), Format: format}})
		case chat.PartFile:
			out = append(out, contentPart{Type: "file", File: &fileData{Filename: p.Name, FileData: p.DataURL()}})
		default:
			return nil, fmt.Errorf("part %d: unknown type %q", i, p.Type)
		}
	}
	return out, nil
}

// functionDef is the wire form of a function tool's definition. Parameters
// stay raw so that a schema is copied, not decoded and re-encoded.
type functionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

type functionTool struct {
	Type     string      `json:"type"`
	Function functionDef `json:"function"`
}

// toolCache keeps the encoded form of the tool sets requests offer. An
// agent offers the same tools on every call, though not always the same
// slice (the loop filters a registry's definitions by autonomy and by the
// tools available, making a new slice), so a set is found by its content:
// comparing a few definitions costs far less than encoding them again.
// An entry keeps its own copy of the definitions, which no caller can
// change. A few entries are kept, the oldest replaced first.
type toolCache struct {
	mu      sync.Mutex
	entries [8]toolEntry
	next    int
}

type toolEntry struct {
	defs []chat.ToolDef
	json json.RawMessage
}

// encode returns the wire form of defs.
func (c *toolCache) encode(defs []chat.ToolDef) (json.RawMessage, error) {
	c.mu.Lock()
	for _, e := range c.entries {
		if e.json != nil && sameTools(e.defs, defs) {
			c.mu.Unlock()
			return e.json, nil
		}
	}
	c.mu.Unlock()
	tools := make([]functionTool, len(defs))
	kept := make([]chat.ToolDef, len(defs))
	for i, td := range defs {
		if td.Name == "" {
			return nil, errors.New("tool definition has no name")
		}
		tools[i] = functionTool{Type: "function", Function: functionDef{Name: td.Name, Description: td.Description, Parameters: td.Parameters, Strict: td.Strict}}
		kept[i] = td
		kept[i].Parameters = bytes.Clone(td.Parameters)
		if td.Strict != nil {
			strict := *td.Strict
			kept[i].Strict = &strict
		}
	}
	b, err := json.Marshal(tools)
	if err != nil {
		return nil, fmt.Errorf("tool parameters are not valid JSON: %w", err)
	}
	c.mu.Lock()
	c.entries[c.next] = toolEntry{defs: kept, json: b}
	c.next = (c.next + 1) % len(c.entries)
	c.mu.Unlock()
	return b, nil
}

// sameTools reports whether a and b define the same tools, in the same
// order.
func sameTools(a, b []chat.ToolDef) bool {
	return slices.EqualFunc(a, b, func(x, y chat.ToolDef) bool {
		return x.Name == y.Name && x.Description == y.Description && bytes.Equal(x.Parameters, y.Parameters) &&
			(x.Strict == nil) == (y.Strict == nil) && (x.Strict == nil || *x.Strict == *y.Strict)
	})
}

// chatCompletion is a non-streamed answer: the fields read of it.
type chatCompletion struct {
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content   string     `json:"content"`
			Refusal   string     `json:"refusal"`
			ToolCalls []toolCall `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage usageCounts `json:"usage"`
}

type usageCounts struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func (u usageCounts) usage() chat.Usage {
	return chat.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
}

// fromCompletion maps a non-streamed answer to a response.
func (p *Provider) fromCompletion(c *chatCompletion, requested string) (llm.Response, error) {
	if len(c.Choices) == 0 {
		return llm.Response{}, errors.New("invalid response from server: no choices")
	}
	choice := c.Choices[0]
	msg := chat.Message{Role: chat.Assistant, Content: choice.Message.Content}
	if msg.Content == "" {
		msg.Content = choice.Message.Refusal
	}
	for _, tc := range choice.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // custom tools are never offered, so never legitimately called
		}
		msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{
			ID:        tc.ID,
			Name:      tc.Function.Name,
			Arguments: tc.Function.Arguments,
		})
	}
	if err := fillCallIDs(msg.ToolCalls); err != nil {
		return llm.Response{}, err
	}
	return llm.Response{
		Message:      msg,
		Usage:        c.Usage.usage(),
		FinishReason: choice.FinishReason,
		Model:        cmp.Or(c.Model, requested),
		Provider:     p.name,
	}, nil
}

// streamChunk is one streamed event: the fields read of it.
type streamChunk struct {
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   string          `json:"content"`
			Refusal   string          `json:"refusal"`
			ToolCalls []toolCallDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	// Usage comes in a last chunk of its own, asked for with
	// stream_options; null in the others.
	Usage *usageCounts `json:"usage"`
	// Error is set in an event that fails the stream instead.
	Error json.RawMessage `json:"error"`
}

// toolCallDelta is a piece of a streamed tool call.
type toolCallDelta struct {
	Index    int          `json:"index"`
	ID       string       `json:"id"`
	Function functionCall `json:"function"`
}

// decodeChunk decodes a streamed event, which fails with a *streamError
// when it is an error event.
func decodeChunk(data []byte) (streamChunk, error) {
	var c streamChunk
	err := json.Unmarshal(data, &c)
	// A field of an unexpected type stops no other from being decoded: an
	// error event is told as such whatever else it holds.
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return streamChunk{}, &streamError{data: c.Error}
	}
	return c, err
}

// fillCallIDs gives an id to tool calls that came without one, as some
// compatible servers send them: tool results must name the call they answer.
func fillCallIDs(calls []chat.ToolCall) error {
	for i := range calls {
		if calls[i].ID != "" {
			continue
		}
		var b [12]byte
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("generating a tool call id: %w", err)
		}
		calls[i].ID = fmt.Sprintf("call_%x", b)
	}
	return nil
}

// accumulator assembles a streamed answer from its chunks, keeping no more
// than its budget allows.
type accumulator struct {
	model        string
	budget       llm.ReplyBudget
	content      strings.Builder
	refusal      strings.Builder
	calls        []*streamedCall
	usage        chat.Usage
	finishReason string
}

// streamedCall is a tool call being assembled from deltas.
type streamedCall struct {
	index int
	id    string
	name  string
	args  strings.Builder
	// cut is set when part of the call did not fit the budget: the call
	// is then left out of the reply.
	cut bool
}

// add folds one chunk in, passing the content that fits to onDelta, and
// reports whether the reply reached its limit: the rest of the stream is
// then not wanted.
func (a *accumulator) add(c streamChunk, onDelta llm.OnDelta) (full bool) {
	if c.Model != "" {
		a.model = c.Model
	}
	if c.Usage != nil {
		a.usage = c.Usage.usage()
	}
	for _, choice := range c.Choices {
		if choice.Index != 0 {
			continue // only one choice is ever requested
		}
		d := choice.Delta
		if text := a.budget.Take(d.Content); text != "" {
			a.content.WriteString(text)
			onDelta(text)
		}
		a.refusal.WriteString(a.budget.Take(d.Refusal))
		for _, tc := range d.ToolCalls {
			a.addToolCall(tc)
		}
		if choice.FinishReason != "" {
			a.finishReason = choice.FinishReason
		}
	}
	if a.budget.Cut() {
		a.finishReason = llm.FinishLength
	}
	return a.budget.Cut()
}

// addToolCall merges one tool-call delta. Deltas are matched by index; a
// delta carrying a new id at a used index starts another call, for servers
// that send every call at index 0.
func (a *accumulator) addToolCall(tc toolCallDelta) {
	var call *streamedCall
	for i := len(a.calls) - 1; i >= 0; i-- {
		if a.calls[i].index == tc.Index {
			call = a.calls[i]
			break
		}
	}
	if call == nil || (tc.ID != "" && call.id != "" && tc.ID != call.id) {
		call = &streamedCall{index: tc.Index}
		a.calls = append(a.calls, call)
	}
	if call.id == "" && a.budget.TakeAll(tc.ID) {
		call.id = tc.ID
	}
	if call.name == "" && a.budget.TakeAll(tc.Function.Name) {
		call.name = tc.Function.Name
	}
	args := a.budget.Take(tc.Function.Arguments)
	call.args.WriteString(args)
	call.cut = call.cut || a.budget.Cut()
}

func (a *accumulator) response(provider string) (llm.Response, error) {
	msg := chat.Message{Role: chat.Assistant, Content: a.content.String()}
	if msg.Content == "" {
		msg.Content = a.refusal.String()
	}
	for _, c := range a.calls {
		if !c.cut {
			msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: c.id, Name: c.name, Arguments: c.args.String()})
		}
	}
	if len(msg.ToolCalls) > 0 {
		if err := fillCallIDs(msg.ToolCalls); err != nil {
			return llm.Response{}, &llm.Error{Provider: provider, Err: err}
		}
	}
	return llm.Response{
		Message:      msg,
		Usage:        a.usage,
		FinishReason: a.finishReason,
		Model:        a.model,
		Provider:     provider,
	}, nil
}
