package config_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

func TestDiscordConfig(t *testing.T) {
	const key = "3b2a0f1e3b2a0f1e3b2a0f1e3b2a0f1e3b2a0f1e3b2a0f1e3b2a0f1e3b2a0f1e"
	base := `channels:
  discord:
    enabled: true
    bot_token: {env: DISCORD_BOT_TOKEN}
    application_id: "1098765432109876543"
`
	five := 5
	tests := []struct {
		name    string
		yaml    string
		env     map[string]string
		want    config.Discord
		wantErr string
	}{
		{name: "defaults", yaml: base + "    public_key: " + key + "\n", env: map[string]string{"DISCORD_BOT_TOKEN": "tok", "DISCORD_API_BASE": "http://fake/api/v10"},
			want: config.Discord{Enabled: true, BotToken: config.Secret{Env: "DISCORD_BOT_TOKEN"}, ApplicationID: "1098765432109876543", PublicKey: key,
				Agent: "default", Autonomy: "supervised", APIBase: "http://fake/api/v10"}},
		{name: "everything", yaml: base + "    gateway: false\n    public_key: " + key + "\n    agent: helper\n    autonomy: full\n    allowed_users: [\"80351110224678912\"]\n    access_codes: [{env: CODE}]\n    groups: {respond: all, context: 5}\n",
			env: map[string]string{"DISCORD_BOT_TOKEN": "tok", "CODE": "12345678"},
			want: config.Discord{Enabled: true, BotToken: config.Secret{Env: "DISCORD_BOT_TOKEN"}, ApplicationID: "1098765432109876543", PublicKey: key, Gateway: new(bool),
				Agent: "helper", Autonomy: "full", AllowedUsers: []string{"80351110224678912"}, AccessCodes: []config.Secret{{Env: "CODE"}}, Groups: config.Groups{Respond: "all", Context: &five}}},
		{name: "off needs nothing", yaml: "channels:\n  discord:\n    enabled: false\n    application_id: x\n"},
		{name: "a literal token", yaml: strings.Replace(base, "{env: DISCORD_BOT_TOKEN}", "abc.def", 1), wantErr: "secrets are not written in config files"},
		{name: "no token", yaml: strings.Replace(base, "    bot_token: {env: DISCORD_BOT_TOKEN}\n", "", 1), wantErr: "has no bot_token"},
		{name: "token unset", yaml: base, wantErr: "DISCORD_BOT_TOKEN is empty"},
		{name: "bad application id", yaml: strings.Replace(base, "1098765432109876543", "my-app", 1), env: map[string]string{"DISCORD_BOT_TOKEN": "tok"}, wantErr: "is not an application id"},
		{name: "bad public key", yaml: base + "    public_key: abc\n", env: map[string]string{"DISCORD_BOT_TOKEN": "tok"}, wantErr: "64 hex digits"},
		{name: "no way in", yaml: base + "    gateway: false\n", env: map[string]string{"DISCORD_BOT_TOKEN": "tok"}, wantErr: "needs public_key"},
		{name: "bad user", yaml: base + "    allowed_users: [alice]\n", env: map[string]string{"DISCORD_BOT_TOKEN": "tok"}, wantErr: `"alice" is not a Discord user id`},
		{name: "short code", yaml: base + "    access_codes: [{env: CODE}]\n", env: map[string]string{"DISCORD_BOT_TOKEN": "tok", "CODE": "123"}, wantErr: "shorter than 8"},
		{name: "bad respond", yaml: base + "    groups: {respond: sometimes}\n", env: map[string]string{"DISCORD_BOT_TOKEN": "tok"}, wantErr: "want mention or all"},
		{name: "bad autonomy", yaml: base + "    autonomy: reckless\n", env: map[string]string{"DISCORD_BOT_TOKEN": "tok"}, wantErr: "unknown autonomy level"},
		{name: "bad context", yaml: base + "    groups: {context: 1000}\n", env: map[string]string{"DISCORD_BOT_TOKEN": "tok"}, wantErr: "want 0 to 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, path := writeConfig(t, tt.yaml)
			e := map[string]string{"LAMBDACLAW_HOME": dir}
			for k, v := range tt.env {
				e[k] = v
			}
			c, err := config.Load(path, env(e))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Load = %v, want an error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want.Enabled {
				if diff := cmp.Diff(tt.want, c.Channels.Discord, cmpopts.IgnoreUnexported(config.Secret{})); diff != "" {
					t.Errorf("discord (-want +got):\n%s", diff)
				}
				if got := c.Channels.Discord.BotToken.Value(); got != "tok" {
					t.Errorf("token %q, want the variable's value", got)
				}
			}
		})
	}
}
