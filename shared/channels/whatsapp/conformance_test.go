package whatsapp_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/whatsapp"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel/channeltest"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/tests/fakewhatsapp"
)

// The suite's people on WhatsApp (wa_ids); their group is the fake's.
var users = map[string]string{channeltest.Alice: "4915100000001", channeltest.Bob: "4915100000002", channeltest.Mallory: "4915100000666"}

// harness plays Meta (fakewhatsapp) against the webhook.
type harness struct {
	wa *fakewhatsapp.Server
	p  *whatsapp.Platform
	// url is the webhook's; sent keeps each delivery's notification, so
	// that the same Seq again is Meta's redelivery of it.
	url  string
	sent map[int]fakewhatsapp.Notification

	mu sync.Mutex
	st store.Channel
}

func newHarness(t *testing.T) channeltest.Harness {
	wa := fakewhatsapp.New()
	t.Cleanup(wa.Close)
	h := &harness{wa: wa, sent: map[int]fakewhatsapp.Notification{}}
	p, err := whatsapp.New(whatsapp.Config{APIBase: wa.APIBase(), PhoneNumberID: fakewhatsapp.PhoneNumberID, AccessToken: fakewhatsapp.Token,
		AppSecret: fakewhatsapp.AppSecret, VerifyToken: fakewhatsapp.VerifyToken, State: h})
	if err != nil {
		t.Fatal(err)
	}
	h.p = p
	return h
}

// State and SetState are the platform's: the store the suite gives Serve.
func (h *harness) State(ctx context.Context, key string) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.st.State(ctx, key)
}

func (h *harness) SetState(ctx context.Context, key, value string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.st.SetState(ctx, key, value)
}

func (h *harness) Platform() channel.Platform { return h.p }

func (h *harness) Serve(t *testing.T, st store.Channel, handle func(context.Context, channel.Inbound) error) {
	h.mu.Lock()
	h.st = st
	h.mu.Unlock()
	srv := httptest.NewServer(h.p.Webhook(handle))
	t.Cleanup(srv.Close)
	h.url = srv.URL + whatsapp.WebhookPath
}

func (h *harness) User(name string) string { return users[name] }

func (h *harness) Deliver(t *testing.T, d channeltest.Delivery) int {
	n, ok := h.sent[d.Seq]
	from := users[d.From]
	switch {
	case ok:
	case d.Press != "":
		// The press is on the last message with buttons in the person's
		// chat, or forged where there is none.
		var on fakewhatsapp.Sent
		for _, m := range h.wa.Sent(from) {
			if len(m.Buttons) > 0 {
				on = m
			}
		}
		n = h.wa.Press(from, d.From, on.ID, d.Press, "Yes")
	case d.Group:
		n = h.wa.UserGroupText(from, d.From, d.Text, d.Addressed)
	default:
		n = h.wa.UserText(from, d.From, d.Text)
	}
	h.sent[d.Seq] = n
	secret := fakewhatsapp.AppSecret
	if d.Forged {
		secret = "forged-" + secret
	}
	code, err := fakewhatsapp.Post(h.url, fakewhatsapp.Sign(secret, n.Body), n.Body)
	if err != nil {
		t.Fatal(err)
	}
	return code
}

func (h *harness) Received(_ *testing.T, c channeltest.Conversation) []channeltest.Message {
	to := users[c.User]
	if c.Group {
		to = fakewhatsapp.GroupID
	}
	var out []channeltest.Message
	for _, m := range h.wa.Sent(to) {
		var buttons []channel.Button
		for _, b := range m.Buttons {
			buttons = append(buttons, channel.Button{Label: b.Title, Value: b.ID})
		}
		out = append(out, channeltest.Message{Text: m.Text, Buttons: buttons})
	}
	return out
}

func (h *harness) RateLimit(*testing.T) time.Duration {
	h.wa.FailNext(fakewhatsapp.RateLimit)
	return 2 * time.Second
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
