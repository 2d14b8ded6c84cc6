package scrub

import (
	"strings"
	"unicode/utf8"
)

// Key/value assignments: password=…, "api_key": "…", --token X, <secret>…</secret>.

// longKeys are key names whose values are secrets wherever they occur in an
// identifier (GITHUB_TOKEN, db.password, x-api-key, AccountKey), as long as
// the separator follows directly, so max_tokens or secretName are not keys.
// longKeyLits are their first letters, for the candidate search.
const longKeys = `api[_-]?key|access[_-]?key|account[_-]?key|secret[_-]?(?:access[_-]?)?key(?:[_-]?base)?|` +
	`private[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key|auth[_-]?key|subscription[_-]?key|` +
	`functions[_-]?key|client[_-]?key[_-]?data|honeycomb[_-]?team|license[_-]?key|consumer[_-]?key|hmac[_-]?key|` +
	`admin[_-]?key|token|secret|password|passwd|passphrase|signature`

var longKeyLits = []string{"api", "access", "account", "secret", "private", "signing", "encryption", "master", "auth",
	"subscription", "functions", "client", "honeycomb", "license", "consumer", "hmac", "admin", "token", "pass", "sig"}

// shortKeys are names too short or too common to be found inside a word:
// they must not follow a letter or digit (DB_PASS= is a key, bypass= is
// not), and a plain `pass: x` is a test result, not a key.
const shortKeys = `auth|pass|pwd|pat|sig|app[_-]?key`

var shortKeyLits = []string{"auth", "pass", "pwd", "pat", "sig", "app"}

// suffixKeys catches other *_KEY settings (ALGOLIA_ADMIN_KEY, tls.key),
// whose values are redacted only when they look like generated keys.
const suffixKeys = `[_.-]key`

var suffixKeyLits = []string{"_key", "-key", ".key"}

// keyEndings are the endings of every key name, for a cheap test before
// the regexp runs.
var keyEndings = []string{"key", "token", "secret", "password", "passwd", "passphrase", "signature", "base",
	"data", "team", "auth", "pass", "pwd", "pat", "sig"}

type keyKind uint8

const (
	longKey keyKind = iota
	shortKey
	suffixKey
)

// assignment returns the pattern of a key named by names, followed by a
// separator (= : := => or, for XML, >) or by blanks, and a value: a quoted
// string (with a Python prefix such as f"), an escaped quoted string (JSON in
// JSON), or a word. A word never takes the backslash of an escaped quote, so
// scrubbed JSON stays valid JSON, and it ends at an escaped line break or
// tab: in text held in a JSON string (a .env file a tool writes), that is
// where the line ends.
func assignment(name, names string, lits []string, start boundary, kind keyKind) *pattern {
	return &pattern{
		name: name,
		expr: `(?i)(?P<k>` + names + `)(?P<kq>\\?["']\]?)?` +
			`(?:[ \t]*(?P<sep>:=|=>|[:=>])|(?P<sp>[ \t]))[ \t]*(?:` +
			`[rbuf]{0,2}"(?P<v>(?:[^"\\\r\n]|\\.)*)"|` +
			`[rbuf]{0,2}'(?P<v>[^'\r\n]*)'|` +
			`\\"(?P<v>[^"\\\r\n]*)\\"|` +
			"(?:[rbuf]{0,2}\\\\?[\"'`])?" + `(?P<bare>(?:[^\s"'<>\\]|\\[^\s"'<>nrt])+))`,
		lits:  lits,
		fold:  true,
		start: start,
		pre:   endsKeyName,
		pick:  func(p *pattern, s string, m []int) []span { return pickAssignment(p, s, m, kind) },
		// The hold need not name the keys again: it is tried only where pre
		// has found one.
		hold: `[a-z0-9_.-]+(?:\\?["']\]?)?[ \t]*(?:(?::=|=>|[:=>])[ \t]*)?` +
			`(?:[rbuf]{0,2}\\?"(?:[^"\\\r\n]|\\.)*|[rbuf]{0,2}\\?'[^'\r\n]*)?`,
	}
}

// endsKeyName reports whether the identifier starting at at ends with the
// ending of a key name and is followed by what can separate it from a value.
func endsKeyName(s string, at int) bool {
	e := at
	for e < len(s) && (isWordByte(s[e]) || s[e] == '-' || e == at) {
		e++
	}
	if e == len(s) || strings.IndexByte("\"'\\ \t:=>]", s[e]) < 0 {
		return false
	}
	id := s[at:e]
	for _, end := range keyEndings {
		if len(id) >= len(end) && strings.EqualFold(id[len(id)-len(end):], end) {
			return true
		}
	}
	return false
}

// pickAssignment decides what to redact in a key assignment: the value,
// unless it is a placeholder, a reference or code, or, in prose ("your
// password: click the link"), does not look like a secret.
func pickAssignment(p *pattern, s string, m []int, kind keyKind) []span {
	ks, ke := p.group(m, "k")
	key := strings.ToLower(s[ks:ke])
	is := ks
	for is > 0 && isIdentByte(s[is-1]) {
		is--
	}
	ident := s[is:ke]
	qs, _ := p.group(m, "kq")
	quotedKey := qs >= 0 || is > 0 && (s[is-1] == '"' || s[is-1] == '\'')
	sep := ""
	if a, b := p.group(m, "sep"); a >= 0 {
		sep = s[a:b]
	}
	vs, ve := p.group(m, "v")
	bare := false
	if vs < 0 {
		vs, ve = p.group(m, "bare")
		bare = true
	}
	if vs < 0 || vs == ve {
		return nil
	}
	v := s[vs:ve]
	if strings.Contains(v, Redacted) {
		return nil // scrubbed already: Scrub(Scrub(x)) == Scrub(x)
	}
	if bare {
		if codeRef(v) || path(v) {
			return nil
		}
		v = trimBare(v)
		ve = vs + len(v)
		if codeRef(v) {
			return nil
		}
	}
	if v == "" || placeholder(v, bare) {
		return nil
	}
	plain := !quotedKey && strings.EqualFold(ident, key)
	switch {
	case sep == ":" && is > 0 && s[is-1] == ':' && s[ke] == ':':
		// An ARN or URN: arn:aws:secretsmanager:…:secret:prod/db.
		return nil
	case sep == ">":
		// XML: <password>…</password>.
		if is == 0 || s[is-1] != '<' {
			return nil
		}
	case sep == "":
		// Blanks only: --password X, netrc's `password X`, SQL's
		// PASSWORD 'x', `aws configure set aws_secret_access_key X`.
		flag := strings.HasPrefix(ident, "--")
		if quotedKey || kind == suffixKey || !flag && (kind != longKey || !blankSeparated(key)) {
			return nil
		}
		if bare && (!isAlnum(v[0]) && strings.IndexByte("_./+~", v[0]) < 0 || !flag && !secretish(v)) {
			return nil // a flag, an operator (&&, |), or a word of prose
		}
		if bare && !flag && plain && !netrcValue(s, is) && !generatedKey(v) {
			// A plain "secret", "password" or "token" before a word is
			// prose ("the secret MANGO-13") unless it is netrc's key, or
			// the word is a generated key.
			return nil
		}
	case sep == ":" && bare && plain:
		// `password: x` may be prose; `pass: TestX` is a test result.
		if kind != longKey || !secretish(v) {
			return nil
		}
	}
	if bare && codeIdent(v) && (quotedKey || sep != "=" || spacedAssignment(s, ks, vs)) {
		// "password": user_password, Password: hashedPassword, x = user_token.
		return nil
	}
	if bare && kind != suffixKey && number(v) && !strings.Contains(key, "pass") && key != "pwd" {
		// "token": 5 counts tokens; a password may be digits.
		return nil
	}
	if kind == suffixKey && (!generatedKey(v) || publicKey(ident, v)) {
		return nil
	}
	return []span{{vs, ve}}
}

// publicKey reports whether a *_KEY setting holds a key that is public by
// design: a public or publishable key (Stripe's pk_live_…).
func publicKey(ident, v string) bool {
	ident = strings.ToLower(ident)
	return strings.Contains(ident, "public") || strings.Contains(ident, "publishable") ||
		strings.HasPrefix(v, "pk_live_") || strings.HasPrefix(v, "pk_test_")
}

// spacedAssignment reports whether the = between the key at ks and the
// value at vs has blanks around it, as in code (x = y) and unlike
// environment files (X=y).
func spacedAssignment(s string, ks, vs int) bool {
	return s[vs-1] == ' ' || s[vs-1] == '\t' || strings.Contains(s[ks:vs], " =") || strings.Contains(s[ks:vs], "\t=")
}

// netrcKeywords are the tokens of a .netrc file that take a value.
var netrcKeywords = map[string]bool{"machine": true, "login": true, "account": true}

// netrcValue reports whether the key word at ks is one of a .netrc entry
// (machine host login deploy password X, on one line or several): the word
// before it is "default", or the two words before it are another netrc
// keyword and its value. Those words must start within contextLen bytes
// before the key, the context a Stream keeps.
func netrcValue(s string, ks int) bool {
	blank := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	prev := func(e int) (string, int) {
		for e > 0 && blank(s[e-1]) {
			e--
		}
		b := e
		for b > 0 && !blank(s[b-1]) {
			b--
		}
		return s[b:e], b
	}
	lo := ks - contextLen
	value, at := prev(ks)
	if value == "" || at <= lo {
		return false
	}
	if strings.EqualFold(value, "default") {
		return true
	}
	keyword, at := prev(at)
	return at > lo && netrcKeywords[strings.ToLower(keyword)]
}

// blankSeparated reports whether a key may be followed by its value after
// blanks alone.
func blankSeparated(key string) bool {
	return strings.Contains(key, "pass") || strings.Contains(key, "secret") || key == "token"
}

// trimBare cuts a bare value before the next parameter of a query string
// (token=…&page=2) or a connection string (AccountKey=…;EndpointSuffix=…,
// password=…,ssl=True), and drops the punctuation that ends a statement or
// a call.
func trimBare(v string) string {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c == ';' || c == ',' || c == '&') && startsAssignment(v[i+1:]) ||
			c == '&' && strings.HasPrefix(v[i:], "&amp;") {
			v = v[:i]
			break
		}
	}
	return strings.TrimRight(v, ";,)]}")
}

// startsAssignment reports whether s starts with name=.
func startsAssignment(s string) bool {
	if s == "" || !(isAlnum(s[0]) || s[0] == '_') {
		return false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '=':
			return true
		case !isIdentByte(c):
			return false
		}
	}
	return false
}

// codeRef reports whether a bare value is code rather than a literal: a
// call or index (os.Getenv(, os.environ[, env::var(), or a chain of names
// (settings.SECRET_KEY, self.password, process.env.TOKEN).
func codeRef(v string) bool {
	if v == "" || !isNameStart(v[0]) {
		return false
	}
	dots := 0
	for i := 1; i < len(v); i++ {
		switch c := v[i]; {
		case c == '(' || c == '[':
			return true
		case c == '.' || c == ':' && i+1 < len(v) && v[i+1] == ':':
			if c == ':' {
				i++
			}
			if i+1 == len(v) || !isNameStart(v[i+1]) {
				return false
			}
			dots++
		case !isWordByte(c):
			return false
		}
	}
	return dots > 0
}

// isNameStart reports whether c can start a name in code: a letter or _.
func isNameStart(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_'
}

// path reports whether a bare value is a file path (PWD=/home/me,
// GOOGLE_APPLICATION_CREDENTIALS=./key.json).
func path(v string) bool {
	v = strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(v, "~"), "."), ".")
	return len(v) > 1 && v[0] == '/' && all(v, func(c byte) bool { return isIdentByte(c) || c == '/' })
}

// stopWords are values that configure rather than authenticate.
var stopWords = map[string]bool{
	"true": true, "false": true, "null": true, "nil": true, "none": true, "undefined": true, "empty": true,
	"required": true, "optional": true, "yes": true, "no": true, "on": true, "off": true, "n/a": true,
	"basic": true, "bearer": true, "digest": true, "oauth": true, "oauth2": true, "jwt": true, "hmac": true,
	"str": true, "string": true, "int": true, "bool": true, "boolean": true, "bytes": true, "[]byte": true,
	"object": true, "any": true, "number": true, "text": true, "secretstr": true,
	"password": true, "passwd": true, "pass": true, "pwd": true, "token": true, "secret": true, "apikey": true,
	"api_key": true, "api-key": true, "key": true, "auth": true, "signature": true, "sig": true,
	"access_token": true, "accesstoken": true, "secret_key": true, "secretkey": true, "private_key": true,
	"client_secret": true, "clientsecret": true,
}

// placeholder reports whether v stands for a secret without being one: a
// reference (${X}, $(cmd), $1, %X%, {{ x }}, <your-key>, :name, @name), a
// mask (****, xxxx), a key name (password=password, api_key=OPENAI_API_KEY),
// a word that configures (true, none, string), a comparison (== ""), or an
// instruction (your-token-here). bare values are also checked for an
// object or list opening.
func placeholder(v string, bare bool) bool {
	if v == "" {
		return true
	}
	switch c, last := v[0], v[len(v)-1]; {
	case c == '$':
		// $X, ${X}, $(cmd), $1, $_POST['x'], $this->key.
		return len(v) == 1 || v[1] == '{' || v[1] == '(' || isWordByte(v[1])
	case c == '{' && last == '}', c == '<' && last == '>', c == '%' && last == '%' && len(v) > 1:
		return true
	case c == '{' || c == '[' || c == '(' || c == '=':
		return bare || c == '='
	case (c == ':' || c == '@') && len(v) > 1 && all(v[1:], isWordByte):
		return true
	}
	if r, size := utf8.DecodeRuneInString(v); strings.Count(v, string(r))*size == len(v) && strings.ContainsRune("*x•.X#-_0?", r) ||
		strings.Contains(v, "...") || strings.Contains(v, "…") {
		return true
	}
	lower := strings.ToLower(v)
	if stopWords[lower] || strings.HasPrefix(lower, "your") || strings.HasPrefix(lower, "<") {
		return true
	}
	// An environment variable's name: DB_PASSWORD, OPENAI_API_KEY.
	if all(v, func(c byte) bool { return 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' }) &&
		strings.Contains(v, "_") {
		for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASS", "PWD", "AUTH"} {
			if strings.Contains(v, w) {
				return true
			}
		}
	}
	return false
}

// number reports whether v is a decimal number.
func number(v string) bool {
	v = strings.TrimPrefix(v, "-")
	if v == "" {
		return false
	}
	dot := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '.' && !dot && i > 0:
			dot = true
		case c < '0' || c > '9':
			return false
		}
	}
	return true
}

// secretish reports whether a bare word that follows a key in what may be
// prose or code looks like a secret rather than an ordinary word or a
// variable: long, or with a digit, a symbol, or a capital after the first
// letter that does not start a camelCase word.
func secretish(v string) bool {
	v = strings.TrimRight(v, ".,;:!?)")
	if len(v) >= 16 {
		return true
	}
	if len(v) < 6 || codeIdent(v) {
		return false
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case '0' <= c && c <= '9':
			return true
		case 'A' <= c && c <= 'Z':
			if i > 0 {
				return true
			}
		case 'a' <= c && c <= 'z', c == '-', c == '\'', c >= 0x80:
		default:
			return true
		}
	}
	return false
}

// codeIdent reports whether v reads as the name of a variable rather than a
// value: letters and underscores only, in snake_case or camelCase
// (user_password, hashedPassword, SecretValue).
func codeIdent(v string) bool {
	if v == "" || !all(v, isNameStart) {
		return false
	}
	if strings.Contains(v, "_") {
		return true
	}
	// camelCase or PascalCase: every capital starts a lower case word.
	capitals := 0
	for i := 1; i < len(v); i++ {
		if 'A' <= v[i] && v[i] <= 'Z' {
			if i+1 == len(v) || 'A' <= v[i+1] && v[i+1] <= 'Z' || 'A' <= v[i-1] && v[i-1] <= 'Z' {
				return false
			}
			capitals++
		}
	}
	return capitals > 0
}

// generatedKey reports whether the value of some *_KEY setting looks like a
// generated key: long, of key characters only, with letters and digits, and
// neither a UUID (an idempotency or partition key) nor a path.
func generatedKey(v string) bool {
	if len(v) < 16 || !all(v, func(c byte) bool { return isBase64Byte(c) || c == '_' || c == '-' }) {
		return false
	}
	if lower, upper, digit := classes(v); !digit || !lower && !upper {
		return false
	}
	if len(v) == 36 && v[8] == '-' && v[13] == '-' && v[18] == '-' && v[23] == '-' {
		return false
	}
	return !strings.Contains(v, "/") || strings.ContainsAny(v, "+=")
}

// authorizationPattern matches an Authorization header (also
// Proxy-Authorization) with an optional scheme: Bearer, Basic, token,
// AWS4-HMAC-SHA256, SSWS, ….
var authorizationPattern = &pattern{
	name: "authorization header",
	expr: `(?i)authorization(?P<kq>\\?["'])?[ \t]*(?P<sep>[:=])[ \t]*` + "(?:[rbuf]{0,2}\\\\?[\"'`])?" +
		`(?:(?P<scheme>[a-z][a-z0-9_-]*)[ \t]+)?(?P<v>[^\s"'\\]+)`,
	lits:  []string{"authorization"},
	fold:  true,
	start: afterNonWord,
	pick: func(p *pattern, s string, m []int) []span {
		vs, ve := p.group(m, "v")
		v := s[vs:ve]
		if placeholder(v, true) || codeRef(v) && strings.ContainsAny(v, "([") {
			return nil // base64(user:pass), getToken()
		}
		// "Authorization: see below" in prose.
		kq, _ := p.group(m, "kq")
		sc, se := p.group(m, "scheme")
		sepAt, _ := p.group(m, "sep")
		plain := kq < 0 && (m[0] == 0 || !isIdentByte(s[m[0]-1]) && s[m[0]-1] != '"' && s[m[0]-1] != '\'')
		if plain && s[sepAt] == ':' && (sc < 0 || !authSchemes[strings.ToLower(s[sc:se])]) && !secretish(v) {
			return nil
		}
		return []span{{vs, ve}}
	},
	hold: `authorization(?:\\?["'])?[ \t]*(?:[:=][ \t]*(?:[rbuf]{0,2}\\?["'])?(?:[a-z][a-z0-9_-]*[ \t]+)?)?`,
}

// authSchemes are the HTTP authentication schemes in use.
var authSchemes = map[string]bool{
	"basic": true, "bearer": true, "digest": true, "token": true, "bot": true, "apikey": true, "api-key": true,
	"ssws": true, "hmac": true, "aws4-hmac-sha256": true, "negotiate": true, "ntlm": true, "sharedkey": true,
	"mac": true, "hoba": true, "mutual": true, "vapid": true, "key": true, "otp": true, "dpop": true,
	"gcp-hmac-sha256": true, "goog4-hmac-sha256": true, "splunk": true, "sentry": true,
}

// cookiePattern matches a Cookie or Set-Cookie header and redacts the
// cookie values, keeping their names and attributes.
var cookiePattern = &pattern{
	name:  "cookie header",
	expr:  `(?i)(?P<set>set-)?cookie(?:\\?["'])?[ \t]*:[ \t]*(?P<c>[^\r\n"'\\]+)`,
	lits:  []string{"cookie", "set-cookie"},
	fold:  true,
	start: afterNonWord,
	pick: func(p *pattern, s string, m []int) []span {
		cs, ce := p.group(m, "c")
		set, _ := p.group(m, "set")
		var spans []span
		for i := cs; i < ce; {
			j := i + strings.IndexByte(s[i:ce]+";", ';')
			if eq := strings.IndexByte(s[i:j], '='); eq >= 0 {
				vs, ve := i+eq+1, j
				for ve > vs && s[ve-1] == ' ' {
					ve--
				}
				if ve > vs && !placeholder(s[vs:ve], true) && sensitiveCookie(s[i:i+eq], s[vs:ve]) {
					spans = append(spans, span{vs, ve})
				}
			}
			if set >= 0 {
				break // the rest are attributes: Path, Expires, …
			}
			i = j + 1
		}
		return spans
	},
	hold: `(?:set-)?cookie(?:\\?["'])?[ \t]*(?::[^\r\n"'\\]*)?`,
}

// sensitiveCookie reports whether a cookie can carry a session or a
// credential: by its name, or by a long value with digits (theme=dark and
// lang=en are kept).
func sensitiveCookie(name, value string) bool {
	name = strings.ToLower(name)
	for _, w := range []string{"sess", "sid", "token", "auth", "jwt", "login", "remember", "csrf", "xsrf", "key",
		"secret", "user", "id"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	_, _, digit := classes(value)
	return len(value) >= 16 && digit
}

// urlPattern matches the user information of a URL. A password is redacted
// (postgres://app:[REDACTED]@db:5432/prod, redis://:[REDACTED]@cache); a
// user name alone only when it is a token (a Sentry DSN's key, a token
// used as git user name).
var urlPattern = &pattern{
	name:  "url credentials",
	expr:  `(?i)[a-z][a-z0-9+.-]*://(?P<u>[^\s:/?#@"'<>]*)(?::(?P<pw>[^\s/?#"'<>]*))?@`,
	lits:  []string{"://"},
	from:  schemeStarts,
	start: afterNonWord,
	pick: func(p *pattern, s string, m []int) []span {
		if ps, pe := p.group(m, "pw"); ps >= 0 {
			if pe > ps && !placeholder(s[ps:pe], false) {
				return []span{{ps, pe}}
			}
			return nil
		}
		us, ue := p.group(m, "u")
		u := s[us:ue]
		if len(u) < 8 || !all(u, func(c byte) bool { return isWordByte(c) || c == '-' }) {
			return nil
		}
		lower, upper, digit := classes(u)
		host := s[m[1]:]
		if i := strings.IndexAny(host, "/?# \t\n\"'"); i >= 0 {
			host = host[:i]
		}
		if len(u) >= 16 && digit && (lower || upper) || strings.Contains(host, "sentry") {
			return []span{{us, ue}}
		}
		return nil
	},
}

// schemeStarts returns, for a "://" at i with an @ in the authority that
// follows, where the URL's scheme can start.
func schemeStarts(dst []int, s string, i int) []int {
	at := false
	for k := i + 3; k < len(s); k++ {
		c := s[k]
		if c == '@' {
			at = true
			break
		}
		if c == '/' || c == '?' || c == '#' || c == '"' || c == '\'' || c == '<' || c == '>' ||
			c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			break
		}
	}
	if !at {
		return dst
	}
	j := i
	for j > 0 && isSchemeByte(s[j-1]) {
		j--
	}
	// A scheme starts with a letter, after a byte that is not a word byte:
	// at the start of the run, or after a + . or - inside it.
	for k := j; k < i; k++ {
		if c := s[k] | 0x20; 'a' <= c && c <= 'z' && (k == j || !isWordByte(s[k-1])) {
			dst = append(dst, k)
		}
	}
	return dst
}

func isSchemeByte(c byte) bool {
	return isAlnum(c) || c == '+' || c == '.' || c == '-'
}
