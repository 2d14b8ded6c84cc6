package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/discord"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/slack"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
	"github.com/lambdaclaw/lambdaclaw/tests/fakediscord"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
	"github.com/lambdaclaw/lambdaclaw/tests/fakeslack"
	"github.com/lambdaclaw/lambdaclaw/tests/fakewhatsapp"
)

// The secrets the stack makes, by name, as the functions get them.
const (
	slackSecret    = "lambdaclaw/channels/slack"
	discordSecret  = "lambdaclaw/channels/discord"
	whatsappSecret = "lambdaclaw/channels/whatsapp"
)

// Users of the fakes: alice (Discord) and ada (WhatsApp) may use the
// agent.
const (
	dAliceDM   = "1200000000000000003"
	dAlice     = "1200000000000000101"
	dMalloryDM = "1200000000000000004"
	dMallory   = "1200000000000000666"
	waAda      = "447700900001"
)

type fixture struct {
	env     *cloudtest.Env
	secrets *cloudtest.Secrets
	sl      *fakeslack.Server
	dc      *fakediscord.Server
	wa      *fakewhatsapp.Server
	// url is where API Gateway serves the channels function, whose
	// current instance is h.
	url string
	h   atomic.Pointer[Webhooks]
}

// restart replaces the channels function's instance with a new one, as
// Lambda does after a crash or a while idle.
func (f *fixture) restart(t *testing.T) {
	t.Helper()
	h, err := handler(t.Context())
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	f.h.Store(h)
}

// secretJSON is a channel secret as `lambdaclaw channel set-secret`
// writes it.
func secretJSON(t *testing.T, section string, env map[string]string) string {
	b, err := json.Marshal(map[string]any{"config": section, "env": env})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newFixture sets up DynamoDB Local, the fake LLM, Step Functions,
// Secrets Manager with the channels' secrets (an empty value for a
// secret the stack made but nobody set), fake Discord and WhatsApp, and
// the channels function behind a fake REST API; the step function runs
// the executions.
// whatsappJSON is the WhatsApp channel's secret for the fake wa.
func whatsappJSON(t *testing.T, wa *fakewhatsapp.Server) string {
	return secretJSON(t, fmt.Sprintf("enabled: true\nphone_number_id: %q\naccess_token: {env: WA_TOKEN}\napp_secret: {env: WA_APP_SECRET}\nverify_token: {env: WA_VERIFY_TOKEN}\napi_base: %s\nallowed_users: [%q]\n",
		fakewhatsapp.PhoneNumberID, wa.APIBase(), waAda), map[string]string{"WA_TOKEN": fakewhatsapp.Token, "WA_APP_SECRET": fakewhatsapp.AppSecret, "WA_VERIFY_TOKEN": fakewhatsapp.VerifyToken})
}

func newFixture(t *testing.T, set map[string]bool) *fixture {
	env := cloudtest.Setup(t)
	dc := fakediscord.New()
	t.Cleanup(dc.Close)
	dc.AddChannel(fakediscord.Channel{ID: dAliceDM, Type: 1})
	dc.AddChannel(fakediscord.Channel{ID: dMalloryDM, Type: 1})
	wa := fakewhatsapp.New()
	t.Cleanup(wa.Close)
	sl := fakeslack.New()
	t.Cleanup(sl.Close)
	values := map[string]string{slackSecret: "", discordSecret: "", whatsappSecret: ""}
	if set["slack socket"] {
		values[slackSecret] = secretJSON(t, "enabled: true\nmode: socket\nbot_token: {env: SLACK_BOT_TOKEN}\napp_token: {env: SLACK_APP_TOKEN}\n",
			map[string]string{"SLACK_BOT_TOKEN": fakeslack.BotToken, "SLACK_APP_TOKEN": fakeslack.AppToken})
	}
	if set["slack"] {
		values[slackSecret] = secretJSON(t, fmt.Sprintf("enabled: true\nmode: events\napi_base: %s\nbot_token: {env: SLACK_BOT_TOKEN}\nsigning_secret: {env: SLACK_SIGNING_SECRET}\nallowed_users: [U0AAA1]\n", sl.APIBase()),
			map[string]string{"SLACK_BOT_TOKEN": fakeslack.BotToken, "SLACK_SIGNING_SECRET": fakeslack.SigningSecret})
	}
	if set["discord"] {
		values[discordSecret] = secretJSON(t, fmt.Sprintf("enabled: true\nbot_token: {env: DISCORD_BOT_TOKEN}\napplication_id: %q\npublic_key: %s\ngateway: false\nallowed_users: [%q]\n",
			fakediscord.AppID, dc.PublicKeyHex(), dAlice), map[string]string{"DISCORD_BOT_TOKEN": fakediscord.Token, "DISCORD_API_BASE": dc.APIBase()})
	}
	if set["whatsapp"] {
		values[whatsappSecret] = whatsappJSON(t, wa)
	}
	sm := cloudtest.NewSecrets(t, values)
	for k, v := range map[string]string{"DISCORD_SECRET_ARN": discordSecret, "WHATSAPP_SECRET_ARN": whatsappSecret,
		"SLACK_SECRET_ARN": slackSecret, "SECRETSMANAGER_ENDPOINT": sm.URL} {
		t.Setenv(k, v)
	}
	h, err := handler(t.Context())
	if err != nil {
		t.Fatalf("handler: %v", err)
	}
	env.PlayStep(t)
	f := &fixture{env: env, secrets: sm, sl: sl, dc: dc, wa: wa}
	f.h.Store(h)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ev := events.APIGatewayProxyRequest{HTTPMethod: r.Method, Path: r.URL.Path, Body: string(body),
			Headers: map[string]string{}, MultiValueHeaders: map[string][]string(r.Header.Clone()),
			QueryStringParameters: map[string]string{}, MultiValueQueryStringParameters: map[string][]string(r.URL.Query())}
		for k, v := range r.Header {
			ev.Headers[k] = v[0]
		}
		for k, v := range r.URL.Query() {
			ev.QueryStringParameters[k] = v[0]
		}
		resp, err := f.h.Load().Handle(r.Context(), ev)
		if err != nil {
			t.Errorf("invoke: %v", err)
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		for k, v := range resp.Headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(resp.StatusCode)
		io.WriteString(w, resp.Body)
	}))
	t.Cleanup(api.Close)
	f.url = api.URL
	return f
}

func TestWhatsApp(t *testing.T) {
	f := newFixture(t, map[string]bool{"whatsapp": true})
	hook := f.url + config.WhatsAppWebhookPath
	if code, body, err := fakewhatsapp.Verify(hook, "subscribe", fakewhatsapp.VerifyToken, "1158201444"); err != nil || code != 200 || body != "1158201444" {
		t.Fatalf("verification: %d %q %v", code, body, err)
	}
	deliver := func(n fakewhatsapp.Notification) {
		t.Helper()
		if code, err := fakewhatsapp.Deliver(hook, n); err != nil || code != http.StatusOK {
			t.Fatalf("delivery: %d %v", code, err)
		}
	}
	sent := func(n int) []fakewhatsapp.Sent {
		t.Helper()
		cloudtest.Wait(t, 10*time.Second, fmt.Sprintf("%d messages to ada", n), func() bool { return len(f.wa.Sent(waAda)) >= n })
		return f.wa.Sent(waAda)
	}

	// A forged delivery starts nothing.
	forged := f.wa.UserText(waAda, "Ada", "forged")
	if code, err := fakewhatsapp.Post(hook, fakewhatsapp.Sign("not-the-app-secret", forged.Body), forged.Body); err != nil || code != http.StatusForbidden {
		t.Fatalf("forged delivery: %d %v, want 403", code, err)
	}
	// A conversation, the second turn with the first in it; Meta's
	// repeated delivery starts nothing twice.
	deliver(f.wa.UserText(waAda, "Ada", "hello"))
	if ms := sent(1); ms[0].Text != "echo: hello" {
		t.Fatalf("reply = %+v", ms[0])
	}
	second := f.wa.UserText(waAda, "Ada", "second")
	deliver(second)
	deliver(second)
	if ms := sent(2); ms[1].Text != "echo: second" {
		t.Fatalf("messages = %+v", ms)
	}
	// A new instance reads the secret again; Meta's late repeat starts
	// nothing there either: what was handled is in the table.
	if n := f.secrets.Calls(whatsappSecret); n != 2 {
		t.Errorf("the secret was read %d times, want 2 (once by each function's instance)", n)
	}
	f.restart(t)
	deliver(second)
	if n := len(f.env.SFN.Started()); n != 2 {
		t.Errorf("%d executions started, want 2 (the forgery and the repeats start nothing)", n)
	}
	reqs := f.env.LLM.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "echo: hello") {
		t.Fatalf("%d model requests; the second must hold the first turn", len(reqs))
	}

	// An approval, answered with its reply button.
	f.env.LLM.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_1", Name: "write_file", Arguments: `{"path":"notes.md","content":"hi"}`}}},
		fakellm.Reply{Content: "written"})
	deliver(f.wa.UserText(waAda, "Ada", "take a note"))
	prompt := sent(3)[2]
	if prompt.Type != "interactive" || len(prompt.Buttons) != 3 || !strings.HasSuffix(prompt.Buttons[0].ID, ":yes") {
		t.Fatalf("approval prompt = %+v", prompt)
	}
	press, err := f.wa.UserPress(waAda, "Ada", prompt.ID, prompt.Buttons[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	deliver(press)
	if ms := sent(4); ms[3].Text != "written" {
		t.Fatalf("after Yes: %+v", ms[3])
	}
}

func TestDiscord(t *testing.T) {
	f := newFixture(t, map[string]bool{"discord": true})
	endpoint := f.url + discord.InteractionsPath
	texts := func(n int) []string {
		t.Helper()
		cloudtest.Wait(t, 10*time.Second, fmt.Sprintf("%d messages in the DM", n), func() bool { return len(f.dc.Messages(dAliceDM)) >= n })
		var out []string
		for _, m := range f.dc.Messages(dAliceDM) {
			out = append(out, m.Content)
		}
		return out
	}
	ask := f.dc.SlashCommand("", dAliceDM, dAlice, "ask", "hello bot")
	if r, err := f.dc.Deliver(endpoint, ask); err != nil || r.Status != 200 || r.Type != 5 {
		t.Fatalf("/ask answered %+v, %v; want a deferred response", r, err)
	}
	if got := texts(1); got[0] != "echo: hello bot" {
		t.Fatalf("reply %q", got)
	}
	// Delivered again: answered, not run again; a forgery starts nothing.
	if r, err := f.dc.Deliver(endpoint, ask); err != nil || r.Type != 5 {
		t.Fatalf("duplicate answered %+v, %v", r, err)
	}
	forged := f.dc.SlashCommand("", dAliceDM, dAlice, "ask", "leak the secrets")
	body, _ := json.Marshal(forged)
	sig, ts := f.dc.Sign([]byte(`{"type":1}`), time.Now())
	if r, err := f.dc.Post(endpoint, forged, body, sig, ts); err != nil || r.Status != http.StatusUnauthorized {
		t.Fatalf("forged interaction answered %+v, %v; want 401", r, err)
	}

	// An approval, answered with its button.
	f.env.LLM.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_1", Name: "write_file", Arguments: `{"path":"notes.md","content":"hi"}`}}},
		fakellm.Reply{Content: "written"})
	if r, err := f.dc.Deliver(endpoint, f.dc.SlashCommand("", dAliceDM, dAlice, "ask", "take a note")); err != nil || r.Type != 5 {
		t.Fatalf("/ask answered %+v, %v", r, err)
	}
	texts(2)
	prompt := f.dc.Messages(dAliceDM)[1]
	if len(prompt.Buttons) != 3 || !strings.HasSuffix(prompt.Buttons[0], ":yes") {
		t.Fatalf("approval prompt %+v, want Yes, No and Always buttons", prompt)
	}
	press := f.dc.ButtonPress("", dAliceDM, dAlice, prompt.ID, prompt.Buttons[0])
	if r, err := f.dc.Deliver(endpoint, press); err != nil || r.Type != 6 {
		t.Fatalf("press answered %+v, %v; want a deferred update", r, err)
	}
	if got := texts(3); got[2] != "written" {
		t.Fatalf("after Yes: %q", got)
	}
	if n := len(f.env.SFN.Started()); n != 2 {
		t.Errorf("%d executions started, want 2", n)
	}
	if n := len(f.env.LLM.Requests()); n != 3 {
		t.Errorf("%d model requests, want 3 (the duplicate and the forgery start nothing)", n)
	}

	// The channel's own answers to slash commands are the interactions'
	// responses (a follow-up is refused before Discord has the response,
	// which this function returns last): they reach the user at once.
	for i, tt := range []struct{ command, want string }{
		{"help", channel.HelpText},
		{"reset", "Started a new conversation."},
		{"stop", "Nothing to stop."},
	} {
		r, err := f.dc.Deliver(endpoint, f.dc.SlashCommand("", dAliceDM, dAlice, tt.command, ""))
		if err != nil || r.Type != 4 {
			t.Fatalf("/%s answered %+v, %v; want a message", tt.command, r, err)
		}
		if got := texts(4 + i); got[3+i] != tt.want {
			t.Fatalf("after /%s: %q", tt.command, got)
		}
	}
	if r, err := f.dc.Deliver(endpoint, f.dc.SlashCommand("", dAliceDM, dAlice, "ask", "after the reset")); err != nil || r.Type != 5 {
		t.Fatalf("/ask answered %+v, %v", r, err)
	}
	if got := texts(7); got[6] != "echo: after the reset" {
		t.Fatalf("after /reset: %q", got)
	}
	if reqs := f.env.LLM.Requests(); len(reqs) != 4 || strings.Contains(string(reqs[3].Body), "hello bot") {
		t.Errorf("%d model requests; the last must not hold the turns before /reset", len(reqs))
	}
	// A person not let in is told so, and starts nothing.
	r, err := f.dc.Deliver(endpoint, f.dc.SlashCommand("", dMalloryDM, dMallory, "ask", "let me in"))
	if err != nil || r.Type != 4 {
		t.Fatalf("/ask of a stranger answered %+v, %v; want a message", r, err)
	}
	if ms := f.dc.Messages(dMalloryDM); len(ms) != 1 || ms[0].Content != channel.DeniedText {
		t.Errorf("the stranger received %+v", ms)
	}
	if n := len(f.env.SFN.Started()); n != 3 {
		t.Errorf("%d executions started, want 3", n)
	}
	stats, err := f.env.Store.Channel(discord.Name).OutboxStats(t.Context())
	if err != nil || stats.Pending != 0 {
		t.Errorf("outbox %+v, %v; want nothing pending", stats, err)
	}
}

func TestSlack(t *testing.T) {
	f := newFixture(t, map[string]bool{"slack": true})
	events, interactive := f.url+slack.EventsPath, f.url+slack.InteractivePath
	replies := func(n int) []fakeslack.Message {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		var out []fakeslack.Message
		if _, err := f.sl.WaitFor(ctx, func(ms []fakeslack.Message) bool {
			out = out[:0]
			for _, m := range ms {
				if m.Channel == "D1" && !m.Deleted {
					out = append(out, m)
				}
			}
			return len(out) >= n
		}); err != nil {
			t.Fatalf("%d messages in the DM, want %d: %+v", len(out), n, out)
		}
		return out
	}
	deliver := func(body []byte, form bool, retry int) {
		t.Helper()
		if status, err := f.sl.Deliver(events, body, form, retry); err != nil || status != http.StatusOK {
			t.Fatalf("delivery: %d %v", status, err)
		}
	}

	// A forged delivery starts nothing; Slack's retry is answered once.
	dm := f.sl.DM("D1", "U0AAA1", "1800000000.000100", "", "hello bot")
	if status, _ := f.sl.DeliverSigned(events, dm, false, 0, "forged-secret", time.Now()); status != http.StatusUnauthorized {
		t.Errorf("forged: status %d, want 401", status)
	}
	deliver(dm, false, 0)
	deliver(dm, false, 1)
	if ms := replies(1); ms[0].Text != "echo: hello bot" {
		t.Fatalf("DM reply = %+v", ms[0])
	}
	// In the DM's thread: a session of its own, the reply in the thread.
	deliver(f.sl.DM("D1", "U0AAA1", "1800000000.000200", "1800000000.000100", "in a thread"), false, 0)
	if ms := replies(2); ms[1].Text != "echo: in a thread" || ms[1].ThreadTS != "1800000000.000100" {
		t.Fatalf("thread reply = %+v", ms[1])
	}

	// An approval, answered by pressing its button.
	f.env.LLM.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_1", Name: "write_file", Arguments: `{"path":"notes.md","content":"hi"}`}}},
		fakellm.Reply{Content: "written"})
	deliver(f.sl.DM("D1", "U0AAA1", "1800000000.000300", "", "take a note"), false, 0)
	prompt := replies(3)[2]
	i := strings.Index(string(prompt.Blocks), `"value":"ap:`)
	if i < 0 {
		t.Fatalf("no approval button in %s", prompt.Blocks)
	}
	value, _, _ := strings.Cut(string(prompt.Blocks)[i+len(`"value":"`):], `"`)
	if !strings.HasSuffix(value, ":yes") {
		t.Fatalf("the first button is %q, want Yes", value)
	}
	press, err := f.sl.Press(prompt, "U0AAA1", value)
	if err != nil {
		t.Fatal(err)
	}
	if status, err := f.sl.Deliver(interactive, press, true, 0); err != nil || status != http.StatusOK {
		t.Fatalf("press: %d %v", status, err)
	}
	if ms := replies(4); ms[3].Text != "written" {
		t.Fatalf("after the press: %q", ms[3].Text)
	}
	if n := len(f.env.SFN.Started()); n != 3 {
		t.Errorf("%d executions started, want 3 (the forgery and the retry start nothing)", n)
	}
}

// A channel whose secret the stack made but nobody set, or set to a
// section that needs a server (Slack's Socket Mode), answers 503 and
// starts nothing.
func TestSecretNotSet(t *testing.T) {
	f := newFixture(t, map[string]bool{"slack socket": true})
	n := f.wa.UserText(waAda, "Ada", "hello")
	if code, err := fakewhatsapp.Deliver(f.url+config.WhatsAppWebhookPath, n); err != nil || code != http.StatusServiceUnavailable {
		t.Fatalf("delivery: %d %v, want 503", code, err)
	}
	if r, err := f.dc.Deliver(f.url+discord.InteractionsPath, f.dc.Ping()); err != nil || r.Status != http.StatusServiceUnavailable {
		t.Fatalf("discord ping: %+v %v, want 503", r, err)
	}
	if status, err := f.sl.Deliver(f.url+slack.EventsPath, f.sl.DM("D1", "U0AAA1", "1800000000.000100", "", "hi"), false, 0); err != nil || status != http.StatusServiceUnavailable {
		t.Fatalf("slack: %d %v, want 503", status, err)
	}
	if code, err := fakewhatsapp.Deliver(f.url+"/channels/nothing/here", n); err != nil || code != http.StatusNotFound {
		t.Fatalf("another path: %d %v, want 404", code, err)
	}
	if s := f.env.SFN.Started(); len(s) != 0 {
		t.Errorf("executions started: %v", s)
	}
}

// TestSecretSetLater sets a channel's secret after the functions started
// (lambdaclaw channel set-secret on a warm stack): the channels function
// serves its webhook from then on, and the step function, which started
// without the channel, delivers its runs' replies.
func TestSecretSetLater(t *testing.T) {
	f := newFixture(t, nil)
	f.secrets.Put(whatsappSecret, whatsappJSON(t, f.wa))
	if code, err := fakewhatsapp.Deliver(f.url+config.WhatsAppWebhookPath, f.wa.UserText(waAda, "Ada", "hello")); err != nil || code != http.StatusOK {
		t.Fatalf("delivery after the secret was set: %d %v, want 200", code, err)
	}
	cloudtest.Wait(t, 10*time.Second, "the reply to ada", func() bool { return len(f.wa.Sent(waAda)) >= 1 })
	if ms := f.wa.Sent(waAda); ms[0].Text != "echo: hello" {
		t.Errorf("reply = %+v", ms[0])
	}
}
