package tests

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/slack"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
	"github.com/lambdaclaw/lambdaclaw/tests/fakeslack"
)

// startSlack runs the gateway with the Slack channel on a fake Slack in
// mode (events or socket); user U0AAA1 may talk to the bot.
func startSlack(t *testing.T, llm *fakellm.Server, mode string) (*gateway, *fakeslack.Server) {
	t.Helper()
	fake := fakeslack.New()
	t.Cleanup(fake.Close)
	cfg := fmt.Sprintf(`channels:
  slack:
    enabled: true
    mode: %s
    api_base: %s
    bot_token: {env: SLACK_BOT_TOKEN}
    signing_secret: {env: SLACK_SIGNING_SECRET}
    app_token: {env: SLACK_APP_TOKEN}
    allowed_users: [U0AAA1]
`, mode, fake.APIBase())
	g := newGateway(t, llm, cfg)
	g.env = append(g.env, "SLACK_BOT_TOKEN="+fakeslack.BotToken, "SLACK_SIGNING_SECRET="+fakeslack.SigningSecret, "SLACK_APP_TOKEN="+fakeslack.AppToken)
	g.start()
	return g, fake
}

// slackReplies waits until the bot's live messages in channel number n
// (drafts, deleted once the reply is sent, are not counted).
func slackReplies(t *testing.T, fake *fakeslack.Server, channel string, n int) []fakeslack.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out []fakeslack.Message
	_, err := fake.WaitFor(ctx, func(ms []fakeslack.Message) bool {
		out = out[:0]
		for _, m := range ms {
			if m.Channel == channel && !m.Deleted {
				out = append(out, m)
			}
		}
		return len(out) >= n
	})
	if err != nil {
		t.Fatalf("%s: %d messages, want %d: %+v", channel, len(out), n, out)
	}
	return out
}

func deliverSlack(t *testing.T, fake *fakeslack.Server, url string, body []byte, form bool, retry int) {
	t.Helper()
	if status, err := fake.Deliver(url, body, form, retry); err != nil || status != http.StatusOK {
		t.Fatalf("delivery to %s: %d %v", url, status, err)
	}
}

func TestSlackEvents(t *testing.T) {
	llm := newFake(t)
	g, fake := startSlack(t, llm, "events")
	events, interactive := g.addr+slack.EventsPath, g.addr+slack.InteractivePath

	// A forged or replayed delivery is refused and starts nothing.
	dm := fake.DM("D1", "U0AAA1", "1800000000.000100", "", "hello bot")
	if status, _ := fake.DeliverSigned(events, dm, false, 0, "forged-secret", time.Now()); status != http.StatusUnauthorized {
		t.Errorf("forged: status %d, want 401", status)
	}
	if status, _ := fake.DeliverSigned(events, dm, false, 0, fakeslack.SigningSecret, time.Now().Add(-time.Hour)); status != http.StatusUnauthorized {
		t.Errorf("replayed: status %d, want 401", status)
	}
	// The message, delivered again by Slack's retry, is answered once.
	deliverSlack(t, fake, events, dm, false, 0)
	deliverSlack(t, fake, events, dm, false, 1)
	if ms := slackReplies(t, fake, "D1", 1); ms[0].Text != "echo: hello bot" || ms[0].ThreadTS != "" {
		t.Fatalf("DM reply = %+v", ms[0])
	}
	// In a DM's thread, the reply is in the thread, a session of its own.
	deliverSlack(t, fake, events, fake.DM("D1", "U0AAA1", "1800000000.000200", "1800000000.000100", "in a thread"), false, 0)
	if ms := slackReplies(t, fake, "D1", 2); ms[1].Text != "echo: in a thread" || ms[1].ThreadTS != "1800000000.000100" {
		t.Fatalf("thread reply = %+v", ms[1])
	}
	if n := len(llm.Requests()); n != 2 {
		t.Fatalf("model requests = %d, want 2 (the retry started nothing)", n)
	}
	// After a restart, a late retry of the first message starts nothing
	// either: handled deliveries are in the database.
	g.stop()
	g.start()
	deliverSlack(t, fake, events, dm, false, 2)
	// A mention in a channel is answered in a thread under it, with the
	// channel's earlier messages as context.
	deliverSlack(t, fake, events, fake.ChannelMessage("C1", "U0AAA1", "1800000000.000250", "", "the build is red"), false, 0)
	deliverSlack(t, fake, events, fake.Mention("C1", "U0AAA1", "1800000000.000300", "", "hi all"), false, 0)
	if ms := slackReplies(t, fake, "C1", 1); !strings.HasSuffix(ms[0].Text, "hi all") || ms[0].ThreadTS != "1800000000.000300" {
		t.Fatalf("channel reply = %+v", ms[0])
	}
	if n := len(llm.Requests()); n != 3 {
		t.Fatalf("model requests = %d, want 3", n)
	}
	if body := string(llm.Requests()[2].Body); !strings.Contains(body, "the build is red") {
		t.Error("the mention's model request lacks the channel's earlier message")
	}
	// Someone not allowed gets the generic answer; their words reach no model.
	deliverSlack(t, fake, events, fake.DM("D2", "U0BBB2", "1800000000.000400", "", "secret words"), false, 0)
	if ms := slackReplies(t, fake, "D2", 1); ms[0].Text != "Send the access code to use this bot." {
		t.Fatalf("stranger's reply = %q", ms[0].Text)
	}

	// An approval is asked with buttons and answered by pressing one.
	llm.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{memoryCall("c1", "update_bootstrap", "IDENTITY.md", "Name: Slacky")}},
		fakellm.Reply{Content: "renamed"})
	deliverSlack(t, fake, events, fake.DM("D1", "U0AAA1", "1800000000.000500", "", "call yourself Slacky"), false, 0)
	prompt := slackReplies(t, fake, "D1", 3)[2]
	if !strings.Contains(prompt.Text, "IDENTITY.md") || !strings.Contains(string(prompt.Blocks), `"actions"`) {
		t.Fatalf("approval prompt = %+v", prompt)
	}
	press, err := fake.Press(prompt, "U0AAA1", "ap:"+approvalID(t, prompt)+":yes")
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := fake.DeliverSigned(interactive, press, true, 0, "forged-secret", time.Now()); status != http.StatusUnauthorized {
		t.Errorf("forged press: status %d, want 401", status)
	}
	deliverSlack(t, fake, interactive, press, true, 0)
	if ms := slackReplies(t, fake, "D1", 4); ms[3].Text != "renamed" {
		t.Fatalf("reply after the press = %q", ms[3].Text)
	}
	// The prompt shows the choice in place of its buttons.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err = fake.WaitFor(ctx, func(ms []fakeslack.Message) bool {
		for _, m := range ms {
			if m.TS == prompt.TS && m.Edits > 0 {
				return true
			}
		}
		return false
	})
	ms := slackReplies(t, fake, "D1", 4)
	if err != nil {
		t.Error("the prompt was not edited")
	}
	if ms[2].TS != prompt.TS || ms[2].Edits != 1 || strings.Contains(string(ms[2].Blocks), `"actions"`) || !strings.Contains(string(ms[2].Blocks), "chose *Yes*") {
		t.Errorf("the prompt after the press = %+v", ms[2])
	}
	if b, err := os.ReadFile(filepath.Join(g.workspace(), "IDENTITY.md")); err != nil || string(b) != "Name: Slacky" {
		t.Errorf("IDENTITY.md = %q, %v after the approval", b, err)
	}
	for _, secret := range []string{"secret words", fakeslack.BotToken, fakeslack.SigningSecret} {
		if strings.Contains(g.stderr.String(), secret) {
			t.Errorf("server log holds %q", secret)
		}
	}
}

// approvalID reads the approval's id from the value of a prompt's button.
func approvalID(t *testing.T, m fakeslack.Message) string {
	t.Helper()
	i := strings.Index(string(m.Blocks), `"value":"ap:`)
	if i < 0 {
		t.Fatalf("no approval button in %s", m.Blocks)
	}
	rest := string(m.Blocks)[i+len(`"value":"ap:`):]
	return rest[:strings.IndexByte(rest, ':')]
}

func TestSlackSocketMode(t *testing.T) {
	llm := newFake(t)
	_, fake := startSlack(t, llm, "socket")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := fake.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}
	id, err := fake.SocketSend(ctx, "events_api", fake.DM("D1", "U0AAA1", "1800000000.000100", "", "over the socket"))
	if err != nil {
		t.Fatal(err)
	}
	if err := fake.WaitAck(ctx, id); err != nil {
		t.Fatal(err)
	}
	if ms := slackReplies(t, fake, "D1", 1); ms[0].Text != "echo: over the socket" {
		t.Fatalf("reply = %q", ms[0].Text)
	}
}
