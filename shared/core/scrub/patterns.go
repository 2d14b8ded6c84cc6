package scrub

import (
	"encoding/base64"
	"strings"
)

// pemExpr matches a PEM private key block. Group 1, the END line, is unset
// when the block has no END line (truncated output): then the redaction runs
// over what can be key material (base64, header lines, escaped line breaks
// in JSON) and stops at anything else, such as the quote closing a JSON
// string.
const pemExpr = `-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?(-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)|(?:[A-Za-z0-9+/=:,.\s-]|\\[nr])*)`

// token returns a pattern for a credential that starts with one of lits and
// is matched whole by expr.
func token(name, expr string, lits ...string) *pattern {
	return &pattern{name: name, expr: expr, lits: lits, start: afterNonWord}
}

// withValid sets p.valid and returns p.
func (p *pattern) withValid(valid func(s string, start, end int) bool) *pattern {
	p.valid = valid
	return p
}

// patterns are every secret Scrub knows. Every pattern but the PEM block
// keeps its match on one line, and one whose match can hold whitespace says
// so with a hold: Stream relies on both.
var patterns = []*pattern{
	{
		name:      "pem private key",
		expr:      pemExpr,
		lits:      []string{"-----BEGIN"},
		multiline: true,
	},
	{
		// base64 of "-----BEGIN", as in kubeconfig client-key-data or a
		// Kubernetes secret; certificates are public and stay.
		name:  "base64 pem private key",
		expr:  `LS0tLS1CRUdJTi[A-Za-z0-9+/=]*`,
		lits:  []string{"LS0tLS1CRUdJTi"},
		start: afterNonWord,
		valid: func(s string, start, end int) bool {
			head := s[start:min(end, start+64)]
			head = head[:len(head)/4*4]
			b, err := base64.StdEncoding.DecodeString(head)
			return err == nil && strings.Contains(string(b), "PRIVATE KEY")
		},
	},
	authorizationPattern,
	{
		name:  "bearer token",
		expr:  `Bearer[ \t]+(?P<v>[A-Za-z0-9\-._~+/]+=*)`,
		lits:  []string{"Bearer"},
		start: afterNonWord,
		valid: func(s string, start, end int) bool {
			v := s[start:end]
			return len(v) >= 20 || len(v) >= 8 && strings.ContainsAny(v, "0123456789")
		},
		hold: `bearer[ \t]*`,
	},
	cookiePattern,
	{
		name: "session cookie",
		expr: `(?:PHPSESSID|JSESSIONID|ASP\.NET_SessionId|sessionid|connect\.sid|_session)=` +
			`(?P<v>[^\s;,"'&<>\\]+)`,
		lits: []string{"PHPSESSID=", "JSESSIONID=", "ASP.NET_SessionId=", "sessionid=", "connect.sid=", "_session="},
		valid: func(s string, start, end int) bool {
			return end-start >= 16 && !placeholder(s[start:end], false)
		},
	},
	assignment("key assignment", longKeys, longKeyLits, anywhere, longKey),
	assignment("short key assignment", shortKeys, shortKeyLits, afterNonAlnum, shortKey),
	assignment("key suffix assignment", suffixKeys, suffixKeyLits, anywhere, suffixKey),
	urlPattern,
	{
		name: "url query key",
		expr: `[?&](?:code|key)=(?P<v>[^\s&#"'<>\\]+)`,
		lits: []string{"?code=", "&code=", "?key=", "&key="},
		valid: func(s string, start, end int) bool {
			v := s[start:end]
			lower, upper, digit := classes(v)
			return len(v) >= 16 && (lower || upper) && (digit || strings.Contains(v, "%"))
		},
	},
	{
		name: "curl user",
		expr: `(?:-u(?:[ \t]+|=)?|--user(?:[ \t]+|=))['"]?[^\s:'"]*:(?P<v>[^\s'"]+)`,
		lits: []string{"-u", "--user"}, start: afterBlank,
		valid: func(s string, start, end int) bool { return !placeholder(s[start:end], false) },
		hold:  `(?:-u|--user)[ \t]*`,
	},
	{
		// Password flags whose meaning depends on the command.
		name: "command password flag",
		expr: `(?:(?:docker|podman|nerdctl)[ \t]+login\b[^\r\n]*?[ \t](?:-p|--password)(?:[ \t]+|=)|` +
			`(?:mysql|mariadb)[a-z]*[ \t]+-(?:[^\r\n]*?[ \t]-)?p|` +
			`sshpass[ \t]+-p[ \t]*|` +
			`redis-cli\b[^\r\n]*?[ \t]-a[ \t]+|` +
			`(?:mongo|mongosh)\b[^\r\n]*?[ \t]-p[ \t]+)` +
			`(?:'(?P<v>[^'\r\n]*)'|"(?P<v>[^"\r\n]*)"|(?P<v>[^\s'"]+))`,
		lits:  []string{"docker", "podman", "nerdctl", "mysql", "mariadb", "sshpass", "redis-cli", "mongo"},
		start: afterNonWord,
		valid: func(s string, start, end int) bool { return !placeholder(s[start:end], false) },
		hold: `(?:docker|podman|nerdctl)(?:[ \t]+(?:login\b[^\r\n]*)?)?|` +
			`(?:mysql|mariadb)[a-z]*(?:[ \t]+(?:-[^\r\n]*)?)?|sshpass(?:[ \t]+(?:-p[ \t]*)?)?|` +
			`(?:redis-cli|mongo|mongosh)[^\r\n]*`,
	},
	{
		name:  "openssl pass phrase",
		expr:  `-pass(?:in|out)?[ \t]+pass:(?P<v>[^\s'"]+)`,
		lits:  []string{"-pass"},
		start: afterBlank,
		valid: func(s string, start, end int) bool { return !placeholder(s[start:end], false) },
		hold:  `-pass(?:in|out)?[ \t]*`,
	},
	{
		name:  "sql password",
		expr:  `(?i)identified[ \t]+by[ \t]+(?:'(?P<v>[^'\r\n]*)'|"(?P<v>[^"\r\n]*)")`,
		lits:  []string{"identified"},
		fold:  true,
		start: afterNonWord,
		valid: func(s string, start, end int) bool { return !placeholder(s[start:end], false) },
		hold:  `identified(?:[ \t]+by)?[ \t]*(?:['"][^'"\r\n]*)?`,
	},
	{
		// <add key="ApiPassword" value="…"/> in .NET and NuGet config.
		name: "xml key and value",
		expr: `(?i)key=\\?"[^"\r\n]*(?:password|token|secret|api_?key)[^"\r\n]*\\?"[ \t]+` +
			`value=\\?"(?P<v>[^"\\\r\n]*)\\?"`,
		lits:  []string{`key="`, `key=\"`},
		fold:  true,
		start: afterNonWord,
		valid: func(s string, start, end int) bool { return !placeholder(s[start:end], false) },
		hold:  `key=\\?"[^"\r\n]*\\?"[ \t]*(?:value=\\?"[^"\r\n]*)?`,
	},

	// Webhook URLs: the secret is one path segment.
	{
		name: "slack webhook",
		expr: `hooks\.slack\.com\\?/(?:services|workflows|triggers)\\?/(?:[A-Za-z0-9]+\\?/){2,3}` +
			`(?P<v>[A-Za-z0-9]{16,})(?:[^A-Za-z0-9/\\]|$)`,
		lits: []string{"hooks.slack.com/", `hooks.slack.com\/`},
	},
	{
		name: "discord webhook",
		expr: `discord(?:app)?\.com\\?/api\\?/(?:v[0-9]+\\?/)?webhooks\\?/[0-9]+\\?/(?P<v>[A-Za-z0-9_-]{20,})`,
		lits: []string{"discord.com/api/", "discordapp.com/api/", `discord.com\/api\/`, `discordapp.com\/api\/`},
	},
	{
		name: "microsoft teams webhook",
		expr: `/IncomingWebhook/(?P<v>[A-Za-z0-9]{20,})`,
		lits: []string{"/IncomingWebhook/"},
	},
	{
		// Mattermost's incoming webhooks: /hooks/ and a 26-character id.
		name:  "mattermost webhook",
		expr:  `/hooks/(?P<v>[a-z0-9]{26})(?:[^A-Za-z0-9]|$)`,
		lits:  []string{"/hooks/"},
		valid: hasDigit,
	},
	{
		name: "zapier webhook",
		expr: `hooks\.zapier\.com/hooks/catch/[0-9]+/(?P<v>[A-Za-z0-9]{4,})`,
		lits: []string{"hooks.zapier.com/"},
	},
	{
		name:  "telegram bot token",
		expr:  `(?:bot)?(?P<v>[0-9]{5,16}:[A-Za-z0-9_-]{30,40})(?:[^A-Za-z0-9_-]|$)`,
		lits:  []string{":"},
		from:  telegramStarts,
		start: afterNonWord,
		valid: func(s string, start, end int) bool {
			colon := strings.IndexByte(s[start:end], ':')
			return mixed(s, start+colon+1, end)
		},
	},

	// AI providers.
	token("openai, anthropic or compatible key", `sk-[A-Za-z0-9_-]{20,}`, "sk-").withValid(mixed),
	token("ai provider key",
		`gsk_[A-Za-z0-9]{40,}|xai-[A-Za-z0-9_]{50,}|pplx-[A-Za-z0-9]{40,}|r8_[A-Za-z0-9_-]{30,}|`+
			`lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}|pcsk_[A-Za-z0-9_]{40,}|sk_[a-f0-9]{48}|`+
			`hf_[A-Za-z0-9]{30,}|api_org_[A-Za-z0-9]{30,}`,
		"gsk_", "xai-", "pplx-", "r8_", "lsv2_", "pcsk_", "sk_", "hf_", "api_org_"),

	// Code hosting and package registries.
	token("github token", `gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}`,
		"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
	token("gitlab token",
		`(?:glpat|gldt|glrt|glptt|glcbt|glft|glimt|glagent|gloas|glsoat|glffct|glwt)-[A-Za-z0-9_.-]{20,}|`+
			`GR1348941[A-Za-z0-9_-]{20,}`,
		"glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glft-", "glimt-", "glagent-", "gloas-", "glsoat-", "glffct-",
		"glwt-", "GR1348941"),
	token("atlassian token", `(?:ATATT|ATCTT)3[A-Za-z0-9_=+/-]{40,}|ATBB[A-Za-z0-9]{28,}`, "ATATT3", "ATCTT3", "ATBB"),
	token("package registry token",
		`npm_[A-Za-z0-9]{20,}|pypi-[A-Za-z0-9_-]{40,}|rubygems_[A-Za-z0-9]{32,}|oy2[a-z0-9]{40,}|`+
			`dckr_(?:pat|oat)_[A-Za-z0-9_-]{20,}|CLOJARS_[a-z0-9]{40,}`,
		"npm_", "pypi-", "rubygems_", "oy2", "dckr_pat_", "dckr_oat_", "CLOJARS_"),
	token("jfrog token", `AKCp[A-Za-z0-9]{60,}|cmVmdGtu[A-Za-z0-9]{50,}`, "AKCp", "cmVmdGtu"),
	token("crates.io token", `cio[A-Za-z0-9]{30,}`, "cio").withValid(func(s string, start, end int) bool {
		lower, upper, digit := classes(s[start:end])
		return digit && (lower || upper)
	}),

	// Cloud providers.
	token("aws access key id", `(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b`, "AKIA", "ASIA", "ABIA", "ACCA", "A3T"),
	{
		// A key id followed on the same line by its secret, as in the CSV
		// file the console offers or `aws configure list` output.
		name: "aws key pair",
		expr: `(?P<v>(?:AKIA|ASIA)[A-Z0-9]{16})[^A-Za-z0-9/+=\r\n]{1,8}(?P<v>[A-Za-z0-9/+]{40})` +
			`(?:[^A-Za-z0-9/+=]|$)`,
		lits:  []string{"AKIA", "ASIA"},
		start: afterNonWord,
		hold:  `(?:AKIA|ASIA)[A-Z0-9]{16}[^A-Za-z0-9/+=\r\n]{1,8}`,
	},
	token("aws session token", `(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdz|FQoGZXIvYXdz)[A-Za-z0-9+/=]{20,}`,
		"IQoJb3JpZ2luX2Vj", "FwoGZXIvYXdz", "FQoGZXIvYXdz"),
	token("amazon bedrock api key", `ABSK[A-Za-z0-9+/]{60,}={0,2}|bedrock-api-key-[A-Za-z0-9+/=%_-]{20,}`,
		"ABSK", "bedrock-api-key-"),
	{
		// A 40-character secret access key on its own: base64 with a / or
		// a +, all three character classes, and not a path.
		name:  "aws secret access key",
		expr:  `[A-Za-z0-9/+]{40}`,
		lits:  []string{"/", "+"},
		from:  awsSecretStarts,
		valid: awsSecret,
	},
	token("google api key", `AIza[A-Za-z0-9_-]{30,}`, "AIza"),
	token("google oauth token", `ya29\.[A-Za-z0-9_-]{20,}|1//0[A-Za-z0-9_-]{20,}|GOCSPX-[A-Za-z0-9_-]{20,}|4/0A[A-Za-z0-9_-]{20,}`,
		"ya29.", "1//0", "GOCSPX-", "4/0A"),
	{
		name: "azure ad client secret",
		expr: `(?P<v>[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34})(?:[^A-Za-z0-9_~.-]|$)`,
		lits: []string{"Q~"},
		from: back(4),
		valid: func(s string, start, end int) bool {
			return start == 0 || !isIdentByte(s[start-1]) && s[start-1] != '~'
		},
	},
	{
		name:  "azure storage account key",
		expr:  `(?P<v>[A-Za-z0-9+/]{86}==)(?:[^A-Za-z0-9+/=]|$)`,
		lits:  []string{"=="},
		from:  back(86),
		valid: notAfterBase64,
	},
	{
		name:  "azure container registry password",
		expr:  `(?P<v>[A-Za-z0-9+/]{42}\+ACR[A-Za-z0-9]{6})(?:[^A-Za-z0-9+/=]|$)`,
		lits:  []string{"+ACR"},
		from:  back(42),
		valid: notAfterBase64,
	},
	token("alibaba or tencent access key", `LTAI[A-Za-z0-9]{20}\b|AKID[A-Za-z0-9]{32}\b`, "LTAI", "AKID"),
	token("digitalocean token", `do[opr]_v1_[A-Za-z0-9]{32,}`, "dop_v1_", "doo_v1_", "dor_v1_"),
	token("cloudflare token", `cf[ua]t_[A-Za-z0-9]{40,}|v1\.0-[a-f0-9]{24}-[a-f0-9]{100,}`, "cfut_", "cfat_", "v1.0-"),
	token("heroku api key", `HRKU-[A-Za-z0-9_-]{40,}`, "HRKU-"),
	token("platform token",
		`sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{20,}|phx_[A-Za-z0-9_]{40,}|fig[dpuo]_[A-Za-z0-9_=-]{30,}|`+
			`tskey-[a-z]+-[A-Za-z0-9_-]{20,}|nfp_[A-Za-z0-9_]{30,}|PMAK-[A-Za-z0-9-]{50,}|CFPAT-[A-Za-z0-9_-]{40,}|`+
			`pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_.=-]{30,}|rnd_[A-Za-z0-9]{30,}|fo1_[A-Za-z0-9_-]{40,}|`+
			`fm[12][ar]?_[A-Za-z0-9+/=_-]{50,}`,
		"sbp_", "sb_secret_", "phx_", "figd_", "figp_", "figu_", "figo_", "tskey-", "nfp_", "PMAK-", "CFPAT-",
		"pscale_", "rnd_", "fo1_", "fm1", "fm2"),
	token("databricks token", `dapi[a-z0-9]{32}(?:-[0-9])?\b`, "dapi").withValid(hasDigit),
	{
		name:  "terraform cloud token",
		expr:  `[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{40,}`,
		lits:  []string{".atlasv1."},
		from:  back(14),
		start: afterNonWord,
	},
	token("pulumi token", `pul-[A-Za-z0-9]{32,}`, "pul-").withValid(hasDigit),
	token("vault token", `hv[sbr]\.[A-Za-z0-9_-]{20,}`, "hvs.", "hvb.", "hvr."),
	token("doppler token", `dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9._-]{30,}`, "dp."),
	token("1password token",
		`ops_eyJ[A-Za-z0-9+/=_-]{100,}|A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}\b`,
		"ops_eyJ", "A3-"),
	token("age secret key", `AGE-SECRET-KEY-1[0-9A-Z]{50,}`, "AGE-SECRET-KEY-1"),
	{
		name:  "airtable token",
		expr:  `pat[A-Za-z0-9]{14}\.[a-f0-9]{64}`,
		lits:  []string{"pat"},
		pre:   func(s string, at int) bool { return len(s) > at+17 && s[at+17] == '.' },
		start: afterNonWord,
	},

	// Monitoring and messaging.
	token("grafana token", `glc_[A-Za-z0-9+/]{30,}={0,3}|glsa_[A-Za-z0-9_]{32,}|eyJrIjoi[A-Za-z0-9+/]{40,}={0,3}`,
		"glc_", "glsa_", "eyJrIjoi"),
	token("new relic key", `NR(?:AK|II|JS)-[A-Za-z0-9-]{19,}`, "NRAK-", "NRII-", "NRJS-"),
	token("sentry token", `sntry[su]_[A-Za-z0-9+/=_]{40,}`, "sntrys_", "sntryu_"),
	token("slack token", `xox[abposre]-[A-Za-z0-9-]{10,}|xoxe\.xox[bp]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,}`,
		"xox", "xapp-"),
	token("resend key", `re_[A-Za-z0-9]{8}_[A-Za-z0-9]{20,}`, "re_").withValid(mixed),
	token("sendgrid or brevo key", `SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{20,}|x(?:keysib|smtpsib)-[A-Za-z0-9-]{40,}`,
		"SG.", "xkeysib-", "xsmtpsib-"),
	{
		name:  "mailgun private key",
		expr:  `(?P<v>key-[a-z0-9]{32})\b`,
		lits:  []string{"key-"},
		start: afterNonIdent,
	},
	{
		// Mailgun's hex keys and Mailchimp's API keys: 32 hex digits (or
		// letters and digits, in made-up examples), then -xxxxxxxx-xxxxxxxx
		// or the data center (-us12).
		name:  "mailgun or mailchimp key",
		expr:  `[A-Za-z0-9]{32}-(?:[a-f0-9]{8}-[a-f0-9]{8}|us[0-9]{1,2})\b`,
		lits:  []string{"-"},
		from:  alnumBack(32),
		valid: hasDigit,
		start: afterNonWord,
	},
	token("twilio api key", `SK[A-Za-z0-9]{32}\b`, "SK").withValid(hasDigit),
	{
		name:  "discord bot token",
		expr:  `[MNO][A-Za-z0-9]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}`,
		lits:  []string{"."},
		from:  discordStarts,
		start: afterNonWord,
		valid: discordToken,
	},
	{
		name:  "twitter bearer token",
		expr:  `(?P<v>A{20,}[A-Za-z0-9%]{30,})(?:[^A-Za-z0-9%+/=_-]|$)`,
		lits:  []string{"AAAAAAAAAAAAAAAAAAAA"},
		start: afterNonBase64,
		valid: func(s string, start, end int) bool {
			lower, _, digit := classes(s[start:end])
			return lower && digit
		},
	},

	// Payments and commerce.
	token("stripe key", `(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9+/=]{20,}`,
		"sk_live_", "sk_test_", "sk_prod_", "rk_live_", "rk_test_", "rk_prod_", "whsec_"),
	token("shopify token", `shp(?:at|ss|ca|pa|tka)_[A-Za-z0-9]{20,}`, "shpat_", "shpss_", "shpca_", "shppa_", "shptka_"),
	token("square or facebook token", `EAA[A-Za-z0-9_-]{40,}|sq0(?:atp|csp)-[A-Za-z0-9_-]{20,}`, "EAA", "sq0atp-", "sq0csp-").
		withValid(mixed),
	token("braintree access token", `access_token\$(?:production|sandbox)\$[0-9a-z]{8,}\$[0-9a-f]{16,}`, "access_token$"),

	// Productivity tools.
	token("mapbox secret token", `sk\.eyJ[A-Za-z0-9_-]{20,}\.[A-Za-z0-9_-]{10,}`, "sk.eyJ"),
	token("linear key", `lin_(?:api|oauth)_[A-Za-z0-9]{20,}`, "lin_api_", "lin_oauth_"),
	token("notion token", `ntn_[A-Za-z0-9]{30,}|secret_[A-Za-z0-9]{30,}\b`, "ntn_", "secret_").withValid(hasDigit),

	token("ci and code quality token",
		`sgp_[A-Za-z0-9_]{40,}|sq[upa]_[A-Za-z0-9]{40}|CCIPAT_[A-Za-z0-9_]{30,}|bkua_[A-Za-z0-9]{30,}`,
		"sgp_", "squ_", "sqp_", "sqa_", "CCIPAT_", "bkua_"),
	token("ai tool key", `fw_[A-Za-z0-9]{20,}|jina_[A-Za-z0-9_]{40,}|tvly-[A-Za-z0-9_-]{20,}|fc-[a-f0-9]{32}\b`,
		"fw_", "jina_", "tvly-", "fc-").withValid(hasDigit),
	token("launchdarkly sdk key", `sdk-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`, "sdk-"),
	token("dropbox token", `sl\.[A-Za-z0-9_.-]{100,}`, "sl.").withValid(mixed),
	{
		name:  "firebase cloud messaging server key",
		expr:  `AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,}`,
		lits:  []string{":APA91b"},
		from:  back(11),
		start: afterNonWord,
	},
	token("jwt", `eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+){0,2}`, "eyJ"),
	token("lambdaclaw api key", `lc_[A-Za-z0-9]{40,}`, "lc_"),
}

// back returns a from that puts the candidate n bytes before the literal.
func back(n int) func(dst []int, s string, i int) []int {
	return func(dst []int, s string, i int) []int {
		if i >= n {
			dst = append(dst, i-n)
		}
		return dst
	}
}

// alnumBack returns a from that puts the candidate n bytes before the
// literal when those bytes are letters and digits.
func alnumBack(n int) func(dst []int, s string, i int) []int {
	return func(dst []int, s string, i int) []int {
		if i >= n && all(s[i-n:i], isAlnum) {
			dst = append(dst, i-n)
		}
		return dst
	}
}

func hasDigit(s string, start, end int) bool {
	_, _, digit := classes(s[start:end])
	return digit
}

// notAfterBase64 reports whether s[start:end] is not the tail of longer
// base64 or of a digest such as sha512-….
func notAfterBase64(s string, start, end int) bool {
	return start == 0 || !isBase64Byte(s[start-1]) && s[start-1] != '-' && s[start-1] != '_'
}

// telegramStarts returns, for a colon at i after a run of at least five
// digits, the start of the run and of a "bot" right before it.
func telegramStarts(dst []int, s string, i int) []int {
	j := i
	for j > 0 && '0' <= s[j-1] && s[j-1] <= '9' {
		j--
	}
	if i-j < 5 {
		return dst
	}
	if j >= 3 && s[j-3:j] == "bot" {
		dst = append(dst, j-3)
	}
	return append(dst, j)
}

// discordStarts returns, for a dot at i, the start of the letters and
// digits before it when they can be the first part of a Discord bot token.
func discordStarts(dst []int, s string, i int) []int {
	j := i
	for j > 0 && i-j <= 28 && isAlnum(s[j-1]) {
		j--
	}
	if n := i - j; n >= 24 && n <= 28 && 'M' <= s[j] && s[j] <= 'O' {
		dst = append(dst, j)
	}
	return dst
}

// discordToken reports whether a match looks like a Discord bot token: its
// first part is the base64 of a user id, or at least its parts all mix
// letters and digits as generated ones do.
func discordToken(s string, start, end int) bool {
	parts := strings.Split(s[start:end], ".")
	id, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err == nil && len(id) >= 17 && len(id) <= 20 && all(string(id), func(c byte) bool { return '0' <= c && c <= '9' }) {
		return true
	}
	lower, upper, digit := classes(parts[0])
	return lower && upper && digit && mixed(parts[2], 0, len(parts[2]))
}

// awsSecretStarts returns, for a / or + at i, the start of the run of
// base64 bytes around it when the run is 40 bytes long.
func awsSecretStarts(dst []int, s string, i int) []int {
	a := i
	for a > 0 && i-a <= 40 && isAWSSecretByte(s[a-1]) {
		a--
	}
	b := i + 1
	for b < len(s) && b-a <= 40 && isAWSSecretByte(s[b]) {
		b++
	}
	if b-a == 40 {
		dst = append(dst, a)
	}
	return dst
}

func isAWSSecretByte(c byte) bool { return isAlnum(c) || c == '/' || c == '+' }

// awsSecret reports whether s[start:end], 40 bytes, is a secret access key
// on its own: not part of longer base64, a path or a URL.
func awsSecret(s string, start, end int) bool {
	v := s[start:end]
	if start > 0 && (isBase64Byte(s[start-1]) || strings.IndexByte("_-.%\\", s[start-1]) >= 0) ||
		end < len(s) && (isBase64Byte(s[end]) || strings.IndexByte("_-.%", s[end]) >= 0) {
		return false
	}
	if v[0] == '/' || v[len(v)-1] == '/' || strings.Contains(v, "//") || strings.Count(v, "/") > 3 ||
		!strings.ContainsAny(v, "/+") {
		return false
	}
	if lower, upper, digit := classes(v); !lower || !upper || !digit {
		return false
	}
	// The last line of a block of wrapped base64 is not a key: look at the
	// 60 bytes before the line break (within contextLen).
	if start > 0 && s[start-1] == '\n' {
		prev := strings.TrimSuffix(s[:start-1], "\r")
		if len(prev) >= 60 && all(prev[len(prev)-60:], isBase64Byte) {
			return false
		}
	}
	return true
}
