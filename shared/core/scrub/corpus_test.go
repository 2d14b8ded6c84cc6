package scrub

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
)

// The corpus: credential formats developers use today, each in several
// contexts, and ordinary text that must come out unchanged. Every value is
// generated here with the shape of the real thing; none is a real credential.

const (
	digits     = "0123456789"
	lowerHex   = "0123456789abcdef"
	lowerAlnum = "abcdefghijklmnopqrstuvwxyz0123456789"
	upperAlnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	alnum      = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b64        = alnum + "+/"
	b64url     = alnum + "-_"
)

// fake generates deterministic random strings.
type fake struct{ r *rand.Rand }

func newFake() *fake { return &fake{rand.New(rand.NewPCG(2026, 10))} }

// s returns n bytes drawn from alphabet, with at least one digit, one lower
// and one upper case letter where the alphabet has them, as generated keys
// nearly always do.
func (f *fake) s(alphabet string, n int) string {
	for {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[f.r.IntN(len(alphabet))]
		}
		l, u, d := classes(string(b))
		hl, hu, hd := classes(alphabet)
		if n < 6 || (l || !hl) && (u || !hu) && (d || !hd) {
			return string(b)
		}
	}
}

func (f *fake) bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(f.r.IntN(256))
	}
	return b
}

// pemBody returns lines of base64 as in a PEM block, starting with head.
func (f *fake) pemBody(head string, lines int) []string {
	var out []string
	body := head + base64.StdEncoding.EncodeToString(f.bytes(48*lines))
	for len(body) > 64 {
		out = append(out, body[:64])
		body = body[64:]
	}
	return append(out, body)
}

// place puts a secret in a text; env is the name of the variable that
// would hold it.
type place struct {
	name string
	text func(env, secret string) string
}

var (
	bare    = place{"bare", func(_, s string) string { return s }}
	envLine = place{"env", func(e, s string) string { return e + "=" + s }}
	jsonDoc = place{"json", func(_, s string) string {
		return `{"id": 7, "value": "` + s + `", "enabled": true}`
	}}
	shell = place{"shell", func(_, s string) string {
		return `echo '` + s + `' | gh auth login --with-token && gh repo list`
	}}
	inURL = place{"url", func(_, s string) string {
		return "https://api.example.com/v1/items?cred=" + url.QueryEscape(s) + "&page=2"
	}}
	logLine = place{"log", func(_, s string) string {
		return "2026-03-04T05:06:07.123Z ERROR upstream rejected " + s + " (status=401, request_id=req_8f3a2c)"
	}}
	// everywhere are the contexts of a credential recognisable on its own.
	everywhere = []place{bare, envLine, jsonDoc, shell, inURL, logLine}
)

// credential is one format: the secret, which must vanish from every text,
// and the texts that hold it.
type credential struct {
	name   string
	secret string
	texts  []string
}

// in returns the credential of a format recognisable on its own, in every
// context.
func in(name, env, secret string) credential {
	return inContexts(name, env, secret, everywhere...)
}

func inContexts(name, env, secret string, cs ...place) credential {
	c := credential{name: name, secret: secret}
	for _, ctx := range cs {
		c.texts = append(c.texts, ctx.text(env, secret))
	}
	return c
}

// with returns the credential with more texts.
func (c credential) with(texts ...string) credential {
	c.texts = append(c.texts, texts...)
	return c
}

// credentials returns the positive corpus.
func credentials() []credential {
	f := newFake()
	var cs []credential
	add := func(c ...credential) { cs = append(cs, c...) }

	// AI providers.
	openaiProject := "sk-proj-" + f.s(b64url, 74) + "T3BlbkFJ" + f.s(b64url, 74)
	add(in("openai project key", "OPENAI_API_KEY", openaiProject).with(
		`client = OpenAI(api_key="`+openaiProject+`")`,
		`curl https://api.openai.com/v1/models -H "Authorization: Bearer `+openaiProject+`"`))
	add(in("openai legacy key", "OPENAI_API_KEY", "sk-"+f.s(alnum, 20)+"T3BlbkFJ"+f.s(alnum, 20)))
	add(in("openai service account key", "OPENAI_API_KEY", "sk-svcacct-"+f.s(b64url, 58)+"T3BlbkFJ"+f.s(b64url, 58)))
	anthropic := "sk-ant-api03-" + f.s(b64url, 93) + "AA"
	add(in("anthropic api key", "ANTHROPIC_API_KEY", anthropic).with(
		`curl https://api.anthropic.com/v1/messages -H "x-api-key: ` + anthropic + `" -H "anthropic-version: 2023-06-01"`))
	add(in("anthropic admin key", "ANTHROPIC_ADMIN_KEY", "sk-ant-admin01-"+f.s(b64url, 93)+"AA"))
	add(in("openrouter key", "OPENROUTER_API_KEY", "sk-or-v1-"+f.s(lowerHex, 64)))
	add(in("deepseek key", "DEEPSEEK_API_KEY", "sk-"+f.s(lowerHex, 32)))
	add(in("groq key", "GROQ_API_KEY", "gsk_"+f.s(alnum, 52)))
	add(in("xai key", "XAI_API_KEY", "xai-"+f.s(alnum, 80)))
	add(in("perplexity key", "PERPLEXITY_API_KEY", "pplx-"+f.s(alnum, 48)))
	add(in("hugging face token", "HF_TOKEN", "hf_"+f.s(alnum, 34)))
	add(in("replicate token", "REPLICATE_API_TOKEN", "r8_"+f.s(alnum, 37)))
	add(in("langsmith key", "LANGSMITH_API_KEY", "lsv2_pt_"+f.s(lowerHex, 32)+"_"+f.s(lowerHex, 10)))
	add(in("pinecone key", "PINECONE_API_KEY", "pcsk_"+f.s(alnum, 6)+"_"+f.s(alnum, 63)))
	add(in("elevenlabs key", "ELEVENLABS_API_KEY", "sk_"+f.s(lowerHex, 48)))
	add(in("amazon bedrock api key", "AWS_BEARER_TOKEN_BEDROCK", "ABSKQmVkcm9ja0FQSUtleS1"+f.s(alnum, 108)+"="))

	// Code hosting and registries.
	ghp := "ghp_" + f.s(alnum, 36)
	add(in("github classic token", "GITHUB_TOKEN", ghp).with(
		"git clone https://"+ghp+"@github.com/acme/app.git",
		"git remote set-url origin https://x-access-token:"+ghp+"@github.com/acme/app.git"))
	add(in("github fine-grained token", "GH_TOKEN", "github_pat_"+f.s(alnum, 22)+"_"+f.s(alnum, 59)))
	add(in("github oauth token", "GITHUB_OAUTH_TOKEN", "gho_"+f.s(alnum, 36)))
	add(in("github app installation token", "GITHUB_APP_TOKEN", "ghs_"+f.s(alnum, 36)))
	add(in("github refresh token", "GITHUB_REFRESH_TOKEN", "ghr_"+f.s(alnum, 36)))
	glpat := "glpat-" + f.s(b64url, 20)
	add(in("gitlab personal token", "GITLAB_TOKEN", glpat).with(
		`curl --header "PRIVATE-TOKEN: ` + glpat + `" https://gitlab.example.com/api/v4/projects`))
	add(in("gitlab deploy token", "CI_DEPLOY_PASSWORD", "gldt-"+f.s(b64url, 20)))
	add(in("gitlab runner token", "RUNNER_TOKEN", "glrt-"+f.s(b64url, 20)))
	add(in("gitlab pipeline trigger token", "TRIGGER_TOKEN", "glptt-"+f.s(lowerHex, 40)))
	npm := "npm_" + f.s(alnum, 36)
	add(in("npm token", "NPM_TOKEN", npm).with("//registry.npmjs.org/:_authToken=" + npm))
	pypi := "pypi-AgEIcHlwaS5vcmcCJDU" + f.s(b64url, 150)
	add(in("pypi token", "TWINE_PASSWORD", pypi).with(
		"[pypi]\nusername = __token__\npassword = " + pypi + "\n"))
	add(in("docker hub token", "DOCKERHUB_TOKEN", "dckr_pat_"+f.s(b64url, 27)))
	add(in("rubygems key", "GEM_HOST_API_KEY", "rubygems_"+f.s(lowerHex, 48)))
	add(in("nuget key", "NUGET_API_KEY", "oy2"+f.s("abcdefghijklmnopqrstuvwxyz0123456789", 43)))
	add(in("atlassian api token", "JIRA_API_TOKEN", "ATATT3xFfGF0"+f.s(b64url, 180)+"="+f.s(upperAlnum, 8)))

	// Cloud providers.
	akia := "AKIA" + f.s("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)
	add(in("aws access key id", "AWS_ACCESS_KEY_ID", akia))
	awsSecret := f.s(alnum, 12) + "/" + f.s(alnum, 14) + "+" + f.s(alnum, 12)
	add(inContexts("aws secret access key", "AWS_SECRET_ACCESS_KEY", awsSecret, bare, envLine, logLine).with(
		"[default]\naws_access_key_id = "+akia+"\naws_secret_access_key = "+awsSecret+"\nregion = eu-west-1\n",
		`{"AccessKeyId": "`+akia+`", "SecretAccessKey": "`+awsSecret+`", "Expiration": "2026-03-04T06:06:07Z"}`,
		"aws configure set aws_secret_access_key "+awsSecret+" --profile ci",
		"Access key ID,Secret access key\n"+akia+","+awsSecret+"\n",
		`resource "aws_iam_access_key" "ci" {} # secret_key = "`+awsSecret+`"`))
	session := "IQoJb3JpZ2luX2VjE" + f.s(b64, 300) + "=="
	add(in("aws session token", "AWS_SESSION_TOKEN", session))
	googleKey := "AIza" + f.s(b64url, 35)
	add(in("google api key", "GOOGLE_API_KEY", googleKey).with(
		"https://maps.googleapis.com/maps/api/geocode/json?address=Paris&key=" + googleKey))
	add(in("google oauth access token", "GOOGLE_ACCESS_TOKEN", "ya29.a0"+f.s(b64url, 150)))
	add(in("google oauth refresh token", "GOOGLE_REFRESH_TOKEN", "1//0g"+f.s(b64url, 98)))
	add(in("google oauth client secret", "GOOGLE_CLIENT_SECRET", "GOCSPX-"+f.s(b64url, 28)))
	saKey := f.pemBody("MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQ", 6)
	add(credential{name: "gcp service account private key", secret: saKey[2], texts: []string{
		`{"type": "service_account", "project_id": "demo-123", "private_key_id": "` + f.s(lowerHex, 40) +
			`", "private_key": "-----BEGIN PRIVATE KEY-----\n` + strings.Join(saKey, `\n`) +
			`\n-----END PRIVATE KEY-----\n", "client_email": "ci@demo-123.iam.gserviceaccount.com"}`,
		"GOOGLE_CREDENTIALS='{\"private_key\": \"-----BEGIN PRIVATE KEY-----\\n" + strings.Join(saKey, `\n`) + "\\n-----END PRIVATE KEY-----\\n\"}'",
	}})
	accountKey := base64.StdEncoding.EncodeToString(f.bytes(64))
	add(credential{name: "azure storage account key", secret: accountKey, texts: []string{
		"DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey=" + accountKey + ";EndpointSuffix=core.windows.net",
		`{"ConnectionStrings": {"Storage": "DefaultEndpointsProtocol=https;AccountName=acmeprod;AccountKey=` + accountKey + `"}}`,
		"az storage blob list --account-name acmeprod --account-key " + accountKey + " -c logs",
		accountKey,
		"AZURE_STORAGE_KEY=" + accountKey,
	}})
	sig := url.QueryEscape(base64.StdEncoding.EncodeToString(f.bytes(32)))
	add(credential{name: "azure sas signature", secret: sig, texts: []string{
		"https://acmeprod.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-31T23:59:59Z&st=2026-01-01T00:00:00Z&spr=https&sig=" + sig,
		"BlobEndpoint=https://acmeprod.blob.core.windows.net/;SharedAccessSignature=sv=2022-11-02&ss=b&srt=sco&sp=rl&se=2026-12-31T23:59:59Z&sig=" + sig,
		`AZURE_SAS_URL="https://acmeprod.queue.core.windows.net/jobs?sv=2022-11-02&sp=raup&sig=` + sig + `"`,
	}})
	busKey := base64.StdEncoding.EncodeToString(f.bytes(32))
	add(credential{name: "azure service bus key", secret: busKey, texts: []string{
		"Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=" + busKey,
		`"ServiceBus": "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=` + busKey + `;EntityPath=orders"`,
	}})
	add(in("azure ad client secret", "AZURE_CLIENT_SECRET", f.s(alnum, 3)+"8Q~"+f.s(alnum+"_~.-", 34)))
	add(in("azure container registry password", "ACR_PASSWORD", f.s(alnum, 42)+"+ACR"+f.s(alnum, 6)))
	add(in("digitalocean token", "DIGITALOCEAN_TOKEN", "dop_v1_"+f.s(lowerHex, 64)))
	add(in("digitalocean oauth token", "DO_OAUTH_TOKEN", "doo_v1_"+f.s(lowerHex, 64)))
	add(in("cloudflare user token", "CLOUDFLARE_API_TOKEN", "cfut_"+f.s(alnum, 40)+f.s(lowerHex, 8)))
	cfToken := f.s(b64url, 40)
	add(inContexts("cloudflare api token", "CLOUDFLARE_API_TOKEN", cfToken, envLine).with(
		`curl https://api.cloudflare.com/client/v4/user/tokens/verify -H "Authorization: Bearer `+cfToken+`"`,
		`{"cloudflare_api_token": "`+cfToken+`"}`,
		`provider "cloudflare" { api_token = "`+cfToken+`" }`))
	add(in("cloudflare origin ca key", "CF_ORIGIN_CA_KEY", "v1.0-"+f.s(lowerHex, 24)+"-"+f.s(lowerHex, 146)))
	add(in("heroku api key", "HEROKU_API_KEY", "HRKU-AA"+f.s(b64url, 58)))
	herokuUUID := fmt.Sprintf("%s-%s-%s-%s-%s", f.s(lowerHex, 8), f.s(lowerHex, 4), f.s(lowerHex, 4), f.s(lowerHex, 4), f.s(lowerHex, 12))
	add(inContexts("heroku legacy api key", "HEROKU_API_KEY", herokuUUID, envLine).with(
		"machine api.heroku.com\n  login me@example.com\n  password "+herokuUUID+"\n",
		`{"heroku": {"api_key": "`+herokuUUID+`"}}`))
	adoPAT := f.s("abcdefghijklmnopqrstuvwxyz234567", 52)
	add(inContexts("azure devops pat", "AZURE_DEVOPS_EXT_PAT", adoPAT, envLine).with(
		"git clone https://build:"+adoPAT+"@dev.azure.com/acme/app/_git/app",
		`{"azure_devops_pat": "`+adoPAT+`"}`))
	add(in("databricks token", "DATABRICKS_TOKEN", "dapi"+f.s(lowerHex, 32)))
	add(in("alibaba access key id", "ALIBABA_CLOUD_ACCESS_KEY_ID", "LTAI"+f.s(alnum, 20)))
	add(in("terraform cloud token", "TFE_TOKEN", f.s(alnum, 14)+".atlasv1."+f.s(alnum, 67)))
	add(in("pulumi token", "PULUMI_ACCESS_TOKEN", "pul-"+f.s(lowerHex, 40)))
	add(in("vault service token", "VAULT_TOKEN", "hvs."+f.s(b64url, 90)))
	add(in("vault batch token", "VAULT_TOKEN", "hvb."+f.s(b64url, 138)))
	add(in("doppler token", "DOPPLER_TOKEN", "dp.pt."+f.s(alnum, 43)))
	add(in("1password service account token", "OP_SERVICE_ACCOUNT_TOKEN", "ops_eyJ"+f.s(b64, 300)))
	add(in("fly.io token", "FLY_API_TOKEN", "fm2_"+f.s(b64, 300)))
	add(in("tailscale auth key", "TS_AUTHKEY", "tskey-auth-"+f.s(alnum, 12)+"CNTRL-"+f.s(alnum, 32)))
	add(in("planetscale password", "PLANETSCALE_PASSWORD", "pscale_pw_"+f.s(b64url, 43)))
	add(in("supabase access token", "SUPABASE_ACCESS_TOKEN", "sbp_"+f.s(lowerHex, 40)))
	add(in("netlify token", "NETLIFY_AUTH_TOKEN", "nfp_"+f.s(alnum, 36)))

	// Monitoring, messaging, productivity.
	add(in("grafana cloud token", "GRAFANA_CLOUD_TOKEN", "glc_eyJvIjoi"+f.s(alnum, 100)+"=="))
	add(in("grafana service account token", "GRAFANA_TOKEN", "glsa_"+f.s(alnum, 32)+"_"+f.s(lowerHex, 8)))
	add(in("new relic user key", "NEW_RELIC_API_KEY", "NRAK-"+f.s(upperAlnum, 27)))
	add(in("sentry org token", "SENTRY_AUTH_TOKEN", "sntrys_eyJpYXQiOjE3MDAwMDAwMDAuMCwidXJsIjoiaHR0cHM6Ly9zZW50cnkuaW8iLCJyZWdpb25fdXJsIjoi"+f.s(alnum, 60)+"_"+f.s(alnum, 43)))
	add(in("sentry user token", "SENTRY_AUTH_TOKEN", "sntryu_"+f.s(lowerHex, 64)))
	dsnKey := f.s(lowerHex, 32)
	add(credential{name: "sentry dsn", secret: dsnKey, texts: []string{
		"SENTRY_DSN=https://" + dsnKey + "@o4505123.ingest.us.sentry.io/4505123456789",
		`Sentry.init({ dsn: "https://` + dsnKey + `@o4505123.ingest.sentry.io/4505123456789" });`,
	}})
	sentryLegacy := f.s(lowerHex, 32)
	add(credential{name: "sentry legacy dsn", secret: sentryLegacy, texts: []string{
		"SENTRY_DSN=https://" + f.s(lowerHex, 32) + ":" + sentryLegacy + "@sentry.example.com/12",
		"raven.Client('https://pubkey:" + sentryLegacy + "@app.getsentry.com/1234')",
	}})
	add(in("slack bot token", "SLACK_BOT_TOKEN", "xoxb-"+f.s(digits, 12)+"-"+f.s(digits, 13)+"-"+f.s(alnum, 24)))
	add(in("slack user token", "SLACK_USER_TOKEN", "xoxp-"+f.s(digits, 12)+"-"+f.s(digits, 12)+"-"+f.s(digits, 13)+"-"+f.s(lowerHex, 32)))
	add(in("slack app token", "SLACK_APP_TOKEN", "xapp-1-A"+f.s(upperAlnum, 10)+"-"+f.s(digits, 13)+"-"+f.s(lowerHex, 64)))
	slackHook := f.s(alnum, 24)
	add(credential{name: "slack webhook url", secret: slackHook, texts: []string{
		"https://hooks.slack.com/services/T" + f.s(upperAlnum, 10) + "/B" + f.s(upperAlnum, 10) + "/" + slackHook,
		"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T0123ABCD/B0456EFGH/" + slackHook,
		`curl -X POST -H 'Content-type: application/json' --data '{"text":"deployed"}' https://hooks.slack.com/services/T0123ABCD/B0456EFGH/` + slackHook,
		`{"webhook": "https://hooks.slack.com/workflows/T0123ABCD/A0456EFGH/498765432101234567/` + slackHook + `"}`,
		`{"url":"https:\/\/hooks.slack.com\/services\/T0123ABCD\/B0456EFGH\/` + slackHook + `"}`,
	}})
	discordBot := base64.RawURLEncoding.EncodeToString([]byte(f.s(digits, 19))) + "." + f.s(b64url, 6) + "." + f.s(b64url, 38)
	add(in("discord bot token", "DISCORD_BOT_TOKEN", discordBot).with(
		`client.run("` + discordBot + `")`))
	discordHook := f.s(b64url, 68)
	add(credential{name: "discord webhook url", secret: discordHook, texts: []string{
		"https://discord.com/api/webhooks/" + f.s(digits, 19) + "/" + discordHook,
		"DISCORD_WEBHOOK=https://discordapp.com/api/webhooks/1234567890123456789/" + discordHook,
		`{"url": "https://discord.com/api/webhooks/1234567890123456789/` + discordHook + `?wait=true"}`,
	}})
	teamsHook := f.s(lowerHex, 32)
	add(credential{name: "microsoft teams webhook url", secret: teamsHook, texts: []string{
		"https://acme.webhook.office.com/webhookb2/" + herokuUUID + "@" + herokuUUID + "/IncomingWebhook/" + teamsHook + "/" + herokuUUID,
	}})
	tg := f.s(digits, 10) + ":AA" + f.s(b64url, 33)
	add(in("telegram bot token", "TELEGRAM_BOT_TOKEN", tg).with(
		"curl https://api.telegram.org/bot" + tg + "/getUpdates"))
	add(in("sendgrid key", "SENDGRID_API_KEY", "SG."+f.s(b64url, 22)+"."+f.s(b64url, 43)))
	add(in("resend key", "RESEND_API_KEY", "re_"+f.s(alnum, 8)+"_"+f.s(alnum, 24)))
	add(in("jfrog api key", "ARTIFACTORY_API_KEY", "AKCp"+f.s(alnum, 69)))
	mmHook := f.s(lowerAlnum, 26)
	add(credential{name: "mattermost webhook url", secret: mmHook, texts: []string{
		"https://chat.example.com/hooks/" + mmHook,
		`MATTERMOST_WEBHOOK_URL="https://chat.example.com/hooks/` + mmHook + `"`,
	}})
	add(in("brevo key", "BREVO_API_KEY", "xkeysib-"+f.s(lowerHex, 64)+"-"+f.s(alnum, 16)))
	mailgunOld := "key-" + f.s(lowerHex, 32)
	add(in("mailgun private key", "MAILGUN_API_KEY", mailgunOld).with(
		"curl -s --user 'api:" + mailgunOld + "' https://api.mailgun.net/v3/mg.example.com/messages"))
	add(in("mailgun api key", "MAILGUN_API_KEY", f.s(lowerHex, 32)+"-"+f.s(lowerHex, 8)+"-"+f.s(lowerHex, 8)))
	add(in("mailchimp api key", "MAILCHIMP_API_KEY", f.s(lowerHex, 32)+"-us21"))
	add(in("twilio api key", "TWILIO_API_KEY", "SK"+f.s(lowerHex, 32)))
	twilioAuth := f.s(lowerHex, 32)
	add(inContexts("twilio auth token", "TWILIO_AUTH_TOKEN", twilioAuth, envLine).with(
		"curl -X POST https://api.twilio.com/2010-04-01/Accounts/AC"+f.s(lowerHex, 32)+"/Messages.json -u AC"+f.s(lowerHex, 32)+":"+twilioAuth,
		`client = Client("AC`+f.s(lowerHex, 32)+`", auth_token="`+twilioAuth+`")`))
	ddKey := f.s(lowerHex, 32)
	add(inContexts("datadog api key", "DD_API_KEY", ddKey, envLine).with(
		`curl -X POST "https://api.datadoghq.com/api/v1/series" -H "DD-API-KEY: `+ddKey+`" -d @metrics.json`,
		"datadog:\n  apiKey: "+ddKey+"\n  site: datadoghq.eu\n"))
	add(in("linear api key", "LINEAR_API_KEY", "lin_api_"+f.s(alnum, 40)))
	add(in("notion integration token", "NOTION_TOKEN", "ntn_"+f.s(digits, 11)+f.s(alnum, 35)))
	add(in("notion legacy token", "NOTION_TOKEN", "secret_"+f.s(alnum, 43)))
	add(in("airtable token", "AIRTABLE_TOKEN", "pat"+f.s(alnum, 14)+"."+f.s(lowerHex, 64)))
	add(in("postman key", "POSTMAN_API_KEY", "PMAK-"+f.s(lowerHex, 24)+"-"+f.s(lowerHex, 34)))
	add(in("posthog personal key", "POSTHOG_PERSONAL_API_KEY", "phx_"+f.s(alnum, 47)))
	add(in("figma token", "FIGMA_TOKEN", "figd_"+f.s(b64url, 40)))
	add(in("twitter bearer token", "TWITTER_BEARER_TOKEN", strings.Repeat("A", 22)+f.s(alnum, 20)+"%2B"+f.s(alnum, 12)+"%3D"+f.s(alnum, 50)))
	add(in("mapbox secret token", "MAPBOX_SECRET_TOKEN", "sk.eyJ1IjoiYWNtZSIsImEiOiJ"+f.s(alnum, 30)+"."+f.s(b64url, 22)))

	add(in("sourcegraph token", "SRC_ACCESS_TOKEN", "sgp_"+f.s(lowerHex, 16)+"_"+f.s(lowerHex, 40)))
	add(in("sonarqube token", "SONAR_TOKEN", "squ_"+f.s(lowerHex, 40)))
	add(in("circleci token", "CIRCLECI_TOKEN", "CCIPAT_"+f.s(alnum, 22)+"_"+f.s(lowerHex, 40)))
	add(in("buildkite token", "BUILDKITE_API_TOKEN", "bkua_"+f.s(lowerHex, 40)))
	add(in("fireworks key", "FIREWORKS_API_KEY", "fw_"+f.s(alnum, 24)))
	add(in("tavily key", "TAVILY_API_KEY", "tvly-"+f.s(alnum, 32)))
	add(in("firecrawl key", "FIRECRAWL_API_KEY", "fc-"+f.s(lowerHex, 32)))
	add(in("launchdarkly sdk key", "LAUNCHDARKLY_SDK_KEY", "sdk-"+herokuUUID))
	add(in("dropbox token", "DROPBOX_TOKEN", "sl.u."+f.s(b64url, 140)))
	add(in("firebase server key", "FCM_SERVER_KEY", "AAAA"+f.s(b64url, 7)+":APA91b"+f.s(b64url, 134)))

	// Payments and commerce.
	add(in("stripe secret key", "STRIPE_SECRET_KEY", "sk_live_51"+f.s(alnum, 97)))
	add(in("stripe restricted key", "STRIPE_KEY", "rk_live_51"+f.s(alnum, 97)))
	add(in("stripe test key", "STRIPE_SECRET_KEY", "sk_test_51"+f.s(alnum, 97)))
	add(in("stripe webhook secret", "STRIPE_WEBHOOK_SECRET", "whsec_"+f.s(alnum, 32)))
	shpat := "shpat_" + f.s(lowerHex, 32)
	add(in("shopify access token", "SHOPIFY_ACCESS_TOKEN", shpat).with(
		`curl -H "X-Shopify-Access-Token: ` + shpat + `" https://acme.myshopify.com/admin/api/2024-01/shop.json`))
	add(in("shopify shared secret", "SHOPIFY_API_SECRET", "shpss_"+f.s(lowerHex, 32)))
	add(in("shopify custom app token", "SHOPIFY_TOKEN", "shpca_"+f.s(lowerHex, 32)))
	add(in("shopify private app token", "SHOPIFY_PASSWORD", "shppa_"+f.s(lowerHex, 32)))
	add(in("square access token", "SQUARE_ACCESS_TOKEN", "EAAA"+f.s(b64url, 60)))
	add(in("square application secret", "SQUARE_APP_SECRET", "sq0csp-"+f.s(b64url, 43)))
	add(in("braintree access token", "BRAINTREE_ACCESS_TOKEN", "access_token$production$"+f.s(lowerAlnum, 16)+"$"+f.s(lowerHex, 32)))
	add(in("facebook access token", "FB_ACCESS_TOKEN", "EAAB"+f.s(alnum, 180)))

	// Keys and key files.
	for _, k := range []struct{ name, kind string }{
		{"ssh private key", "OPENSSH PRIVATE KEY"},
		{"rsa private key", "RSA PRIVATE KEY"},
		{"ec private key", "EC PRIVATE KEY"},
		{"pgp private key", "PGP PRIVATE KEY BLOCK"},
	} {
		body := f.pemBody("", 5)
		block := "-----BEGIN " + k.kind + "-----\n" + strings.Join(body, "\n") + "\n-----END " + k.kind + "-----"
		add(credential{name: k.name, secret: body[1], texts: []string{
			block,
			"$ cat ~/.ssh/id_deploy\n" + block + "\n$ ",
			`{"key": "` + strings.ReplaceAll(block, "\n", `\n`) + `"}`,
			"tls.key: |\n  " + strings.ReplaceAll(block, "\n", "\n  ") + "\n",
			"SSH_KEY=\"" + block + "\"",
			block[:len(block)/2] + "\n[output truncated]",
		}})
	}
	ageKey := "AGE-SECRET-KEY-1" + f.s("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)
	add(in("age secret key", "SOPS_AGE_KEY", ageKey).with("# created: 2026-01-02T03:04:05Z\n# public key: age1" + f.s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58) + "\n" + ageKey + "\n"))
	keyData := base64.StdEncoding.EncodeToString([]byte("-----BEGIN RSA PRIVATE KEY-----\n" + strings.Join(f.pemBody("MIIEow", 4), "\n") + "\n-----END RSA PRIVATE KEY-----\n"))
	add(credential{name: "kubeconfig client key data", secret: keyData[40:80], texts: []string{
		"users:\n- name: admin\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n    client-key-data: " + keyData + "\n",
		keyData,
	}})

	// JWTs and session tokens.
	jwtHeader := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","typ":"JWT","kid":"` + f.s(alnum, 16) + `"}`))
	jwtClaims := base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"` + f.s(digits, 12) + `","aud":"api","exp":1767225600}`))
	jwtSig := f.s(b64url, 342)
	jwtToken := jwtHeader + "." + jwtClaims + "." + jwtSig
	add(in("jwt", "ID_TOKEN", jwtToken))
	sessionCookie := f.s(b64url, 48)
	add(credential{name: "session cookie", secret: sessionCookie, texts: []string{
		"Cookie: _ga=GA1.2.1234567.1700000000; session=" + sessionCookie + "; theme=dark",
		"Set-Cookie: sessionid=" + sessionCookie + "; Path=/; HttpOnly; Secure; SameSite=Lax",
		`curl -b "connect.sid=` + sessionCookie + `" https://app.example.com/api/me`,
		`{"headers": {"cookie": "JSESSIONID=` + sessionCookie + `"}}`,
		"_myapp_session=" + sessionCookie,
	}})
	basic := base64.StdEncoding.EncodeToString([]byte("deploy:" + f.s(alnum, 20)))
	add(credential{name: "http basic auth header", secret: basic, texts: []string{
		"Authorization: Basic " + basic,
		`curl -H "Authorization: Basic ` + basic + `" https://registry.example.com/v2/_catalog`,
		`{"headers": {"Authorization": "Basic ` + basic + `"}}`,
		"> GET /v2/ HTTP/1.1\n> authorization: basic " + basic + "\n",
	}})
	dockerAuth := base64.StdEncoding.EncodeToString([]byte("acme:" + f.s(alnum, 24)))
	add(credential{name: "docker config auth", secret: dockerAuth, texts: []string{
		`{"auths": {"https://index.docker.io/v1/": {"auth": "` + dockerAuth + `"}}}`,
		`{"auths":{"ghcr.io":{"auth":"` + dockerAuth + `"}}}`,
	}})
	curlPass := f.s(alnum, 20)
	add(credential{name: "curl user password", secret: curlPass, texts: []string{
		"curl -u admin:" + curlPass + " https://jenkins.example.com/api/json",
		"curl --user 'ci-bot:" + curlPass + "' -X POST https://ci.example.com/job/build",
		"wget --http-user=ci --http-password=" + curlPass + " https://files.example.com/a.tgz",
	}})

	// Passwords in URLs and connection strings.
	dbPass := f.s(alnum, 18)
	for _, u := range []struct{ name, url string }{
		{"postgres url", "postgres://app:%s@db.internal:5432/prod?sslmode=require"},
		{"postgresql url", "postgresql://app:%s@10.0.3.7/orders"},
		{"mysql url", "mysql://root:%s@mysql.example.com:3306/shop"},
		{"mongodb srv url", "mongodb+srv://admin:%s@cluster0.ab1cd.mongodb.net/app?retryWrites=true&w=majority"},
		{"amqp url", "amqps://worker:%s@rabbit.example.com:5671/jobs"},
		{"ftp url", "ftp://deploy:%s@ftp.example.com/public_html"},
		{"redis url without user", "redis://:%s@cache.internal:6379/0"},
		{"smtp url", "smtp://mailer:%s@smtp.example.com:587"},
		{"https basic auth url", "https://admin:%s@grafana.example.com/api/dashboards"},
		{"jdbc url", "jdbc:postgresql://db:5432/app?user=app&password=%s&ssl=true"},
	} {
		text := fmt.Sprintf(u.url, dbPass)
		add(credential{name: u.name, secret: dbPass, texts: []string{
			text,
			"DATABASE_URL=" + text,
			`{"url": "` + text + `"}`,
			"psql '" + text + "' -c 'select 1'",
			"2026-03-04T05:06:07Z INFO connecting to " + text,
		}})
	}
	adoPass := f.s(alnum, 16) + "!#"
	add(credential{name: "ado.net connection string", secret: adoPass, texts: []string{
		"Server=tcp:acme.database.windows.net,1433;Database=prod;User ID=app;Password=" + adoPass + ";Encrypt=true;",
		`"ConnectionStrings": {"Default": "Host=db;Username=app;Pwd=` + adoPass + `;Database=shop"}`,
	}})

	// Credentials named by their key.
	pw := "Tr0ub4dor&3-" + f.s(alnum, 6)
	add(credential{name: "password assignment", secret: pw, texts: []string{
		"DB_PASSWORD=" + pw,
		"password: " + pw,
		`{"username": "app", "password": "` + pw + `"}`,
		`spring.datasource.password=` + pw,
		`export PGPASSWORD='` + pw + `'`,
		`<password>` + pw + `</password>`,
		`mysql -h db -u root -p` + pw + ` shop`,
		`docker login -u acme -p ` + pw + ` registry.example.com`,
		`CREATE USER app WITH LOGIN PASSWORD '` + pw + `';`,
		`ALTER USER 'app'@'%' IDENTIFIED BY '` + pw + `';`,
		`psql --password ` + pw,
		`kubectl create secret generic db --from-literal=password=` + pw,
		`mongosh "mongodb://db.internal:27017/app" -u admin -p ` + pw,
		`openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:` + pw,
		`sshpass -p '` + pw + `' ssh deploy@10.0.3.7`,
		`redis-cli -h cache.internal -a ` + pw + ` ping`,
		`machine api.example.com login deploy password ` + pw,
		`[client]\nuser=app\npassword=` + pw + `\nhost=db`,
		`app.secret_key = '` + pw + `'`,
		`LICENSE_KEY: "` + pw + `"`,
	}})
	npmrc := f.s(alnum, 36)
	add(credential{name: "npmrc auth token", secret: npmrc, texts: []string{
		"//registry.npmjs.org/:_authToken=" + npmrc,
		"//npm.pkg.github.com/:_authToken=" + npmrc + "\n@acme:registry=https://npm.pkg.github.com",
	}})
	npmAuth := base64.StdEncoding.EncodeToString([]byte("ci:" + f.s(alnum, 24)))
	add(credential{name: "npmrc basic auth", secret: npmAuth, texts: []string{
		"_auth=" + npmAuth,
		"//registry.example.com/:_auth=" + npmAuth + "\nalways-auth=true",
		"//registry.example.com/:_password=" + npmAuth,
	}})
	kubeToken := f.s(b64url, 60)
	add(credential{name: "kubeconfig token", secret: kubeToken, texts: []string{
		"users:\n- name: ci\n  user:\n    token: " + kubeToken + "\n",
		"kubectl --token " + kubeToken + " get pods",
		"kubectl --token=" + kubeToken + " get pods",
	}})
	clientSecret := f.s(b64url, 40)
	add(credential{name: "oauth client secret", secret: clientSecret, texts: []string{
		"CLIENT_SECRET=" + clientSecret,
		`{"client_id": "1234.apps.example.com", "client_secret": "` + clientSecret + `"}`,
		"curl -d grant_type=client_credentials -d client_id=abc -d client_secret=" + clientSecret + " https://auth.example.com/oauth/token",
		"client_secret: " + clientSecret,
	}})
	apiKey := f.s(alnum, 32)
	add(credential{name: "api key header", secret: apiKey, texts: []string{
		"X-API-Key: " + apiKey,
		`curl -H "X-Api-Key: ` + apiKey + `" https://api.example.com/v2/orders`,
		`requests.get(url, headers={"x-api-key": "` + apiKey + `"})`,
		"https://api.example.com/v1/forecast?apikey=" + apiKey + "&city=Berlin",
		"Ocp-Apim-Subscription-Key: " + apiKey,
	}})
	bearer := f.s(b64url, 40)
	add(credential{name: "bearer token", secret: bearer, texts: []string{
		"Authorization: Bearer " + bearer,
		`fetch(url, {headers: {Authorization: "Bearer ` + bearer + `"}})`,
		`{"Authorization": "Bearer ` + bearer + `"}`,
		"Authorization: SSWS " + bearer,
		"Proxy-Authorization: Bearer " + bearer,
	}})
	webhookSecret := f.s(alnum, 40)
	add(credential{name: "generic secret settings", secret: webhookSecret, texts: []string{
		"WEBHOOK_SECRET=" + webhookSecret,
		"JWT_SECRET: " + webhookSecret,
		"SECRET_KEY_BASE=" + webhookSecret,
		`app.config["SECRET_KEY"] = "` + webhookSecret + `"`,
		"ALGOLIA_ADMIN_KEY=" + webhookSecret,
		"APP_KEY=base64:" + webhookSecret,
		"ENCRYPTION_KEY=" + webhookSecret,
		`"signing_key": "` + webhookSecret + `"`,
		"https://cdn.example.com/video.mp4?Expires=1767225600&Signature=" + webhookSecret + "&Key-Pair-Id=K2JCJMDEHXQW5F",
	}})
	presigned := f.s(lowerHex, 64)
	add(credential{name: "aws presigned url signature", secret: presigned, texts: []string{
		"https://acme-backups.s3.eu-west-1.amazonaws.com/db.tar.gz?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" + akia +
			"%2F20260304%2Feu-west-1%2Fs3%2Faws4_request&X-Amz-Date=20260304T050607Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=" + presigned,
	}})
	return cs
}

// leaks returns the 8-byte pieces of secret that survive in out, ignoring
// those the rest of the text has anyway.
func leaks(text, secret, out string) []string {
	n := min(8, len(secret))
	rest := strings.ReplaceAll(text, secret, "")
	var found []string
	for i := 0; i+n <= len(secret); i++ {
		piece := secret[i : i+n]
		if strings.Contains(out, piece) && !strings.Contains(rest, piece) && !strings.Contains(Redacted, piece) {
			found = append(found, piece)
		}
	}
	return found
}

func TestCorpusRecall(t *testing.T) {
	cs := credentials()
	texts, redacted := 0, 0
	for _, c := range cs {
		full := true
		for _, text := range c.texts {
			texts++
			if !strings.Contains(text, c.secret) && !strings.Contains(text, url.QueryEscape(c.secret)) {
				t.Fatalf("%s: test text does not hold the secret: %q", c.name, text)
			}
			out := Scrub(text)
			if l := leaks(text, c.secret, out); len(l) > 0 {
				full = false
				t.Errorf("%s: %q\nscrubbed to %q\nleaks %q", c.name, text, out, l[0])
			}
			if again := Scrub(out); again != out {
				t.Errorf("%s: Scrub is not idempotent on %q: %q", c.name, out, again)
			}
		}
		if full {
			redacted++
		}
	}
	t.Logf("recall: %d/%d credential formats fully redacted (%d texts)", redacted, len(cs), texts)
	if len(cs) < 60 {
		t.Errorf("the corpus has %d formats, want at least 60", len(cs))
	}
}

// negatives returns ordinary text that must come out unchanged.
func negatives() []string {
	f := newFake()
	uuid := func() string {
		return fmt.Sprintf("%s-%s-4%s-a%s-%s", f.s(lowerHex, 8), f.s(lowerHex, 4), f.s(lowerHex, 3), f.s(lowerHex, 3), f.s(lowerHex, 12))
	}
	sha256 := hex.EncodeToString(f.bytes(32))
	sha512 := hex.EncodeToString(f.bytes(64))
	gitSHA := hex.EncodeToString(f.bytes(20))
	png := base64.StdEncoding.EncodeToString(append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), f.bytes(600)...))
	var wrapped []string
	blob := base64.StdEncoding.EncodeToString(f.bytes(500))
	for len(blob) > 76 {
		wrapped = append(wrapped, blob[:76])
		blob = blob[76:]
	}
	wrapped = append(wrapped, blob)
	cert := "-----BEGIN CERTIFICATE-----\n" + strings.Join(f.pemBody("MIIDdzCCAl+gAwIBAgIE", 6), "\n") + "\n-----END CERTIFICATE-----"
	pubkey := "-----BEGIN PUBLIC KEY-----\n" + strings.Join(f.pemBody("MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA", 4), "\n") + "\n-----END PUBLIC KEY-----"
	integrity := "sha512-" + base64.StdEncoding.EncodeToString(f.bytes(64))

	ns := []string{
		// Identifiers, hashes and digests.
		uuid(),
		"request " + uuid() + " took 12ms",
		`{"id": "` + uuid() + `", "parent_id": "` + uuid() + `"}`,
		"commit " + gitSHA,
		"Merge: " + gitSHA[:7] + " " + gitSHA[10:17],
		"git checkout " + gitSHA[:12] + " && git log --oneline -3",
		sha256 + "  dist/lambdaclaw_linux_amd64.tar.gz",
		"sha256sum: " + sha256,
		"SHA512 (release.zip) = " + sha512,
		"ghcr.io/acme/app@sha256:" + sha256,
		"docker pull public.ecr.aws/lambda/provided@sha256:" + sha256,
		`"digest": "sha256:` + sha256 + `"`,
		"Digest: sha256:" + sha256,
		`"integrity": "` + integrity + `"`,
		"trace_id=" + hex.EncodeToString(f.bytes(16)) + " span_id=" + hex.EncodeToString(f.bytes(8)),
		"etag: \"" + hex.EncodeToString(f.bytes(16)) + "\"",
		"object id 0x" + hex.EncodeToString(f.bytes(24)),
		"md5 " + hex.EncodeToString(f.bytes(16)) + " sha1 " + hex.EncodeToString(f.bytes(20)),
		"run_01J8Z3Q4W5E6R7T8Y9U0I1O2P3 finished",
		"ulid 01ARZ3NDEKTSV4RRFFQ69G5FAV",
		"ksuid 0ujtsYcgvSTl8PAuAdqWYSMnLOv",

		// ARNs and cloud resource names.
		"arn:aws:iam::123456789012:role/lambdaclaw-step-function-role",
		"arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db/password-AbCdEf",
		"arn:aws:ssm:us-east-1:123456789012:parameter/prod/api_token",
		"arn:aws:kms:us-east-1:123456789012:key/" + uuid(),
		"arn:aws:lambda:eu-central-1:123456789012:function:lambdaclaw-step:live",
		"arn:aws:states:eu-west-1:123456789012:stateMachine:lambdaclaw-loop",
		"arn:aws:dynamodb:eu-west-1:123456789012:table/sessions/stream/2026-03-04T05:06:07.123",
		"arn:aws:execute-api:eu-west-1:123456789012:abcdef1234/prod/POST/v1/chat/completions",
		"projects/demo-123/secrets/db-password/versions/latest",
		"/subscriptions/" + uuid() + "/resourceGroups/prod/providers/Microsoft.KeyVault/vaults/acme-kv",
		"AWS account 123456789012 in eu-west-1",

		// URLs without credentials.
		"https://example.com/",
		"https://api.example.com/v1/chat/completions?stream=true&model=gpt-4o-mini",
		"https://github.com/lambdaclaw/lambdaclaw/blob/main/shared/scrub/scrub.go#L42",
		"https://www.google.com/search?q=how+to+rotate+an+api+token&hl=en",
		"https://example.com/login?redirect_uri=https%3A%2F%2Fapp.example.com%2Fcallback&response_type=code&state=xyz",
		"https://docs.example.com/auth/tokens#refresh-tokens",
		"https://example.com:8443/path@v1/resource",
		"http://localhost:8080/v1/sessions/" + uuid() + "/messages",
		"https://s3.eu-west-1.amazonaws.com/acme-public/logo.png",
		"https://acme.blob.core.windows.net/public/index.html",
		"https://hooks.slack.com/",
		"https://discord.com/channels/123456789012345678/234567890123456789",
		"git@github.com:lambdaclaw/lambdaclaw.git",
		"ssh://git@github.com/lambdaclaw/lambdaclaw.git",
		"https://registry.npmjs.org/@types/node/-/node-20.11.5.tgz",
		"mailto:security@example.com?subject=report",
		"postgres://localhost:5432/dev",
		"redis://cache.internal:6379/0",
		"https://user@example.com/profile",
		"https://example.com/search?token_type=bearer&page=3",

		// Prose about credentials.
		"To reset your password, click the link we sent you.",
		"Reset your password: click the link in the email.",
		"Never share your secret key or your API token with anyone.",
		"The API uses bearer tokens; each token expires after one hour.",
		"Tokens per second: 42.5 (prompt 1,024 tokens, completion 256 tokens)",
		"The secret to good bread is time.",
		"Passwords must be at least 12 characters long.",
		"Use a password manager such as 1Password or Bitwarden.",
		"Rotate the access key every 90 days and delete the old one.",
		"Send the token in the Authorization header, not in the query string.",
		"Authorization: see the section on scopes below.",
		"The private key never leaves the device; only the public key is uploaded.",
		"Set OPENAI_API_KEY in your environment before running the examples.",
		"Cookies are small pieces of data stored by the browser.",
		"Bearer instruments are payable to whoever holds them.",
		"Each session token is bound to one device.",
		"token: the smallest unit of text a model reads.",
		"Password: at least eight characters, one of them a digit.",
		"--- PASS: TestScrubPatterns (0.01s)",
		"--- FAIL: TestTokenRefresh (0.25s)",
		"ok  \tgithub.com/lambdaclaw/lambdaclaw/shared/scrub\t1.234s",
		"PASS: 120 tests, 0 failures",

		// JSON about tokens and usage.
		`{"max_tokens": 100, "temperature": 0.2}`,
		`{"usage": {"prompt_tokens": 12, "completion_tokens": 30, "total_tokens": 42}}`,
		`{"token_count": 4096, "tokens": 1234}`,
		`{"token": 5, "logprob": -0.25}`,
		`{"access_token": null, "token_type": "bearer", "expires_in": 3600}`,
		`{"password": "", "user": "admin"}`,
		`{"auth": {"type": "oauth2", "scopes": ["read"]}}`,
		`{"secret": true, "secretName": "db-credentials"}`,
		`{"password_hash": "$argon2id$v=19$m=65536,t=3,p=4$c2FsdHNhbHQ$aGFzaGhhc2g"}`,
		`{"credentials": "include", "mode": "cors"}`,
		`{"type": "object", "properties": {"password": {"type": "string", "minLength": 12}}}`,

		// Code that handles secrets without holding one.
		`password := os.Getenv("DB_PASSWORD")`,
		`if password == "" { return errors.New("password is required") }`,
		`token, err := src.Token()`,
		`func hashPassword(password string) (string, error) {`,
		`req.Header.Set("Authorization", "Bearer "+token)`,
		`cfg.Password = password`,
		`Password string ` + "`json:\"password\"`",
		`api_key = os.environ["OPENAI_API_KEY"]`,
		`password = getpass.getpass("Password: ")`,
		`def login(username: str, password: str) -> Token:`,
		`token: Optional[str] = None`,
		`self.password = password`,
		`secret_key = settings.SECRET_KEY`,
		`headers = {"Authorization": f"Bearer {api_key}"}`,
		`const token = process.env.GITHUB_TOKEN;`,
		`const { password } = req.body;`,
		`if (password.length < 12) throw new Error("too short");`,
		`TOKEN=$(gh auth token)`,
		`export PGPASSWORD="$DB_PASSWORD"`,
		`password: ${{ secrets.DB_PASSWORD }}`,
		`token: {{ .Values.token }}`,
		`OPENAI_API_KEY=your-api-key-here`,
		`API_KEY=<your key>`,
		`password=********`,
		`password: ••••••••`,
		"headers: { Authorization: `Bearer ${token}` },",
		"const auth = { password: `${pw}` };",
		`Authorization: Basic base64(user:password)`,
		`let password = env::var("DB_PASSWORD")?;`,
		`$password = $_POST['password'];`,
		`if password != confirmPassword {`,
		"Set-Cookie: theme=dark; Path=/; Max-Age=31536000",
		"Cookie: lang=en; theme=dark",
		`SELECT id FROM users WHERE password = $1`,
		`WHERE token = :token AND expires_at > now()`,
		`private String password;`,
		`public string Password { get; set; }`,
		`valueFrom:\n  secretKeyRef:\n    name: db-credentials\n    key: password`,
		`env:\n- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef: {name: db, key: password}`,
		`PWD=/home/me OLDPWD=/tmp`,
		`GOOGLE_APPLICATION_CREDENTIALS=/var/run/secrets/gcp/key.json`,
		`tls.key: /etc/ssl/private/server.key`,

		`Password: hashedPassword,`,
		`Secret: secretValue,`,
		`"password": user_password,`,
		`password := userPassword`,
		`token = user_token`,
		`{ password: newPassword, token }`,
		`setPassword(password: string): void {`,
		`password: str = Field(..., min_length=12)`,
		`OPENAI_API_KEY="sk-..."`,
		`ANTHROPIC_API_KEY=sk-ant-...`,

		// Kubernetes names and output.
		"kubectl get secret db-password -n prod -o yaml",
		"secret/db-password created",
		"serviceaccount-token-x7k2p   kubernetes.io/service-account-token   3      12d",
		"NAME                                READY   STATUS    RESTARTS   AGE\nlambdaclaw-api-7d9c8b6f5d-x2k4z     1/1     Running   0          3d",
		"configmap/app-config unchanged\nsecret/api-token configured",

		// Versions, times, addresses.
		"v1.2.3", "lambdaclaw 0.9.0-rc.1+build.20260304", "go1.26.8 linux/amd64",
		"2026-03-04T05:06:07.123456789Z", "Mon, 02 Jan 2006 15:04:05 GMT", "1767225600",
		"time 12:34:56 and port 8080:80", "10.0.3.7:5432", "[2001:db8::1]:443", "00:1A:2B:3C:4D:5E",
		"security@example.com", "+1 (555) 010-0199",
		"/home/me/projects/lambdaclaw/shared/scrub/scrub_test.go:42:7",
		"C:\\Users\\Me\\AppData\\Roaming\\npm\\node_modules",

		// Base64 and public keys.
		"data:image/png;base64," + png,
		`<img src="data:image/png;base64,` + png + `">`,
		strings.Join(wrapped, "\n"),
		cert,
		pubkey,
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + f.s(b64, 43) + " me@laptop",
		"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ" + f.s(b64, 300) + " deploy@ci",
		"age1" + f.s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58),
		"eyJmb28iOiJiYXIifQ==",
		"aGVsbG8gd29ybGQsIHRoaXMgaXMgbm90IGEgc2VjcmV0Lg==",

		// Public by design.
		"pk_live_51" + f.s(alnum, 97),
		"STRIPE_PUBLISHABLE_KEY=pk_test_51" + f.s(alnum, 60),
		"phc_" + f.s(alnum, 43),
		"AC" + f.s(lowerHex, 32),

		// This project's own logs.
		`{"time":"2026-03-04T05:06:07Z","level":"INFO","msg":"run finished","session_id":"` + uuid() + `","run_id":"` + uuid() + `","tokens":1234}`,
		`level=INFO msg="step done" session_id=s_8f3a2c run_id=r_91b7 tool=write_file bytes=5120`,
		"drwxr-xr-x  2 app app 4096 Jan  2 03:04 src/internal/handler_a",

		// Markdown and HTML.
		"| key | value |\n| --- | --- |\n| max_tokens | 1024 |",
		"## Authentication\n\nCreate a token in **Settings → API keys**, then pass it as a bearer token.",
		`<input type="password" name="password" autocomplete="current-password">`,
		`<label for="token">Token</label>`,
		"already [REDACTED] here",
		"password=[REDACTED]",
	}
	return append(ns, prose()...)
}

func TestCorpusFalsePositives(t *testing.T) {
	ns := negatives()
	changed := 0
	for _, in := range ns {
		if got := Scrub(in); got != in {
			changed++
			t.Errorf("Scrub changed ordinary text:\nin:  %q\nout: %q", in, got)
		}
	}
	t.Logf("false positives: %d/%d negatives changed", changed, len(ns))
	if len(ns) < 100 {
		t.Errorf("the negative corpus has %d texts, want at least 100", len(ns))
	}
}

// TestURLKeepsAllButTheCredential checks that a URL loses only its secret:
// scheme, host, port, path and the rest of the query survive.
func TestURLKeepsAllButTheCredential(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgres://app:s3cr3tP4ss@db.internal:5432/prod?sslmode=require",
			"postgres://app:[REDACTED]@db.internal:5432/prod?sslmode=require"},
		{"redis://:p4ssW0rd@cache.internal:6379/0", "redis://:[REDACTED]@cache.internal:6379/0"},
		// A .env file held in a JSON string: each line's value ends at the
		// escaped line break.
		{`{"path":".env","content":"DB_PASSWORD=hunter2xyz9\nREGION=eu-west-1\nAPI_TOKEN=tok_8f3k2m1x\tx"}`,
			`{"path":".env","content":"DB_PASSWORD=[REDACTED]\nREGION=eu-west-1\nAPI_TOKEN=[REDACTED]\tx"}`},
		{"mongodb+srv://admin:Xy9zQ2wE@cluster0.ab1cd.mongodb.net/app?retryWrites=true&w=majority",
			"mongodb+srv://admin:[REDACTED]@cluster0.ab1cd.mongodb.net/app?retryWrites=true&w=majority"},
		{"amqp://guest:gu3st!x@rabbit:5672/vhost", "amqp://guest:[REDACTED]@rabbit:5672/vhost"},
		{"https://u:p@ss@word1@host.example.com/x", "https://u:[REDACTED]@host.example.com/x"},
		{"https://hooks.slack.com/services/T0123ABCD/B0456EFGH/abcdefghijklmnopqrstuvwx",
			"https://hooks.slack.com/services/T0123ABCD/B0456EFGH/[REDACTED]"},
		{"https://discord.com/api/webhooks/123456789012345678/Ab-cD_ef0123456789abcdefABCDEF0123456789abcdefABCDEF0123456789abcdef?wait=true",
			"https://discord.com/api/webhooks/123456789012345678/[REDACTED]?wait=true"},
		{"https://acme.blob.core.windows.net/c/file.txt?sv=2022-11-02&sp=r&se=2026-12-31T23:59:59Z&spr=https&sig=abc%2Bdef%2F123%3D",
			"https://acme.blob.core.windows.net/c/file.txt?sv=2022-11-02&sp=r&se=2026-12-31T23:59:59Z&spr=https&sig=[REDACTED]"},
		{"https://acme.blob.core.windows.net/c/file.txt?sig=abc%2Bdef%2F123%3D&se=2026-12-31T23:59:59Z&sp=r",
			"https://acme.blob.core.windows.net/c/file.txt?sig=[REDACTED]&se=2026-12-31T23:59:59Z&sp=r"},
		{"https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20260304%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Expires=3600&X-Amz-Signature=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			"https://b.s3.amazonaws.com/k?X-Amz-Credential=[REDACTED]%2F20260304%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Expires=3600&X-Amz-Signature=[REDACTED]"},
		{"https://api.telegram.org/bot123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawX/sendMessage?chat_id=42",
			"https://api.telegram.org/bot[REDACTED]/sendMessage?chat_id=42"},
		{"https://maps.googleapis.com/maps/api/geocode/json?address=Paris&key=AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe&language=fr",
			"https://maps.googleapis.com/maps/api/geocode/json?address=Paris&key=[REDACTED]&language=fr"},
		{"https://0123456789abcdef0123456789abcdef@o4505123.ingest.sentry.io/4505123456789",
			"https://[REDACTED]@o4505123.ingest.sentry.io/4505123456789"},
		{"https://api.example.com/v1/items?access_token=abc123def456&page=2&sort=desc",
			"https://api.example.com/v1/items?access_token=[REDACTED]&page=2&sort=desc"},
		{"https://fn.azurewebsites.net/api/Ingest?code=aBcD3fGh1jKlMn0pQrStUvWxYz012345==&clientId=default",
			"https://fn.azurewebsites.net/api/Ingest?code=[REDACTED]&clientId=default"},
		{"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=" + strings.Repeat("Ab3d", 22) + "==;EndpointSuffix=core.windows.net",
			"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=[REDACTED];EndpointSuffix=core.windows.net"},
	}
	for _, tt := range tests {
		if got := Scrub(tt.in); got != tt.want {
			t.Errorf("Scrub(%q)\ngot  %q\nwant %q", tt.in, got, tt.want)
		}
	}
}
