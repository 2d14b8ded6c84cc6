package config_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

func TestSlack(t *testing.T) {
	const section = `
channels:
  slack:
    enabled: true
    bot_token: {env: SLACK_BOT_TOKEN}
    signing_secret: {env: SLACK_SIGNING_SECRET}
    allowed_users: [U0123ABCD, "T0TEAM:W0456EFGH"]
    access_codes: [{env: SLACK_CODE}]
    groups: {respond: all, context: 5}
`
	vars := map[string]string{"SLACK_BOT_TOKEN": "xoxb-1-2-secret", "SLACK_SIGNING_SECRET": "signing", "SLACK_APP_TOKEN": "xapp-1-A1-secret", "SLACK_CODE": "open-sesame"}
	load := func(t *testing.T, text string, vars map[string]string) (*config.Config, error) {
		t.Helper()
		dir, path := writeConfig(t, text)
		vars = maps.Clone(vars)
		if vars == nil {
			vars = map[string]string{}
		}
		vars["LAMBDACLAW_HOME"] = dir
		return config.Load(path, env(vars))
	}
	c, err := load(t, section, vars)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Channels.Slack
	five := 5
	want := config.Slack{Enabled: true, BotToken: config.Secret{Env: "SLACK_BOT_TOKEN"}, SigningSecret: config.Secret{Env: "SLACK_SIGNING_SECRET"},
		Mode: "events", Agent: "default", Autonomy: "supervised", AllowedUsers: []string{"U0123ABCD", "T0TEAM:W0456EFGH"},
		AccessCodes: []config.Secret{{Env: "SLACK_CODE"}}, Groups: config.Groups{Respond: "all", Context: &five}}
	if d := cmp.Diff(want, s, cmpopts.IgnoreUnexported(config.Secret{})); d != "" {
		t.Errorf("section (-want +got):\n%s", d)
	}
	if s.BotToken.Value() != "xoxb-1-2-secret" || s.SigningSecret.Value() != "signing" || s.AccessCodes[0].Value() != "open-sesame" {
		t.Error("secrets not resolved")
	}
	socket := strings.Replace(section, "signing_secret: {env: SLACK_SIGNING_SECRET}", "app_token: {env: SLACK_APP_TOKEN}\n    mode: socket", 1)
	if c, err := load(t, socket, vars); err != nil || c.Channels.Slack.AppToken.Value() != "xapp-1-A1-secret" {
		t.Errorf("socket mode: %v", err)
	}
	if _, err := load(t, strings.Replace(section, "enabled: true", "enabled: false", 1), nil); err != nil {
		t.Errorf("a disabled section is checked: %v", err)
	}

	tests := []struct {
		name, text, old, new, wantErr string
		vars                          map[string]string
	}{
		{name: "literal token", old: "{env: SLACK_BOT_TOKEN}", new: "xoxb-literal", wantErr: "secrets are not written in config files"},
		{name: "no bot token", old: "bot_token: {env: SLACK_BOT_TOKEN}", wantErr: "channels.slack.bot_token is missing"},
		{name: "a user token", vars: map[string]string{"SLACK_BOT_TOKEN": "xoxp-1-2"}, wantErr: "does not start with xoxb-"},
		{name: "events without signing secret", old: "signing_secret: {env: SLACK_SIGNING_SECRET}", wantErr: "channels.slack.signing_secret is missing"},
		{name: "empty signing secret", vars: map[string]string{"SLACK_SIGNING_SECRET": ""}, wantErr: "SLACK_SIGNING_SECRET is empty"},
		{name: "socket without app token", old: "enabled: true", new: "enabled: true\n    mode: socket", wantErr: "channels.slack.app_token is missing"},
		{name: "socket with a bot token as app token", text: socket, vars: map[string]string{"SLACK_APP_TOKEN": "xoxb-1"}, wantErr: "does not start with xapp-"},
		{name: "mode", old: "enabled: true", new: "enabled: true\n    mode: rtm", wantErr: "want events or socket"},
		{name: "user name, not id", old: "U0123ABCD", new: "alice", wantErr: "allowed_users"},
		{name: "workspace not a team id", old: "T0TEAM:", new: "x:", wantErr: "allowed_users"},
		{name: "autonomy", old: "enabled: true", new: "enabled: true\n    autonomy: reckless", wantErr: "channels.slack.autonomy"},
		{name: "api base", old: "enabled: true", new: "enabled: true\n    api_base: slack.com/api", wantErr: "api_base"},
		{name: "respond", old: "respond: all", new: "respond: sometimes", wantErr: "groups.respond"},
		{name: "context", old: "context: 5", new: "context: 500", wantErr: "groups.context"},
		{name: "short code", vars: map[string]string{"SLACK_CODE": "short"}, wantErr: "shorter than 8"},
		{name: "unknown field", old: "enabled: true", new: "enabled: true\n    token: x", wantErr: "field token not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := tt.text
			if text == "" {
				text = section
			}
			if tt.old != "" {
				text = strings.Replace(text, tt.old, tt.new, 1)
			}
			v := maps.Clone(vars)
			maps.Copy(v, tt.vars)
			_, err := load(t, text, v)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %v, want one saying %q", err, tt.wantErr)
			}
		})
	}
}
