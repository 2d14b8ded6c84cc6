package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/telegram"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
	"github.com/lambdaclaw/lambdaclaw/tests/faketelegram"
)

// sampleSecret is the secret header of the events/telegram samples.
const sampleSecret = "SampleWebhookSecretOfTheEventsFolder0000000000000000000000000000"

const (
	botTokenARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:TelegramBotToken-AbCdEf"
	webhookARN  = "arn:aws:secretsmanager:us-east-1:123456789012:secret:TelegramWebhookSecret-AbCdEf"
	chatID      = 111111111
	runID       = "tg-700000001"
)

type fixture struct {
	env     *cloudtest.Env
	tg      *faketelegram.Server
	secrets *cloudtest.Secrets
	h       *Webhook
}

// newFixture sets up DynamoDB Local, the fake LLM, Step Functions, Bot
// API and Secrets Manager; allowed are the user ids let in.
func newFixture(t *testing.T, allowed string) *fixture {
	env := cloudtest.Setup(t)
	tg := faketelegram.New()
	t.Cleanup(tg.Close)
	sm := cloudtest.NewSecrets(t, map[string]string{botTokenARN: faketelegram.Token, webhookARN: sampleSecret})
	for k, v := range map[string]string{
		"TELEGRAM_BOT_TOKEN_SECRET_ARN": botTokenARN, "TELEGRAM_WEBHOOK_SECRET_ARN": webhookARN,
		"SECRETSMANAGER_ENDPOINT": sm.URL, "TELEGRAM_API_BASE": tg.URL, "TELEGRAM_ALLOWED_USERS": allowed,
		"TELEGRAM_BOT_TOKEN": "", "TELEGRAM_WEBHOOK_SECRET": "", "TELEGRAM_ACCESS_CODES": "", "TELEGRAM_AGENT": "",
	} {
		t.Setenv(k, v)
	}
	h, err := handler(t.Context())
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	return &fixture{env: env, tg: tg, secrets: sm, h: h}
}

// play lets the fake Step Functions run executions with a step function
// built from the same environment, as the step Lambda is.
func (f *fixture) play(t *testing.T) {
	f.env.PlayStep(t)
}

func (f *fixture) invoke(t *testing.T, name string) int {
	t.Helper()
	var ev events.APIGatewayProxyRequest
	cloudtest.LoadEvent(t, "telegram/"+name, &ev)
	resp, err := f.h.Handle(t.Context(), ev)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return resp.StatusCode
}

func texts(ms []faketelegram.Sent) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Text)
	}
	return out
}

func TestConversation(t *testing.T) {
	f := newFixture(t, "111111111")
	f.play(t)
	if code := f.invoke(t, "webhook.json"); code != http.StatusOK {
		t.Fatalf("webhook: status %d", code)
	}
	if e := f.env.SFN.Wait(runID, 10*time.Second); e.Err != nil {
		t.Fatalf("execution: %v", e.Err)
	}
	cloudtest.Wait(t, 5*time.Second, "the reply", func() bool { return len(f.tg.Messages(chatID)) > 0 })
	if got := texts(f.tg.Messages(chatID)); len(got) != 1 || got[0] != "echo: Hello, agent" {
		t.Fatalf("messages = %q; want one echo", got)
	}
	st, err := f.env.Store.Channel(telegram.ChannelName).OutboxStats(t.Context())
	if err != nil || st.Sent != 1 || st.Pending != 0 {
		t.Errorf("outbox = %+v, %v; want 1 sent", st, err)
	}

	// Telegram delivers the update again: it is answered once.
	if code := f.invoke(t, "webhook-duplicate.json"); code != http.StatusOK {
		t.Fatalf("duplicate: status %d", code)
	}
	if n := len(f.env.SFN.Started()); n != 1 {
		t.Errorf("%d executions started; want 1", n)
	}
	if got := texts(f.tg.Messages(chatID)); len(got) != 1 {
		t.Errorf("messages after the duplicate = %q", got)
	}
	// The webhook secret is read once per container.
	if n := f.secrets.Calls(webhookARN); n != 1 {
		t.Errorf("webhook secret read %d times; want 1", n)
	}
}

func TestSecretHeader(t *testing.T) {
	f := newFixture(t, "111111111")
	if code := f.invoke(t, "webhook-no-secret.json"); code != http.StatusUnauthorized {
		t.Errorf("without the secret header: status %d; want 401", code)
	}
	if code := f.invoke(t, "webhook-bad-secret.json"); code != http.StatusForbidden {
		t.Errorf("with a wrong secret: status %d; want 403", code)
	}
	if n := len(f.env.SFN.Started()); n != 0 {
		t.Errorf("%d executions started by rejected calls", n)
	}
	if seen, _ := f.env.Store.Channel(telegram.ChannelName).Seen(t.Context(), "700000001"); seen {
		t.Error("a rejected update was recorded as handled")
	}
}

// TestDeniedAndRetried: an unauthorised user gets the generic reply and
// starts no run; its delivery fails with 429 and then 500 and is sent,
// once, by later invocations.
func TestDeniedAndRetried(t *testing.T) {
	f := newFixture(t, "")
	f.tg.FailNext("sendMessage",
		faketelegram.Failure{Code: 429, Description: "Too Many Requests: retry after 1", RetryAfter: 1},
		faketelegram.Failure{Code: 500, Description: "Internal Server Error"})
	if code := f.invoke(t, "webhook.json"); code != http.StatusOK {
		t.Fatalf("webhook: status %d", code)
	}
	if n := len(f.env.SFN.Started()); n != 0 {
		t.Errorf("%d executions started for an unauthorised user", n)
	}
	if got := f.tg.Messages(chatID); len(got) != 0 {
		t.Fatalf("messages after a 429 = %v", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(f.tg.Messages(chatID)) == 0 && time.Now().Before(deadline) {
		time.Sleep(300 * time.Millisecond)
		if code := f.invoke(t, "webhook-duplicate.json"); code != http.StatusOK {
			t.Fatalf("duplicate: status %d", code)
		}
	}
	if got := texts(f.tg.Messages(chatID)); len(got) != 1 || got[0] != channel.DeniedText {
		t.Fatalf("messages = %q; want the denied text once", got)
	}
	if n := f.tg.Calls("sendMessage"); n != 3 {
		t.Errorf("sendMessage called %d times; want 3 (429, 500, ok)", n)
	}
	if n := len(f.env.SFN.Started()); n != 0 {
		t.Errorf("%d executions started", n)
	}
	// Nothing of the unauthenticated text is stored.
	msgs, err := f.env.Store.Channel(telegram.ChannelName).UnsentOutbox(t.Context(), 10)
	if err != nil || len(msgs) != 0 {
		t.Errorf("outbox still pending: %v, %v", msgs, err)
	}
	for _, m := range f.env.LLM.Requests() {
		if strings.Contains(m.LastUser(), "Hello, agent") {
			t.Error("the unauthenticated text reached the model")
		}
	}
}

// Wrong access codes lock a chat out on AWS too, with the function's own
// grants on the table: the fifth wrong code begins the lockout, and the
// right one is refused after it, by another function instance too.
func TestAccessCodeLockout(t *testing.T) {
	f := newFixture(t, "")
	t.Setenv("TELEGRAM_ACCESS_CODES", "code-5ecret-42")
	t.Setenv("DYNAMODB_ENDPOINT", f.env.Policed(t, "telegram"))
	send := func(id int64, text string) {
		t.Helper()
		// Each message is handled by a fresh instance of the function.
		h, err := handler(t.Context())
		if err != nil {
			t.Fatalf("handler: %v", err)
		}
		var ev events.APIGatewayProxyRequest
		cloudtest.LoadEvent(t, "telegram/webhook.json", &ev)
		b, _ := json.Marshal(faketelegram.Message(id, 777, 777, "private", text))
		ev.Body = string(b)
		resp, err := h.Handle(t.Context(), ev)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("webhook %q: %d %v", text, resp.StatusCode, err)
		}
	}
	for i := range 5 {
		send(int64(i+1), fmt.Sprintf("guess-%d-xyz", i))
	}
	send(6, "code-5ecret-42")
	got := texts(f.tg.Messages(777))
	if len(got) != 6 {
		t.Fatalf("replies = %q, want 6", got)
	}
	for i, text := range got {
		locked := strings.HasPrefix(text, "Too many wrong access codes") && strings.Contains(text, "(in 15 minutes)")
		if (i < 4 && text != channel.DeniedText) || (i >= 4 && !locked) {
			t.Errorf("reply %d = %q", i+1, text)
		}
	}
	if ok, err := f.env.Store.Channel(telegram.ChannelName).AllowedUser(t.Context(), "777"); err != nil || ok {
		t.Errorf("the locked-out chat's user was let in: %v, %v", ok, err)
	}
}

// TestApprovalButton: on AWS too, an approval's prompt comes with buttons,
// and the press of Yes, a callback query through the webhook, resumes
// the parked execution; the run answers; a second press changes nothing
// and says so.
func TestApprovalButton(t *testing.T) {
	f := newFixture(t, "111111111")
	f.play(t)
	f.env.LLM.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_1", Name: "write_file", Arguments: `{"path":"notes.md","content":"hi"}`}}})
	if code := f.invoke(t, "webhook.json"); code != http.StatusOK {
		t.Fatalf("webhook: status %d", code)
	}
	cloudtest.Wait(t, 10*time.Second, "the approval prompt", func() bool { return len(f.tg.Messages(chatID)) > 0 })
	prompt := f.tg.Messages(chatID)[0]
	if len(prompt.Buttons) != 3 || prompt.Buttons[0].Text != "Yes" {
		t.Fatalf("prompt = %+v; want Yes, No and Always buttons", prompt)
	}
	press := func(id int64) {
		t.Helper()
		var ev events.APIGatewayProxyRequest
		cloudtest.LoadEvent(t, "telegram/webhook.json", &ev)
		b, _ := json.Marshal(faketelegram.Callback(id, chatID, chatID, "private", prompt.MessageID, prompt.Buttons[0].CallbackData))
		ev.Body = string(b)
		if resp, err := f.h.Handle(t.Context(), ev); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("press: %d %v", resp.StatusCode, err)
		}
	}
	press(700000002)
	if e := f.env.SFN.Wait(runID, 10*time.Second); e.Err != nil {
		t.Fatalf("execution: %v", e.Err)
	}
	cloudtest.Wait(t, 5*time.Second, "the answer", func() bool { return len(f.tg.Messages(chatID)) > 1 })
	press(700000003)
	cloudtest.Wait(t, 5*time.Second, "the stale press told", func() bool { return len(f.tg.Messages(chatID)) > 2 })
	got := texts(f.tg.Messages(chatID))
	if len(got) != 3 || got[1] != "echo: Hello, agent" || !strings.Contains(got[2], "no longer waiting") {
		t.Errorf("messages = %q; want the prompt, the answer and the stale press told", got)
	}
	if n := f.tg.Calls("answerCallbackQuery"); n != 2 {
		t.Errorf("answerCallbackQuery called %d times, want 2", n)
	}
}

// policed rebuilds the function's handler on the table with only the
// function's own grants.
func (f *fixture) policed(t *testing.T) {
	t.Setenv("DYNAMODB_ENDPOINT", f.env.Policed(t, "telegram"))
	h, err := handler(t.Context())
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	f.h = h
}

// send has the webhook handle update ev.
func (f *fixture) send(t *testing.T, ev any) {
	t.Helper()
	var req events.APIGatewayProxyRequest
	cloudtest.LoadEvent(t, "telegram/webhook.json", &req)
	b, _ := json.Marshal(ev)
	req.Body = string(b)
	if resp, err := f.h.Handle(t.Context(), req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("webhook: %d %v", resp.StatusCode, err)
	}
}

// TestStopInFlight: on AWS, /stop ends the reply the inline run waits
// for the model for, with the function's own grants on the table (it
// takes the run's lease): the answer that comes after is not sent.
func TestStopInFlight(t *testing.T) {
	f := newFixture(t, "111111111")
	c := cloudtest.NewClock()
	f.env.PlayInline(t, c.Now, func() { c.Advance(2 * time.Minute) })
	f.policed(t)
	arrived, release := make(chan struct{}), make(chan struct{})
	f.env.LLM.OnRequest(func(fakellm.Request) {
		close(arrived)
		<-release
	})
	f.env.LLM.Enqueue(fakellm.Reply{Content: "Too late."})
	if code := f.invoke(t, "webhook.json"); code != http.StatusOK {
		t.Fatalf("webhook: status %d", code)
	}
	<-arrived
	f.send(t, faketelegram.Message(700000002, chatID, chatID, "private", "/stop"))
	close(release)
	f.env.Lambda.Wait()
	run, err := f.env.Store.GetRun(t.Context(), runID)
	if err != nil || run.Status != "failed" || !strings.Contains(string(run.State), `"error_code":"cancelled"`) {
		t.Errorf("run after /stop = %s %s, %v; want failed, cancelled", run.Status, run.State, err)
	}
	f.send(t, faketelegram.Message(700000003, chatID, chatID, "private", "/stop"))
	if got := texts(f.tg.Messages(chatID)); !slices.Equal(got, []string{"Stopped.", "Nothing to stop."}) {
		t.Errorf("messages = %q; want Stopped. and Nothing to stop. only", got)
	}
	if s := f.env.SFN.Started(); len(s) != 0 {
		t.Errorf("executions %q, want none", s)
	}
}

// TestStop: on AWS too, /stop ends the reply being worked on, with the
// function's own grants on the table: the run parked at its approval is
// ended, its execution ends, the prompt's button is stale afterwards,
// and nothing of the run is sent after "Stopped.". A second /stop finds
// nothing to stop.
func TestStop(t *testing.T) {
	f := newFixture(t, "111111111")
	f.play(t)
	f.env.LLM.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_1", Name: "write_file", Arguments: `{"path":"notes.md","content":"hi"}`}}})
	f.policed(t)
	if code := f.invoke(t, "webhook.json"); code != http.StatusOK {
		t.Fatalf("webhook: status %d", code)
	}
	cloudtest.Wait(t, 10*time.Second, "the approval prompt", func() bool { return len(f.tg.Messages(chatID)) > 0 })
	prompt := f.tg.Messages(chatID)[0]
	send := func(ev any) { t.Helper(); f.send(t, ev) }
	send(faketelegram.Message(700000002, chatID, chatID, "private", "/stop"))
	if e := f.env.SFN.Wait(runID, 10*time.Second); e.Err != nil {
		t.Fatalf("execution of the stopped run: %v", e.Err)
	}
	run, err := f.env.Store.GetRun(t.Context(), runID)
	if err != nil || run.Status != "failed" || !strings.Contains(string(run.State), `"error_code":"cancelled"`) {
		t.Errorf("run after /stop = %s %s, %v; want failed, cancelled", run.Status, run.State, err)
	}
	send(faketelegram.Callback(700000003, chatID, chatID, "private", prompt.MessageID, prompt.Buttons[0].CallbackData))
	send(faketelegram.Message(700000004, chatID, chatID, "private", "/stop"))
	cloudtest.Wait(t, 5*time.Second, "the replies", func() bool { return len(f.tg.Messages(chatID)) > 3 })
	got := texts(f.tg.Messages(chatID))
	if len(got) != 4 || got[1] != "Stopped." || !strings.Contains(got[2], "no longer waiting") || got[3] != "Nothing to stop." {
		t.Errorf("messages = %q; want the prompt, Stopped., the stale press told and Nothing to stop.", got)
	}
	if n := len(f.env.LLM.Requests()); n != 1 {
		t.Errorf("the model was asked %d times, want once", n)
	}
}
