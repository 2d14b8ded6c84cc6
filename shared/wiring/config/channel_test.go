package config

import (
	"strings"
	"testing"
)

func TestParseChannel(t *testing.T) {
	env := map[string]string{"WA_TOKEN": "token", "WA_SECRET": "app-secret", "WA_VERIFY": "verify"}
	const whatsapp = "enabled: true\nphone_number_id: \"106540352242922\"\naccess_token: {env: WA_TOKEN}\napp_secret: {env: WA_SECRET}\nverify_token: {env: WA_VERIFY}\n"
	for _, tc := range []struct {
		name, channel, yaml, err string
	}{
		{"valid", "whatsapp", whatsapp, ""},
		{"a file reference", "whatsapp", strings.Replace(whatsapp, "{env: WA_TOKEN}", "{file: secrets/wa}", 1), "channels.whatsapp: line 3: a {file: …} reference cannot be read here"},
		{"a variable not given", "whatsapp", strings.Replace(whatsapp, "WA_TOKEN", "OTHER", 1), "channels.whatsapp.access_token: OTHER is empty"},
		{"not enabled", "whatsapp", strings.Replace(whatsapp, "enabled: true", "enabled: false", 1), "channels.whatsapp is not enabled"},
		{"an unknown field", "whatsapp", whatsapp + "colour: blue\n", "field colour not found"},
		{"a literal secret", "whatsapp", strings.Replace(whatsapp, "{env: WA_TOKEN}", "token", 1), "secrets are not written in config files"},
		{"a bad value", "whatsapp", whatsapp + "autonomy: reckless\n", "channels.whatsapp.autonomy"},
		{"no such channel", "irc", whatsapp, `no channel "irc"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chs, err := ParseChannel(tc.channel, []byte(tc.yaml), func(k string) string { return env[k] })
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("ParseChannel: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("ParseChannel = %v, want an error containing %q", err, tc.err)
			case tc.err == "":
				w := chs.WhatsApp
				if w.AccessToken.Value() != "token" || w.AppSecret.Value() != "app-secret" || w.Agent != DefaultAgent || !chs.Enabled("whatsapp") || chs.Enabled("discord") {
					t.Errorf("section = %+v", w)
				}
			}
		})
	}
}
