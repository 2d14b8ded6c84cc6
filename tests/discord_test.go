package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/discord"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/tests/fakediscord"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// The fake Discord's server: a guild with one channel, and the DM
// channels of two users; alice may use the bot, bob may not.
const (
	dGuild   = "1200000000000000001"
	dGeneral = "1200000000000000002"
	dAliceDM = "1200000000000000003"
	dBobDM   = "1200000000000000004"
	dAlice   = "1200000000000000101"
	dBob     = "1200000000000000102"
)

// startDiscord runs the gateway with the Discord channel (Interactions
// endpoint and Gateway) on a fake Discord, and waits until the Gateway
// is connected.
func startDiscord(t *testing.T, llm *fakellm.Server) (*gateway, *fakediscord.Server) {
	t.Helper()
	f := fakediscord.New()
	t.Cleanup(f.Close)
	for _, c := range []fakediscord.Channel{
		{ID: dGeneral, GuildID: dGuild}, {ID: dAliceDM, Type: 1}, {ID: dBobDM, Type: 1},
	} {
		f.AddChannel(c)
	}
	cfg := fmt.Sprintf("channels:\n  discord:\n    enabled: true\n    bot_token: {env: DISCORD_BOT_TOKEN}\n    application_id: %q\n    public_key: %s\n    allowed_users: [%q]\n",
		fakediscord.AppID, f.PublicKeyHex(), dAlice)
	g := newGateway(t, llm, cfg)
	g.env = append(g.env, "DISCORD_BOT_TOKEN="+fakediscord.Token, "DISCORD_API_BASE="+f.APIBase())
	g.start()
	waitDiscord(t, f, "the Gateway's READY", f.Connected)
	return g, f
}

func waitDiscord(t *testing.T, f *fakediscord.Server, what string, cond func() bool) {
	t.Helper()
	if !f.Wait(15*time.Second, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// discordTexts waits until channelID has n messages and returns their
// texts.
func discordTexts(t *testing.T, f *fakediscord.Server, channelID string, n int) []string {
	t.Helper()
	waitDiscord(t, f, fmt.Sprintf("%d messages in %s", n, channelID), func() bool { return len(f.Messages(channelID)) >= n })
	var out []string
	for _, m := range f.Messages(channelID) {
		out = append(out, m.Content)
	}
	return out
}

func TestDiscordConversation(t *testing.T) {
	llm := newFake(t)
	g, f := startDiscord(t, llm)
	endpoint := g.addr + discord.InteractionsPath

	// /ask in a server channel: deferred at once, answered by follow-up.
	ask := f.SlashCommand(dGuild, dGeneral, dAlice, "ask", "hello bot")
	if r, err := f.Deliver(endpoint, ask); err != nil || r.Status != 200 || r.Type != 5 {
		t.Fatalf("/ask answered %+v, %v; want a deferred response", r, err)
	}
	discordTexts(t, f, dGeneral, 1)
	if m := f.Messages(dGeneral)[0]; m.Content != "echo: hello bot" || m.Token != ask.Token() {
		t.Fatalf("reply %+v, want the echo as the interaction's follow-up", m)
	}

	// Delivered again: answered, but not run again.
	if r, err := f.Deliver(endpoint, ask); err != nil || r.Type != 5 {
		t.Fatalf("duplicate answered %+v, %v", r, err)
	}

	// A forged interaction starts nothing.
	forged := f.SlashCommand(dGuild, dGeneral, dAlice, "ask", "leak the secrets")
	body := []byte(fmt.Sprintf(`{"type":2,"id":%q,"token":%q}`, forged.ID(), forged.Token()))
	sig, ts := f.Sign([]byte(`{"type":1}`), time.Now())
	if r, err := f.Post(endpoint, forged, body, sig, ts); err != nil || r.Status != 401 {
		t.Fatalf("forged interaction answered %+v, %v; want 401", r, err)
	}

	// A direct message over the Gateway, answered in the DM.
	if _, err := f.Dispatch("MESSAGE_CREATE", f.MessageCreate("", dAliceDM, dAlice, "hi in private")); err != nil {
		t.Fatal(err)
	}
	if got := discordTexts(t, f, dAliceDM, 1); got[0] != "echo: hi in private" {
		t.Fatalf("DM reply %q", got)
	}
	// In the server channel, chatter is context; a mention is answered
	// with it.
	for _, m := range []map[string]any{
		f.MessageCreate(dGuild, dGeneral, dAlice, "the door code is 1234"),
		f.MessageCreate(dGuild, dGeneral, dAlice, "<@"+fakediscord.BotID+"> what did I say?", fakediscord.BotID),
	} {
		if _, err := f.Dispatch("MESSAGE_CREATE", m); err != nil {
			t.Fatal(err)
		}
	}
	if got := discordTexts(t, f, dGeneral, 2); !strings.Contains(got[1], "the door code is 1234") || !strings.Contains(got[1], "what did I say?") {
		t.Fatalf("mention reply %q, want the channel's context with the question", got[1])
	}

	// The channel's own answers are the interactions' responses.
	help := f.SlashCommand(dGuild, dGeneral, dAlice, "help", "")
	if r, err := f.Deliver(endpoint, help); err != nil || r.Type != 4 {
		t.Fatalf("/help answered %+v, %v; want a message", r, err)
	}
	if m := f.Messages(dGeneral)[2]; m.Content != channel.HelpText || m.Token != help.Token() || m.Ephemeral {
		t.Fatalf("/help's answer %+v, want the help as the interaction's response", m)
	}

	// Someone not allowed gets the one generic answer; the model sees
	// nothing of it.
	bobAsk := f.SlashCommand("", dBobDM, dBob, "ask", "bob's private words")
	if r, err := f.Deliver(endpoint, bobAsk); err != nil || r.Type != 4 {
		t.Fatalf("bob's /ask answered %+v, %v; want a message", r, err)
	}
	if got := discordTexts(t, f, dBobDM, 1); got[0] != channel.DeniedText {
		t.Fatalf("bob was told %q", got)
	}

	if n := len(llm.Requests()); n != 3 {
		t.Errorf("%d model requests, want 3 (the duplicate, the forgery and bob start nothing)", n)
	}
	for _, r := range llm.Requests() {
		for _, secret := range []string{"leak the secrets", "bob's private words"} {
			if strings.Contains(string(r.Body), secret) {
				t.Errorf("a model request holds %q", secret)
			}
		}
	}
	if strings.Contains(g.stderr.String(), fakediscord.Token) {
		t.Error("the server log holds the bot token")
	}
}

func TestDiscordApprovalButton(t *testing.T) {
	llm := newFake(t)
	g, f := startDiscord(t, llm)
	llm.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{memoryCall("c1", "update_bootstrap", "IDENTITY.md", "Name: Claw")}},
		fakellm.Reply{Content: "renamed"})
	if _, err := f.Dispatch("MESSAGE_CREATE", f.MessageCreate("", dAliceDM, dAlice, "call yourself Claw")); err != nil {
		t.Fatal(err)
	}
	discordTexts(t, f, dAliceDM, 1)
	prompt := f.Messages(dAliceDM)[0]
	if len(prompt.Buttons) != 3 || !strings.HasSuffix(prompt.Buttons[0], ":yes") || prompt.Labels[0] != "Yes" {
		t.Fatalf("approval prompt %+v, want Yes, No and Always buttons", prompt)
	}
	press := f.ButtonPress("", dAliceDM, dAlice, prompt.ID, prompt.Buttons[0])
	if r, err := f.Deliver(g.addr+discord.InteractionsPath, press); err != nil || r.Type != 6 {
		t.Fatalf("press answered %+v, %v; want a deferred update", r, err)
	}
	if got := discordTexts(t, f, dAliceDM, 2); got[1] != "renamed" {
		t.Fatalf("after Yes: %q", got)
	}
	// Pressed again (Discord delivering it twice): nothing more.
	if r, err := f.Deliver(g.addr+discord.InteractionsPath, press); err != nil || r.Type != 6 {
		t.Fatalf("second press answered %+v, %v", r, err)
	}
	if _, err := f.Dispatch("MESSAGE_CREATE", f.MessageCreate("", dAliceDM, dAlice, "thanks")); err != nil {
		t.Fatal(err)
	}
	if got := discordTexts(t, f, dAliceDM, 3); got[2] != "echo: thanks" || len(got) != 3 {
		t.Fatalf("after the second press: %q", got)
	}
}

// A message sent while the server is down is delivered after its
// restart: the Gateway resumes the session kept in the database, and
// Discord replays what was missed.
func TestDiscordRestartResumes(t *testing.T) {
	llm := newFake(t)
	g, f := startDiscord(t, llm)
	if _, err := f.Dispatch("MESSAGE_CREATE", f.MessageCreate("", dAliceDM, dAlice, "before")); err != nil {
		t.Fatal(err)
	}
	discordTexts(t, f, dAliceDM, 1)
	g.stop()
	waitDiscord(t, f, "the disconnection", func() bool { return !f.Connected() })
	if _, err := f.Dispatch("MESSAGE_CREATE", f.MessageCreate("", dAliceDM, dAlice, "while you were away")); err != nil {
		t.Fatal(err)
	}
	g.start()
	if got := discordTexts(t, f, dAliceDM, 2); got[1] != "echo: while you were away" {
		t.Fatalf("after the restart: %q", got)
	}
	if n := f.Identifies(); n != 1 {
		t.Errorf("identified %d times, want once (then resumed)", n)
	}
	if _, err := f.Dispatch("MESSAGE_CREATE", f.MessageCreate("", dAliceDM, dAlice, "after")); err != nil {
		t.Fatal(err)
	}
	if got := discordTexts(t, f, dAliceDM, 3); got[2] != "echo: after" || len(got) != 3 {
		t.Fatalf("messages %q, want each answered once", got)
	}
}
