package discord_test

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/discord"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel/channeltest"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/tests/fakediscord"
)

// conformance plays Discord (fakediscord) against both receivers: direct
// messages are slash commands (/ask, or /help, /reset, /stop) posted to
// the Interactions endpoint, button presses too; group messages are
// MESSAGE_CREATE events over the Gateway (a mention when addressed).
type conformance struct {
	f      *fakediscord.Server
	client *discord.Client
	url    string
	// stop ends the running Gateway.
	stop func()

	mu sync.Mutex
	// sent are the deliveries made, by Seq: a Seq again is the same
	// delivery (the same interaction or message id).
	sent map[int]any
	// handled are the results of the Gateway's hand-overs, by message id.
	handled map[string]error
}

// The suite's people and group on Discord: each person has a DM channel
// with the bot; the group is a channel of a guild.
var (
	people = map[string]string{channeltest.Alice: "1300000000000000101", channeltest.Bob: "1300000000000000102", channeltest.Mallory: "1300000000000000666"}
	dms    = map[string]string{channeltest.Alice: "1300000000000000201", channeltest.Bob: "1300000000000000202", channeltest.Mallory: "1300000000000000266"}
)

const (
	confGuild = "1300000000000000001"
	confGroup = "1300000000000000002"
)

func newConformance(t *testing.T) channeltest.Harness {
	f := fakediscord.New()
	t.Cleanup(f.Close)
	f.AddChannel(fakediscord.Channel{ID: confGroup, GuildID: confGuild})
	for _, id := range dms {
		f.AddChannel(fakediscord.Channel{ID: id, Type: 1})
	}
	h := &conformance{f: f, client: discord.NewClient(f.APIBase(), fakediscord.Token, fakediscord.AppID), sent: map[int]any{}, handled: map[string]error{}, stop: func() {}}
	t.Cleanup(func() { h.stop() })
	return h
}

func TestConformance(t *testing.T) { channeltest.Run(t, newConformance, openStore) }

// openStore opens the suite's store: the embedded one, on a new file.
func openStore(t *testing.T) channeltest.Store {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "lambdaclaw.db"))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func (h *conformance) Platform() channel.Platform { return h.client }

func (h *conformance) User(name string) string { return people[name] }

// Serve starts (or, a restart, replaces) the Interactions endpoint and the
// Gateway, and waits until the Gateway is connected.
func (h *conformance) Serve(t *testing.T, st store.Channel, handle func(context.Context, channel.Inbound) error) {
	h.stop()
	recorded := func(ctx context.Context, in channel.Inbound) error {
		err := handle(ctx, in)
		h.mu.Lock()
		h.handled[in.ID] = err
		h.mu.Unlock()
		return err
	}
	cfg := discord.Config{Client: h.client, PublicKey: h.f.PublicKeyHex(), Handle: recorded, State: st}
	in, err := discord.NewInteractions(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(in)
	g, err := discord.NewGateway(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); g.Run(ctx) }()
	h.url = srv.URL
	h.stop = func() { cancel(); <-done; srv.Close() }
	if !h.f.Wait(10*time.Second, h.f.Connected) {
		t.Fatal("the Gateway did not connect")
	}
}

func (h *conformance) Deliver(t *testing.T, d channeltest.Delivery) int {
	if d.Group {
		return h.groupMessage(t, d)
	}
	h.mu.Lock()
	it, ok := h.sent[d.Seq].(fakediscord.Interaction)
	h.mu.Unlock()
	if !ok {
		it = h.interaction(d)
		h.mu.Lock()
		h.sent[d.Seq] = it
		h.mu.Unlock()
	}
	body, err := json.Marshal(it)
	if err != nil {
		t.Fatal(err)
	}
	sig, ts := h.f.Sign(body, time.Now())
	if d.Forged {
		_, other, _ := ed25519.GenerateKey(nil)
		sig = hex.EncodeToString(ed25519.Sign(other, append([]byte(ts), body...)))
	}
	r, err := h.f.Post(h.url, it, body, sig, ts)
	if err != nil {
		t.Fatal(err)
	}
	return r.Status
}

// interaction is the interaction a direct delivery is: a button press, a
// command, or /ask.
func (h *conformance) interaction(d channeltest.Delivery) fakediscord.Interaction {
	dm, user := dms[d.From], people[d.From]
	if d.Press != "" {
		msg := "1300000000000000999"
		for _, m := range h.f.Messages(dm) {
			if len(m.Buttons) > 0 {
				msg = m.ID
			}
		}
		return h.f.ButtonPress("", dm, user, msg, d.Press)
	}
	if cmd, ok := strings.CutPrefix(d.Text, "/"); ok {
		return h.f.SlashCommand("", dm, user, cmd, "")
	}
	return h.f.SlashCommand("", dm, user, "ask", d.Text)
}

// groupMessage dispatches a group message over the Gateway and waits
// until the receiver handed it over: 200 when the engine took it.
func (h *conformance) groupMessage(t *testing.T, d channeltest.Delivery) int {
	h.mu.Lock()
	m, ok := h.sent[d.Seq].(map[string]any)
	h.mu.Unlock()
	if !ok {
		text, mentions := d.Text, []string(nil)
		if d.Addressed {
			text, mentions = "<@"+fakediscord.BotID+"> "+text, []string{fakediscord.BotID}
		}
		m = h.f.MessageCreate(confGuild, confGroup, people[d.From], text, mentions...)
		h.mu.Lock()
		h.sent[d.Seq] = m
		h.mu.Unlock()
	}
	id := m["id"].(string)
	h.mu.Lock()
	delete(h.handled, id)
	h.mu.Unlock()
	if _, err := h.f.Dispatch("MESSAGE_CREATE", m); err != nil {
		t.Fatal(err)
	}
	var err error
	taken := h.f.Wait(10*time.Second, func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		var ok bool
		err, ok = h.handled[id]
		return ok
	})
	if !taken || err != nil {
		return http.StatusInternalServerError
	}
	return http.StatusOK
}

func (h *conformance) Received(_ *testing.T, c channeltest.Conversation) []channeltest.Message {
	ch := dms[c.User]
	if c.Group {
		ch = confGroup
	}
	var out []channeltest.Message
	for _, m := range h.f.Messages(ch) {
		var bs []channel.Button
		for i := range m.Buttons {
			bs = append(bs, channel.Button{Label: m.Labels[i], Value: m.Buttons[i]})
		}
		out = append(out, channeltest.Message{Text: m.Content, Buttons: bs})
	}
	return out
}

// RateLimit limits the next follow-up, which is how a direct message is
// answered.
func (h *conformance) RateLimit(*testing.T) time.Duration {
	h.f.RateLimitNext("POST /webhooks/{id}/{token}", fakediscord.RateLimit{RetryAfter: 1})
	return time.Second
}
