package bedrock

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// The JSON of Converse and ConverseStream, as the Bedrock Runtime model
// (botocore's bedrock-runtime) names it: what lambdaclaw sends and reads.
type (
	// converseRequest is ConverseRequest but its modelId, which goes in
	// the path.
	converseRequest struct {
		Messages        []message         `json:"messages,omitempty"`
		System          []textBlock       `json:"system,omitempty"`
		InferenceConfig *inferenceConfig  `json:"inferenceConfig,omitempty"`
		ToolConfig      *toolConfig       `json:"toolConfig,omitempty"`
		OutputConfig    *outputConfig     `json:"outputConfig,omitempty"`
		RequestMetadata map[string]string `json:"requestMetadata,omitempty"`
	}
	message struct {
		Role    string         `json:"role"`
		Content []contentBlock `json:"content"`
	}
	// contentBlock is a union: one member is set. Blocks of other
	// kinds (reasoning, …) are read as none.
	contentBlock struct {
		Text       *string        `json:"text,omitempty"`
		Image      *imageBlock    `json:"image,omitempty"`
		Document   *documentBlock `json:"document,omitempty"`
		ToolUse    *toolUse       `json:"toolUse,omitempty"`
		ToolResult *toolResult    `json:"toolResult,omitempty"`
	}
	textBlock struct {
		Text string `json:"text"`
	}
	toolUse struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		// Type is server_tool_use for a tool Bedrock ran itself.
		Type string `json:"type,omitempty"`
	}
	toolResult struct {
		ToolUseID string      `json:"toolUseId"`
		Content   []textBlock `json:"content"`
		Status    string      `json:"status,omitempty"`
	}
	inferenceConfig struct {
		MaxTokens     *int32   `json:"maxTokens,omitempty"`
		Temperature   *float32 `json:"temperature,omitempty"`
		TopP          *float32 `json:"topP,omitempty"`
		StopSequences []string `json:"stopSequences,omitempty"`
	}
	toolConfig struct {
		Tools      []tool      `json:"tools"`
		ToolChoice *toolChoice `json:"toolChoice,omitempty"`
		// withheld says the tools were withheld: Tools is noTool alone.
		withheld bool
	}
	tool struct {
		ToolSpec toolSpecification `json:"toolSpec"`
	}
	toolSpecification struct {
		Name        string `json:"name"`
		Description string `json:"description,omitempty"`
		InputSchema struct {
			JSON json.RawMessage `json:"json"`
		} `json:"inputSchema"`
	}
	// toolChoice is a union: auto, any, or one tool.
	toolChoice struct {
		Auto *struct{}     `json:"auto,omitempty"`
		Any  *struct{}     `json:"any,omitempty"`
		Tool *specificTool `json:"tool,omitempty"`
	}
	specificTool struct {
		Name string `json:"name"`
	}
	outputConfig struct {
		TextFormat *outputFormat `json:"textFormat,omitempty"`
		Effort     string        `json:"effort,omitempty"`
	}
	outputFormat struct {
		Type      string `json:"type"`
		Structure struct {
			JSONSchema jsonSchemaDefinition `json:"jsonSchema"`
		} `json:"structure"`
	}
	jsonSchemaDefinition struct {
		Schema      string `json:"schema"`
		Name        string `json:"name,omitempty"`
		Description string `json:"description,omitempty"`
	}
	// converseResponse is the part of ConverseResponse lambdaclaw reads.
	converseResponse struct {
		Output struct {
			Message *message `json:"message"`
		} `json:"output"`
		StopReason string      `json:"stopReason"`
		Usage      *tokenUsage `json:"usage"`
	}
	tokenUsage struct {
		InputTokens  int32 `json:"inputTokens"`
		OutputTokens int32 `json:"outputTokens"`
		TotalTokens  int32 `json:"totalTokens"`
	}
	// streamEvent is the payload of any ConverseStream event lambdaclaw
	// reads: contentBlockStart, contentBlockDelta, messageStop, metadata.
	streamEvent struct {
		ContentBlockIndex int32 `json:"contentBlockIndex"`
		Start             struct {
			ToolUse *toolUse `json:"toolUse"`
		} `json:"start"`
		Delta struct {
			Text    *string `json:"text"`
			ToolUse *struct {
				Input string `json:"input"`
			} `json:"toolUse"`
		} `json:"delta"`
		StopReason string      `json:"stopReason"`
		Usage      *tokenUsage `json:"usage"`
	}
)

// serverToolUse is the type of a toolUse block Bedrock ran itself.
const serverToolUse = "server_tool_use"

// marshalRequest is the JSON of in, with <, > and & as they are.
func marshalRequest(in *converseRequest) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(in); err != nil {
		return nil, fmt.Errorf("the request: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// emptyToolResult stands in for a tool's empty output: Bedrock rejects
// blank text blocks.
const emptyToolResult = "(no output)"

// converseInput maps a request to Converse's input, all but the model id.
//
// System messages, wherever they are in the history, become system blocks
// in order. A user's images and files become image and document blocks
// ahead of its text (attachedText when it has none), which CheckPart must
// have allowed. User and assistant text become text blocks, tool calls toolUse
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
func converseInput(req llm.Request) (*converseRequest, error) {
	in := &converseRequest{}
	docs := 0 // the documents so far, to name those without a name
	for i, m := range req.Messages {
		var role string
		var blocks []contentBlock
		switch m.Role {
		case chat.System:
			if strings.TrimSpace(m.Content) != "" {
				in.System = append(in.System, textBlock{Text: m.Content})
			}
			continue
		case chat.User:
			role = "user"
			for _, p := range m.Parts {
				docs += btoi(p.Type == chat.PartFile)
				blocks = append(blocks, partBlock(p, docs))
			}
			text := m.Content
			if strings.TrimSpace(text) == "" && len(m.Parts) > 0 {
				text = attachedText // Converse wants text beside a document
			}
			if strings.TrimSpace(text) != "" {
				blocks = append(blocks, contentBlock{Text: &text})
			}
		case chat.Assistant:
			role = "assistant"
			if strings.TrimSpace(m.Content) != "" {
				blocks = append(blocks, contentBlock{Text: &m.Content})
			}
			for _, tc := range m.ToolCalls {
				if tc.ID == "" || tc.Name == "" {
					return nil, fmt.Errorf("message %d: tool call without id or name", i)
				}
				blocks = append(blocks, contentBlock{ToolUse: &toolUse{ToolUseID: tc.ID, Name: tc.Name, Input: toolInput(tc.Arguments)}})
			}
		case chat.Tool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("message %d: tool result has no tool_call_id", i)
			}
			role = "user"
			text := m.Content
			if strings.TrimSpace(text) == "" {
				text = emptyToolResult
			}
			result := &toolResult{ToolUseID: m.ToolCallID, Content: []textBlock{{Text: text}}, Status: "success"}
			if strings.HasPrefix(text, "error:") {
				result.Status = "error"
			}
			blocks = append(blocks, contentBlock{ToolResult: result})
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
		in.Messages = append(in.Messages, message{Role: role, Content: blocks})
	}
	if err := req.ToolChoice.Check(req.Tools); err != nil {
		return nil, err
	}
	withheld := req.ToolChoice != nil && req.ToolChoice.Mode == llm.ToolsNone
	switch {
	case len(req.Tools) > 0 && !withheld:
		in.ToolConfig = &toolConfig{ToolChoice: converseToolChoice(req.ToolChoice)}
		for _, td := range req.Tools {
			spec, err := toolSpec(td)
			if err != nil {
				return nil, err
			}
			in.ToolConfig.Tools = append(in.ToolConfig.Tools, tool{ToolSpec: spec})
		}
	case hasToolBlocks(in.Messages):
		in.ToolConfig = &toolConfig{Tools: []tool{noTool}, withheld: true}
	}
	return in, setParams(in, req.Params)
}

// attachedText is the text of a user's message that has media and no
// text.
const attachedText = "(attached)"

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// mergeBlocks appends more to a message's blocks, keeping toolResult blocks
// ahead of the others: models on Bedrock want a turn's tool results first.
func mergeBlocks(have, more []contentBlock) []contentBlock {
	for _, b := range more {
		if b.ToolResult == nil {
			have = append(have, b)
			continue
		}
		at := 0
		for at < len(have) && have[at].ToolResult != nil {
			at++
		}
		have = slices.Insert(have, at, b)
	}
	return have
}

// toolInput turns a tool call's arguments into the JSON object a toolUse
// block carries, as the model wrote it (numbers keep their exact text).
// Arguments that are not a JSON object (a model's malformed call,
// already answered by an error result) are kept as a string under
// "invalid_arguments", since Bedrock takes only an object.
func toolInput(args string) json.RawMessage {
	trimmed := strings.TrimSpace(args)
	if trimmed == "" {
		return json.RawMessage(`{}`)
	}
	if json.Valid([]byte(trimmed)) && trimmed[0] == '{' {
		return json.RawMessage(trimmed)
	}
	b, _ := json.Marshal(map[string]string{"invalid_arguments": args}) // a map of strings always marshals
	return b
}

// emptyObjectSchema is the input schema of a tool without parameters.
var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// toolSpec maps a tool definition to a toolSpec with its JSON Schema as the
// input schema; a tool without parameters takes an empty object.
func toolSpec(td chat.ToolDef) (toolSpecification, error) {
	if td.Name == "" {
		return toolSpecification{}, errors.New("tool definition has no name")
	}
	spec := toolSpecification{Name: td.Name, Description: td.Description}
	spec.InputSchema.JSON = emptyObjectSchema
	if p := bytes.TrimSpace(td.Parameters); len(p) > 0 && string(p) != "null" {
		if err := checkJSON(p); err != nil {
			return toolSpecification{}, fmt.Errorf("tool %q: parameters are not valid JSON: %w", td.Name, err)
		}
		spec.InputSchema.JSON = p
	}
	return spec, nil
}

// checkJSON reports why data is not one JSON value.
func checkJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

// documentJSON renders a document the model produced, such as a tool
// call's input, as compact JSON text; "{}" when there is none.
func documentJSON(d json.RawMessage) (string, error) {
	s := strings.TrimSpace(string(d))
	if s == "" || s == "null" {
		return "{}", nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, d); err != nil {
		return "", err
	}
	return b.String(), nil
}

// fromConverseOutput maps a Converse answer to a response (Model and
// Provider are the caller's to fill in). Text blocks are joined; toolUse
// blocks become tool calls; server-side tool use and reasoning are left out.
func fromConverseOutput(body []byte) (llm.Response, error) {
	var out converseResponse
	if err := json.Unmarshal(body, &out); err != nil {
		return llm.Response{}, fmt.Errorf("invalid response from Bedrock: %w", err)
	}
	msg := out.Output.Message
	if msg == nil {
		return llm.Response{}, errors.New("invalid response from Bedrock: no message in its output")
	}
	var text strings.Builder
	resp := llm.Response{Message: chat.Message{Role: chat.Assistant}, FinishReason: finishReason(out.StopReason)}
	for _, b := range msg.Content {
		switch {
		case b.Text != nil:
			text.WriteString(*b.Text)
		case b.ToolUse != nil:
			if b.ToolUse.Type == serverToolUse {
				continue
			}
			args, err := documentJSON(b.ToolUse.Input)
			if err != nil {
				return llm.Response{}, fmt.Errorf("invalid response from Bedrock: tool input: %w", err)
			}
			resp.Message.ToolCalls = append(resp.Message.ToolCalls, chat.ToolCall{ID: b.ToolUse.ToolUseID, Name: b.ToolUse.Name, Arguments: args})
		}
	}
	resp.Message.Content = text.String()
	resp.Usage = usage(out.Usage)
	return resp, fillToolUseIDs(resp.Message.ToolCalls)
}

// usage maps Bedrock's token counts; the total is computed when missing.
func usage(u *tokenUsage) chat.Usage {
	if u == nil {
		return chat.Usage{}
	}
	in, out, total := int(u.InputTokens), int(u.OutputTokens), int(u.TotalTokens)
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
	stopReason string
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

// tool returns the toolUse block at index i, creating it if need be.
func (a *streamAccumulator) tool(i int32) *streamedToolUse {
	t := a.tools[i]
	if t == nil {
		t = &streamedToolUse{}
		a.tools[i] = t
	}
	return t
}

// add folds one event in, passing the text that fits to onDelta, and
// reports whether the reply reached its limit: the rest of the stream is
// then not wanted. Events of other types (messageStart,
// contentBlockStop, those of a newer API) are passed over.
func (a *streamAccumulator) add(ev awsapi.Event, onDelta llm.OnDelta) (full bool, err error) {
	switch ev.Type {
	case "contentBlockStart", "contentBlockDelta", "messageStop", "metadata":
	default:
		return a.budget.Cut(), nil
	}
	var e streamEvent
	if err := json.Unmarshal(ev.Payload, &e); err != nil {
		return false, fmt.Errorf("event %s: %w", ev.Type, err)
	}
	switch ev.Type {
	case "contentBlockStart":
		if start := e.Start.ToolUse; start != nil {
			t := a.tool(e.ContentBlockIndex)
			if a.budget.TakeAll(start.ToolUseID) && a.budget.TakeAll(start.Name) {
				t.id, t.name = start.ToolUseID, start.Name
			}
			t.server = start.Type == serverToolUse
			t.cut = a.budget.Cut()
		}
	case "contentBlockDelta":
		switch d := e.Delta; {
		case d.Text != nil:
			if text := a.budget.Take(*d.Text); text != "" {
				a.text.WriteString(text)
				onDelta(text)
			}
		case d.ToolUse != nil:
			t := a.tool(e.ContentBlockIndex)
			t.input.WriteString(a.budget.Take(d.ToolUse.Input))
			t.cut = t.cut || a.budget.Cut()
		}
	case "messageStop":
		a.stopReason = e.StopReason
	case "metadata":
		a.usage = usage(e.Usage)
	}
	return a.budget.Cut(), nil
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
