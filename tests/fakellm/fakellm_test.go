package fakellm

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

func newClient(s *Server) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(s.URL+"/v1"),
		option.WithAPIKey("sk-test"),
		option.WithMaxRetries(0),
	)
}

var readFileTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name: "read_file",
	Parameters: shared.FunctionParameters{
		"type":       "object",
		"properties": map[string]any{"path": map[string]any{"type": "string"}},
	},
})

func TestPlainEcho(t *testing.T) {
	s := New()
	defer s.Close()
	c := newClient(s)
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "fake-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage("hello")},
		Tools:    []openai.ChatCompletionToolUnionParam{readFileTool},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "echo: hello" {
		t.Errorf("content = %q, want %q", got, "echo: hello")
	}
	if resp.Object != "chat.completion" || resp.Model != "fake-model" || resp.Choices[0].FinishReason != "stop" {
		t.Errorf("object/model/finish = %q/%q/%q", resp.Object, resp.Model, resp.Choices[0].FinishReason)
	}
	if resp.Usage.PromptTokens <= 0 || resp.Usage.CompletionTokens <= 0 || resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
		t.Errorf("usage = %+v", resp.Usage)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("recorded %d requests, want 1", len(reqs))
	}
	want := []Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hello"}}
	if diff := cmp.Diff(want, reqs[0].Messages); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"read_file"}, reqs[0].Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if reqs[0].APIKey != "sk-test" || reqs[0].Stream || reqs[0].Model != "fake-model" {
		t.Errorf("request key/stream/model = %q/%v/%q", reqs[0].APIKey, reqs[0].Stream, reqs[0].Model)
	}
}

func TestScriptThenDefault(t *testing.T) {
	s := New()
	defer s.Close()
	s.Enqueue(Reply{Content: "first"}, Reply{Content: "second"})
	s.SetDefault(func(r Request) Reply { return Reply{Content: "default for " + r.LastUser()} })
	c := newClient(s)
	var got []string
	for _, q := range []string{"a", "b", "c"} {
		resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "fake-model", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(q)},
		})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.Choices[0].Message.Content)
	}
	if diff := cmp.Diff([]string{"first", "second", "default for c"}, got); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
	s.Reset()
	if n := len(s.Requests()); n != 0 {
		t.Errorf("after Reset, %d requests recorded", n)
	}
}

func TestToolCallAndToolMessages(t *testing.T) {
	s := New()
	defer s.Close()
	s.Enqueue(Reply{ToolCalls: []ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"notes.txt"}`}}})
	c := newClient(s)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:    "fake-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("read my notes")},
		Tools:    []openai.ChatCompletionToolUnionParam{readFileTool},
	}
	resp, err := c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	choice := resp.Choices[0]
	if choice.FinishReason != "tool_calls" || len(choice.Message.ToolCalls) != 1 {
		t.Fatalf("finish=%q tool_calls=%d", choice.FinishReason, len(choice.Message.ToolCalls))
	}
	tc := choice.Message.ToolCalls[0]
	if tc.ID != "call_1" || tc.Type != "function" || tc.Function.Name != "read_file" || tc.Function.Arguments != `{"path":"notes.txt"}` {
		t.Errorf("tool call = %+v", tc)
	}

	params.Messages = append(params.Messages, choice.Message.ToParam(), openai.ToolMessage("hi there", "call_1"))
	resp, err = c.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "echo: read my notes" {
		t.Errorf("content = %q", got)
	}
	want := []Message{
		{Role: "user", Content: "read my notes"},
		{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"notes.txt"}`}}},
		{Role: "tool", Content: "hi there", ToolCallID: "call_1"},
	}
	if diff := cmp.Diff(want, s.Requests()[1].Messages); diff != "" {
		t.Errorf("second request messages (-want +got):\n%s", diff)
	}
}

func TestInvalidConversationRejected(t *testing.T) {
	s := New()
	defer s.Close()
	s.Enqueue(Reply{Content: "not used"})
	c := newClient(s)
	// A tool message without the assistant tool call it answers: the real
	// API rejects this with 400.
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:    "fake-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("q"), openai.ToolMessage("orphan", "call_x")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest {
		t.Fatalf("err = %v, want *openai.Error with status 400", err)
	}
	if s.Requests()[0].Invalid == "" {
		t.Error("request not marked Invalid")
	}
	if s.Pending() != 1 {
		t.Errorf("a rejected request consumed a scripted reply")
	}
}

func TestStreamedContent(t *testing.T) {
	s := New()
	defer s.Close()
	const text = "The quick brown fox jumps over the lazy dog — ünïcödé"
	s.Enqueue(Reply{Content: text, ChunkSize: 3})
	c := newClient(s)
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "fake-model",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("tell me")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	acc := openai.ChatCompletionAccumulator{}
	deltas := 0
	usageChunks := 0
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			deltas++
		}
		if len(chunk.Choices) == 0 && chunk.Usage.TotalTokens > 0 {
			usageChunks++
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != text {
		t.Errorf("content = %q, want %q", got, text)
	}
	if want := (len([]rune(text)) + 2) / 3; deltas != want {
		t.Errorf("content deltas = %d, want %d", deltas, want)
	}
	if usageChunks != 1 || acc.Usage.TotalTokens == 0 {
		t.Errorf("usage chunks = %d, usage = %+v", usageChunks, acc.Usage)
	}
	if acc.Choices[0].FinishReason != "stop" {
		t.Errorf("finish_reason = %q", acc.Choices[0].FinishReason)
	}
	if r := s.Requests()[0]; !r.Stream || !r.IncludeUsage {
		t.Errorf("request stream/include_usage = %v/%v", r.Stream, r.IncludeUsage)
	}
}

func TestStreamedToolCall(t *testing.T) {
	s := New()
	defer s.Close()
	args := `{"path":"a/long/path/to/notes.txt"}`
	s.Enqueue(Reply{ToolCalls: []ToolCall{
		{ID: "call_a", Name: "read_file", Arguments: args},
		{ID: "call_b", Name: "list_dir", Arguments: `{"path":"."}`},
	}})
	c := newClient(s)
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:    "fake-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("read")},
		Tools:    []openai.ChatCompletionToolUnionParam{readFileTool},
	})
	acc := openai.ChatCompletionAccumulator{}
	argChunks := 0
	for stream.Next() {
		chunk := stream.Current()
		if !acc.AddChunk(chunk) {
			t.Fatal("accumulator rejected a chunk")
		}
		if len(chunk.Choices) > 0 {
			for _, tc := range chunk.Choices[0].Delta.ToolCalls {
				if tc.Function.Arguments != "" {
					argChunks++
				}
			}
		}
		if len(chunk.Choices) == 0 {
			t.Error("usage chunk sent without include_usage")
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	type call struct{ ID, Name, Args string }
	var got []call
	for _, tc := range acc.Choices[0].Message.ToolCalls {
		got = append(got, call{tc.ID, tc.Function.Name, tc.Function.Arguments})
	}
	want := []call{{"call_a", "read_file", args}, {"call_b", "list_dir", `{"path":"."}`}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	if argChunks < 3 {
		t.Errorf("arguments came in %d chunks, want several", argChunks)
	}
	if acc.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("finish_reason = %q", acc.Choices[0].FinishReason)
	}
}

func TestRawStreamFraming(t *testing.T) {
	s := New()
	defer s.Close()
	s.Enqueue(Reply{Content: "hi"})
	resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"fake-model","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	events := strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n")
	if last := events[len(events)-1]; last != "data: [DONE]" {
		t.Errorf("last event = %q, want data: [DONE]", last)
	}
	if usage := events[len(events)-2]; !strings.Contains(usage, `"choices":[]`) || !strings.Contains(usage, `"total_tokens"`) {
		t.Errorf("usage event = %q", usage)
	}
}

func TestRateLimitError(t *testing.T) {
	s := New()
	defer s.Close()
	s.Enqueue(Reply{Status: http.StatusTooManyRequests, RetryAfter: "7"})
	c := newClient(s)
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "fake-model", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *openai.Error", err)
	}
	if apiErr.StatusCode != http.StatusTooManyRequests || apiErr.Code != "rate_limit_exceeded" || apiErr.Message == "" {
		t.Errorf("error status/code/message = %d/%q/%q", apiErr.StatusCode, apiErr.Code, apiErr.Message)
	}
	if ra := apiErr.Response.Header.Get("Retry-After"); ra != "7" {
		t.Errorf("Retry-After = %q, want 7", ra)
	}
}

func TestServerError(t *testing.T) {
	s := New()
	defer s.Close()
	s.Enqueue(Reply{Status: http.StatusInternalServerError})
	c := newClient(s)
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "fake-model", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
	})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || apiErr.Type != "server_error" {
		t.Fatalf("err = %v, want server_error 500", err)
	}
}

func TestRawMalformedBody(t *testing.T) {
	s := New()
	defer s.Close()
	s.Enqueue(Reply{Raw: `{"id":"x","choices":[{"message":`})
	c := newClient(s)
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "fake-model", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
	})
	if err == nil {
		t.Fatal("malformed body accepted without error")
	}
}

func TestCutStream(t *testing.T) {
	s := New()
	defer s.Close()
	s.Enqueue(Reply{Content: "this answer will be cut off in the middle", CutStream: true})
	c := newClient(s)
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model: "fake-model", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
	})
	var got strings.Builder
	for stream.Next() {
		if ch := stream.Current().Choices; len(ch) > 0 {
			got.WriteString(ch[0].Delta.Content)
		}
	}
	if stream.Err() == nil {
		t.Error("cut stream ended without error")
	}
	if got.Len() == 0 || got.String() == "this answer will be cut off in the middle" {
		t.Errorf("received %q before the cut, want a non-empty prefix", got.String())
	}
}

func TestHangReleasedByClient(t *testing.T) {
	s := New()
	defer s.Close()
	s.Enqueue(Reply{Hang: true})
	arrived := make(chan Request, 1)
	s.OnRequest(func(r Request) { arrived <- r })
	c := newClient(s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model: "fake-model", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
		})
		done <- err
	}()
	select {
	case r := <-arrived:
		if r.LastUser() != "x" {
			t.Errorf("OnRequest got %q", r.LastUser())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("request never arrived")
	}
	select {
	case err := <-done:
		t.Fatalf("hanging request answered: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("cancelled request returned no error")
	}
}

func TestDelayAndConcurrency(t *testing.T) {
	s := New()
	defer s.Close()
	s.SetDefault(func(r Request) Reply { return Reply{Content: "ok " + r.LastUser(), Delay: 20 * time.Millisecond} })
	c := newClient(s)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			q := strings.Repeat("q", i+1)
			resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
				Model: "fake-model", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(q)},
			})
			if err == nil && resp.Choices[0].Message.Content != "ok "+q {
				err = errors.New("wrong answer " + resp.Choices[0].Message.Content)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if reqs, ok := s.WaitRequests(16, time.Second); !ok {
		t.Errorf("recorded %d requests, want 16", len(reqs))
	}
}

func TestModels(t *testing.T) {
	s := New()
	defer s.Close()
	c := newClient(s)
	page, err := c.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != "fake-model" {
		t.Errorf("models = %+v", page.Data)
	}
}

func TestGeneratedReply(t *testing.T) {
	const unit = "añb€" // 7 bytes: runes of 1, 2, 1 and 3 bytes
	// 14286 units are 100002 bytes; "a" fits in the 2 bytes left, "ñ"
	// does not.
	want := strings.Repeat(unit, 14286) + "a"
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "completion", true: "stream"}[stream], func(t *testing.T) {
			s := New()
			defer s.Close()
			s.Enqueue(Reply{Generated: 100004, GeneratedText: unit, ChunkSize: 1000})
			c := newClient(s)
			params := openai.ChatCompletionNewParams{
				Model: "fake-model", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
			}
			got := complete(t, c, params, stream)
			if content := got.Choices[0].Message.Content; content != want {
				t.Errorf("content: %d bytes, want %d (%q…)", len(content), len(want), content[:min(len(content), 40)])
			}
			if got.Choices[0].FinishReason != "stop" || got.Usage.CompletionTokens != 100004/4+1 {
				t.Errorf("finish_reason %q, usage %+v", got.Choices[0].FinishReason, got.Usage)
			}
		})
	}
}

// TestGeneratedReplyAbandoned checks that a reply far too large to exist
// in memory (a terabyte) is made only as fast as the client reads, and
// that the fake stops making it once it can no longer be sent (Close
// waits for the handler).
func TestGeneratedReplyAbandoned(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "completion", true: "stream"}[stream], func(t *testing.T) {
			s := New()
			s.Enqueue(Reply{Generated: 1 << 40, ChunkSize: 4096})
			body := `{"model":"fake-model","messages":[{"role":"user","content":"x"}],"stream":` + map[bool]string{false: "false", true: "true"}[stream] + `}`
			resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			head := make([]byte, 1<<20)
			if _, err := io.ReadFull(resp.Body, head); err != nil {
				t.Fatalf("reading the first megabyte: %v", err)
			}
			if !strings.Contains(string(head), "All work and no play makes Jack a dull boy. All work") {
				t.Errorf("the reply does not repeat the default text: %q…", head[:200])
			}
			resp.Body.Close()
			closed := make(chan struct{})
			go func() {
				s.Close() // waits for the handler
				close(closed)
			}()
			select {
			case <-closed:
			case <-time.After(30 * time.Second):
				t.Fatal("the fake kept generating after the client left")
			}
		})
	}
}

// complete sends a chat completion request, streamed (with usage) or not,
// and returns the completion, reassembled from the chunks when streamed.
func complete(t *testing.T, c openai.Client, params openai.ChatCompletionNewParams, stream bool) openai.ChatCompletion {
	t.Helper()
	if !stream {
		resp, err := c.Chat.Completions.New(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		return *resp
	}
	params.StreamOptions.IncludeUsage = openai.Bool(true)
	st := c.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	for st.Next() {
		acc.AddChunk(st.Current())
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	return acc.ChatCompletion
}
