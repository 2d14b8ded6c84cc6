// Package tests holds the end-to-end tests: they build the real lambdaclaw
// binary, run it against a scripted fake LLM and talk to it with the official
// OpenAI Go client.
package tests

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/openai/openai-go/v3"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

func TestPlainReply(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	c := g.client(g.firstKey())
	ctx := context.Background()

	resp, err := c.Chat.Completions.New(ctx, chatParams(openai.UserMessage("hello")))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "echo: hello" {
		t.Errorf("content = %q, want %q", got, "echo: hello")
	}
	if resp.Choices[0].FinishReason != "stop" || resp.Object != "chat.completion" {
		t.Errorf("finish_reason/object = %q/%q", resp.Choices[0].FinishReason, resp.Object)
	}
	if resp.Usage.TotalTokens <= 0 {
		t.Errorf("usage = %+v, want the provider's token counts", resp.Usage)
	}

	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("fake LLM got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model != "fake-model" || r.APIKey != providerKey {
		t.Errorf("upstream model/key = %q/%q, want fake-model/%s", r.Model, r.APIKey, providerKey)
	}
	if diff := cmp.Diff([]fakellm.Message{user("hello")}, conversation(r.Messages)); diff != "" {
		t.Errorf("upstream conversation (-want +got):\n%s", diff)
	}
	for _, name := range []string{"read_file", "write_file", "list_dir", "web_fetch", "workspace_memory"} {
		if !slices.Contains(r.Tools, name) {
			t.Errorf("tool %q not offered to the model; offered %v", name, r.Tools)
		}
	}

	// The lambdaclaw/ prefix selects the same agent; without a session key
	// the request is stateless, so the first exchange is not sent again.
	resp, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "lambdaclaw/default", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("again")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "echo: again" {
		t.Errorf("content = %q, want %q", got, "echo: again")
	}
	if diff := cmp.Diff([]fakellm.Message{user("again")}, conversation(fake.Requests()[1].Messages)); diff != "" {
		t.Errorf("stateless request carried history (-want +got):\n%s", diff)
	}

	// Stateless: the request's messages are the history.
	_, err = c.Chat.Completions.New(ctx, chatParams(
		openai.UserMessage("q1"), openai.AssistantMessage("a1"), openai.UserMessage("q2")))
	if err != nil {
		t.Fatal(err)
	}
	want := []fakellm.Message{user("q1"), assistant("a1"), user("q2")}
	if diff := cmp.Diff(want, conversation(fake.Requests()[2].Messages)); diff != "" {
		t.Errorf("stateless history (-want +got):\n%s", diff)
	}

	models, err := c.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range models.Data {
		found = found || m.ID == "default" || m.ID == "lambdaclaw/default"
	}
	if !found {
		t.Errorf("GET /v1/models = %+v, want the default agent", models.Data)
	}

	g.stop()
	if events := logEvents(t, g.stderr.String()); len(events) == 0 {
		t.Error("no JSON log lines on stderr")
	}
}

func TestStreamedReply(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	key := g.firstKey()
	c := g.client(key)
	const text = "Streaming works: the quick brown fox jumps over the lazy dog."
	fake.Enqueue(fakellm.Reply{Content: text, ChunkSize: 5})

	params := chatParams(openai.UserMessage("stream please"))
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := c.Chat.Completions.NewStreaming(context.Background(), params)
	var acc openai.ChatCompletionAccumulator
	deltas, usageChunks := 0, 0
	for stream.Next() {
		chunk := stream.Current()
		if !acc.AddChunk(chunk) {
			t.Fatalf("chunk does not fit the stream: %s", chunk.RawJSON())
		}
		if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			deltas++
		}
		if len(chunk.Choices) == 0 && chunk.Usage.TotalTokens > 0 {
			usageChunks++
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream error: %v", err)
	}
	if len(acc.Choices) == 0 {
		t.Fatal("stream had no choices")
	}
	if got := acc.Choices[0].Message.Content; got != text {
		t.Errorf("reassembled content = %q, want %q", got, text)
	}
	if deltas < 2 {
		t.Errorf("content came in %d deltas, want it streamed in several", deltas)
	}
	if usageChunks != 1 || acc.Usage.TotalTokens <= 0 {
		t.Errorf("usage chunks = %d, usage = %+v; want one usage chunk with choices [] (include_usage)", usageChunks, acc.Usage)
	}
	if acc.Choices[0].FinishReason != "stop" {
		t.Errorf("finish_reason = %q, want stop", acc.Choices[0].FinishReason)
	}

	// The wire format: text/event-stream, data: lines, ending with [DONE].
	resp, body := g.post(t, key, `{"model":"default","stream":true,"messages":[{"role":"user","content":"raw"}]}`, nil)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var data []string
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, d)
		}
	}
	if len(data) < 2 || data[len(data)-1] != "[DONE]" {
		t.Errorf("SSE body does not end with data: [DONE]:\n%s", body)
	}
	var got strings.Builder
	for _, d := range data[:max(len(data)-1, 0)] {
		var chunk openai.ChatCompletionChunk
		if err := chunk.UnmarshalJSON([]byte(d)); err != nil {
			t.Fatalf("bad chunk %q: %v", d, err)
		}
		if chunk.Object != "chat.completion.chunk" {
			t.Errorf("chunk object = %q", chunk.Object)
		}
		if len(chunk.Choices) > 0 {
			got.WriteString(chunk.Choices[0].Delta.Content)
		}
		if len(chunk.Choices) == 0 {
			t.Errorf("usage chunk sent without stream_options.include_usage: %s", d)
		}
	}
	if got.String() != "echo: raw" {
		t.Errorf("raw stream content = %q, want %q", got.String(), "echo: raw")
	}
}

func TestToolTurn(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	c := g.client(g.firstKey())
	g.writeWorkspaceFile("notes.txt", "buy milk and eggs\n")
	readNotes := fakellm.ToolCall{ID: "call_notes", Name: "read_file", Arguments: `{"path":"notes.txt"}`}

	check := func(t *testing.T, reqs []fakellm.Request, question string) {
		t.Helper()
		if len(reqs) != 2 {
			t.Fatalf("fake LLM got %d requests, want 2 (tool call, then final answer)", len(reqs))
		}
		conv := conversation(reqs[1].Messages)
		if len(conv) != 3 {
			t.Fatalf("second LLM request has %d messages, want user, assistant tool call, tool result: %+v", len(conv), conv)
		}
		wantStart := []fakellm.Message{user(question), {Role: "assistant", ToolCalls: []fakellm.ToolCall{readNotes}}}
		if diff := cmp.Diff(wantStart, conv[:2]); diff != "" {
			t.Errorf("second LLM request (-want +got):\n%s", diff)
		}
		if tm := conv[2]; tm.Role != "tool" || tm.ToolCallID != "call_notes" || !strings.Contains(tm.Content, "buy milk and eggs") {
			t.Errorf("tool message = %+v, want role tool, tool_call_id call_notes, the file content", tm)
		}
	}

	t.Run("json", func(t *testing.T) {
		fake.Reset()
		fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{readNotes}}, fakellm.Reply{Content: "Your notes say: buy milk and eggs."})
		if got := ask(t, c, "what do my notes say?"); got != "Your notes say: buy milk and eggs." {
			t.Errorf("reply = %q, want the final answer", got)
		}
		check(t, fake.Requests(), "what do my notes say?")
	})
	t.Run("stream", func(t *testing.T) {
		fake.Reset()
		fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{readNotes}}, fakellm.Reply{Content: "Streamed: buy milk and eggs."})
		stream := c.Chat.Completions.NewStreaming(context.Background(), chatParams(openai.UserMessage("stream my notes")))
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(acc.Choices) == 0 || acc.Choices[0].Message.Content != "Streamed: buy milk and eggs." {
			t.Errorf("streamed reply = %+v, want the final answer", acc.Choices)
		}
		check(t, fake.Requests(), "stream my notes")
	})

	// Observability: the turn is logged as events, fire-and-forget.
	var events []map[string]any
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		events = logEvents(t, g.stderr.String())
		if hasEvent(events, "tool_call_start", map[string]string{"tool_name": "read_file"}) && hasEvent(events, "agent_start", nil) {
			break
		}
	}
	for _, name := range []string{"agent_start", "llm_request", "llm_response", "tool_call_start", "tool_call_result"} {
		if !hasEvent(events, name, nil) {
			t.Errorf("no %s event in the JSON logs", name)
		}
	}
	if !hasEvent(events, "tool_call_start", map[string]string{"tool_name": "read_file"}) {
		t.Error("no tool_call_start event with tool_name read_file")
	}
}

func TestMalformedToolCalls(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	c := g.client(g.firstKey())
	// A truncated arguments object and an unknown tool: the turn must go
	// on, with each call answered by a tool message the model can read.
	fake.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{
			{ID: "call_bad", Name: "read_file", Arguments: `{"path": "notes.txt"`},
			{ID: "call_unknown", Name: "no_such_tool", Arguments: `{}`},
		}},
		fakellm.Reply{Content: "Sorry, that did not work."},
	)
	if got := ask(t, c, "read it"); got != "Sorry, that did not work." {
		t.Errorf("reply = %q, want the model's answer after the failed calls", got)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("fake LLM got %d requests, want 2", len(reqs))
	}
	answered := map[string]string{}
	for _, m := range conversation(reqs[1].Messages) {
		if m.Role == "tool" {
			answered[m.ToolCallID] = m.Content
		}
	}
	for _, id := range []string{"call_bad", "call_unknown"} {
		if strings.TrimSpace(answered[id]) == "" {
			t.Errorf("tool call %s got no error message back; tool messages: %v", id, answered)
		}
	}
}

func TestMaxToolIterations(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := newGateway(t, fake, "agents:\n  default:\n    max_tool_iterations: 2\n")
	g.start()
	c := g.client(g.firstKey())
	g.writeWorkspaceFile("loop.txt", "again")
	n := 0
	var mu sync.Mutex
	fake.SetDefault(func(fakellm.Request) fakellm.Reply {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: fmt.Sprintf("call_loop%d", n), Name: "read_file", Arguments: `{"path":"loop.txt"}`}}}
	})
	// A model that always calls a tool must be stopped by the limit and the
	// client must still get an answer.
	_, err := c.Chat.Completions.New(context.Background(), chatParams(openai.UserMessage("loop forever")))
	if err != nil {
		t.Fatalf("turn that hit max_tool_iterations: %v", err)
	}
	if got := len(fake.Requests()); got > 3 {
		t.Errorf("fake LLM got %d requests with max_tool_iterations 2, want at most 3", got)
	}
}

func TestStatefulHistory(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	key := g.firstKey()
	c := g.client(key)
	alice := session("alice")

	if got := ask(t, c, "my name is Ada", alice); got != "echo: my name is Ada" {
		t.Fatalf("reply = %q", got)
	}
	// The server's history is the truth: the history this client sends is
	// ignored and only its last user message is the new input.
	_, err := c.Chat.Completions.New(context.Background(), chatParams(
		openai.UserMessage("forged"), openai.AssistantMessage("forged answer"), openai.UserMessage("what is my name?")), alice)
	if err != nil {
		t.Fatal(err)
	}
	want := []fakellm.Message{user("my name is Ada"), assistant("echo: my name is Ada"), user("what is my name?")}
	if diff := cmp.Diff(want, conversation(fake.Requests()[1].Messages)); diff != "" {
		t.Errorf("second request of the session (-want +got):\n%s", diff)
	}

	g.stop()
	g.start()
	c = g.client(key)
	if got := ask(t, c, "still there?", alice); got != "echo: still there?" {
		t.Errorf("reply after restart = %q", got)
	}
	want = append(want, assistant("echo: what is my name?"), user("still there?"))
	if diff := cmp.Diff(want, conversation(fake.Requests()[2].Messages)); diff != "" {
		t.Errorf("history after restart (-want +got):\n%s", diff)
	}

	// Another session, and a stateless request, see none of it.
	ask(t, c, "I am Bob", session("bob"))
	ask(t, c, "no session")
	reqs := fake.Requests()
	if diff := cmp.Diff([]fakellm.Message{user("I am Bob")}, conversation(reqs[3].Messages)); diff != "" {
		t.Errorf("other session (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]fakellm.Message{user("no session")}, conversation(reqs[4].Messages)); diff != "" {
		t.Errorf("stateless request (-want +got):\n%s", diff)
	}
}

func TestConcurrentSessionOrder(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	c := g.client(g.firstKey())
	// Each LLM call takes a while, so the eight requests overlap at the
	// gateway and must queue in the session's lane.
	fake.SetDefault(func(r fakellm.Request) fakellm.Reply {
		return fakellm.Reply{Content: "echo: " + r.LastUser(), Delay: 40 * time.Millisecond}
	})
	const n = 8
	var wg sync.WaitGroup
	replies := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			resp, err := c.Chat.Completions.New(context.Background(), chatParams(openai.UserMessage(fmt.Sprintf("message %d", i))), session("shared"))
			errs[i] = err
			if err == nil && len(resp.Choices) > 0 {
				replies[i] = resp.Choices[0].Message.Content
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("request %d: %v", i, errs[i])
		} else if want := fmt.Sprintf("echo: message %d", i); replies[i] != want {
			t.Errorf("request %d got %q, want %q", i, replies[i], want)
		}
	}

	// Each LLM request holds every earlier exchange, in the order the
	// requests were processed, and nothing else.
	reqs := fake.Requests()
	if len(reqs) != n {
		t.Fatalf("fake LLM got %d requests, want %d", len(reqs), n)
	}
	var want []fakellm.Message
	seen := map[string]bool{}
	for k, r := range reqs {
		u := r.LastUser()
		if seen[u] {
			t.Errorf("%q processed twice", u)
		}
		seen[u] = true
		want = append(want, user(u))
		if diff := cmp.Diff(want, conversation(r.Messages)); diff != "" {
			t.Errorf("LLM request %d (-want +got):\n%s", k, diff)
		}
		want = append(want, assistant("echo: "+u))
	}
	ask(t, c, "final", session("shared"))
	want = append(want, user("final"))
	if diff := cmp.Diff(want, conversation(fake.Requests()[n].Messages)); diff != "" {
		t.Errorf("history after the concurrent requests (-want +got):\n%s", diff)
	}
}

func TestKilledRunResumes(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	key := g.firstKey()
	g.writeWorkspaceFile("notes.txt", "resume notes content")
	readNotes := fakellm.ToolCall{ID: "call_resume", Name: "read_file", Arguments: `{"path":"notes.txt"}`}
	fake.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{readNotes}},
		fakellm.Reply{Hang: true},
		fakellm.Reply{Content: "resumed answer"},
	)
	done := make(chan error, 1)
	go func() {
		_, err := g.client(key).Chat.Completions.New(context.Background(), chatParams(openai.UserMessage("read my notes")), session("crash"))
		done <- err
	}()
	// The second LLM call (after the tool ran) hangs: kill -9 the server
	// between the act and think steps.
	if reqs, ok := fake.WaitRequests(2, 15*time.Second); !ok {
		t.Fatalf("fake LLM got %d requests, want 2 before the kill", len(reqs))
	}
	g.kill()
	if err := <-done; err == nil {
		t.Error("request to a killed server succeeded")
	}

	g.start()
	reqs, ok := fake.WaitRequests(3, 15*time.Second)
	if !ok {
		t.Fatalf("the killed run was not resumed on restart: fake LLM got %d requests, want a 3rd", len(reqs))
	}
	if diff := cmp.Diff(conversation(reqs[1].Messages), conversation(reqs[2].Messages)); diff != "" {
		t.Errorf("the resumed think step sent a different conversation than the killed one (-killed +resumed):\n%s", diff)
	}

	if got := ask(t, g.client(key), "thanks", session("crash")); got != "echo: thanks" {
		t.Errorf("follow-up reply = %q", got)
	}
	reqs = fake.Requests()
	if len(reqs) != 4 {
		t.Fatalf("fake LLM got %d requests, want 4", len(reqs))
	}
	conv := conversation(reqs[3].Messages)
	// Compare with the tool result's content checked apart, since the gateway
	// may frame it, and the tool name, which it may
	// omit.
	var toolContent string
	for i := range conv {
		if conv[i].Role == "tool" {
			toolContent, conv[i].Content, conv[i].Name = conv[i].Content, "", ""
		}
	}
	want := []fakellm.Message{
		user("read my notes"),
		{Role: "assistant", ToolCalls: []fakellm.ToolCall{readNotes}},
		{Role: "tool", ToolCallID: "call_resume"},
		assistant("resumed answer"),
		user("thanks"),
	}
	if diff := cmp.Diff(want, conv); diff != "" {
		t.Errorf("history after the resumed run must hold each message once (-want +got):\n%s", diff)
	}
	if !strings.Contains(toolContent, "resume notes content") {
		t.Errorf("tool result = %q, want the file content", toolContent)
	}
}

func TestAuthAndRequestErrors(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "max_body_bytes: 65536\n")
	key := g.firstKey()

	t.Run("missing key", func(t *testing.T) {
		t.Parallel()
		resp, body := g.post(t, "", `{"model":"default","messages":[{"role":"user","content":"hi"}]}`, nil)
		wantErrorJSON(t, resp, body, http.StatusUnauthorized, "invalid_api_key")
	})
	t.Run("bad key", func(t *testing.T) {
		t.Parallel()
		_, err := g.client("lc_not_a_real_key").Chat.Completions.New(context.Background(), chatParams(openai.UserMessage("hi")))
		wantAPIError(t, err, http.StatusUnauthorized, "invalid_api_key")
	})
	t.Run("revoked key", func(t *testing.T) {
		t.Parallel()
		k := g.createKey(t, "--name", "to-revoke")
		if got := ask(t, g.client(k), "before revoke"); got != "echo: before revoke" {
			t.Fatalf("reply = %q", got)
		}
		var id string
		for line := range strings.SplitSeq(g.cli(t, "keys", "list"), "\n") {
			if f := strings.Fields(line); len(f) > 1 && slices.Contains(f, "to-revoke") {
				id = f[0]
			}
		}
		if id == "" {
			t.Fatal("keys list has no line for the key named to-revoke")
		}
		g.cli(t, "keys", "revoke", id)
		_, err := g.client(k).Chat.Completions.New(context.Background(), chatParams(openai.UserMessage("after revoke")))
		wantAPIError(t, err, http.StatusUnauthorized, "invalid_api_key")
	})
	t.Run("unknown agent", func(t *testing.T) {
		t.Parallel()
		_, err := g.client(key).Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "no-such-agent", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		})
		wantAPIError(t, err, http.StatusNotFound, "model_not_found")
	})
	t.Run("malformed JSON", func(t *testing.T) {
		t.Parallel()
		resp, body := g.post(t, key, `{"model":"default","messages":[{"role":"user","content":"hi"}`, nil)
		wantErrorJSON(t, resp, body, http.StatusBadRequest, "")
	})
	t.Run("body too large", func(t *testing.T) {
		t.Parallel()
		big := strings.Repeat("x", 100_000)
		resp, body := g.post(t, key, `{"model":"default","messages":[{"role":"user","content":"TOO-BIG`+big+`"}]}`, nil)
		wantErrorJSON(t, resp, body, http.StatusRequestEntityTooLarge, "")
		for _, r := range fake.Requests() {
			if strings.Contains(r.LastUser(), "TOO-BIG") {
				t.Error("an oversized request reached the LLM")
			}
		}
	})
	t.Run("rate limit", func(t *testing.T) {
		t.Parallel()
		k := g.createKey(t, "--name", "slow", "--rate", "2")
		c := g.client(k)
		ask(t, c, "one")
		ask(t, c, "two")
		_, err := c.Chat.Completions.New(context.Background(), chatParams(openai.UserMessage("three")))
		apiErr := wantAPIError(t, err, http.StatusTooManyRequests, "")
		if apiErr.Response != nil {
			ra := apiErr.Response.Header.Get("Retry-After")
			if secs, err := strconv.Atoi(ra); err != nil || secs < 1 || secs > 60 {
				t.Errorf("Retry-After = %q, want whole seconds in 1..60", ra)
			}
		}
		// The limit is per key.
		if got := ask(t, g.client(key), "other key"); got != "echo: other key" {
			t.Errorf("another key was limited too: %q", got)
		}
	})
}

// providerConfig is a config file with two providers.
func providerConfig(primary, backup *fakellm.Server, primaryExtra string) string {
	return fmt.Sprintf(`providers:
  - name: primary
    base_url: %s/v1
    api_key: {env: OPENAI_API_KEY}
    model: fake-model
%s  - name: backup
    base_url: %s/v1
    api_key: {env: OPENAI_API_KEY}
    model: fake-model
    retries: 0
`, primary.URL, primaryExtra, backup.URL)
}

func TestProviderFailures(t *testing.T) {
	t.Parallel()

	t.Run("all providers fail", func(t *testing.T) {
		t.Parallel()
		primary, backup := newFake(t), newFake(t)
		down := func(fakellm.Request) fakellm.Reply { return fakellm.Reply{Status: http.StatusInternalServerError} }
		primary.SetDefault(down)
		backup.SetDefault(down)
		g := newGateway(t, nil, providerConfig(primary, backup, "    timeout: 2s\n    retries: 1\n"))
		g.env = append(g.env, "OPENAI_API_KEY="+providerKey)
		g.start()
		resp, body := g.post(t, g.firstKey(), `{"model":"default","messages":[{"role":"user","content":"hi"}]}`, nil)
		wantErrorJSON(t, resp, body, http.StatusBadGateway, "upstream_error")
		if strings.Contains(string(body), providerKey) {
			t.Errorf("error body leaks the provider key: %s", body)
		}
		if got := len(primary.Requests()); got != 2 {
			t.Errorf("primary got %d requests, want 2 (retries: 1)", got)
		}
		if len(backup.Requests()) == 0 {
			t.Error("backup provider never tried")
		}
	})

	t.Run("fallback on 429", func(t *testing.T) {
		t.Parallel()
		primary, backup, decoy := newFake(t), newFake(t), newFake(t)
		primary.SetDefault(func(fakellm.Request) fakellm.Reply {
			return fakellm.Reply{Status: http.StatusTooManyRequests, RetryAfter: "1"}
		})
		backup.SetDefault(func(r fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: "from backup: " + r.LastUser()} })
		// OPENAI_BASE_URL points at a decoy: providers in the config file win.
		g := newGateway(t, decoy, providerConfig(primary, backup, "    retries: 0\n"))
		g.start()
		if got := ask(t, g.client(g.firstKey()), "hi"); got != "from backup: hi" {
			t.Errorf("reply = %q, want the backup's answer", got)
		}
		if len(primary.Requests()) == 0 {
			t.Error("primary provider never tried")
		}
		if n := len(decoy.Requests()); n != 0 {
			t.Errorf("the OPENAI_BASE_URL provider got %d requests although the config file has providers", n)
		}
	})

	t.Run("timeout falls through", func(t *testing.T) {
		t.Parallel()
		primary, backup := newFake(t), newFake(t)
		primary.SetDefault(func(fakellm.Request) fakellm.Reply { return fakellm.Reply{Hang: true} })
		backup.SetDefault(func(fakellm.Request) fakellm.Reply { return fakellm.Reply{Content: "backup in time"} })
		g := newGateway(t, nil, providerConfig(primary, backup, "    timeout: 1s\n    retries: 0\n"))
		g.env = append(g.env, "OPENAI_API_KEY="+providerKey)
		g.start()
		if got := ask(t, g.client(g.firstKey()), "hi"); got != "backup in time" {
			t.Errorf("reply = %q, want the backup's answer", got)
		}
	})

	t.Run("malformed upstream body", func(t *testing.T) {
		t.Parallel()
		fake := newFake(t)
		fake.SetDefault(func(fakellm.Request) fakellm.Reply { return fakellm.Reply{Raw: `{"id":"x","choices":[{"mess`} })
		g := startGateway(t, fake, "")
		resp, body := g.post(t, g.firstKey(), `{"model":"default","messages":[{"role":"user","content":"hi"}]}`, nil)
		wantErrorJSON(t, resp, body, http.StatusBadGateway, "upstream_error")
	})

	t.Run("no provider configured", func(t *testing.T) {
		t.Parallel()
		g := startGateway(t, nil, "")
		resp, body := g.post(t, g.firstKey(), `{"model":"default","messages":[{"role":"user","content":"hi"}]}`, nil)
		e := wantErrorJSON(t, resp, body, http.StatusServiceUnavailable, "provider_not_configured")
		if e.Error != nil && !strings.Contains(e.Error.Message, "OPENAI_API_KEY") {
			t.Errorf("message %q does not say how to configure a provider (OPENAI_API_KEY)", e.Error.Message)
		}
	})
}

func TestAutonomy(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	g.firstKey()
	cases := []struct {
		name, file string
		args       []string
		written    bool
	}{
		{"supervised by default", "supervised.txt", nil, false},
		{"read_only", "readonly.txt", []string{"--autonomy", "read_only"}, false},
		{"full", "full.txt", []string{"--autonomy", "full"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake.Reset()
			c := g.client(g.createKey(t, tc.args...))
			call := fakellm.ToolCall{ID: "call_write", Name: "write_file", Arguments: fmt.Sprintf(`{"path":%q,"content":"written by the agent"}`, tc.file)}
			fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{call}}, fakellm.Reply{Content: "done"})
			if got := ask(t, c, "write the file"); got != "done" {
				t.Errorf("reply = %q", got)
			}
			data, err := os.ReadFile(filepath.Join(g.workspace(), tc.file))
			if tc.written && string(data) != "written by the agent" {
				t.Errorf("with autonomy full, write_file did not write: %q, %v", data, err)
			}
			if !tc.written && err == nil {
				t.Errorf("write_file wrote %s although the key's autonomy forbids it", tc.file)
			}
			reqs := fake.Requests()
			if len(reqs) != 2 {
				t.Fatalf("fake LLM got %d requests, want 2", len(reqs))
			}
			var result string
			for _, m := range reqs[1].Messages {
				if m.Role == "tool" && m.ToolCallID == "call_write" {
					result = m.Content
				}
			}
			if strings.TrimSpace(result) == "" {
				t.Error("the model got no tool result (an explanation when refused) for write_file")
			}
			t.Logf("write_file result: %q", result)
		})
	}
}

func TestSecretsRedacted(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	key := g.firstKey()
	const (
		fileSecret  = "sk-proj-Q7fV2mLx9TzR4bWc8NpK1sHd6JyG3uAe5XoZ0iCvBnM7qLwE2rTy8UoP4aSd"
		modelSecret = "sk-proj-Zx3Cv5Bn7Mq9Wl2Ek4Rj6Th8Yp0UaSdFgHjKl1Qw3Er5Ty7Ui9Op2As4Df6Gh"
	)
	g.writeWorkspaceFile("env.txt", "DEPLOY_KEY="+fileSecret+"\nregion=eu-west-1\n")
	fake.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_env", Name: "read_file", Arguments: `{"path":"env.txt"}`}}},
		fakellm.Reply{Content: "The key is " + modelSecret + " in eu-west-1."},
	)
	c := g.client(key)
	sess := session("secrets")
	ask(t, c, "what is in env.txt?", sess)
	ask(t, c, "thanks", sess)

	reqs := fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("fake LLM got %d requests, want 3", len(reqs))
	}
	var toolResult string
	for _, m := range reqs[1].Messages {
		if m.Role == "tool" {
			toolResult = m.Content
		}
	}
	if strings.Contains(toolResult, fileSecret) {
		t.Errorf("the model received the unredacted key in the tool result: %q", toolResult)
	}
	t.Logf("redacted tool result: %q", toolResult)
	if !strings.Contains(toolResult, "region=eu-west-1") {
		t.Errorf("redaction removed more than the secret: %q", toolResult)
	}
	for _, m := range reqs[2].Messages {
		for _, s := range []string{fileSecret, modelSecret} {
			if strings.Contains(m.Content, s) {
				t.Errorf("history sent to the model holds a secret in a %s message: %q", m.Role, m.Content)
			}
		}
	}
	g.stop()
	logs := g.stderr.String()
	for _, s := range []string{fileSecret, modelSecret, providerKey, key} {
		if strings.Contains(logs, s) {
			t.Errorf("server stderr contains the secret %q", s[:12]+"…")
		}
	}
}

func TestUpstreamStreamCut(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	c := g.client(g.firstKey())
	const text = "A complete answer that the provider first cuts off half way."
	// The provider drops the connection mid-answer once, then answers in
	// full. Whatever the gateway does, it must never hand the client a
	// truncated or duplicated answer as a successful one.
	t.Run("json", func(t *testing.T) {
		fake.Reset()
		fake.Enqueue(fakellm.Reply{Content: text, CutStream: true}, fakellm.Reply{Content: text})
		resp, err := c.Chat.Completions.New(context.Background(), chatParams(openai.UserMessage("answer")))
		if err == nil && resp.Choices[0].Message.Content != text {
			t.Errorf("reply = %q, want the full answer or an error", resp.Choices[0].Message.Content)
		}
		if err != nil {
			wantAPIError(t, err, http.StatusBadGateway, "upstream_error")
		}
	})
	t.Run("stream", func(t *testing.T) {
		fake.Reset()
		fake.Enqueue(fakellm.Reply{Content: text, CutStream: true}, fakellm.Reply{Content: text})
		stream := c.Chat.Completions.NewStreaming(context.Background(), chatParams(openai.UserMessage("stream")))
		var got strings.Builder
		for stream.Next() {
			if ch := stream.Current().Choices; len(ch) > 0 {
				got.WriteString(ch[0].Delta.Content)
			}
		}
		if stream.Err() == nil && got.String() != text {
			t.Errorf("stream ended cleanly with %q, want the full answer or a stream error", got.String())
		}
		t.Logf("stream err %v, content %q", stream.Err(), got.String())
	})
}

// TestStatefulLoad sends stateful requests over 48 sessions, 16 at a time:
// every one is answered, none loses its input, and each session's history
// holds its messages in the order they were answered.
func TestStatefulLoad(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	key := g.createKey(t, "--name", "load", "--autonomy", "full", "--rate", "1000000")
	const sessions, requests, inFlight = 48, 480, 16
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	answered := map[string][]string{}
	for range inFlight {
		wg.Go(func() {
			for i := range work {
				sk := fmt.Sprintf("load-%d", i%sessions)
				text := fmt.Sprintf("message %d", i)
				body := fmt.Sprintf(`{"model":"default","messages":[{"role":"user","content":%q}]}`, text)
				resp, b := g.post(t, key, body, map[string]string{"X-Lambdaclaw-Session-Key": sk})
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "echo: "+text) {
					t.Errorf("request %d: %d %s", i, resp.StatusCode, b)
					continue
				}
				mu.Lock()
				answered[sk] = append(answered[sk], text)
				mu.Unlock()
			}
		})
	}
	for i := range requests {
		work <- i
	}
	close(work)
	wg.Wait()
	// The model saw each session's messages once each, in one order, and
	// the last request of a session carries all of them in that order.
	processed := map[string][]string{}
	last := map[string]fakellm.Request{}
	for _, r := range fake.Requests() {
		var i int
		if _, err := fmt.Sscanf(r.LastUser(), "message %d", &i); err != nil {
			t.Fatalf("unexpected model request for %q", r.LastUser())
		}
		sk := fmt.Sprintf("load-%d", i%sessions)
		processed[sk] = append(processed[sk], r.LastUser())
		last[sk] = r
	}
	for sk, texts := range answered {
		if diff := cmp.Diff(texts, processed[sk], cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
			t.Errorf("session %s: answered vs sent to the model (-answered +sent):\n%s", sk, diff)
		}
		var users []string
		for _, m := range conversation(last[sk].Messages) {
			if m.Role == "user" {
				users = append(users, m.Content)
			}
		}
		if diff := cmp.Diff(processed[sk], users); diff != "" {
			t.Errorf("session %s: history of its last request (-processed +history):\n%s", sk, diff)
		}
	}
}
