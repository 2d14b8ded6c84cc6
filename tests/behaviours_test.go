package tests

// End-to-end tests of the agent behaviours of issue 3 (seed 001 "Approval
// Workflow" and "Context Compaction"): the real binary, the official OpenAI
// client, stateful sessions by X-Lambdaclaw-Session-Key, and the scripted
// fake LLM.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// waitEvent polls the server's JSON logs until an event with the name and
// field values appears (events are emitted asynchronously) and returns the
// log lines; it fails the test after 5s.
func waitEvent(t *testing.T, g *gateway, name string, fields map[string]string) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		events := logEvents(t, g.stderr.String())
		if hasEvent(events, name, fields) {
			return events
		}
		if time.Now().After(deadline) {
			t.Errorf("no %s event with %v in the JSON logs", name, fields)
			return events
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// countEvents counts the log lines of an event with the field values.
func countEvents(events []map[string]any, name string, fields map[string]string) int {
	n := 0
	for _, e := range events {
		if hasEvent([]map[string]any{e}, name, fields) {
			n++
		}
	}
	return n
}

// toolResult returns the content of the tool message answering callID in
// a recorded request, and whether there is one.
func toolResult(r fakellm.Request, callID string) (string, bool) {
	for _, m := range r.Messages {
		if m.Role == "tool" && m.ToolCallID == callID {
			return m.Content, true
		}
	}
	return "", false
}

// writeCall is a scripted write_file call.
func writeCall(id, path, content string) fakellm.ToolCall {
	return fakellm.ToolCall{ID: id, Name: "write_file", Arguments: fmt.Sprintf(`{"path":%q,"content":%q}`, path, content)}
}

// wantApprovalPrompt checks that a reply is the approval prompt.
func wantApprovalPrompt(t *testing.T, got string) {
	t.Helper()
	for _, s := range []string{"write_file", "/yes", "/no", "/always"} {
		if !strings.Contains(got, s) {
			t.Errorf("reply = %q, want the approval prompt mentioning %s", got, s)
		}
	}
}

func fileContent(g *gateway, name string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(g.workspace(), name))
	return string(b), err == nil
}

func TestApprovals(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	c := g.client(g.firstKey()) // the first key is supervised

	t.Run("yes", func(t *testing.T) {
		fake.Reset()
		s := session("approve-yes")
		fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{writeCall("call_yes", "yes.txt", "approved content")}},
			fakellm.Reply{Content: "I wrote yes.txt."})
		wantApprovalPrompt(t, ask(t, c, "write yes.txt", s))
		if _, ok := fileContent(g, "yes.txt"); ok {
			t.Error("yes.txt exists before the approval was answered")
		}
		if n := len(fake.Requests()); n != 1 {
			t.Errorf("fake LLM got %d requests before the answer, want 1", n)
		}
		if got := ask(t, c, "/yes", s); got != "I wrote yes.txt." {
			t.Errorf("reply to /yes = %q, want the model's final answer", got)
		}
		if got, _ := fileContent(g, "yes.txt"); got != "approved content" {
			t.Errorf("yes.txt = %q after /yes, want %q", got, "approved content")
		}
		reqs := fake.Requests()
		if len(reqs) != 2 {
			t.Fatalf("fake LLM got %d requests, want 2", len(reqs))
		}
		res, ok := toolResult(reqs[1], "call_yes")
		if !ok || strings.Contains(res, "denied") || strings.Contains(res, "refused") {
			t.Errorf("the LLM request after /yes carried tool result %q (present %v), want write_file's output", res, ok)
		}
		waitEvent(t, g, "approval_requested", map[string]string{"tool_name": "write_file"})
		waitEvent(t, g, "approval_resolved", map[string]string{"tool_name": "write_file", "decision": "yes"})
	})

	t.Run("no", func(t *testing.T) {
		fake.Reset()
		s := session("approve-no")
		fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{writeCall("call_no", "no.txt", "should not exist")}},
			fakellm.Reply{Content: "All right, I left it alone."})
		wantApprovalPrompt(t, ask(t, c, "write no.txt", s))
		if got := ask(t, c, "/no", s); got != "All right, I left it alone." {
			t.Errorf("reply to /no = %q, want the model's final answer", got)
		}
		if _, ok := fileContent(g, "no.txt"); ok {
			t.Error("no.txt was written although the user answered /no")
		}
		reqs := fake.Requests()
		if len(reqs) != 2 {
			t.Fatalf("fake LLM got %d requests, want 2", len(reqs))
		}
		res, ok := toolResult(reqs[1], "call_no")
		if l := strings.ToLower(res); !ok || !strings.Contains(l, "user") || !(strings.Contains(l, "not approve") || strings.Contains(l, "declin") || strings.Contains(l, "denied")) {
			t.Errorf("tool result after /no = %q (present %v), want one saying the user declined", res, ok)
		}
		waitEvent(t, g, "approval_resolved", map[string]string{"tool_name": "write_file", "decision": "no"})
	})

	t.Run("always", func(t *testing.T) {
		fake.Reset()
		s := session("approve-always")
		fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{writeCall("call_a1", "always1.txt", "first")}},
			fakellm.Reply{Content: "first written"})
		wantApprovalPrompt(t, ask(t, c, "write always1.txt", s))
		if got := ask(t, c, "/always", s); got != "first written" {
			t.Errorf("reply to /always = %q", got)
		}
		if got, _ := fileContent(g, "always1.txt"); got != "first" {
			t.Errorf("always1.txt = %q after /always, want %q", got, "first")
		}
		waitEvent(t, g, "approval_resolved", map[string]string{"tool_name": "write_file", "decision": "always"})

		// write_file is now allowed for the rest of the session.
		fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{writeCall("call_a2", "always2.txt", "second")}},
			fakellm.Reply{Content: "second written"})
		if got := ask(t, c, "write always2.txt", s); got != "second written" {
			t.Errorf("second write_file in the session: reply = %q, want the final answer without a prompt", got)
		}
		if got, _ := fileContent(g, "always2.txt"); got != "second" {
			t.Errorf("always2.txt = %q, want %q", got, "second")
		}
		if n := countEvents(logEvents(t, g.stderr.String()), "approval_requested", map[string]string{"args": `{"path":"always2.txt","content":"second"}`}); n != 0 {
			t.Errorf("%d approval_requested events for the call after /always, want 0", n)
		}
		// Another session is still asked.
		fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{writeCall("call_a3", "always3.txt", "third")}},
			fakellm.Reply{Content: "unused"})
		wantApprovalPrompt(t, ask(t, c, "write always3.txt", session("approve-always-other")))
		ask(t, c, "/no", session("approve-always-other"))
	})

	t.Run("other message denies", func(t *testing.T) {
		fake.Reset()
		s := session("approve-other")
		const next = "never mind, what is 2+2?"
		fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{writeCall("call_other", "other.txt", "nope")}},
			fakellm.Reply{Content: "The write was declined."}, // the parked run, resumed with the denial
			fakellm.Reply{Content: "4"})                       // the new message
		wantApprovalPrompt(t, ask(t, c, "write other.txt", s))
		if got := ask(t, c, next, s); got != "4" {
			t.Errorf("reply to a new message while an approval is pending = %q, want the answer to it", got)
		}
		if _, ok := fileContent(g, "other.txt"); ok {
			t.Error("other.txt was written although the approval was never given")
		}
		reqs := fake.Requests()
		if len(reqs) != 3 {
			t.Fatalf("fake LLM got %d requests, want 3 (tool call, parked run's end, new message)", len(reqs))
		}
		if res, ok := toolResult(reqs[1], "call_other"); !ok || !strings.Contains(strings.ToLower(res), "not approve") && !strings.Contains(strings.ToLower(res), "denied") {
			t.Errorf("tool result of the parked call = %q (present %v), want a denial", res, ok)
		}
		conv := conversation(reqs[2].Messages)
		if len(conv) == 0 || !cmp.Equal(conv[len(conv)-1], user(next)) {
			t.Errorf("the new message was not processed as a user message: last message %+v", conv[len(conv)-1:])
		}
		if slices.ContainsFunc(conv, func(m fakellm.Message) bool {
			return m.Role == "user" && m.Content != next && m.Content != "write other.txt"
		}) {
			t.Errorf("unexpected user messages in history: %+v", conv)
		}
	})

	t.Run("streamed", func(t *testing.T) {
		fake.Reset()
		s := session("approve-stream")
		fake.Enqueue(fakellm.Reply{Content: "Let me write it.", ToolCalls: []fakellm.ToolCall{writeCall("call_st", "stream.txt", "streamed")}},
			fakellm.Reply{Content: "stream.txt written"})
		streamed := func(text string) (string, string) {
			t.Helper()
			st := c.Chat.Completions.NewStreaming(context.Background(), chatParams(openai.UserMessage(text)), s)
			var acc openai.ChatCompletionAccumulator
			for st.Next() {
				acc.AddChunk(st.Current())
			}
			if err := st.Err(); err != nil {
				t.Fatalf("stream %q: %v", text, err)
			}
			if len(acc.Choices) == 0 {
				t.Fatalf("stream %q: no choices", text)
			}
			return acc.Choices[0].Message.Content, string(acc.Choices[0].FinishReason)
		}
		got, finish := streamed("write stream.txt")
		wantApprovalPrompt(t, got)
		if finish != "stop" {
			t.Errorf("finish_reason of the streamed prompt = %q, want stop", finish)
		}
		if got, _ := streamed("/yes"); got != "stream.txt written" {
			t.Errorf("streamed reply to /yes = %q", got)
		}
		if got, _ := fileContent(g, "stream.txt"); got != "streamed" {
			t.Errorf("stream.txt = %q", got)
		}
	})

	t.Run("stateless denied", func(t *testing.T) {
		fake.Reset()
		fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{writeCall("call_sl", "stateless.txt", "nope")}},
			fakellm.Reply{Content: "I cannot write files here."})
		if got := ask(t, c, "write stateless.txt"); got != "I cannot write files here." {
			t.Errorf("stateless reply = %q, want the model's final answer (no approval prompt)", got)
		}
		if _, ok := fileContent(g, "stateless.txt"); ok {
			t.Error("stateless.txt was written without approval")
		}
		reqs := fake.Requests()
		if len(reqs) != 2 {
			t.Fatalf("fake LLM got %d requests, want 2", len(reqs))
		}
		res, _ := toolResult(reqs[1], "call_sl")
		if !strings.Contains(res, "approval") || !strings.Contains(res, "stateless") {
			t.Errorf("tool result = %q, want an explanation that approval cannot be asked in a stateless request", res)
		}
	})
}

func TestApprovalAfterRestart(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"sigterm", "kill -9"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			fake := newFake(t)
			g := startGateway(t, fake, "")
			key := g.firstKey()
			s := session("restart")
			fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{writeCall("call_rs", "restart.txt", "after restart")}},
				fakellm.Reply{Content: "written after the restart"})
			wantApprovalPrompt(t, ask(t, g.client(key), "write restart.txt", s))
			if how == "sigterm" {
				g.stop()
			} else {
				g.kill()
			}
			g.start()
			if got := ask(t, g.client(key), "/yes", s); got != "written after the restart" {
				t.Errorf("reply to /yes after restart = %q, want the model's final answer", got)
			}
			if got, _ := fileContent(g, "restart.txt"); got != "after restart" {
				t.Errorf("restart.txt = %q", got)
			}
			reqs := fake.Requests()
			if len(reqs) != 2 {
				t.Fatalf("fake LLM got %d requests, want 2", len(reqs))
			}
			if _, ok := toolResult(reqs[1], "call_rs"); !ok {
				t.Error("the resumed run's LLM request carried no tool result")
			}
		})
	}
}

// compactionConfig is a config with one provider and the default agent's
// compaction settings.
func compactionConfig(fake *fakellm.Server, retries int, agentYAML string) string {
	return fmt.Sprintf(`providers:
  - name: fake
    base_url: %s/v1
    api_key: {env: OPENAI_API_KEY}
    model: fake-model
    timeout: 5s
    retries: %d
agents:
  default:
%s`, fake.URL, retries, agentYAML)
}

// threeTurns fills a session with three echoed exchanges (6 messages) and
// returns the history as the model saw it.
func threeTurns(t *testing.T, c *openai.Client) []fakellm.Message {
	t.Helper()
	var hist []fakellm.Message
	for _, q := range []string{"my name is Ada", "I live in Oslo", "I like green tea"} {
		if got := ask(t, c, q, session("compact")); got != "echo: "+q {
			t.Fatalf("reply = %q", got)
		}
		hist = append(hist, user(q), assistant("echo: "+q))
	}
	return hist
}

func isFlush(r fakellm.Request) bool {
	n := len(r.Messages)
	return n > 0 && r.Messages[n-1].Role == "system" && r.Messages[n-1].Content == agent.FlushPrompt
}

func isSummaryRequest(r fakellm.Request) bool {
	return len(r.Messages) == 2 && r.Messages[0].Role == "system" && strings.Contains(strings.ToLower(r.Messages[0].Content), "summar") &&
		r.Messages[1].Role == "user" && len(r.Tools) == 0
}

// summaryMessages returns the system messages holding a compaction summary.
func summaryMessages(r fakellm.Request) []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role == "system" && strings.HasPrefix(m.Content, agent.SummaryPrefix) {
			out = append(out, m.Content)
		}
	}
	return out
}

// wantRecentIntact checks that a request's conversation ends with the last
// target messages of hist, and that the oldest user message was dropped.
func wantRecentIntact(t *testing.T, r fakellm.Request, hist []fakellm.Message, target int) {
	t.Helper()
	conv := conversation(r.Messages)
	recent := hist[len(hist)-target:]
	if len(conv) < target || !cmp.Equal(recent, conv[len(conv)-target:]) {
		t.Errorf("the last %d messages are not intact after compaction (-want +got):\n%s", target, cmp.Diff(recent, conv[max(0, len(conv)-target):]))
	}
	if slices.ContainsFunc(conv, func(m fakellm.Message) bool { return cmp.Equal(m, hist[0]) }) {
		t.Errorf("the oldest message %+v is still in the history; nothing was compacted: %+v", hist[0], conv)
	}
	for _, m := range conv {
		if m.Role == "tool" || len(m.ToolCalls) > 0 {
			t.Errorf("the hidden flush turn leaked into the history: %+v", m)
		}
	}
}

func eventInt(t *testing.T, e map[string]any, field string) int {
	t.Helper()
	n, err := strconv.Atoi(fmt.Sprint(e[field]))
	if err != nil {
		t.Errorf("event %v: %s is not a number", e, field)
	}
	return n
}

func findEvent(events []map[string]any, name string, fields map[string]string) map[string]any {
	for _, e := range events {
		if hasEvent([]map[string]any{e}, name, fields) {
			return e
		}
	}
	return nil
}

func TestCompactionByLength(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, compactionConfig(fake, 0, "    compaction_threshold: 6\n    compaction_target: 4\n"))
	// The flush may write the shared MEMORY.md only under autonomy full:
	// nobody can be asked in it.
	c := g.client(g.createKey(t, "--name", "full", "--autonomy", "full"))
	hist := threeTurns(t, c)
	if n := len(fake.Requests()); n != 3 {
		t.Fatalf("fake LLM got %d requests for 3 short turns, want 3 (no compaction yet)", n)
	}

	// The 4th message makes 7 > 6: flush, summary, then the turn.
	const memory = "The user is Ada, lives in Oslo, likes green tea."
	const summary = "Ada introduced herself."
	fake.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_mem", Name: "workspace_memory",
			Arguments: fmt.Sprintf(`{"action":"append","content":%q}`, memory)}}},
		fakellm.Reply{Content: summary},
		fakellm.Reply{Content: "You are Ada."},
	)
	if got := ask(t, c, "who am I?", session("compact")); got != "You are Ada." {
		t.Errorf("reply = %q", got)
	}
	hist = append(hist, user("who am I?"))
	reqs := fake.Requests()
	if len(reqs) != 6 {
		t.Fatalf("fake LLM got %d requests, want 6 (3 turns, flush, summary, turn)", len(reqs))
	}

	// (a) the hidden flush turn, with memory tools only.
	flush := reqs[3]
	if !isFlush(flush) {
		t.Errorf("request 4 is not the memory flush: last message %+v", flush.Messages[len(flush.Messages)-1])
	}
	if !slices.Contains(flush.Tools, "workspace_memory") || slices.ContainsFunc(flush.Tools, func(n string) bool { return n != "workspace_memory" && n != "memory_store" }) {
		t.Errorf("flush turn offered tools %v, want only the memory tools", flush.Tools)
	}
	if diff := cmp.Diff(hist, conversation(flush.Messages)); diff != "" {
		t.Errorf("flush turn did not see the whole conversation (-want +got):\n%s", diff)
	}
	if got, _ := fileContent(g, "MEMORY.md"); !strings.Contains(got, memory) {
		t.Errorf("MEMORY.md = %q, want the flushed memory %q", got, memory)
	}

	// (b) the summary request: a summarizing system prompt and a transcript.
	sum := reqs[4]
	if !isSummaryRequest(sum) {
		t.Errorf("request 5 is not a summary request: %+v", sum.Messages)
	} else if !strings.Contains(sum.Messages[1].Content, "my name is Ada") {
		t.Errorf("summary transcript %q lacks the oldest user message", sum.Messages[1].Content)
	}

	// (c) the turn: the summary as a system message, then the recent messages.
	turn := reqs[5]
	if got := summaryMessages(turn); len(got) != 1 || got[0] != agent.SummaryPrefix+summary {
		t.Errorf("summary system messages = %q, want [%q]", got, agent.SummaryPrefix+summary)
	}
	sumIdx := slices.IndexFunc(turn.Messages, func(m fakellm.Message) bool { return strings.HasPrefix(m.Content, agent.SummaryPrefix) })
	firstConv := slices.IndexFunc(turn.Messages, func(m fakellm.Message) bool { return m.Role != "system" })
	if sumIdx < 0 || firstConv < sumIdx {
		t.Errorf("the summary (at %d) does not precede the kept messages (from %d)", sumIdx, firstConv)
	}
	wantRecentIntact(t, turn, hist, 4)

	// (d) the event.
	events := waitEvent(t, g, "compaction_complete", nil)
	if e := findEvent(events, "compaction_complete", nil); e != nil {
		before, after := eventInt(t, e, "before"), eventInt(t, e, "after")
		if before != 7 || after >= before || after < 5 {
			t.Errorf("compaction_complete before=%d after=%d, want before=7 and 5 <= after < 7", before, after)
		}
	}
}

// overflow is OpenAI's answer to a conversation too long for the model.
var overflow = fakellm.Reply{Status: http.StatusBadRequest, ErrorType: "invalid_request_error", ErrorCode: "context_length_exceeded",
	ErrorMessage: "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages."}

func TestCompactionOnContextOverflow(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, compactionConfig(fake, 0, "    compaction_target: 4\n"))
	key := g.firstKey()
	c := g.client(key)
	hist := threeTurns(t, c)

	fake.Enqueue(overflow,
		fakellm.Reply{Content: "NO_REPLY"},
		fakellm.Reply{Content: "Ada from Oslo."},
		fakellm.Reply{Content: "It fits now."},
	)
	if got := ask(t, c, "and now?", session("compact")); got != "It fits now." {
		t.Errorf("reply after a context overflow = %q, want the retried turn's answer", got)
	}
	hist = append(hist, user("and now?"))
	reqs := fake.Requests()
	if len(reqs) != 7 {
		t.Fatalf("fake LLM got %d requests, want 7 (3 turns, overflow, flush, summary, retry)", len(reqs))
	}
	if !isFlush(reqs[4]) {
		t.Errorf("no flush turn after the overflow: request 5 ends with %+v", reqs[4].Messages[len(reqs[4].Messages)-1])
	}
	if !isSummaryRequest(reqs[5]) {
		t.Errorf("request 6 is not a summary request: %+v", reqs[5].Messages)
	}
	if got := summaryMessages(reqs[6]); len(got) != 1 || got[0] != agent.SummaryPrefix+"Ada from Oslo." {
		t.Errorf("retried turn's summary messages = %q", got)
	}
	// Forced compaction may keep fewer than compaction_target messages, but
	// never drops the new user message.
	if conv := conversation(reqs[6].Messages); len(conv) == 0 || !cmp.Equal(conv[len(conv)-1], user("and now?")) {
		t.Errorf("retried turn lost the user's message: %+v", conv)
	}
	if len(conversation(reqs[6].Messages)) >= len(hist) {
		t.Errorf("retried turn sent %d messages, no fewer than before the overflow (%d)", len(conversation(reqs[6].Messages)), len(hist))
	}
	waitEvent(t, g, "compaction_complete", map[string]string{"forced": "true"})

	// A second overflow in the same run ends it with an error, not a loop.
	fake.Enqueue(overflow, fakellm.Reply{Content: "NO_REPLY"}, fakellm.Reply{Content: "Still Ada."}, overflow)
	_, err := c.Chat.Completions.New(context.Background(), chatParams(openai.UserMessage("one more")), session("compact"))
	// The provider's answer stays in the log; the client is told the
	// conversation is too long, with the request id.
	apiErr := wantAPIError(t, err, http.StatusBadGateway, "upstream_error")
	if apiErr != nil && (!strings.Contains(apiErr.Message, "too long") || !strings.Contains(apiErr.Message, "(request id req_")) {
		t.Errorf("error message %q does not say the conversation is too long, with the request id", apiErr.Message)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(fake.Requests()); n != 11 {
		t.Errorf("fake LLM got %d requests, want 11 (overflow, flush, summary, overflow, then stop)", n)
	}
	if !isFlush(fake.Requests()[8]) {
		t.Error("no flush turn before the second forced compaction")
	}
}

func TestCompactionSummaryFails(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	// retries: 1, so the summary call is tried twice.
	g := startGateway(t, fake, compactionConfig(fake, 1, "    compaction_threshold: 6\n    compaction_target: 4\n"))
	c := g.client(g.firstKey())
	hist := threeTurns(t, c)

	fake.Enqueue(
		fakellm.Reply{Content: "NO_REPLY"},
		fakellm.Reply{Status: http.StatusInternalServerError},
		fakellm.Reply{Status: http.StatusInternalServerError},
		fakellm.Reply{Content: "Still answering."},
	)
	if got := ask(t, c, "who am I?", session("compact")); got != "Still answering." {
		t.Errorf("reply = %q, want the answer despite the failed summary", got)
	}
	hist = append(hist, user("who am I?"))
	reqs := fake.Requests()
	if len(reqs) != 7 {
		t.Fatalf("fake LLM got %d requests, want 7 (3 turns, flush, 2 summary attempts, turn)", len(reqs))
	}
	if !isFlush(reqs[3]) {
		t.Error("request 4 is not the flush turn")
	}
	if !isSummaryRequest(reqs[4]) || !isSummaryRequest(reqs[5]) {
		t.Error("requests 5 and 6 are not the summary call and its retry")
	}
	turn := reqs[6]
	if got := summaryMessages(turn); len(got) != 0 {
		t.Errorf("summary messages after a failed summary = %q, want none", got)
	}
	wantRecentIntact(t, turn, hist, 4)
	waitEvent(t, g, "compaction_complete", map[string]string{"before": "7"})
}
