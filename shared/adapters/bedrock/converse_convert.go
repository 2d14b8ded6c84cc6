package bedrock

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithydocument "github.com/aws/smithy-go/document"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// emptyToolResult stands in for a tool's empty output: Bedrock rejects
// blank text blocks.
const emptyToolResult = "(no output)"

// converseInput maps a request to Converse's input, all but the model id.
//
// System messages, wherever they are in the history, become system blocks
// in order. User and assistant text become text blocks, tool calls toolUse
// blocks, and tool results toolResult blocks in a user message (status
// error when the text starts with "error:"). Consecutive messages of one
// role are merged, because Bedrock requires the roles to alternate; in a
// merged user message the toolResult blocks come before the text. Blank
// text is left out, as Bedrock rejects it.
//
// The tools are offered with the tool choice, unless it is "none", which
// Converse does not have: they are then withheld. A conversation that
// holds tool calls is offered noTool in their place, since Bedrock
// refuses tool blocks without tools. The parameters are set as setParams
// says.
func converseInput(req llm.Request) (*bedrockruntime.ConverseInput, error) {
	in := &bedrockruntime.ConverseInput{}
	for i, m := range req.Messages {
		var role types.ConversationRole
		var blocks []types.ContentBlock
		switch m.Role {
		case chat.System:
			if strings.TrimSpace(m.Content) != "" {
				in.System = append(in.System, &types.SystemContentBlockMemberText{Value: m.Content})
			}
			continue
		case chat.User:
			role = types.ConversationRoleUser
			if strings.TrimSpace(m.Content) != "" {
				blocks = append(blocks, &types.ContentBlockMemberText{Value: m.Content})
			}
		case chat.Assistant:
			role = types.ConversationRoleAssistant
			if strings.TrimSpace(m.Content) != "" {
				blocks = append(blocks, &types.ContentBlockMemberText{Value: m.Content})
			}
			for _, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return nil, fmt.Errorf("message %d: tool call without id or name", i)
				}
				blocks = append(blocks, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
					ToolUseId: aws.String(tc.ID),
					Name:      aws.String(tc.Name),
					Input:     document.NewLazyDocument(toolInput(tc.Arguments)),
				}})
			}
		case chat.Tool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("message %d: tool result has no tool_call_id", i)
			}
			role = types.ConversationRoleUser
			text := m.Content
			if strings.TrimSpace(text) == "" {
				text = emptyToolResult
			}
			result := types.ToolResultBlock{
				ToolUseId: aws.String(m.ToolCallID),
				Content:   []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: text}},
				Status:    types.ToolResultStatusSuccess,
			}
			if strings.HasPrefix(text, "error:") {
				result.Status = types.ToolResultStatusError
			}
			blocks = append(blocks, &types.ContentBlockMemberToolResult{Value: result})
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(in.Messages); n > 0 && in.Messages[n-1].Role == role {
			in.Messages[n-1].Content = mergeBlocks(in.Messages[n-1].Content, blocks)
			continue
		}
		in.Messages = append(in.Messages, types.Message{Role: role, Content: blocks})
	}
	if err := req.ToolChoice.Check(req.Tools); err != nil {
		return nil, err
	}
	withheld := req.ToolChoice != nil && req.ToolChoice.Mode == llm.ToolsNone
	switch {
	case len(req.Tools) > 0 && !withheld:
		in.ToolConfig = &types.ToolConfiguration{ToolChoice: converseToolChoice(req.ToolChoice)}
		for _, td := range req.Tools {
			spec, err := toolSpec(td)
			if err != nil {
				return nil, err
			}
			in.ToolConfig.Tools = append(in.ToolConfig.Tools, &types.ToolMemberToolSpec{Value: spec})
		}
	case hasToolBlocks(in.Messages):
		in.ToolConfig = &types.ToolConfiguration{Tools: []types.Tool{noTool}}
	}
	return in, setParams(in, req.Params)
}

// mergeBlocks appends more to a message's blocks, keeping toolResult blocks
// ahead of the others: models on Bedrock want a turn's tool results first.
func mergeBlocks(have, more []types.ContentBlock) []types.ContentBlock {
	for _, b := range more {
		if _, ok := b.(*types.ContentBlockMemberToolResult); !ok {
			have = append(have, b)
			continue
		}
		at := 0
		for at < len(have) {
			if _, ok := have[at].(*types.ContentBlockMemberToolResult); !ok {
				break
			}
			at++
		}
		have = append(have[:at], append([]types.ContentBlock{b}, have[at:]...)...)
	}
	return have
}

// toolInput turns a tool call's arguments into the JSON object a toolUse
// block carries. Numbers keep their exact text. Arguments that are not a
// JSON object (a model's malformed call, already answered by an error
// result) are kept as a string under "invalid_arguments", since Bedrock
// takes only an object.
func toolInput(args string) any {
	if strings.TrimSpace(args) == "" {
		return map[string]any{}
	}
	v, err := decodeDocument([]byte(args))
	if _, isObject := v.(map[string]any); err != nil || !isObject {
		return map[string]any{"invalid_arguments": args}
	}
	return v
}

// toolSpec maps a tool definition to a toolSpec with its JSON Schema as the
// input schema; a tool without parameters takes an empty object.
func toolSpec(td chat.ToolDef) (types.ToolSpecification, error) {
	if td.Name == "" {
		return types.ToolSpecification{}, errors.New("tool definition has no name")
	}
	var schema any = map[string]any{"type": "object", "properties": map[string]any{}}
	if len(bytes.TrimSpace(td.Parameters)) > 0 && string(bytes.TrimSpace(td.Parameters)) != "null" {
		v, err := decodeDocument(td.Parameters)
		if err != nil {
			return types.ToolSpecification{}, fmt.Errorf("tool %q: parameters are not valid JSON: %w", td.Name, err)
		}
		schema = v
	}
	spec := types.ToolSpecification{
		Name:        aws.String(td.Name),
		InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(schema)},
	}
	if td.Description != "" {
		spec.Description = aws.String(td.Description)
	}
	return spec, nil
}

// decodeDocument decodes one JSON value into the form the SDK's document
// encoder writes back unchanged: numbers become document.Number so that
// large integers and decimals keep their exact text.
func decodeDocument(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value")
	}
	return documentNumbers(v), nil
}

func documentNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		return smithydocument.Number(x)
	case map[string]any:
		for k, e := range x {
			x[k] = documentNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = documentNumbers(e)
		}
	}
	return v
}

// documentJSON renders a document the model produced, such as a tool
// call's input, as JSON text; "{}" when there is none.
func documentJSON(d document.Interface) (string, error) {
	if d == nil {
		return "{}", nil
	}
	b, err := d.MarshalSmithyDocument()
	if err != nil {
		return "", err
	}
	if s := strings.TrimSpace(string(b)); s != "" && s != "null" {
		return s, nil
	}
	return "{}", nil
}

// fromConverseOutput maps a Converse answer to a response (Model and
// Provider are the caller's to fill in). Text blocks are joined; toolUse
// blocks become tool calls; server-side tool use and reasoning are left out.
func fromConverseOutput(out *bedrockruntime.ConverseOutput) (llm.Response, error) {
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok {
		return llm.Response{}, fmt.Errorf("invalid response from Bedrock: no message (output %T)", out.Output)
	}
	var text strings.Builder
	resp := llm.Response{Message: chat.Message{Role: chat.Assistant}, FinishReason: finishReason(out.StopReason)}
	for _, b := range msg.Value.Content {
		switch b := b.(type) {
		case *types.ContentBlockMemberText:
			text.WriteString(b.Value)
		case *types.ContentBlockMemberToolUse:
			if b.Value.Type == types.ToolUseTypeServerToolUse {
				continue
			}
			args, err := documentJSON(b.Value.Input)
			if err != nil {
				return llm.Response{}, fmt.Errorf("invalid response from Bedrock: tool input: %w", err)
			}
			resp.Message.ToolCalls = append(resp.Message.ToolCalls, chat.ToolCall{
				ID: aws.ToString(b.Value.ToolUseId), Name: aws.ToString(b.Value.Name), Arguments: args,
			})
		}
	}
	resp.Message.Content = text.String()
	resp.Usage = usage(out.Usage)
	return resp, fillToolUseIDs(resp.Message.ToolCalls)
}

// usage maps Bedrock's token counts; the total is computed when missing.
func usage(u *types.TokenUsage) chat.Usage {
	if u == nil {
		return chat.Usage{}
	}
	in, out := int(aws.ToInt32(u.InputTokens)), int(aws.ToInt32(u.OutputTokens))
	total := int(aws.ToInt32(u.TotalTokens))
	if total == 0 {
		total = in + out
	}
	return chat.Usage{PromptTokens: in, CompletionTokens: out, TotalTokens: total}
}

// streamAccumulator assembles a ConverseStream answer from its events,
// keeping no more than its budget allows.
type streamAccumulator struct {
	budget     llm.ReplyBudget
	text       strings.Builder
	tools      map[int32]*streamedToolUse
	usage      chat.Usage
	stopReason types.StopReason
}

// streamedToolUse is a toolUse block being assembled: its input arrives as
// pieces of JSON text in contentBlockDelta events with its block index.
type streamedToolUse struct {
	id, name string
	server   bool
	input    strings.Builder
	// cut is set when part of the block did not fit the budget: the call
	// is then left out of the reply.
	cut bool
}

// newStreamAccumulator returns an accumulator for a reply of at most
// limit bytes.
func newStreamAccumulator(limit int) *streamAccumulator {
	return &streamAccumulator{budget: llm.NewReplyBudget(limit), tools: map[int32]*streamedToolUse{}}
}

// tool returns the toolUse block at index, creating it if need be.
func (a *streamAccumulator) tool(index *int32) *streamedToolUse {
	i := aws.ToInt32(index)
	t := a.tools[i]
	if t == nil {
		t = &streamedToolUse{}
		a.tools[i] = t
	}
	return t
}

// add folds one event in, passing the text that fits to onDelta, and
// reports whether the reply reached its limit: the rest of the stream is
// then not wanted.
func (a *streamAccumulator) add(ev types.ConverseStreamOutput, onDelta llm.OnDelta) (full bool) {
	switch ev := ev.(type) {
	case *types.ConverseStreamOutputMemberContentBlockStart:
		if start, ok := ev.Value.Start.(*types.ContentBlockStartMemberToolUse); ok {
			t := a.tool(ev.Value.ContentBlockIndex)
			id, name := aws.ToString(start.Value.ToolUseId), aws.ToString(start.Value.Name)
			if a.budget.TakeAll(id) && a.budget.TakeAll(name) {
				t.id, t.name = id, name
			}
			t.server = start.Value.Type == types.ToolUseTypeServerToolUse
			t.cut = a.budget.Cut()
		}
	case *types.ConverseStreamOutputMemberContentBlockDelta:
		switch d := ev.Value.Delta.(type) {
		case *types.ContentBlockDeltaMemberText:
			if text := a.budget.Take(d.Value); text != "" {
				a.text.WriteString(text)
				onDelta(text)
			}
		case *types.ContentBlockDeltaMemberToolUse:
			t := a.tool(ev.Value.ContentBlockIndex)
			t.input.WriteString(a.budget.Take(aws.ToString(d.Value.Input)))
			t.cut = t.cut || a.budget.Cut()
		}
	case *types.ConverseStreamOutputMemberMessageStop:
		a.stopReason = ev.Value.StopReason
	case *types.ConverseStreamOutputMemberMetadata:
		a.usage = usage(ev.Value.Usage)
	}
	return a.budget.Cut()
}

// response returns the assembled answer, tool calls in block order (Model
// and Provider are the caller's to fill in).
func (a *streamAccumulator) response() (llm.Response, error) {
	resp := llm.Response{
		Message:      chat.Message{Role: chat.Assistant, Content: a.text.String()},
		Usage:        a.usage,
		FinishReason: finishReason(a.stopReason),
	}
	if a.budget.Cut() {
		resp.FinishReason = llm.FinishLength
	}
	indexes := make([]int32, 0, len(a.tools))
	for i := range a.tools {
		indexes = append(indexes, i)
	}
	slices.Sort(indexes)
	for _, i := range indexes {
		t := a.tools[i]
		if t.server || t.cut {
			continue
		}
		args := strings.TrimSpace(t.input.String())
		if args == "" {
			args = "{}"
		}
		resp.Message.ToolCalls = append(resp.Message.ToolCalls, chat.ToolCall{ID: t.id, Name: t.name, Arguments: args})
	}
	return resp, fillToolUseIDs(resp.Message.ToolCalls)
}

// fillToolUseIDs gives an id to tool calls that came without one: the
// results sent back must name the call they answer.
func fillToolUseIDs(calls []chat.ToolCall) error {
	for i := range calls {
		if calls[i].ID != "" {
			continue
		}
		var b [12]byte
		if _, err := rand.Read(b[:]); err != nil {
			return fmt.Errorf("generating a tool use id: %w", err)
		}
		calls[i].ID = fmt.Sprintf("tooluse_%x", b)
	}
	return nil
}
