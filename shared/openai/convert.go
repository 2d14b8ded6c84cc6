package openai

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"github.com/lambdaclaw/lambdaclaw/shared/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/llm"
)

// params maps a request to the SDK's parameters.
func (p *Provider) params(req llm.Request, streaming bool) (oai.ChatCompletionNewParams, error) {
	model := req.Model
	if model == "" {
		model = p.model
	}
	params := oai.ChatCompletionNewParams{
		Model:    model,
		Messages: make([]oai.ChatCompletionMessageParamUnion, 0, len(req.Messages)),
	}
	for i, m := range req.Messages {
		msg, err := messageParam(m)
		if err != nil {
			return params, fmt.Errorf("message %d: %w", i, err)
		}
		params.Messages = append(params.Messages, msg)
	}
	if len(req.Tools) > 0 {
		params.Tools = make([]oai.ChatCompletionToolUnionParam, 0, len(req.Tools))
		for _, td := range req.Tools {
			tool, err := toolParam(td)
			if err != nil {
				return params, err
			}
			params.Tools = append(params.Tools, tool)
		}
	}
	if req.MaxTokens > 0 {
		if p.completionTokens {
			params.MaxCompletionTokens = param.NewOpt(int64(req.MaxTokens))
		} else {
			params.MaxTokens = param.NewOpt(int64(req.MaxTokens))
		}
	}
	if streaming {
		params.StreamOptions.IncludeUsage = param.NewOpt(true)
	}
	return params, nil
}

func messageParam(m chat.Message) (oai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case chat.System:
		return oai.SystemMessage(m.Content), nil
	case chat.User:
		return oai.UserMessage(m.Content), nil
	case chat.Assistant:
		var a oai.ChatCompletionAssistantMessageParam
		// Content may be left out only when the message calls tools.
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = param.NewOpt(m.Content)
		}
		if len(m.ToolCalls) > 0 {
			a.ToolCalls = make([]oai.ChatCompletionMessageToolCallUnionParam, len(m.ToolCalls))
			for i, tc := range m.ToolCalls {
				args := tc.Arguments
				if args == "" {
					args = "{}"
				}
				a.ToolCalls[i] = oai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
						ID: tc.ID,
						Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name:      tc.Name,
							Arguments: args,
						},
					},
				}
			}
		}
		return oai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	case chat.Tool:
		if m.ToolCallID == "" {
			return oai.ChatCompletionMessageParamUnion{}, errors.New("tool result has no tool_call_id")
		}
		return oai.ToolMessage(m.Content, m.ToolCallID), nil
	default:
		return oai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q", m.Role)
	}
}

// functionDef is the wire form of a function tool's definition. Parameters
// stay raw so that a schema is copied, not decoded and re-encoded.
type functionDef struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

func toolParam(td chat.ToolDef) (oai.ChatCompletionToolUnionParam, error) {
	if td.Name == "" {
		return oai.ChatCompletionToolUnionParam{}, errors.New("tool definition has no name")
	}
	raw, err := json.Marshal(functionDef{Name: td.Name, Description: td.Description, Parameters: td.Parameters})
	if err != nil {
		return oai.ChatCompletionToolUnionParam{}, fmt.Errorf("tool %q: parameters are not valid JSON: %w", td.Name, err)
	}
	fn := param.Override[shared.FunctionDefinitionParam](json.RawMessage(raw))
	return oai.ChatCompletionFunctionTool(fn), nil
}

// fromCompletion maps a non-streamed answer to a response.
func (p *Provider) fromCompletion(c *oai.ChatCompletion, requested string) (llm.Response, error) {
	if c == nil || len(c.Choices) == 0 {
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
	model := c.Model
	if model == "" {
		model = requested
	}
	return llm.Response{
		Message:      msg,
		Usage:        usage(c.Usage),
		FinishReason: choice.FinishReason,
		Model:        model,
		Provider:     p.name,
	}, nil
}

func usage(u oai.CompletionUsage) chat.Usage {
	return chat.Usage{
		PromptTokens:     int(u.PromptTokens),
		CompletionTokens: int(u.CompletionTokens),
		TotalTokens:      int(u.TotalTokens),
	}
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
	index int64
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
func (a *accumulator) add(c oai.ChatCompletionChunk, onDelta llm.OnDelta) (full bool) {
	if c.Model != "" {
		a.model = c.Model
	}
	if c.JSON.Usage.Valid() {
		a.usage = usage(c.Usage)
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
func (a *accumulator) addToolCall(tc oai.ChatCompletionChunkChoiceDeltaToolCall) {
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
