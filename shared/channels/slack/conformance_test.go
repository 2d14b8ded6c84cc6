package slack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/slack"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel/channeltest"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/tests/fakeslack"
)

// harness plays Slack (fakeslack) against the Events API and
// interactivity receivers. Each person has a DM with the bot; the suite's
// group is a thread in a channel (context and sessions are a thread's).
type harness struct {
	fake *fakeslack.Server
	url  string
	// sent are the bodies delivered, by Seq: the same Seq again is
	// Slack's redelivery of the same body.
	sent map[int]delivered
	// prompt is, per conversation, the last message seen with buttons:
	// a press of it after it lost them is a stale client's.
	prompt map[string]fakeslack.Message
}

type delivered struct {
	body []byte
	form bool
}

var slackUsers = map[string]string{channeltest.Alice: "U0ALICE", channeltest.Bob: "U0BOB", channeltest.Mallory: "U0MALLORY"}

const (
	groupChannel = "C0GROUP"
	groupThread  = "1799999999.000001"
)

func newHarness(t *testing.T) channeltest.Harness {
	fake := fakeslack.New()
	t.Cleanup(fake.Close)
	return &harness{fake: fake, sent: map[int]delivered{}, prompt: map[string]fakeslack.Message{}}
}

func (h *harness) Platform() channel.Platform {
	return slack.NewClient(h.fake.APIBase(), fakeslack.BotToken)
}

func (h *harness) Serve(t *testing.T, _ store.Channel, handle func(context.Context, channel.Inbound) error) {
	r := &slack.Receiver{SigningSecret: fakeslack.SigningSecret, Handle: handle,
		Parser: slack.Parser{Bot: slack.Bot{UserID: fakeslack.BotUserID, TeamID: fakeslack.TeamID}},
		Client: slack.NewClient(h.fake.APIBase(), fakeslack.BotToken)}
	mux := http.NewServeMux()
	mux.Handle(slack.EventsPath, r.Events())
	mux.Handle(slack.InteractivePath, r.Interactive())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	h.url = srv.URL
}

func (h *harness) User(name string) string { return slackUsers[name] }

// dm is a person's direct conversation with the bot.
func dm(name string) string { return "D" + strings.TrimPrefix(slackUsers[name], "U") }

func (h *harness) Deliver(t *testing.T, d channeltest.Delivery) int {
	t.Helper()
	ch, thread := dm(d.From), ""
	if d.Group {
		ch, thread = groupChannel, groupThread
	}
	sent, again := h.sent[d.Seq]
	if !again {
		ts := fmt.Sprintf("1800000000.%06d", d.Seq)
		switch user := slackUsers[d.From]; {
		case d.Press != "":
			m, ok := h.prompt[ch]
			for _, cur := range h.fake.Messages() {
				if cur.Channel == ch && strings.Contains(string(cur.Blocks), `"actions"`) {
					m, ok = cur, true
				}
			}
			if !ok { // a press in a conversation without a prompt: another's button
				for _, cur := range h.fake.Messages() {
					if strings.Contains(string(cur.Blocks), `"value":"`+d.Press+`"`) {
						m, ok = cur, true
					}
				}
				m.Channel = ch
			}
			h.prompt[ch] = m
			body, err := h.fake.Press(m, user, d.Press)
			if err != nil {
				t.Fatal(err)
			}
			sent = delivered{body: body, form: true}
		case !d.Group:
			sent = delivered{body: h.fake.DM(ch, user, ts, "", d.Text)}
		case d.Addressed:
			sent = delivered{body: h.fake.Mention(ch, user, ts, thread, d.Text)}
		default:
			sent = delivered{body: h.fake.ChannelMessage(ch, user, ts, thread, d.Text)}
		}
		h.sent[d.Seq] = sent
	}
	path := slack.EventsPath
	if sent.form {
		path = slack.InteractivePath
	}
	secret := fakeslack.SigningSecret
	if d.Forged {
		secret = "forged-" + secret
	}
	retry := 0
	if again {
		retry = 1
	}
	status, err := h.fake.DeliverSigned(h.url+path, sent.body, sent.form, retry, secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return status
}

var shown = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")

func (h *harness) Received(t *testing.T, c channeltest.Conversation) []channeltest.Message {
	ch := dm(c.User)
	if c.Group {
		ch = groupChannel
	}
	var out []channeltest.Message
	for _, m := range h.fake.Messages() {
		if m.Channel != ch || m.Deleted {
			continue
		}
		var blocks []struct {
			Type     string `json:"type"`
			Elements []struct {
				Text  json.RawMessage `json:"text"` // a string in a context block
				Value string          `json:"value"`
			} `json:"elements"`
		}
		if m.Blocks != nil {
			if err := json.Unmarshal(m.Blocks, &blocks); err != nil {
				t.Fatal(err)
			}
		}
		var buttons []channel.Button
		for _, b := range blocks {
			for _, e := range b.Elements {
				var label struct{ Text string }
				if b.Type == "actions" && json.Unmarshal(e.Text, &label) == nil {
					buttons = append(buttons, channel.Button{Label: label.Text, Value: e.Value})
				}
			}
		}
		out = append(out, channeltest.Message{Text: shown.Replace(m.Text), Buttons: buttons})
	}
	return out
}

func (h *harness) RateLimit(*testing.T) time.Duration {
	h.fake.Fail("chat.postMessage", fakeslack.Failure{Status: http.StatusTooManyRequests, Error: "ratelimited", RetryAfter: 1})
	return time.Second
}

func TestConformance(t *testing.T) { channeltest.Run(t, newHarness, openStore) }

// openStore opens the suite's store: the embedded one, on a new file.
func openStore(t *testing.T) channeltest.Store {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "lambdaclaw.db"))
	if err != nil {
		t.Fatal(err)
	}
	return db
}
