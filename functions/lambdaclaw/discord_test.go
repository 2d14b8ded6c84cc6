package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/discord"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
	"github.com/lambdaclaw/lambdaclaw/tests/fakediscord"
)

func TestDiscordRegister(t *testing.T) {
	f := fakediscord.New()
	defer f.Close()
	home := t.TempDir()
	t.Setenv("LAMBDACLAW_HOME", home)
	t.Setenv("LAMBDACLAW_CONFIG", "")
	t.Setenv("DISCORD_BOT_TOKEN", fakediscord.Token)
	t.Setenv("DISCORD_API_BASE", f.APIBase())
	cfg := "channels:\n  discord:\n    enabled: true\n    bot_token: {env: DISCORD_BOT_TOKEN}\n    application_id: \"" + fakediscord.AppID + "\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _ := cli(t, "discord", "register")
	want := "registered /ask, /reset, /stop, /help (new commands can take a minute to show in Discord)\n" +
		"invite the bot: https://discord.com/oauth2/authorize?client_id=" + fakediscord.AppID + "&scope=bot+applications.commands&permissions=274877975552\n"
	if out != want {
		t.Errorf("discord register printed %q, want %q", out, want)
	}
	if !strings.Contains(string(f.Commands()), `"name":"ask"`) {
		t.Errorf("registered %s", f.Commands())
	}
}

func TestDoctorDiscord(t *testing.T) {
	f := fakediscord.New()
	defer f.Close()
	const otherKey = "3b2a0f1e3b2a0f1e3b2a0f1e3b2a0f1e3b2a0f1e3b2a0f1e3b2a0f1e3b2a0f1e"
	tests := []struct {
		name       string
		token      string
		app, key   string
		register   bool
		want       string // verdict: detail
		wantFixHas string
	}{
		{"not registered", fakediscord.Token, fakediscord.AppID, f.PublicKeyHex(), false, "warn: /ask is not registered", "lambdaclaw discord register"},
		{"all good", fakediscord.Token, fakediscord.AppID, f.PublicKeyHex(), true, "ok: application Claw (bot @claw); gateway on, interactions at /channels/discord/interactions; /ask registered", ""},
		{"gateway only", fakediscord.Token, fakediscord.AppID, "", true, "ok: gateway on; /ask", ""},
		{"another application", fakediscord.Token, "1000000000000000001", f.PublicKeyHex(), true, "FAIL: the bot token is application " + fakediscord.AppID + "'s", "application_id to " + fakediscord.AppID},
		{"wrong public key", fakediscord.Token, fakediscord.AppID, otherKey, true, "FAIL: not the application's public key", f.PublicKeyHex()},
		{"token refused", "wrong.token-0123456789abcdef", fakediscord.AppID, f.PublicKeyHex(), true, "FAIL: Discord refused the bot token in DISCORD_BOT_TOKEN", "Developer Portal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.register {
				if _, err := discord.NewClient(f.APIBase(), fakediscord.Token, fakediscord.AppID).RegisterCommands(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			d := testDoctor(t, t.TempDir())
			d.cfg.Channels.Discord = config.Discord{Enabled: true, BotToken: config.ResolvedSecret("DISCORD_BOT_TOKEN", tt.token),
				ApplicationID: tt.app, PublicKey: tt.key, APIBase: f.APIBase()}
			checks, _ := d.checks()
			var got []finding
			for _, fd := range d.run(context.Background(), checks) {
				if fd.Check == "discord" {
					got = append(got, fd)
				}
			}
			if len(got) != 1 {
				t.Fatalf("discord findings = %+v, want 1", got)
			}
			verdict, detail, _ := strings.Cut(tt.want, ": ")
			if v := verdictOf(got[0], detail); v != verdict {
				t.Errorf("finding %+v: got %s, want %s", got[0], v, verdict)
			}
			if !strings.Contains(got[0].Fix, tt.wantFixHas) {
				t.Errorf("fix %q without %q", got[0].Fix, tt.wantFixHas)
			}
			if strings.Contains(got[0].Detail+got[0].Fix, tt.token) {
				t.Errorf("the token is in %+v", got[0])
			}
		})
	}
}
