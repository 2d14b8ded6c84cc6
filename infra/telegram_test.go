package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestTelegramEnvironment: the telegram and step functions get the
// environment shared/wiring/cloud's Telegram channel reads.
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
	step := envs["lambdaclaw step: agent runs, inline and as Step Functions tasks"]
	if step == nil || step["TELEGRAM_BOT_TOKEN_SECRET_ARN"] == nil || step["TELEGRAM_API_BASE"] != "https://tg.example.com" {
		t.Errorf("step function env lacks the Telegram token or API base: %v", step)
	}
}

// TestTelegramWebhookRegistration: with telegram=on the deployment
// registers the webhook through a custom resource served by the telegram
// function, with the stage's webhook URL and the kinds of update the
// function registers (a change of them registers again); the bot
// token secret is imported by name (the operator creates it), the webhook
// secret is generated in Telegram's alphabet, and the function reads both.
func TestTelegramWebhookRegistration(t *testing.T) {
	if n := len(stack(t, variantDefault).resources("Custom::TelegramWebhook")); n != 0 {
		t.Errorf("default stack: %d webhook registrations", n)
	}
	s := stack(t, variantOpenSearch)
	crs := s.resources("Custom::TelegramWebhook")
	if len(crs) != 1 {
		t.Fatalf("%d webhook registrations, want 1", len(crs))
	}
	fn := s.functionID(t, "telegram")
	for id, r := range crs {
		p := props(r)
		if got := render(p["ServiceToken"]); got != "${"+fn+".Arn}" {
			t.Errorf("%s: ServiceToken %s, want the telegram function", id, got)
		}
		if got := render(p["Url"]); !regexp.MustCompile(`^https://\$\{Api[0-9A-F]+\}\.execute-api\.\$\{AWS::Region\}\.\$\{AWS::URLSuffix\}/\$\{ApiDeploymentStageprod[0-9A-F]+\}/telegram/webhook$`).MatchString(got) {
			t.Errorf("%s: Url = %s", id, got)
		}
		if got := render(p["Updates"]); got != "message,callback_query" {
			t.Errorf("%s: Updates = %s", id, got)
		}
		for k := range p {
			if k != "ServiceToken" && k != "Url" && k != "ServiceTimeout" && k != "Updates" {
				t.Errorf("%s: unexpected property %s (no secret belongs in the template)", id, k)
			}
		}
	}

	// The token secret is imported, not created; the webhook secret is
	// generated from letters and digits only.
	secrets := s.resources("AWS::SecretsManager::Secret")
	var webhook map[string]any
	for id, r := range secrets {
		if strings.HasPrefix(id, "TelegramBotToken") {
			t.Errorf("the stack creates the bot token secret %s", id)
		}
		if strings.HasPrefix(id, "TelegramWebhookSecret") {
			webhook = props(r)
		}
	}
	if webhook == nil {
		t.Fatal("no webhook secret")
	}
	gen, _ := webhook["GenerateSecretString"].(map[string]any)
	if gen["ExcludePunctuation"] != true || gen["IncludeSpace"] != false {
		t.Errorf("webhook secret generator %v: want letters and digits only", gen)
	}
	if n, _ := gen["PasswordLength"].(float64); n < 1 || n > 256 {
		t.Errorf("webhook secret length %v, want 1-256", gen["PasswordLength"])
	}

	// The telegram function reads both; the token by the configured name.
	reads := s.actionsOf(s.roleOf(t, fn))["secretsmanager:GetSecretValue"]
	var token, secret bool
	for _, r := range reads {
		token = token || strings.HasSuffix(r, ":secret:"+DefaultTelegramTokenSecret+"-??????")
		secret = secret || strings.HasPrefix(r, "${TelegramWebhookSecret")
	}
	if !token || !secret {
		t.Errorf("telegram function reads %v; want the imported token and the webhook secret", reads)
	}
	var env map[string]any
	for _, r := range s.resources("AWS::Lambda::Function") {
		if d, _ := props(r)["Description"].(string); strings.HasPrefix(d, "lambdaclaw telegram:") {
			env = props(r)["Environment"].(map[string]any)["Variables"].(map[string]any)
		}
	}
	if env["TELEGRAM_BOT_TOKEN_SECRET_ARN"] != DefaultTelegramTokenSecret {
		t.Errorf("TELEGRAM_BOT_TOKEN_SECRET_ARN = %v, want the secret's name", env["TELEGRAM_BOT_TOKEN_SECRET_ARN"])
	}
}

// TestTelegramTokenSecretName: -c telegram_token_secret names another
// secret, in the grant and the environment.
func TestTelegramTokenSecretName(t *testing.T) {
	s := synth(map[string]string{ctxTelegram: TelegramOn, ctxTelegramToken: "team/bots/claw-123456"})
	if s.err != nil {
		t.Fatal(s.err)
	}
	reads := s.actionsOf(s.roleOf(t, s.functionID(t, "telegram")))["secretsmanager:GetSecretValue"]
	if !slices.ContainsFunc(reads, func(r string) bool { return strings.HasSuffix(r, ":secret:team/bots/claw-123456-??????") }) {
		t.Errorf("telegram function reads %v", reads)
	}
}
