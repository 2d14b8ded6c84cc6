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
	"sort"
	"strings"
)

// Redacted replaces every secret Scrub finds.
const Redacted = "[REDACTED]"

// pattern is one kind of secret. When the regexp has groups named "v", only
// those groups are redacted and the rest of the match is kept as context;
// otherwise the whole match is redacted.
type pattern struct {
	name string
	re   *regexp.Regexp
	// triggers are lower-case substrings one of which must occur in the text
	// for the pattern to be able to match; nil means always try.
	triggers []string
	// valid, when set, rejects matched values that do not look like secrets.
	valid func(v string) bool
	// groups are the indexes of the "v" groups.
	groups []int
}

// keyNames are the assignment keys whose values are secrets. They match
// anywhere in an identifier (GITHUB_TOKEN, db.password, x-api-key) but must be
// followed directly by the separator, so max_tokens or secretName are not
// keys.
const keyNames = `api[_-]?key|access[_-]?key|secret[_-]?(?:access[_-]?)?key|private[_-]?key|token|secret|password|passwd|passphrase`

// pemRE matches a PEM private key block. Group 1, the END line, is unset
// when the block runs to the end of the text.
var pemRE = regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?(-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)|[\s\S]*$)`)

// Every pattern keeps its match on one line except the PEM block: Stream
// relies on it (see holdRE).
var patterns = []*pattern{
	{
		name: "pem private key",
		// A block without its END line (truncated output) is redacted to
		// the end of the text.
		re:       pemRE,
		triggers: []string{"private key"},
	},
	{
		name: "authorization header",
		re: regexp.MustCompile(`(?i)\b(?:proxy-)?authorization\\?["']?[ \t]*[:=][ \t]*["']?` +
			`(?:(?:bearer|basic|token|bot|apikey)[ \t]+)?(?P<v>[^\s"'\\]+)`),
		triggers: []string{"authorization"},
	},
	{
		name:     "bearer token",
		re:       regexp.MustCompile(`\bBearer[ \t]+(?P<v>[A-Za-z0-9\-._~+/]+=*)`),
		triggers: []string{"bearer"},
		valid: func(v string) bool {
			return len(v) >= 20 || (len(v) >= 8 && strings.ContainsAny(v, "0123456789"))
		},
	},
	{
		name: "key assignment",
		re: regexp.MustCompile(`(?i)(?:` + keyNames + `)\\?["']?[ \t]*(?::=|=>|[:=])[ \t]*(?:` +
			`"(?P<v>(?:[^"\\\r\n]|\\.)*)"|` +
			`'(?P<v>[^'\r\n]*)'|` +
			`\\"(?P<v>[^"\\\r\n]*)\\"|` +
			`\\?["']?(?P<v>[^\s"'&<>]+))`),
		triggers: []string{"key", "token", "secret", "pass"},
	},
	{
		name:     "url credentials",
		re:       regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s:/@]+:(?P<v>[^\s@/]+)@`),
		triggers: []string{"://"},
	},
	{
		name:     "openai or anthropic key",
		re:       regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}`),
		triggers: []string{"sk-"},
		valid:    mixed,
	},
	{
		name:     "github token",
		re:       regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`),
		triggers: []string{"gh", "github_pat_"},
	},
	{
		name:     "gitlab token",
		re:       regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}`),
		triggers: []string{"glpat-"},
	},
	{
		name:     "slack token",
		re:       regexp.MustCompile(`\bxox[abprs]-[A-Za-z0-9-]{10,}`),
		triggers: []string{"xox"},
	},
	{
		name:     "aws access key id",
		re:       regexp.MustCompile(`\b(?:AKIA|ASIA)[A-Z0-9]{16}\b`),
		triggers: []string{"akia", "asia"},
	},
	{
		name:     "google api key",
		re:       regexp.MustCompile(`\bAIza[A-Za-z0-9_-]{35}`),
		triggers: []string{"aiza"},
	},
	{
		name:     "stripe key",
		re:       regexp.MustCompile(`\b[rs]k_(?:live|test)_[A-Za-z0-9]{20,}`),
		triggers: []string{"k_live_", "k_test_"},
	},
	{
		name:     "hugging face token",
		re:       regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}`),
		triggers: []string{"hf_"},
	},
	{
		name:     "telegram bot token",
		re:       regexp.MustCompile(`(?:\bbot|\b)(?P<v>[0-9]{5,16}:[A-Za-z0-9_-]{35})(?:[^A-Za-z0-9_-]|$)`),
		triggers: []string{":"},
	},
	{
		name:     "jwt",
		re:       regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+){0,2}`),
		triggers: []string{"eyj"},
	},
	{
		name:     "lambdaclaw api key",
		re:       regexp.MustCompile(`\blc_[A-Za-z0-9]{40,}`),
		triggers: []string{"lc_"},
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
// It is safe on any input, including invalid UTF-8, and runs in time linear
// in len(s) for each pattern whose trigger substring occurs in s.
func Scrub(s string) string {
	if s == "" {
		return s
	}
	lower := asciiLower(s)
	var spans []span
	for _, p := range patterns {
		if !triggered(lower, p.triggers) {
			continue
		}
		spans = p.appendSpans(spans, s)
	}
	if len(spans) == 0 {
		return s
	}
	return redact(s, spans)
}

func triggered(lower string, triggers []string) bool {
	if triggers == nil {
		return true
	}
	for _, t := range triggers {
		if strings.Contains(lower, t) {
			return true
		}
	}
	return false
}

// appendSpans adds the ranges of s that p redacts.
func (p *pattern) appendSpans(spans []span, s string) []span {
	for _, m := range p.re.FindAllStringSubmatchIndex(s, -1) {
		if len(p.groups) == 0 {
			if p.valid == nil || p.valid(s[m[0]:m[1]]) {
				spans = append(spans, span{m[0], m[1]})
			}
			continue
		}
		for _, g := range p.groups {
			start, end := m[2*g], m[2*g+1]
			if start < 0 || start == end {
				continue
			}
			if p.valid == nil || p.valid(s[start:end]) {
				spans = append(spans, span{start, end})
			}
		}
	}
	return spans
}

// redact replaces the union of spans in s with Redacted. Overlapping or
// touching spans become one replacement.
func redact(s string, spans []span) string {
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
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
