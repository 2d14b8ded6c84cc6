package bedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/llm/llmtest"
)

// TestConformance runs the provider suite against a fake of the Bedrock
// runtime's Converse and ConverseStream APIs.
func TestConformance(t *testing.T) {
	llmtest.Run(t, llmtest.Harness{Secret: converseTestSecret, Start: startConverseFake})
}

// startConverseFake starts a fake Bedrock runtime answering as s says,
// and a Converse provider pointed at it with credentials from the
// environment.
func startConverseFake(t *testing.T, cfg llmtest.Config, s *llmtest.Script) llm.Provider {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call, ok := readConverseCall(t, r)
		if !ok {
			writeBedrockError(w, http.StatusNotFound, "UnknownOperationException", "")
			return
		}
		c, err := call.portCall()
		if err != nil {
			t.Errorf("fake Bedrock: %v", err)
			writeBedrockError(w, http.StatusBadRequest, "ValidationException", "invalid request")
			return
		}
		a, done := s.Next(c)
		defer done()
		answerConverse(t, w, r, c.Stream, a)
	}))
	t.Cleanup(srv.Close)
	if cfg.Down {
		srv.Close()
	}
	isolateAWS(t, "")
	c, err := NewConverse(context.Background(), ConverseConfig{
		Name: llmtest.Name, Region: "eu-west-3", Model: llmtest.Model, Timeout: cfg.Timeout,
		Endpoint: srv.URL, MaxReplyBytes: cfg.MaxReplyBytes,
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
			Text    *string `json:"text"`
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
	} `json:"toolConfig"`
	InferenceConfig *struct {
		MaxTokens int `json:"maxTokens"`
	} `json:"inferenceConfig"`
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
			case b.ToolUse != nil:
				msg.ToolCalls = append(msg.ToolCalls, chat.ToolCall{ID: b.ToolUse.ToolUseID, Name: b.ToolUse.Name, Arguments: string(b.ToolUse.Input)})
			case b.ToolResult != nil && m.Role == "user" && len(b.ToolResult.Content) == 1:
				c.Messages = append(c.Messages, chat.Message{Role: chat.Tool, ToolCallID: b.ToolResult.ToolUseID, Content: b.ToolResult.Content[0].Text})
			default:
				return c, fmt.Errorf("content block %+v in a message of role %s", b, m.Role)
			}
		}
		if msg.Content != "" || msg.ToolCalls != nil {
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
	return c, nil
}

// stopReasons are Bedrock's names of the port's finish reasons.
var stopReasons = map[string]string{"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens", "content_filter": "content_filtered"}

// answerConverse answers a call as a, in Bedrock's wire format.
func answerConverse(t *testing.T, w http.ResponseWriter, r *http.Request, stream bool, a llmtest.Answer) {
	switch {
	case a.End == llmtest.Silent:
		<-r.Context().Done()
	case a.End == llmtest.Hangup:
		llmtest.CloseConn(t, w)
	case a.Failure != nil && len(a.Pieces) == 0:
		writeFailure(w, *a.Failure)
	case stream:
		streamConverse(t, w, r, a)
	default:
		answerConverseWhole(t, w, r, a)
	}
}

// answerConverseWhole answers a Converse call.
func answerConverseWhole(t *testing.T, w http.ResponseWriter, r *http.Request, a llmtest.Answer) {
	m := llmtest.Assemble(a.Pieces)
	blocks := []any{}
	if m.Content != "" {
		blocks = append(blocks, map[string]string{"text": m.Content})
	}
	for _, c := range m.ToolCalls {
		blocks = append(blocks, map[string]any{"toolUse": map[string]any{"toolUseId": c.ID, "name": c.Name, "input": json.RawMessage(c.Arguments)}})
	}
	body := llmtest.ASCIIJSON(map[string]any{
		"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": blocks}},
		"stopReason": stopReasons[a.Finish],
		"usage":      map[string]int{"inputTokens": a.Usage.PromptTokens, "outputTokens": a.Usage.CompletionTokens, "totalTokens": a.Usage.TotalTokens},
		"metrics":    map[string]int{"latencyMs": 1},
	})
	switch a.End {
	case llmtest.Stalled:
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body[:len(body)/2]))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	case llmtest.Dropped:
		llmtest.WriteCut(t, w, http.StatusOK, "application/json", []byte(body))
	case llmtest.Malformed:
		writeConverseJSON(w, body[:len(body)/2])
	default:
		writeConverseJSON(w, body)
	}
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
		send(frame[:len(frame)/2])
		llmtest.CloseConn(t, w)
	case a.End == llmtest.Unfinished:
	case a.End == llmtest.Malformed:
		send(eventFrame("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":`))
	case a.End == llmtest.Endless:
		llmtest.Repeat(w, r, textFrame(0, "and on and on"))
	default:
		send(eventFrame("messageStop", mustJSON(map[string]string{"p": "abc", "stopReason": stopReasons[a.Finish]})))
		send(eventFrame("metadata", mustJSON(map[string]any{"metrics": map[string]int{"latencyMs": 1},
			"usage": map[string]int{"inputTokens": a.Usage.PromptTokens, "outputTokens": a.Usage.CompletionTokens, "totalTokens": a.Usage.TotalTokens}})))
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
