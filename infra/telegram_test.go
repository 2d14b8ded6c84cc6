package main

import (
	"testing"
)

// TestTelegramEnvironment: the telegram and step functions get the
// environment shared/cloud's Telegram channel reads.
func TestTelegramEnvironment(t *testing.T) {
	s := synth(map[string]string{ctxTelegram: TelegramOn, ctxTelegramUsers: "111,222", ctxTelegramAPI: "https://tg.example.com"})
	if s.err != nil {
		t.Fatal(s.err)
	}
	envs := map[string]map[string]any{}
	for _, r := range s.json["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] != "AWS::Lambda::Function" {
			continue
		}
		props := r["Properties"].(map[string]any)
		env, _ := props["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		desc, _ := props["Description"].(string)
		envs[desc] = vars
	}
	tg := envs["lambdaclaw telegram: Telegram webhook"]
	if tg == nil {
		t.Fatal("no telegram function")
	}
	for _, k := range []string{"TELEGRAM_BOT_TOKEN_SECRET_ARN", "TELEGRAM_WEBHOOK_SECRET_ARN", "TABLE_NAME", "STATE_MACHINE_ARN"} {
		if tg[k] == nil {
			t.Errorf("telegram function lacks %s", k)
		}
	}
	if tg["TELEGRAM_ALLOWED_USERS"] != "111,222" || tg["TELEGRAM_API_BASE"] != "https://tg.example.com" {
		t.Errorf("telegram function env: allowed %v, api base %v", tg["TELEGRAM_ALLOWED_USERS"], tg["TELEGRAM_API_BASE"])
	}
	step := envs["lambdaclaw step: agent loop steps for Step Functions"]
	if step == nil || step["TELEGRAM_BOT_TOKEN_SECRET_ARN"] == nil || step["TELEGRAM_API_BASE"] != "https://tg.example.com" {
		t.Errorf("step function env lacks the Telegram token or API base: %v", step)
	}
}
