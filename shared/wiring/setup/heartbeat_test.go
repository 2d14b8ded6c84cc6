package setup

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

func TestHeartbeats(t *testing.T) {
	for _, tt := range []struct {
		name     string
		telegram bool
		hb       config.Heartbeat
		want     schedule.HeartbeatConfig
		wantErr  string
	}{
		{name: "to a chat", telegram: true, hb: config.Heartbeat{Every: config.Duration(time.Hour), ActiveHours: "08:00-22:00", TZ: "Europe/Berlin", Deliver: "telegram:42"},
			want: schedule.HeartbeatConfig{Every: time.Hour, Heartbeat: schedule.Heartbeat{ActiveHours: "08:00-22:00", TZ: "Europe/Berlin"}, Deliver: schedule.Target{Kind: "telegram", To: "42"}}},
		{name: "recorded only", hb: config.Heartbeat{Every: config.Duration(time.Minute)}, want: schedule.HeartbeatConfig{Every: time.Minute}},
		{name: "bad hours", hb: config.Heartbeat{Every: config.Duration(time.Hour), ActiveHours: "8 to 10"}, wantErr: `agent "a": heartbeat: active hours "8 to 10"`},
		{name: "bad target", hb: config.Heartbeat{Every: config.Duration(time.Hour), Deliver: "mail:me"}, wantErr: "deliver"},
		{name: "telegram off", hb: config.Heartbeat{Every: config.Duration(time.Hour), Deliver: "telegram:42"}, wantErr: "needs the Telegram channel"},
		{name: "webhook", hb: config.Heartbeat{Every: config.Duration(time.Hour), Deliver: "webhook:https://example.com/h"}, wantErr: "telegram:<chat id> only"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hb := tt.hb
			cfg := &config.Config{Agents: map[string]config.AgentConfig{"a": {Heartbeat: &hb}, "b": {}}}
			got, err := Heartbeats(cfg, tt.telegram)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("heartbeats = %v, %v; want an error with %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]schedule.HeartbeatConfig{"a": tt.want}, got); diff != "" {
				t.Errorf("Heartbeats (-want +got):\n%s", diff)
			}
		})
	}
}
