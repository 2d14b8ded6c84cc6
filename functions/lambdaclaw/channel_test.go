package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

const (
	stackCh        = "chans" // with discord=on and whatsapp=on
	discordSecret  = "chans/channels/discord"
	whatsappSecret = "chans/channels/whatsapp"
	discordURL     = "https://abc123.execute-api.us-east-1.amazonaws.com/prod/channels/discord/interactions"
	whatsappURL    = "https://abc123.execute-api.us-east-1.amazonaws.com/prod/channels/whatsapp/webhook"
	discordToken   = "MTA5ODc2NTQzMjEwOTg3NjU0.GfAkE0.a-bot-token"
	channelsConfig = `channels:
  discord:
    enabled: true
    bot_token: {env: DC_TOKEN}
    application_id: "1098765432109876543"
    public_key: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
    gateway: false
    allowed_users: ["1200000000000000101"]
    access_codes: [{file: secrets/discord-code}]
`
)

// channelStack adds the stack with the channels to f's fake
// CloudFormation, their secrets to a fake Secrets Manager (whatsapp's
// without a value, as the stack creates it) and the config file to the
// local home.
func channelStack(t *testing.T, f *stackFixture, cfg string) *cloudtest.Secrets {
	t.Helper()
	outputs := map[string]string{outTable: f.env.TableName, outAgents: "default",
		"DiscordSecretName": discordSecret, "DiscordInteractionsUrl": discordURL,
		"WhatsAppSecretName": whatsappSecret, "WhatsAppWebhookUrl": whatsappURL}
	f.cfn.Put(stackCh, cloudtest.Stack{Outputs: outputs})
	sm := cloudtest.NewSecrets(t, map[string]string{discordSecret: "", whatsappSecret: ""})
	t.Setenv(envSecretsEndpoint, sm.URL)
	t.Setenv("DC_TOKEN", discordToken)
	if err := os.WriteFile(filepath.Join(f.home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := config.WriteSecretFile(f.home, "secrets/discord-code", "code-from-a-file"); err != nil {
		t.Fatal(err)
	}
	return sm
}

func TestChannelSetSecret(t *testing.T) {
	f := newStackFixture(t)
	sm := channelStack(t, f, channelsConfig)

	out, _ := cli(t, "channel", "set-secret", "discord", "--stack", stackCh)
	if !strings.Contains(out, "stored in secret "+discordSecret) || !strings.Contains(out, "give the platform: "+discordURL) {
		t.Errorf("set-secret printed %q", out)
	}
	if strings.Contains(out, discordToken) || strings.Contains(out, "code-from-a-file") {
		t.Error("set-secret printed a secret")
	}
	// The functions read the secret with config's own code: the section
	// as in the file, its references' values with it.
	chs, err := config.ParseChannelSecret("discord", []byte(sm.Value(discordSecret)))
	if err != nil {
		t.Fatalf("the stored secret: %v", err)
	}
	dc := chs.Discord
	got := []string{dc.BotToken.Value(), dc.ApplicationID, strings.Join(dc.AllowedUsers, ","), strings.Join(config.SecretValues(dc.AccessCodes), ","), dc.Autonomy}
	want := []string{discordToken, "1098765432109876543", "1200000000000000101", "code-from-a-file", "supervised"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the secret's section (-want +got):\n%s", diff)
	}

	// An invalid section is refused with config's error; the secret keeps
	// its value.
	before := sm.Value(discordSecret)
	channelStack(t, f, strings.Replace(channelsConfig, `"1098765432109876543"`, `"not-an-id"`, 1))
	t.Setenv(envSecretsEndpoint, sm.URL)
	checkRun(t, []string{"channel", "set-secret", "discord", "--stack", stackCh}, runWant{err: "channels.discord.application_id \"not-an-id\""})
	t.Setenv("DC_TOKEN", "")
	channelStack(t, f, channelsConfig)
	t.Setenv(envSecretsEndpoint, sm.URL)
	t.Setenv("DC_TOKEN", "")
	checkRun(t, []string{"channel", "set-secret", "discord", "--stack", stackCh}, runWant{err: "DC_TOKEN is empty"})
	t.Setenv("DC_TOKEN", discordToken)
	channelStack(t, f, strings.Replace(channelsConfig, "    public_key: 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n    gateway: false\n", "", 1))
	t.Setenv(envSecretsEndpoint, sm.URL)
	checkRun(t, []string{"channel", "set-secret", "discord", "--stack", stackCh}, runWant{err: "channels.discord needs public_key on AWS"})
	channelStack(t, f, channelsConfig)
	t.Setenv(envSecretsEndpoint, sm.URL)
	if sm.Value(discordSecret) != before {
		t.Error("a refused section changed the secret")
	}
	// A channel the stack does not serve, and one there is not.
	t.Setenv("DC_TOKEN", discordToken)
	checkRun(t, []string{"channel", "set-secret", "discord", "--stack", stackTable}, runWant{err: "deploy it with CDK_FLAGS='-c discord=on'"})
	checkRun(t, []string{"channel", "set-secret", "irc", "--stack", stackCh}, runWant{err: `no channel "irc"`})
	checkRun(t, []string{"channel", "set-secret", "discord"}, runWant{err: "needs --stack"})
}

func TestChannelStatus(t *testing.T) {
	f := newStackFixture(t)
	sm := channelStack(t, f, channelsConfig)
	cli(t, "channel", "set-secret", "discord", "--stack", stackCh)
	if err := f.env.Store.Channel("whatsapp").AddOutbox(t.Context(), []store.OutboxMessage{{ID: "r1-0", Channel: "whatsapp", To: "447700900001", Text: "hi", CreatedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	out, _ := cli(t, "channel", "status", "--stack", stackCh)
	for _, want := range []string{
		"slack: not deployed",
		"discord: secret " + discordSecret + " set ",
		"  " + discordURL,
		"whatsapp: secret " + whatsappSecret + " has no value: its webhook answers 503 until `lambdaclaw channel set-secret whatsapp --stack chans`; outbox 1 pending, 0 failed, 0 sent",
		"  " + whatsappURL,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status --stack printed\n%s\nwant a line with %q", out, want)
		}
	}
	if sm.Calls(discordSecret) != 0 {
		t.Error("status read a secret's value")
	}

	// Locally: the configured channels, their webhooks and outboxes.
	db, err := sqlite.Open(filepath.Join(f.home, "lambdaclaw.db"))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	out, _ = cli(t, "channel", "status")
	for _, want := range []string{"discord: enabled, webhook /channels/discord/interactions; outbox 0 pending, 0 failed, 0 sent", "whatsapp: not configured", "slack: not configured"} {
		if !strings.Contains(out, want) {
			t.Errorf("status printed\n%s\nwant a line with %q", out, want)
		}
	}
}
