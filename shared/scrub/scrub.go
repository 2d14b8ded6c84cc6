// Package scrub redacts credentials from text before it reaches session
// history, logs, events or a model (seed 000 ADR-006). Scrub works on whole
// texts; Stream works on model output that arrives in pieces.
//
// Patterns are anchored to known prefixes (sk-, ghp_, AKIA, …) or to an
// assignment of a credential-like key (password=, "api_key": …), so ordinary
// prose that mentions tokens, passwords or secrets is left alone. Key/value
// matches keep the key and redact only the value, so the text stays readable:
// `password=hunter2` becomes `password=[REDACTED]`.
package scrub

import (
	"regexp"
	"slices"
	"strings"
)

// Redacted replaces every secret Scrub finds.
const Redacted = "[REDACTED]"

// pattern is one kind of secret. A match can start only where one of lits
// occurs (or where starts says), so the regexp runs anchored at those places
// instead of scanning the whole text.
type pattern struct {
	name string
	// re is anchored at a candidate start. When it has groups named "v",
	// only those are redacted and the rest of the match is kept as context;
	// otherwise the whole match is redacted.
	re *regexp.Regexp
	// lits are the literal beginnings of a match; fold means they are lower
	// case and looked for case-insensitively.
	lits []string
	fold bool
	// starts, used when lits is nil, returns candidate starts in ascending
	// order, a superset of the real ones.
	starts func(s string) []int
	// wordStart requires a non-word byte (or the start of the text) before
	// the match, like a leading \b.
	wordStart bool
	// multiline lets a match cross line breaks; other matches are looked
	// for only up to the end of their line.
	multiline bool
	// valid, when set, rejects matched values that do not look like secrets.
	valid func(v string) bool
	// groups are the indexes of the "v" groups.
	groups []int
}

// keyNames are the assignment keys whose values are secrets. They match
// anywhere in an identifier (GITHUB_TOKEN, db.password, x-api-key) but must be
// followed directly by the separator, so max_tokens or secretName are not
// keys. keyStarts are their first letters, for the candidate search.
const keyNames = `api[_-]?key|access[_-]?key|secret[_-]?(?:access[_-]?)?key|private[_-]?key|token|secret|password|passwd|passphrase`

var keyStarts = []string{"api", "access", "secret", "private", "token", "pass"}

const pemExpr = `-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?(-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)|(?:[A-Za-z0-9+/=:,.\s-]|\\[nr])*)`

// pemRE matches a PEM private key block. Group 1, the END line, is unset
// when the block has no END line (truncated output): then the redaction runs
// over what can be key material (base64, header lines, escaped line breaks
// in JSON) and stops at anything else, such as the quote closing a JSON
// string.
var pemRE = regexp.MustCompile(pemExpr)

// anchored compiles expr to match only at the start of the text.
func anchored(expr string) *regexp.Regexp {
	return regexp.MustCompile(`^(?:` + expr + `)`)
}

// patterns are every secret Scrub knows. Every pattern but the PEM block
// keeps its match on one line: Stream relies on it (see holdRE).
var patterns = []*pattern{
	{
		name:      "pem private key",
		re:        anchored(pemExpr),
		lits:      []string{"-----BEGIN"},
		multiline: true,
	},
	{
		name: "authorization header",
		re: anchored(`(?i)authorization\\?["']?[ \t]*[:=][ \t]*["']?` +
			`(?:(?:bearer|basic|token|bot|apikey)[ \t]+)?(?P<v>[^\s"'\\]+)`),
		lits: []string{"authorization"}, fold: true, wordStart: true,
	},
	{
		name:      "bearer token",
		re:        anchored(`Bearer[ \t]+(?P<v>[A-Za-z0-9\-._~+/]+=*)`),
		lits:      []string{"Bearer"},
		wordStart: true,
		valid: func(v string) bool {
			return len(v) >= 20 || (len(v) >= 8 && strings.ContainsAny(v, "0123456789"))
		},
	},
	{
		// The value is a quoted string, an escaped quoted string (JSON in
		// JSON), or a word. A word never takes the backslash of an escaped
		// quote, so scrubbed JSON stays valid JSON.
		name: "key assignment",
		re: anchored(`(?i)(?:` + keyNames + `)(?:\\?["'])?[ \t]*(?::=|=>|[:=])[ \t]*(?:` +
			`"(?P<v>(?:[^"\\\r\n]|\\.)*)"|` +
			`'(?P<v>[^'\r\n]*)'|` +
			`\\"(?P<v>[^"\\\r\n]*)\\"|` +
			`(?:\\?["'])?(?P<v>(?:[^\s"'&<>\\]|\\[^\s"'&<>])+))`),
		lits: keyStarts, fold: true,
	},
	{
		name:      "url credentials",
		re:        anchored(`(?i)[a-z][a-z0-9+.-]*://[^\s:/@]+:(?P<v>[^\s@/]+)@`),
		starts:    schemeStarts,
		wordStart: true,
	},
	{
		name:      "openai or anthropic key",
		re:        anchored(`sk-[A-Za-z0-9_-]{20,}`),
		lits:      []string{"sk-"},
		wordStart: true,
		valid:     mixed,
	},
	{
		name:      "github token",
		re:        anchored(`gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}`),
		lits:      []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
		wordStart: true,
	},
	{
		name:      "gitlab token",
		re:        anchored(`glpat-[A-Za-z0-9_-]{20,}`),
		lits:      []string{"glpat-"},
		wordStart: true,
	},
	{
		name:      "slack token",
		re:        anchored(`xox[abprs]-[A-Za-z0-9-]{10,}`),
		lits:      []string{"xox"},
		wordStart: true,
	},
	{
		name:      "aws access key id",
		re:        anchored(`(?:AKIA|ASIA)[A-Z0-9]{16}\b`),
		lits:      []string{"AKIA", "ASIA"},
		wordStart: true,
	},
	{
		name:      "google api key",
		re:        anchored(`AIza[A-Za-z0-9_-]{35}`),
		lits:      []string{"AIza"},
		wordStart: true,
	},
	{
		name:      "stripe key",
		re:        anchored(`[rs]k_(?:live|test)_[A-Za-z0-9]{20,}`),
		lits:      []string{"sk_live_", "sk_test_", "rk_live_", "rk_test_"},
		wordStart: true,
	},
	{
		name:      "hugging face token",
		re:        anchored(`hf_[A-Za-z0-9]{30,}`),
		lits:      []string{"hf_"},
		wordStart: true,
	},
	{
		name:      "telegram bot token",
		re:        anchored(`(?:bot)?(?P<v>[0-9]{5,16}:[A-Za-z0-9_-]{35})(?:[^A-Za-z0-9_-]|$)`),
		starts:    telegramStarts,
		wordStart: true,
	},
	{
		name:      "jwt",
		re:        anchored(`eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+){0,2}`),
		lits:      []string{"eyJ"},
		wordStart: true,
	},
	{
		name:      "lambdaclaw api key",
		re:        anchored(`lc_[A-Za-z0-9]{40,}`),
		lits:      []string{"lc_"},
		wordStart: true,
	},
}

func init() {
	for _, p := range patterns {
		for i, n := range p.re.SubexpNames() {
			if n == "v" {
				p.groups = append(p.groups, i)
			}
		}
	}
}

// schemeStarts returns the letters that could begin a URL scheme before each
// "://".
func schemeStarts(s string) []int {
	var out []int
	for _, i := range indexAll(s, "://") {
		j := i
		for j > 0 && isSchemeByte(s[j-1]) {
			j--
		}
		for k := j; k < i; k++ {
			if c := s[k] | 0x20; 'a' <= c && c <= 'z' {
				out = append(out, k)
			}
		}
	}
	return out
}

func isSchemeByte(c byte) bool {
	return isWordByte(c) && c != '_' || c == '+' || c == '.' || c == '-'
}

// telegramStarts returns, for each run of digits just before a colon, the
// start of the run and of a "bot" right before it.
func telegramStarts(s string) []int {
	var out []int
	for _, i := range indexAll(s, ":") {
		j := i
		for j > 0 && '0' <= s[j-1] && s[j-1] <= '9' {
			j--
		}
		if i-j < 5 {
			continue
		}
		if j >= 3 && s[j-3:j] == "bot" {
			out = append(out, j-3)
		}
		out = append(out, j)
	}
	return out
}

// indexAll returns every index of sub in s, in ascending order.
func indexAll(s, sub string) []int {
	var out []int
	for i := 0; ; {
		j := strings.Index(s[i:], sub)
		if j < 0 {
			return out
		}
		out = append(out, i+j)
		i += j + 1
	}
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// mixed reports whether v mixes at least two of lower case, upper case and
// digits, as generated keys do and hyphenated words do not.
func mixed(v string) bool {
	var lower, upper, digit int
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case 'a' <= c && c <= 'z':
			lower = 1
		case 'A' <= c && c <= 'Z':
			upper = 1
		case '0' <= c && c <= '9':
			digit = 1
		}
	}
	return lower+upper+digit >= 2
}

// span is a byte range [start, end) of the input to redact.
type span struct{ start, end int }

// Scrub returns s with every credential it recognises replaced by Redacted.
// It is safe on any input, including invalid UTF-8, and its time grows
// linearly with len(s) and the number of places where a secret could start.
func Scrub(s string) string {
	if s == "" {
		return s
	}
	var lower string
	var spans []span
	for _, p := range patterns {
		var starts []int
		switch {
		case p.starts != nil:
			starts = p.starts(s)
		case p.fold:
			if lower == "" {
				lower = asciiLower(s)
			}
			starts = litStarts(lower, p.lits)
		default:
			starts = litStarts(s, p.lits)
		}
		if len(starts) > 0 {
			spans = p.appendSpans(spans, s, starts)
		}
	}
	if len(spans) == 0 {
		return s
	}
	return redact(s, spans)
}

// litStarts returns every index in s of any of lits, in ascending order.
func litStarts(s string, lits []string) []int {
	var out []int
	for _, l := range lits {
		out = append(out, indexAll(s, l)...)
	}
	if len(lits) > 1 {
		slices.Sort(out)
		out = slices.Compact(out)
	}
	return out
}

// appendSpans adds the ranges of s that p redacts, trying p at each of
// starts like a leftmost-first scan would: a match hides the starts it
// covers.
func (p *pattern) appendSpans(spans []span, s string, starts []int) []span {
	next, lineEnd := 0, -1
	for _, at := range starts {
		if at < next || p.wordStart && at > 0 && isWordByte(s[at-1]) {
			continue
		}
		end := len(s)
		if !p.multiline {
			if lineEnd < at {
				lineEnd = len(s)
				if i := strings.IndexByte(s[at:], '\n'); i >= 0 {
					lineEnd = at + i
				}
			}
			end = lineEnd
		}
		m := p.re.FindStringSubmatchIndex(s[at:end])
		if m == nil {
			continue
		}
		next = at + m[1]
		spans = p.matchSpans(spans, s, at, m)
	}
	return spans
}

// matchSpans adds the ranges to redact for match m, whose indexes are
// relative to offset in s.
func (p *pattern) matchSpans(spans []span, s string, offset int, m []int) []span {
	if len(p.groups) == 0 {
		if p.valid == nil || p.valid(s[offset+m[0]:offset+m[1]]) {
			spans = append(spans, span{offset + m[0], offset + m[1]})
		}
		return spans
	}
	for _, g := range p.groups {
		start, end := offset+m[2*g], offset+m[2*g+1]
		if m[2*g] < 0 || start == end {
			continue
		}
		if p.valid == nil || p.valid(s[start:end]) {
			spans = append(spans, span{start, end})
		}
	}
	return spans
}

// redact replaces the union of spans in s with Redacted. Overlapping or
// touching spans become one replacement.
func redact(s string, spans []span) string {
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	cur := spans[0]
	for _, sp := range spans[1:] {
		if sp.start <= cur.end {
			cur.end = max(cur.end, sp.end)
			continue
		}
		b.WriteString(s[last:cur.start])
		b.WriteString(Redacted)
		last = cur.end
		cur = sp
	}
	b.WriteString(s[last:cur.start])
	b.WriteString(Redacted)
	b.WriteString(s[cur.end:])
	return b.String()
}

// asciiLower lowers ASCII letters only, so byte offsets are unchanged and
// invalid UTF-8 passes through.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
