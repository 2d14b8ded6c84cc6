package main

import (
	"context"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
	"github.com/lambdaclaw/lambdaclaw/tests/fakeslack"
)

func TestDoctorSlack(t *testing.T) {
	fake := fakeslack.New()
	defer fake.Close()
	tests := []struct {
		name, mode, bot, app string
		want                 string // verdict: detail
	}{
		{"events", "events", fakeslack.BotToken, "", "ok: bot claw (" + fakeslack.BotUserID + ") of workspace Fake Team (" + fakeslack.TeamID + "), mode events"},
		{"socket", "socket", fakeslack.BotToken, fakeslack.AppToken, "ok: mode socket, app token accepted"},
		{"bot token refused", "events", "xoxb-wrong-0123456789", "", "FAIL: Slack refused the bot token in SLACK_BOT_TOKEN (invalid_auth)"},
		{"app token refused", "socket", fakeslack.BotToken, "xapp-1-wrong-0123456789", "FAIL: Slack refused the app token in SLACK_APP_TOKEN (invalid_auth)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := testDoctor(t, t.TempDir())
			d.cfg.Channels.Slack = config.Slack{Enabled: true, Mode: tt.mode, APIBase: fake.APIBase(),
				BotToken: config.ResolvedSecret("SLACK_BOT_TOKEN", tt.bot), AppToken: config.ResolvedSecret("SLACK_APP_TOKEN", tt.app)}
			checks, _ := d.checks()
			var got []finding
			for _, f := range d.run(context.Background(), checks) {
				if f.Check == "slack" {
					got = append(got, f)
				}
			}
			if len(got) != 1 {
				t.Fatalf("slack findings = %+v, want 1", got)
			}
			verdict, detail, _ := strings.Cut(tt.want, ": ")
			if v := verdictOf(got[0], detail); v != verdict {
				t.Errorf("finding %+v: got %s, want %s", got[0], v, verdict)
			}
			if strings.Contains(got[0].Detail+got[0].Fix, tt.bot) || (tt.app != "" && strings.Contains(got[0].Detail+got[0].Fix, tt.app)) {
				t.Errorf("a token is in %+v", got[0])
			}
		})
	}
}
