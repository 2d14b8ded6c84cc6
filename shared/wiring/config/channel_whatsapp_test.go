package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestWhatsApp(t *testing.T) {
	const section = `
channels:
  whatsapp:
    enabled: true
    phone_number_id: "106540352242922"
    access_token: {env: WHATSAPP_ACCESS_TOKEN}
    app_secret: {env: WHATSAPP_APP_SECRET}
    verify_token: {env: WHATSAPP_VERIFY_TOKEN}
    template: {name: reply_waiting, language: en_US}
    allowed_users: ["4915112345678"]
    access_codes: [{env: WHATSAPP_CODE}]
    groups: {respond: all, context: 5}
`
	env := map[string]string{"WHATSAPP_ACCESS_TOKEN": "EAAtoken", "WHATSAPP_APP_SECRET": "appsecret", "WHATSAPP_VERIFY_TOKEN": "verify", "WHATSAPP_CODE": "open-sesame"}
	load := func(t *testing.T, text string, env map[string]string) (*Config, error) {
		t.Helper()
		home := t.TempDir()
		p := filepath.Join(home, "config.yaml")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return Load(p, func(k string) string {
			if k == "LAMBDACLAW_HOME" {
				return home
			}
			return env[k]
		})
	}
	c, err := load(t, section, env)
	if err != nil {
		t.Fatal(err)
	}
	w := c.Channels.WhatsApp
	five := 5
	want := WhatsApp{Enabled: true, PhoneNumberID: "106540352242922", AccessToken: Secret{Env: "WHATSAPP_ACCESS_TOKEN"},
		AppSecret: Secret{Env: "WHATSAPP_APP_SECRET"}, VerifyToken: Secret{Env: "WHATSAPP_VERIFY_TOKEN"},
		Template: WhatsAppTemplate{Name: "reply_waiting", Language: "en_US"}, Agent: "default", Autonomy: "supervised",
		AllowedUsers: []string{"4915112345678"}, AccessCodes: []Secret{{Env: "WHATSAPP_CODE"}},
		Groups: Groups{Respond: "all", Context: &five}}
	if d := cmp.Diff(want, w, cmpopts.IgnoreUnexported(Secret{})); d != "" {
		t.Errorf("section (-want +got):\n%s", d)
	}
	if w.AccessToken.Value() != "EAAtoken" || w.AppSecret.Value() != "appsecret" || w.VerifyToken.Value() != "verify" || w.AccessCodes[0].Value() != "open-sesame" {
		t.Error("secrets not resolved")
	}
	if _, err := load(t, strings.Replace(section, "enabled: true", "enabled: false", 1), nil); err != nil {
		t.Errorf("a disabled section is checked: %v", err)
	}

	tests := []struct{ name, old, new, wantErr string }{
		{"literal token", "{env: WHATSAPP_ACCESS_TOKEN}", "EAAliteral", "secrets are not written in config files"},
		{"no app secret", "app_secret: {env: WHATSAPP_APP_SECRET}", "", "channels.whatsapp.app_secret is missing"},
		{"empty verify token", "{env: WHATSAPP_VERIFY_TOKEN}", "{env: UNSET_VARIABLE}", "channels.whatsapp.verify_token: UNSET_VARIABLE is empty"},
		{"phone number, not its id", `"106540352242922"`, `"+1 555 0783881"`, "phone_number_id"},
		{"template without language", "{name: reply_waiting, language: en_US}", "{name: reply_waiting}", "channels.whatsapp.template"},
		{"template name", "name: reply_waiting", "name: Reply Waiting", "channels.whatsapp.template"},
		{"allowed user with +", `["4915112345678"]`, `["+4915112345678"]`, "allowed_users"},
		{"autonomy", "enabled: true", "enabled: true\n    autonomy: reckless", "channels.whatsapp.autonomy"},
		{"api base", "enabled: true", "enabled: true\n    api_base: graph.facebook.com", "api_base"},
		{"short code", "", "", "shorter than 8"},
		{"unknown field", "enabled: true", "enabled: true\n    phone: 1", "field phone not found"},
		{"groups respond", "respond: all", "respond: always", "channels.whatsapp.groups.respond"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := env
			if tt.name == "short code" {
				e = map[string]string{}
				for k, v := range env {
					e[k] = v
				}
				e["WHATSAPP_CODE"] = "short"
			}
			_, err := load(t, strings.Replace(section, tt.old, tt.new, 1), e)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}
