package tests

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// weatherTool is a client tool in openai-go's shape.
var weatherTool = openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
	Name:        "get_weather",
	Description: openai.String("Current weather of a city"),
	Parameters:  openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
})

// Stateless: the model calls the agent's read_file and the client's
// get_weather in one step; read_file runs on the server, and only the
// client's call comes back. The client sends the whole conversation with
// its result, and the model answers.
func TestClientToolsStateless(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	g.writeWorkspaceFile("city.txt", "Oslo")
	c := g.client(g.firstKey())
	ctx := context.Background()
	fake.Enqueue(
		fakellm.Reply{Content: "Let me look.", ToolCalls: []fakellm.ToolCall{
			{ID: "call_read", Name: "read_file", Arguments: `{"path":"city.txt"}`},
			{ID: "call_weather", Name: "get_weather", Arguments: `{"city":"Oslo"}`},
		}},
		fakellm.Reply{Content: "It rains in Oslo."},
	)
	params := chatParams(openai.UserMessage("What is the weather in my city?"))
	params.Tools = []openai.ChatCompletionToolUnionParam{weatherTool}
	resp, err := c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 {
		t.Fatalf("choice = %+v, want finish_reason tool_calls and one call", ch)
	}
	call := ch.Message.ToolCalls[0]
	if call.ID != "call_weather" || call.Function.Name != "get_weather" || call.Function.Arguments != `{"city":"Oslo"}` {
		t.Errorf("call = %+v", call)
	}
	if ch.Message.Content != "Let me look." {
		t.Errorf("content = %q, want the text that came with the calls", ch.Message.Content)
	}
	reqs := fake.Requests()
	if !slices.Contains(reqs[0].Tools, "get_weather") || !slices.Contains(reqs[0].Tools, "read_file") {
		t.Errorf("tools offered = %v, want the agent's and the client's", reqs[0].Tools)
	}
	// The server ran its own tool before handing the client its call.
	waitEvent(t, g, "tool_call_result", map[string]string{"tool_name": "read_file"})

	params.Messages = append(params.Messages, ch.Message.ToParam(), openai.ToolMessage("rain, 4°C", call.ID))
	resp, err = c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "It rains in Oslo." || resp.Choices[0].FinishReason != "stop" {
		t.Errorf("answer = %q (%s)", got, resp.Choices[0].FinishReason)
	}
	if got, _ := toolResult(fake.Requests()[1], "call_weather"); got != "rain, 4°C" {
		t.Errorf("the client's result upstream = %q", got)
	}
}

// Stateful, streamed: the run parks while the client runs its tool; the
// tool message resumes it; usage counts each part once.
func TestClientToolsStateful(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	c := g.client(g.firstKey())
	ctx := context.Background()
	fake.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}, Usage: &fakellm.Usage{PromptTokens: 100, CompletionTokens: 10}},
		fakellm.Reply{Content: "Rain, 4°C.", Usage: &fakellm.Usage{PromptTokens: 120, CompletionTokens: 5}},
	)
	params := chatParams(openai.UserMessage("weather in Oslo?"))
	params.Tools = []openai.ChatCompletionToolUnionParam{weatherTool}
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := c.Chat.Completions.NewStreaming(ctx, params, session("s1"))
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	ch := acc.Choices[0]
	if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 1 || ch.Message.ToolCalls[0].ID != "call_w" ||
		ch.Message.ToolCalls[0].Function.Arguments != `{"city":"Oslo"}` {
		t.Fatalf("streamed choice = %+v", ch)
	}
	if acc.Usage.PromptTokens != 100 || acc.Usage.CompletionTokens != 10 {
		t.Errorf("first usage = %+v, want 100/10", acc.Usage)
	}

	// A result for another call is refused, and changes nothing.
	bad := chatParams(openai.ToolMessage("rain", "call_nope"))
	_, err := c.Chat.Completions.New(ctx, bad, session("s1"))
	wantAPIError(t, err, http.StatusBadRequest, "invalid_value")

	params.Messages = append(params.Messages, ch.Message.ToParam(), openai.ToolMessage("rain, 4°C", "call_w"))
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{}
	resp, err := c.Chat.Completions.New(ctx, params, session("s1"))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "Rain, 4°C." {
		t.Errorf("answer = %q", got)
	}
	if resp.Usage.PromptTokens != 120 || resp.Usage.CompletionTokens != 5 {
		t.Errorf("second usage = %+v, want only the second call's 120/5", resp.Usage)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream requests, want 2", len(reqs))
	}
	want := []fakellm.Message{
		user("weather in Oslo?"),
		{Role: "assistant", ToolCalls: []fakellm.ToolCall{{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Oslo"}`}}},
		{Role: "tool", Content: "rain, 4°C", ToolCallID: "call_w"},
	}
	if diff := cmp.Diff(want, conversation(reqs[1].Messages)); diff != "" {
		t.Errorf("second upstream conversation (-want +got):\n%s", diff)
	}

	// Now nothing waits: tool results are refused; the session goes on.
	_, err = c.Chat.Completions.New(ctx, chatParams(openai.ToolMessage("again", "call_w")), session("s1"))
	wantAPIError(t, err, http.StatusBadRequest, "invalid_value")
	if got := ask(t, c, "thanks", session("s1")); got != "echo: thanks" {
		t.Errorf("next turn = %q", got)
	}
}

// A new message instead of the tool's result ends the wait: the call is
// answered as not run and the new message is answered.
func TestClientToolsAbandoned(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	c := g.client(g.firstKey())
	fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_w", Name: "get_weather", Arguments: `{}`}}})
	params := chatParams(openai.UserMessage("weather?"))
	params.Tools = []openai.ChatCompletionToolUnionParam{weatherTool}
	if _, err := c.Chat.Completions.New(context.Background(), params, session("s1")); err != nil {
		t.Fatal(err)
	}
	if got := ask(t, c, "never mind", session("s1")); got != "echo: never mind" {
		t.Errorf("answer = %q", got)
	}
	last := fake.Requests()[len(fake.Requests())-1]
	if got, _ := toolResult(last, "call_w"); !strings.Contains(got, "did not run") {
		t.Errorf("abandoned call's result upstream = %q", got)
	}
}

// A client tool may not take the name of an agent's tool; the error says
// which.
func TestClientToolNameClash(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	body := `{"model":"default","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"read_file","parameters":{"type":"object"}}}]}`
	resp, b := g.post(t, g.firstKey(), body, nil)
	e := wantErrorJSON(t, resp, b, http.StatusBadRequest, "invalid_value")
	if e.Error != nil && !strings.Contains(e.Error.Message, `"read_file"`) {
		t.Errorf("message = %q, want it to name read_file", e.Error.Message)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d upstream requests after a refused request", n)
	}
}

// Another key cannot hand results to a run parked in a session of the
// same name.
func TestClientToolsOwnership(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	c := g.client(g.firstKey())
	other := g.client(g.createKey(t, "--name", "other", "--autonomy", "full"))
	fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_w", Name: "get_weather", Arguments: `{}`}}})
	params := chatParams(openai.UserMessage("weather?"))
	params.Tools = []openai.ChatCompletionToolUnionParam{weatherTool}
	if _, err := c.Chat.Completions.New(context.Background(), params, session("shared")); err != nil {
		t.Fatal(err)
	}
	_, err := other.Chat.Completions.New(context.Background(), chatParams(openai.ToolMessage("sunny", "call_w")), session("shared"))
	wantAPIError(t, err, http.StatusBadRequest, "invalid_value")
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d upstream requests, want 1: the other key's result resumed nothing", n)
	}
	// The owner's result still resumes the run.
	fake.Enqueue(fakellm.Reply{Content: "Sunny."})
	resp, err := c.Chat.Completions.New(context.Background(), chatParams(openai.ToolMessage("sunny", "call_w")), session("shared"))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "Sunny." {
		t.Errorf("answer = %q", got)
	}
}
