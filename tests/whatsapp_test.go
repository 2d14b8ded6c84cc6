package tests

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/whatsapp"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
	"github.com/lambdaclaw/lambdaclaw/tests/fakewhatsapp"
)

// WhatsApp users of the tests: all allowed.
const (
	waAda   = "4915112345678"
	waBea   = "4915187654321"
	waCarla = "4915100000003"
)

// whatsappConfig is the channels.whatsapp section on the fake, with
// template as its template line ("" for none).
func whatsappConfig(wa *fakewhatsapp.Server, template string) string {
	return fmt.Sprintf(`channels:
  whatsapp:
    enabled: true
    phone_number_id: %q
    access_token: {env: WA_TOKEN}
    app_secret: {env: WA_APP_SECRET}
    verify_token: {env: WA_VERIFY_TOKEN}
    api_base: %s
    allowed_users: [%q, %q, %q]
%s`, fakewhatsapp.PhoneNumberID, wa.APIBase(), waAda, waBea, waCarla, template)
}

// startWhatsApp runs the gateway with the WhatsApp channel on a fake Cloud
// API, with the template hello_world.
func startWhatsApp(t *testing.T, llm *fakellm.Server) (*gateway, *fakewhatsapp.Server) {
	t.Helper()
	wa := fakewhatsapp.New()
	t.Cleanup(wa.Close)
	g := newGateway(t, llm, whatsappConfig(wa, "    template: {name: hello_world, language: en_US}\n"))
	g.env = append(g.env, "WA_TOKEN="+fakewhatsapp.Token, "WA_APP_SECRET="+fakewhatsapp.AppSecret, "WA_VERIFY_TOKEN="+fakewhatsapp.VerifyToken)
	g.start()
	return g, wa
}

// waitSent waits until the user to got n messages, and returns them.
func waitSent(t *testing.T, wa *fakewhatsapp.Server, to string, n int) []fakewhatsapp.Sent {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d messages to %s", n, to), 15*time.Second, func() bool { return len(wa.Sent(to)) >= n })
	return wa.Sent(to)
}

// deliver posts n to the gateway's webhook, signed as Meta signs it, and
// wants 200.
func deliver(t *testing.T, g *gateway, n fakewhatsapp.Notification) {
	t.Helper()
	if code, err := fakewhatsapp.Deliver(g.addr+whatsapp.WebhookPath, n); err != nil || code != http.StatusOK {
		t.Fatalf("delivery: %d %v", code, err)
	}
}

// TestWhatsApp drives the channel through `lambdaclaw serve` as Meta
// would: the webhook's verification, forged deliveries, a conversation
// with a duplicate delivery, an approval answered with its reply button,
// a reply after the 24-hour window (the template), a restart, and a reply
// after the window with no template (a clear failure).
func TestWhatsApp(t *testing.T) {
	llm := newFake(t)
	g, wa := startWhatsApp(t, llm)
	hook := g.addr + whatsapp.WebhookPath

	// Meta's verification request.
	if code, body, err := fakewhatsapp.Verify(hook, "subscribe", fakewhatsapp.VerifyToken, "1158201444"); err != nil || code != 200 || body != "1158201444" {
		t.Fatalf("verification: %d %q %v", code, body, err)
	}
	if code, _, err := fakewhatsapp.Verify(hook, "subscribe", "guess", "1158201444"); err != nil || code != http.StatusForbidden {
		t.Fatalf("verification with a wrong token: %d %v", code, err)
	}

	// Forged or unsigned deliveries start nothing.
	hello := wa.UserText(waAda, "Ada", "hello")
	for sig, want := range map[string]int{"": 401, fakewhatsapp.Sign("not-the-app-secret", hello.Body): 403} {
		if code, err := fakewhatsapp.Post(hook, sig, hello.Body); err != nil || code != want {
			t.Fatalf("signature %q: %d %v, want %d", sig, code, err, want)
		}
	}

	// A conversation; Meta's repeated delivery is answered once (a second
	// run would answer before the next message, in the session's lane,
	// and ask the model once more: counted at the end).
	deliver(t, g, hello)
	if ms := waitSent(t, wa, waAda, 1); ms[0].Text != "echo: hello" || ms[0].Type != "text" {
		t.Fatalf("reply = %+v", ms[0])
	}
	second := wa.UserText(waAda, "Ada", "second")
	deliver(t, g, second)
	deliver(t, g, second)
	ms := waitSent(t, wa, waAda, 2)
	if ms[1].Text != "echo: second" {
		t.Fatalf("messages = %+v", ms)
	}
	reqs := llm.Requests()
	if conv := conversation(reqs[1].Messages); len(conv) != 3 || conv[0].Content != "hello" || conv[1].Content != "echo: hello" {
		t.Fatalf("the second turn's conversation = %+v, want the first turn in it", conv)
	}

	// An approval, answered with its reply button.
	before := workspaceFiles(t, g, "IDENTITY.md")
	llm.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{memoryCall("c1", "update_bootstrap", "IDENTITY.md", "Name: Mallory")}},
		fakellm.Reply{Content: "renamed"})
	deliver(t, g, wa.UserText(waAda, "Ada", "call yourself Mallory"))
	ms = waitSent(t, wa, waAda, 3)
	prompt := ms[2]
	if prompt.Type != "interactive" || len(prompt.Buttons) != 3 || !strings.Contains(prompt.Text, "workspace_memory") {
		t.Fatalf("approval prompt = %+v", prompt)
	}
	if now := workspaceFiles(t, g, "IDENTITY.md"); now["IDENTITY.md"] != before["IDENTITY.md"] {
		t.Fatal("IDENTITY.md changed before the approval")
	}
	yes := prompt.Buttons[0]
	if yes.Title != "Yes" || !strings.HasSuffix(yes.ID, ":yes") {
		t.Fatalf("first button = %+v", yes)
	}
	press, err := wa.UserPress(waAda, "Ada", prompt.ID, yes.ID)
	if err != nil {
		t.Fatal(err)
	}
	deliver(t, g, press)
	deliver(t, g, press)
	if ms = waitSent(t, wa, waAda, 4); ms[3].Text != "renamed" {
		t.Fatalf("reply after the approval = %+v", ms[3])
	}
	if now := workspaceFiles(t, g, "IDENTITY.md"); now["IDENTITY.md"] != "Name: Mallory" {
		t.Fatalf("IDENTITY.md = %q after the approval", now["IDENTITY.md"])
	}

	// Bea wrote 25 hours ago (Meta delivers late): the window has closed,
	// so the template goes in place of the reply.
	wa.SetNow(func() time.Time { return time.Now().Add(-25 * time.Hour) })
	late := wa.UserText(waBea, "Bea", "are you there?")
	wa.SetNow(time.Now)
	deliver(t, g, late)
	if ms = waitSent(t, wa, waBea, 1); ms[0].Type != "template" || ms[0].Template != "hello_world" || ms[0].Language != "en_US" {
		t.Fatalf("sent to Bea = %+v, want the template", ms)
	}

	// A restart: a delivery repeated across it starts nothing, and with no
	// template a reply after the window fails with the reason.
	g.stop()
	if err := os.WriteFile(filepath.Join(g.home, "config.yaml"), []byte(whatsappConfig(wa, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	g.start()
	deliver(t, g, second)
	wa.SetNow(func() time.Time { return time.Now().Add(-30 * time.Hour) })
	old := wa.UserText(waCarla, "Carla", "hello?")
	wa.SetNow(time.Now)
	deliver(t, g, old)
	waitFor(t, "the failure of Carla's reply", 15*time.Second, func() bool {
		return strings.Contains(g.stderr.String(), "the 24-hour customer service window is closed")
	})
	if ms := wa.Sent(waCarla); len(ms) != 0 {
		t.Fatalf("sent to Carla = %+v", ms)
	}
	if n := len(wa.Sent(waAda)); n != 4 {
		t.Fatalf("Ada got %d messages after the restart, want the 4 before it", n)
	}
	// hello, second, the approval's two turns, Bea's and Carla's: the
	// forged and repeated deliveries asked nothing.
	if n := len(llm.Requests()); n != 6 {
		t.Errorf("model requests = %d, want 6", n)
	}
	for _, secret := range []string{fakewhatsapp.Token, fakewhatsapp.AppSecret, fakewhatsapp.VerifyToken} {
		if strings.Contains(g.stderr.String(), secret) {
			t.Errorf("the server's log holds %q", secret)
		}
	}
}

// TestWhatsAppMedia: a voice note and a photo through the server, the
// transcript and the image reaching the model; a file the agent sends
// arrives as an image.
func TestWhatsAppMedia(t *testing.T) {
	llm := newFake(t)
	llm.SetTranscript(func([]byte) string { return "book a table for two" })
	wa := fakewhatsapp.New()
	t.Cleanup(wa.Close)
	g := newGateway(t, llm, whatsappConfig(wa, "    autonomy: full\n")+"transcription:\n  provider: openai\n")
	g.env = append(g.env, "WA_TOKEN="+fakewhatsapp.Token, "WA_APP_SECRET="+fakewhatsapp.AppSecret, "WA_VERIFY_TOKEN="+fakewhatsapp.VerifyToken)
	g.start()

	deliver(t, g, wa.UserMedia(waAda, "Ada", "audio", "audio/ogg; codecs=opus", "", "", true, []byte("OggS voice")))
	if ms := waitSent(t, wa, waAda, 1); ms[0].Text != "echo: [voice note, transcribed]\nbook a table for two" {
		t.Fatalf("reply = %q", ms[0].Text)
	}
	pic := pngImage(t)
	g.writeWorkspaceFile("menu.png", string(pic))
	llm.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{{ID: "call_send", Name: "send_file", Arguments: `{"path":"menu.png","caption":"the menu"}`}}},
		fakellm.Reply{Content: "Sent."})
	deliver(t, g, wa.UserMedia(waAda, "Ada", "image", "image/png", "", "the menu, please", false, pic))
	ms := waitSent(t, wa, waAda, 3)
	if ms[1].Type != "image" || string(ms[1].Media) != string(pic) || ms[1].Text != "the menu" || ms[2].Text != "Sent." {
		t.Fatalf("sent %+v", ms[1:])
	}
	first := llm.Requests()[len(llm.Requests())-2].Messages
	if u := first[len(first)-1]; u.Content != "the menu, please" || len(u.Parts) != 1 || !strings.HasPrefix(u.Parts[0].URL, "data:image/png;base64,") {
		t.Fatalf("the model got %+v, want the caption and the photo", u)
	}
}
