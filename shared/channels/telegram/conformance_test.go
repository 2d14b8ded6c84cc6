package telegram_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/telegram"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel/channeltest"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/tests/faketelegram"
)

// harness plays Telegram (faketelegram) against the webhook receiver.
type harness struct {
	tg     *faketelegram.Server
	client *telegram.Client
	// url and secret are the webhook's, as setWebhook registered them.
	url, secret string
}

// The suite's people and group on Telegram: a private chat's id is its
// user's.
var (
	users = map[string]int64{channeltest.Alice: 1001, channeltest.Bob: 1002, channeltest.Mallory: 1666}
	group = int64(-1009000)
)

func newHarness(t *testing.T) channeltest.Harness {
	tg := faketelegram.New()
	t.Cleanup(tg.Close)
	return &harness{tg: tg, client: telegram.NewClient(tg.URL, faketelegram.Token)}
}

func (h *harness) Platform() channel.Platform { return telegram.NewPlatform(h.client, nil) }

func (h *harness) Serve(t *testing.T, st store.Channel, handle func(context.Context, channel.Inbound) error) {
	secret, hash := telegram.NewSecret()
	if err := st.SetState(t.Context(), telegram.KeyWebhookSecret, hash); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(telegram.NewReceiver(h.client, st, handle, nil))
	t.Cleanup(srv.Close)
	h.url, h.secret = srv.URL+"/telegram/webhook", secret
}

func (h *harness) User(name string) string { return strconv.FormatInt(users[name], 10) }

func (h *harness) Deliver(t *testing.T, d channeltest.Delivery) int {
	user := users[d.From]
	chat, kind := user, "private"
	if d.Group {
		chat, kind = group, "supergroup"
	}
	id := int64(d.Seq)
	var u map[string]any
	switch {
	case d.Press != "":
		var on int64
		for _, m := range h.tg.Messages(chat) {
			if len(m.Buttons) > 0 {
				on = m.MessageID
			}
		}
		u = faketelegram.Callback(id, chat, user, kind, on, d.Press)
	case d.Addressed:
		u = faketelegram.Message(id, chat, user, kind, "@"+faketelegram.Bot["username"].(string)+" "+d.Text)
	default:
		u = faketelegram.Message(id, chat, user, kind, d.Text)
	}
	secret := h.secret
	if d.Forged {
		secret = "forged-" + secret
	}
	code, err := faketelegram.PostWebhook(h.url, secret, u)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func (h *harness) Received(_ *testing.T, c channeltest.Conversation) []channeltest.Message {
	chat := users[c.User]
	if c.Group {
		chat = group
	}
	var out []channeltest.Message
	for _, m := range h.tg.Messages(chat) {
		var buttons []channel.Button
		for _, b := range m.Buttons {
			buttons = append(buttons, channel.Button{Label: b.Text, Value: b.CallbackData})
		}
		out = append(out, channeltest.Message{Text: m.Text, Buttons: buttons})
	}
	return out
}

func (h *harness) RateLimit(*testing.T) time.Duration {
	h.tg.FailNext("sendMessage", faketelegram.Failure{Code: 429, RetryAfter: 1})
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
