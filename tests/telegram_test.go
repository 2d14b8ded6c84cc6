package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/telegram"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
	"github.com/lambdaclaw/lambdaclaw/tests/faketelegram"
)

// startTelegram runs the gateway with the Telegram channel on a fake Bot
// API; allowed user 111 may talk, and ACCESS-CODE-1 lets one more in.
func startTelegram(t *testing.T, llm *fakellm.Server, mode string) (*gateway, *faketelegram.Server) {
	t.Helper()
	tg := faketelegram.New()
	t.Cleanup(tg.Close)
	cfg := fmt.Sprintf("telegram:\n  enabled: true\n  mode: %s\n  public_url: http://127.0.0.1\n  allowed_users: [111]\n  access_codes:\n    - {env: TG_CODE}\n", mode)
	g := newGateway(t, llm, cfg)
	g.env = append(g.env, "TELEGRAM_BOT_TOKEN="+faketelegram.Token, "TELEGRAM_API_BASE="+tg.URL, "TG_CODE=code-5ecret-42")
	g.start()
	return g, tg
}

// waitMessages waits until chat has n delivered messages.
func waitMessages(t *testing.T, tg *faketelegram.Server, chat int64, n int) []faketelegram.Sent {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ms := tg.Messages(chat)
		if len(ms) >= n {
			return ms
		}
		if time.Now().After(deadline) {
			t.Fatalf("chat %d: %d messages, want %d: %+v", chat, len(ms), n, ms)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitOnly waits until chat has n delivered messages, then half a second
// more, in which a repeated reply would arrive, and returns the messages;
// it fails the test when there are more than n.
func waitOnly(t *testing.T, tg *faketelegram.Server, chat int64, n int) []faketelegram.Sent {
	t.Helper()
	waitMessages(t, tg, chat, n)
	time.Sleep(500 * time.Millisecond)
	ms := tg.Messages(chat)
	if len(ms) != n {
		t.Fatalf("chat %d: %d messages, want only %d: %+v", chat, len(ms), n, ms)
	}
	return ms
}

func TestTelegramPollingConversation(t *testing.T) {
	llm := newFake(t)
	g, tg := startTelegram(t, llm, "polling")
	tg.Push(faketelegram.Message(1, 111, 111, "private", "hello bot"))
	ms := waitMessages(t, tg, 111, 1)
	if ms[0].Text != "echo: hello bot" {
		t.Fatalf("reply = %q", ms[0].Text)
	}
	// A duplicate delivery is answered once.
	tg.Push(faketelegram.Message(2, 111, 111, "private", "second"))
	tg.Push(faketelegram.Message(2, 111, 111, "private", "second"))
	if ms = waitOnly(t, tg, 111, 2); ms[1].Text != "echo: second" {
		t.Fatalf("messages = %+v", ms)
	}
	if n := len(llm.Requests()); n != 2 {
		t.Fatalf("LLM requests = %d, want 2", n)
	}

	// An unauthorised user gets the generic reply; a wrong code too; the
	// text reaches neither the log nor the model.
	tg.Push(faketelegram.Message(3, 222, 222, "private", "my-private-words"))
	tg.Push(faketelegram.Message(4, 222, 222, "private", "wrong-code-9"))
	ms = waitMessages(t, tg, 222, 2)
	for _, m := range ms {
		if m.Text != "Send the access code to use this bot." {
			t.Fatalf("denied reply = %q", m.Text)
		}
	}
	// The right code lets the user in, once.
	tg.Push(faketelegram.Message(5, 222, 222, "private", "code-5ecret-42"))
	ms = waitMessages(t, tg, 222, 3)
	if !strings.HasPrefix(ms[2].Text, "Access granted") {
		t.Fatalf("code reply = %q", ms[2].Text)
	}
	tg.Push(faketelegram.Message(6, 222, 222, "private", "now let me in"))
	ms = waitMessages(t, tg, 222, 4)
	if ms[3].Text != "echo: now let me in" {
		t.Fatalf("reply after code = %q", ms[3].Text)
	}
	tg.Push(faketelegram.Message(7, 333, 333, "private", "code-5ecret-42"))
	if ms = waitMessages(t, tg, 333, 1); ms[0].Text != "Send the access code to use this bot." {
		t.Fatalf("reused code reply = %q", ms[0].Text)
	}
	for _, secret := range []string{"my-private-words", "wrong-code-9", "code-5ecret-42", faketelegram.Token} {
		if strings.Contains(g.stderr.String(), secret) {
			t.Errorf("server log holds %q", secret)
		}
		for _, r := range llm.Requests() {
			if strings.Contains(string(r.Body), secret) {
				t.Errorf("LLM request holds %q", secret)
			}
		}
	}
	// /new starts over; status shows the outbox.
	tg.Push(faketelegram.Message(8, 111, 111, "private", "/new"))
	if ms = waitMessages(t, tg, 111, 3); ms[2].Text != "Started a new conversation." {
		t.Fatalf("/new reply = %q", ms[2].Text)
	}
	out := g.cli(t, "status")
	if !strings.Contains(out, "telegram outbox: 0 pending, 0 failed") {
		t.Fatalf("status = %s", out)
	}
}

func TestTelegramWebhook(t *testing.T) {
	llm := newFake(t)
	g, tg := startTelegram(t, llm, "webhook")
	out := g.cli(t, "telegram", "setup")
	url, secret := tg.Webhook()
	if url != "http://127.0.0.1/telegram/webhook" || len(secret) < 32 || strings.Contains(out, secret) {
		t.Fatalf("setup: url %q, secret %d chars, output %q", url, len(secret), out)
	}
	hook := g.addr + "/telegram/webhook"
	u := faketelegram.Message(10, 111, 111, "private", "via hook")
	if code, err := faketelegram.PostWebhook(hook, "", u); err != nil || code != http.StatusUnauthorized {
		t.Fatalf("missing secret: %d %v", code, err)
	}
	if code, err := faketelegram.PostWebhook(hook, "wrong", u); err != nil || code != http.StatusForbidden {
		t.Fatalf("bad secret: %d %v", code, err)
	}
	for range 2 {
		if code, err := faketelegram.PostWebhook(hook, secret, u); err != nil || code != http.StatusOK {
			t.Fatalf("webhook: %d %v", code, err)
		}
	}
	if ms := waitOnly(t, tg, 111, 1); ms[0].Text != "echo: via hook" || len(llm.Requests()) != 1 {
		t.Fatalf("messages = %+v, llm requests %d", ms, len(llm.Requests()))
	}
}

func TestTelegramRetryAndSplit(t *testing.T) {
	llm := newFake(t)
	long := strings.Repeat("word ", 1000) + "\n\n" + strings.Repeat("x", 3000) + "\n" + strings.Repeat("tail ", 300)
	llm.Enqueue(fakellm.Reply{Content: long})
	_, tg := startTelegram(t, llm, "polling")
	tg.FailNext("sendMessage", faketelegram.Failure{Code: 429, RetryAfter: 1}, faketelegram.Failure{Code: 500, Description: "Internal Server Error"})
	tg.Push(faketelegram.Message(1, 111, 111, "private", "long please"))
	// 5000 chars of words split at a space, then the 4501 after the
	// paragraph break split at the line break: four chunks.
	waitMessages(t, tg, 111, 4)
	time.Sleep(time.Second)
	ms := tg.Messages(111)
	var joined []string
	for _, m := range ms {
		if len([]rune(m.Text)) > 4096 {
			t.Fatalf("chunk of %d chars", len([]rune(m.Text)))
		}
		joined = append(joined, m.Text)
	}
	got := strings.Join(strings.Fields(strings.Join(joined, " ")), " ")
	if want := strings.Join(strings.Fields(long), " "); got != want || len(ms) != 4 {
		t.Fatalf("%d chunks; text preserved: %v", len(ms), got == want)
	}
	if !strings.HasPrefix(ms[2].Text, "xxx") || !strings.HasSuffix(ms[2].Text, "x") || !strings.HasPrefix(ms[3].Text, "tail") {
		t.Fatalf("chunks not cut at the line break: %q… / %q…", ms[2].Text[:10], ms[3].Text[:10])
	}
	if n := tg.Calls("sendMessage"); n != 6 {
		t.Fatalf("sendMessage calls = %d, want 6 (2 failures + 4 chunks)", n)
	}
}

func TestTelegramRestartMidPoll(t *testing.T) {
	llm := newFake(t)
	g, tg := startTelegram(t, llm, "polling")
	tg.Push(faketelegram.Message(1, 111, 111, "private", "before"))
	waitMessages(t, tg, 111, 1)
	g.stop()
	tg.Push(faketelegram.Message(2, 111, 111, "private", "while down"))
	g.start()
	if ms := waitOnly(t, tg, 111, 2); ms[1].Text != "echo: while down" || len(llm.Requests()) != 2 {
		t.Fatalf("messages = %+v, llm requests %d", ms, len(llm.Requests()))
	}
}

// Five wrong access codes lock a chat out (issue 23: 60 wrong codes, then
// the right one, let an attacker in): it is told until when, the right
// code is then refused unchecked, and a restart keeps the lockout.
func TestTelegramAccessCodeLockout(t *testing.T) {
	llm := newFake(t)
	g, tg := startTelegram(t, llm, "polling")
	const chat = 555
	for i := range 5 {
		tg.Push(faketelegram.Message(int64(i+1), chat, chat, "private", fmt.Sprintf("guess-%d-xyz", i)))
		waitMessages(t, tg, chat, i+1)
	}
	tg.Push(faketelegram.Message(6, chat, chat, "private", "code-5ecret-42"))
	ms := waitMessages(t, tg, chat, 6)
	for i, m := range ms[:4] {
		if m.Text != "Send the access code to use this bot." {
			t.Errorf("reply to wrong code %d = %q", i+1, m.Text)
		}
	}
	for _, m := range ms[4:] {
		if !strings.HasPrefix(m.Text, "Too many wrong access codes: this chat is locked out. Try again after ") ||
			!strings.Contains(m.Text, "(in 15 minutes)") {
			t.Errorf("reply while locked out = %q, want when to try again", m.Text)
		}
	}
	g.stop()
	g.start()
	tg.Push(faketelegram.Message(7, chat, chat, "private", "code-5ecret-42"))
	if ms = waitMessages(t, tg, chat, 7); !strings.HasPrefix(ms[6].Text, "Too many wrong access codes") {
		t.Errorf("the right code after a restart = %q, want the lockout", ms[6].Text)
	}
	tg.Push(faketelegram.Message(8, chat, chat, "private", "let me talk"))
	waitMessages(t, tg, chat, 8)
	if n := len(llm.Requests()); n != 0 {
		t.Errorf("a locked-out chat reached the model: %d requests", n)
	}
	// The code was never used: another chat may still redeem it.
	tg.Push(faketelegram.Message(9, 666, 666, "private", "code-5ecret-42"))
	if ms := waitMessages(t, tg, 666, 1); !strings.HasPrefix(ms[0].Text, "Access granted") {
		t.Errorf("the unused code in another chat = %q", ms[0].Text)
	}
}

// crashAfterCommit is a store whose process dies, as under kill -9, right
// after the commit that ends a run applied: the step sees an error, and
// nothing that would follow the commit runs.
type crashAfterCommit struct {
	agent.Store
	crashed bool
}

func (s *crashAfterCommit) CommitRun(ctx context.Context, c store.Commit) error {
	if err := s.Store.CommitRun(ctx, c); err != nil {
		return err
	}
	if c.Run.Status.Finished() && !s.crashed {
		s.crashed = true
		return errors.New("killed right after the commit")
	}
	return nil
}

// answering is a model that answers at once, counting its calls.
type answering struct{ calls atomic.Int32 }

func (*answering) Name() string { return "answering" }

func (m *answering) Generate(context.Context, llm.Request, llm.OnDelta) (llm.Response, error) {
	m.calls.Add(1)
	return llm.Response{Message: chat.Message{Role: chat.Assistant, Content: "the answer"}}, nil
}

// outboxFixture is a fake Telegram, a database, and the replier a process
// on it makes (each call a new process's).
func outboxFixture(t *testing.T) (*faketelegram.Server, *sqlite.DB, func() *telegram.Replier) {
	tg := faketelegram.New()
	t.Cleanup(tg.Close)
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "lambdaclaw.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return tg, db, func() *telegram.Replier {
		r, err := telegram.NewReplier(telegram.Config{Client: telegram.NewClient(tg.URL, faketelegram.Token), Store: db.Channel(telegram.ChannelName)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

// The process dies between the commit that ends a Telegram run and the
// telling of its reply: the reply, committed with the run (the
// transactional outbox), is delivered once by the restarted process's
// outbox sender, and the model was asked once.
func TestTelegramCrashAfterCommit(t *testing.T) {
	ctx := t.Context()
	tg, db, replier := outboxFixture(t)
	model := &answering{}
	dying := &crashAfterCommit{Store: db}
	loop := &agent.Loop{Store: dying, Agents: agent.Registry{"a": {Name: "a", Provider: model}},
		Replier: agent.Router{telegram.ChannelName: replier()}}
	st, err := loop.Enqueue(ctx, agent.Input{SessionID: "tg-111", Agent: "a", Owner: "tg:111", Messages: []chat.Message{{Role: chat.User, Content: "hi"}},
		Autonomy: tool.Full, Reply: agent.Reply{Channel: telegram.ChannelName, To: "111"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := loop.Step(ctx, st); err == nil || !dying.crashed {
		t.Fatalf("step: %v; want the crash after the commit", err)
	}
	if ms := tg.Messages(111); len(ms) != 0 {
		t.Fatalf("delivered %+v by the process that died", ms)
	}
	// The restarted process: the run is done, its reply in the outbox.
	run, err := db.GetRun(ctx, st.RunID)
	if err != nil || run.Status != store.RunDone {
		t.Fatalf("run %s, %v; want done", run.Status, err)
	}
	restarted := replier()
	for range 2 {
		if pending, err := restarted.Flush(ctx, time.Second); err != nil || pending != 0 {
			t.Fatalf("flush: %d pending, %v", pending, err)
		}
	}
	if ms := tg.Messages(111); len(ms) != 1 || ms[0].Text != "the answer" || model.calls.Load() != 1 {
		t.Fatalf("delivered %+v, the model asked %d times; want the answer once, asked once", ms, model.calls.Load())
	}
}

// crashAtParking is a store whose process dies in the first commit that
// parks a run, before it applied, and right after the second applied.
type crashAtParking struct {
	agent.Store
	commits int
}

func (s *crashAtParking) CommitRun(ctx context.Context, c store.Commit) error {
	if st, err := agent.DecodeState(c.Run); err != nil || !st.Parked() {
		return s.Store.CommitRun(ctx, c)
	}
	if s.commits++; s.commits == 1 {
		return errors.New("killed during the commit")
	}
	if err := s.Store.CommitRun(ctx, c); err != nil {
		return err
	}
	return errors.New("killed right after the commit")
}

// sendTool is a tool with an effect outside lambdaclaw, which a
// supervised run asks a person to approve.
type sendTool struct{}

func (sendTool) Definition() chat.ToolDef {
	return chat.ToolDef{Name: "send", Parameters: json.RawMessage(`{"type":"object"}`)}
}
func (sendTool) Policy() tool.Policy { return tool.Policy{Effect: tool.External} }
func (sendTool) Call(context.Context, tool.Env, json.RawMessage) (string, error) {
	return "sent", nil
}

// calling is a model that calls the send tool.
type calling struct{}

func (calling) Name() string { return "calling" }

func (calling) Generate(context.Context, llm.Request, llm.OnDelta) (llm.Response, error) {
	return llm.Response{Message: chat.Message{Role: chat.Assistant, ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "send", Arguments: "{}"}}}}, nil
}

// A Telegram run's approval prompt is committed with the step that parks
// the run: a process that dies during that commit leaves no prompt (the
// run did not park), and one that dies right after it leaves the prompt,
// which the restarted process's outbox sender delivers once.
func TestTelegramApprovalCrashAtParking(t *testing.T) {
	ctx := t.Context()
	tg, db, replier := outboxFixture(t)
	flush := func() {
		t.Helper()
		for range 2 {
			if pending, err := replier().Flush(ctx, time.Second); err != nil || pending != 0 {
				t.Fatalf("flush: %d pending, %v", pending, err)
			}
		}
	}
	tools, err := tool.NewRegistry(sendTool{})
	if err != nil {
		t.Fatal(err)
	}
	loop := &agent.Loop{Store: &crashAtParking{Store: db}, Agents: agent.Registry{"a": {Name: "a", Provider: calling{}, Tools: tools}},
		Replier: agent.Router{telegram.ChannelName: replier()}}
	st, err := loop.Enqueue(ctx, agent.Input{SessionID: "tg-111", Agent: "a", Owner: "tg:111", Messages: []chat.Message{{Role: chat.User, Content: "send it"}},
		Autonomy: tool.Supervised, Interactive: true, Reply: agent.Reply{Channel: telegram.ChannelName, To: "111"}})
	if err != nil {
		t.Fatal(err)
	}
	for st.Step != agent.StepApprove {
		if st, err = loop.Step(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := loop.Step(ctx, st); err == nil || !strings.Contains(err.Error(), "during the commit") {
		t.Fatalf("approve: %v; want the crash during the commit", err)
	}
	flush()
	if ms := tg.Messages(111); len(ms) != 0 {
		t.Fatalf("delivered %+v for a run that did not park", ms)
	}
	// The restarted process runs the step again.
	if _, err := loop.Step(ctx, st); err == nil || !strings.Contains(err.Error(), "after the commit") {
		t.Fatalf("approve: %v; want the crash after the commit", err)
	}
	run, err := db.GetRun(ctx, st.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if saved, err := agent.DecodeState(run); err != nil || !saved.Parked() {
		t.Fatalf("run at %q, %v; want parked", saved.Step, err)
	}
	flush()
	if ms := tg.Messages(111); len(ms) != 1 || !strings.HasPrefix(ms[0].Text, "Approval needed") {
		t.Fatalf("delivered %+v; want the approval prompt once", ms)
	}
}
