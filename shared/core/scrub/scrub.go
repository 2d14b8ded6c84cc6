// Package scrub redacts credentials from text before it reaches session
// history, logs, events or a model (seed 000 ADR-006). Scrub works on whole
// texts; Stream works on model output that arrives in pieces; NewHandler
// scrubs log records; Known removes a configured secret whose value is known.
//
// Patterns are anchored to known prefixes (sk-, ghp_, AKIA, SG., …), to
// structures (URL credentials, webhook URLs, PEM blocks, Authorization and
// Cookie headers) or to an assignment of a credential-like key (password=,
// "api_key": …, --token X), so ordinary prose that mentions tokens, passwords
// or secrets is left alone. Where a credential sits inside a larger text, only
// the credential is redacted and the rest stays readable:
// `password=hunter2` becomes `password=[REDACTED]`,
// `postgres://app:pw@db:5432/prod` becomes `postgres://app:[REDACTED]@db:5432/prod`,
// and a SAS URL keeps every parameter but sig. In a webhook URL the secret
// is the one path segment that authorizes the call: a Slack webhook keeps
// its team and channel ids (…/services/T…/B…/[REDACTED]), a Discord webhook
// its id, a Teams webhook everything but the segment after IncomingWebhook,
// a Telegram Bot API URL everything but the token after /bot.
//
// Deliberately not redacted: values that are public by design (Stripe pk_
// publishable keys, Supabase sb_publishable_ keys, PostHog phc_ project keys,
// public keys and certificates), identifiers that are not secrets (Twilio
// account SIDs, AWS account ids, ARNs, UUIDs, hashes and digests), and
// placeholders or references (${DB_PASSWORD}, <your-token>, os.Getenv(…),
// settings.SECRET_KEY, ****).
package scrub

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Redacted replaces every secret Scrub finds.
const Redacted = "[REDACTED]"

// boundary says what may come right before the first byte of a match.
type boundary uint8

const (
	anywhere boundary = iota
	// afterNonWord works like a leading \b: a match starts after a byte
	// that is not a letter, digit or underscore.
	afterNonWord
	// afterNonAlnum allows _ . - before the match, but no letter or digit:
	// DB_PASS= is a key, bypass= is not.
	afterNonAlnum
	// afterNonIdent allows no identifier byte (letter, digit, _ . -).
	afterNonIdent
	// afterNonBase64 allows no byte that base64 text could contain.
	afterNonBase64
	// afterBlank allows only whitespace or a quote: a command-line flag.
	afterBlank
)

// allows reports whether a match may start at index at of s.
func (b boundary) allows(s string, at int) bool {
	if at == 0 {
		return true
	}
	c := s[at-1]
	switch b {
	case afterNonWord:
		return !isWordByte(c)
	case afterNonAlnum:
		return !isAlnum(c)
	case afterNonIdent:
		return !isIdentByte(c)
	case afterNonBase64:
		return !isBase64Byte(c) && c != '-' && c != '_'
	case afterBlank:
		return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '"' || c == '\''
	}
	return true
}

// pattern is one kind of secret. A match can start only where one of lits
// occurs (or where from says, given such an occurrence), so the regexp runs
// anchored at those places instead of scanning the whole text.
type pattern struct {
	name string
	// re is anchored at a candidate start. When it has groups named "v",
	// only those are redacted and the rest of the match is kept as context;
	// otherwise the whole match is redacted.
	// expr matches the secret at the candidate start; re is it compiled,
	// anchored there (by prepare).
	expr string
	re   *regexp.Regexp
	// lits are the literals whose occurrences trigger a look for a match;
	// fold means they are lower case and looked for case-insensitively.
	lits []string
	fold bool
	// from, when set, turns an occurrence of a literal at i into the
	// candidate starts of a match (appended to dst): a superset of the real
	// ones, in ascending order. Without it the occurrence is the start.
	from func(dst []int, s string, i int) []int
	// pre, when set, is a cheap test that a candidate start can match at all.
	pre func(s string, at int) bool
	// start is what may come before a match.
	start boundary
	// multiline lets a match cross line breaks; other matches are looked
	// for only up to the end of their line.
	multiline bool
	// valid, when set, rejects a redaction of s[start:end] that does not
	// look like a secret in its context.
	valid func(s string, start, end int) bool
	// pick, when set, replaces groups and valid: it returns the spans to
	// redact for match m, whose indexes are into s.
	pick func(p *pattern, s string, m []int) []span
	// hold matches, from a candidate start that passes pre to the end of a
	// line, what could be the beginning of a match that spans whitespace
	// (see Stream); empty for patterns whose matches hold no whitespace.
	// holdRE is it compiled.
	hold   string
	holdRE *regexp.Regexp

	// groups are the indexes of the "v" groups; sub indexes all named groups.
	groups []int
	sub    map[string][]int
	index  int
	// compiled compiles re and holdRE, on the first look for a match.
	compiled sync.Once
}

// group returns the bounds of the first named group n set in m, or -1, -1.
func (p *pattern) group(m []int, n string) (int, int) {
	for _, g := range p.sub[n] {
		if m[2*g] >= 0 {
			return m[2*g], m[2*g+1]
		}
	}
	return -1, -1
}

// anchored compiles expr to match only at the start of the text.
func anchored(expr string) *regexp.Regexp {
	return regexp.MustCompile(`^(?:` + expr + `)`)
}

// trigger is a literal that starts a look for a match of p.
type trigger struct {
	lit  string
	fold bool
	p    *pattern
}

// triggerSets[triggerIndex[k]] holds the triggers whose literal can begin
// with the two bytes of k (the first byte in the high half); index 0 is
// empty.
var (
	triggerIndex [1 << 16]uint8
	triggerSets  []triggerSet
)

// triggerSet is the triggers that share their first two bytes, and the
// bytes that can follow those two, as a bit set: most places where two
// bytes match a literal's are ruled out by the third.
type triggerSet struct {
	third    [4]uint64
	triggers []trigger
}

func (t *triggerSet) allows(c byte) bool { return t.third[c>>6]&(1<<(c&63)) != 0 }

func (t *triggerSet) allow(c byte) { t.third[c>>6] |= 1 << (c & 63) }

// prepare builds the trigger index, once, on the first scrub: a command
// that never scrubs never pays for it. A pattern's regexps are compiled
// when a text first has a place where it may match (compile): most log
// lines have none, and a line that has one waits for that pattern only.
var prepare = sync.OnceFunc(index)

// pemRE matches a PEM private key block (pemExpr), unanchored;
// pemPartialRE a part of one (pemPartialExpr). Stream compiles them.
var pemRE, pemPartialRE *regexp.Regexp

// pem compiles pemRE and pemPartialRE, once.
var pem = sync.OnceFunc(func() {
	pemRE = regexp.MustCompile(pemExpr)
	pemPartialRE = regexp.MustCompile(pemPartialExpr)
})

// compile compiles p's regexps, once.
func (p *pattern) compile() {
	p.compiled.Do(func() {
		p.re = anchored(p.expr)
		p.sub = map[string][]int{}
		for g, n := range p.re.SubexpNames() {
			if n != "" {
				p.sub[n] = append(p.sub[n], g)
			}
		}
		p.groups = p.sub["v"]
		if p.hold != "" {
			p.holdRE = regexp.MustCompile(`(?i)^(?:` + p.hold + `)$`)
		}
	})
}

// index builds the trigger index of the patterns' literals.
func index() {
	var all []trigger
	byKey := map[uint16][]int{}
	for i, p := range patterns {
		p.index = i
		for _, lit := range p.lits {
			id := len(all)
			all = append(all, trigger{lit, p.fold, p})
			for _, k := range litKeys(lit, p.fold) {
				byKey[k] = append(byKey[k], id)
			}
		}
	}
	sets := map[string]uint8{}
	triggerSets = []triggerSet{{}}
	for k, ids := range byKey {
		name := ""
		for _, id := range ids {
			name += string(rune(id)) + ","
		}
		n, ok := sets[name]
		if !ok {
			if len(triggerSets) > 255 {
				panic("scrub: too many distinct trigger sets")
			}
			n = uint8(len(triggerSets))
			sets[name] = n
			var set triggerSet
			for _, id := range ids {
				t := all[id]
				set.triggers = append(set.triggers, t)
				if len(t.lit) < 3 {
					for c := 0; c < 256; c++ {
						set.allow(byte(c))
					}
					continue
				}
				set.allow(t.lit[2])
				if t.fold && 'a' <= t.lit[2] && t.lit[2] <= 'z' {
					set.allow(t.lit[2] - 'a' + 'A')
				}
			}
			triggerSets = append(triggerSets, set)
		}
		triggerIndex[k] = n
	}
}

// litKeys returns the two-byte keys under which lit is found: its first two
// bytes in every case when fold, and every second byte for a one-byte lit.
func litKeys(lit string, fold bool) []uint16 {
	variants := func(c byte) []byte {
		if fold && 'a' <= c && c <= 'z' {
			return []byte{c, c - 'a' + 'A'}
		}
		return []byte{c}
	}
	var seconds []byte
	if len(lit) == 1 {
		for c := 0; c < 256; c++ {
			seconds = append(seconds, byte(c))
		}
	} else {
		seconds = variants(lit[1])
	}
	var keys []uint16
	for _, a := range variants(lit[0]) {
		for _, b := range seconds {
			keys = append(keys, uint16(a)<<8|uint16(b))
		}
	}
	return keys
}

// hasLitAt reports whether s has lit at i, ignoring ASCII case when fold.
func hasLitAt(s string, i int, lit string, fold bool) bool {
	if len(s)-i < len(lit) {
		return false
	}
	if !fold {
		return s[i:i+len(lit)] == lit
	}
	for j := 0; j < len(lit); j++ {
		c := s[i+j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lit[j] {
			return false
		}
	}
	return true
}

// candidate is a place where pattern p may match.
type candidate struct{ p, at int }

// candidates returns every candidate start in s at from or later, in one
// pass over s; with holds, only those of patterns that have a hold.
func candidates(s string, from int, holds bool, out []candidate) []candidate {
	prepare()
	var starts []int
	n := len(s)
	for i := 0; i < n; i++ {
		k := uint16(s[i]) << 8
		if i+1 < n {
			k |= uint16(s[i+1])
		}
		n := triggerIndex[k]
		if n == 0 {
			continue
		}
		set := &triggerSets[n]
		if i+2 < len(s) && !set.allows(s[i+2]) {
			continue
		}
		for _, t := range set.triggers {
			if holds && t.p.hold == "" || !hasLitAt(s, i, t.lit, t.fold) {
				continue
			}
			if t.p.from == nil {
				if i >= from {
					out = append(out, candidate{t.p.index, i})
				}
				continue
			}
			starts = t.p.from(starts[:0], s, i)
			for _, at := range starts {
				if at >= from {
					out = append(out, candidate{t.p.index, at})
				}
			}
		}
	}
	return out
}

// span is a byte range [start, end) of the input to redact.
type span struct{ start, end int }

// Scrub returns s with every credential it recognises replaced by Redacted.
// It is safe on any input, including invalid UTF-8, and its time grows
// linearly with len(s) and the number of places where a secret could start.
func Scrub(s string) string {
	spans := find(s, 0)
	if len(spans) == 0 {
		return s
	}
	return redact(s, spans)
}

// contextLen is how far back of a place after whitespace any pattern looks
// to decide about a match there (awsSecret looks at the line before).
const contextLen = 64

// scrubFrom returns text[from:] scrubbed as Scrub scrubs it at the end of
// text, where text[:from] has already been scrubbed and ends in whitespace
// (see Stream).
func scrubFrom(text string, from int) string {
	spans := find(text, from)
	if len(spans) == 0 {
		return text[from:]
	}
	for i := range spans {
		spans[i].start -= from
		spans[i].end -= from
	}
	return redact(text[from:], spans)
}

// find returns the ranges of s to redact that start at from or later. The
// text before from is context: no match can start there and end after it
// (from follows whitespace where no secret continues).
func find(s string, from int) []span {
	if len(s) == from {
		return nil
	}
	var buf [16]candidate
	cands := candidates(s, from, false, buf[:0])
	if len(cands) == 0 {
		return nil
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		if a.p != b.p {
			return a.p - b.p
		}
		return a.at - b.at
	})
	var spans []span
	var starts []int
	for i := 0; i < len(cands); {
		p := cands[i].p
		starts = starts[:0]
		for ; i < len(cands) && cands[i].p == p; i++ {
			if len(starts) == 0 || starts[len(starts)-1] != cands[i].at {
				starts = append(starts, cands[i].at)
			}
		}
		spans = patterns[p].appendSpans(spans, s, starts)
	}
	return spans
}

// holdWindow is how much of a line, from a candidate start, holdStart
// matches a hold against.
const holdWindow = 256

// holdStart returns where, in a line, the leftmost match that could go on
// past its end and spans whitespace starts, or -1.
func holdStart(line string) int {
	var buf [16]candidate
	cands := candidates(line, 0, true, buf[:0])
	slices.SortFunc(cands, func(a, b candidate) int { return a.at - b.at })
	for _, c := range cands {
		// The window bounds the cost of each try; a longer line may hold a
		// match the window cannot rule out, which only delays output.
		p := patterns[c.p]
		if p.pre != nil && !p.pre(line, c.at) {
			continue
		}
		if p.compile(); p.holdRE.MatchString(line[c.at:min(len(line), c.at+holdWindow)]) {
			return c.at
		}
	}
	return -1
}

// appendSpans adds the ranges of s that p redacts, trying p at each of
// starts like a leftmost-first scan would: a match hides the starts it
// covers.
func (p *pattern) appendSpans(spans []span, s string, starts []int) []span {
	p.compile()
	next, lineEnd := 0, -1
	for _, at := range starts {
		if at < next || !p.start.allows(s, at) || p.pre != nil && !p.pre(s, at) {
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
	for i := range m {
		if m[i] >= 0 {
			m[i] += offset
		}
	}
	if p.pick != nil {
		return append(spans, p.pick(p, s, m)...)
	}
	if len(p.groups) == 0 {
		if p.valid == nil || p.valid(s, m[0], m[1]) {
			spans = append(spans, span{m[0], m[1]})
		}
		return spans
	}
	for _, g := range p.groups {
		start, end := m[2*g], m[2*g+1]
		if start < 0 || start == end {
			continue
		}
		if p.valid == nil || p.valid(s, start, end) {
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

func isWordByte(c byte) bool {
	return isAlnum(c) || c == '_'
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// isIdentByte reports whether c can be part of a configuration key such as
// db.password, x-api-key or AWS_SECRET_ACCESS_KEY.
func isIdentByte(c byte) bool {
	return isWordByte(c) || c == '.' || c == '-'
}

func isBase64Byte(c byte) bool {
	return isAlnum(c) || c == '+' || c == '/' || c == '='
}

// all reports whether every byte of s satisfies f.
func all(s string, f func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !f(s[i]) {
			return false
		}
	}
	return true
}

// classes reports which of lower case letters, upper case letters and
// digits s holds.
func classes(s string) (lower, upper, digit bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z':
			lower = true
		case 'A' <= c && c <= 'Z':
			upper = true
		case '0' <= c && c <= '9':
			digit = true
		}
	}
	return lower, upper, digit
}

// mixed reports whether v mixes at least two of lower case, upper case and
// digits, as generated keys do and hyphenated words do not.
func mixed(s string, start, end int) bool {
	lower, upper, digit := classes(s[start:end])
	n := 0
	for _, b := range []bool{lower, upper, digit} {
		if b {
			n++
		}
	}
	return n >= 2
}
