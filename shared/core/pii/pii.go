// Package pii finds personal data in text and replaces it with stable
// tokens, for agents whose model must not see it (privacy.pii: tokenize):
// e-mail addresses, phone numbers, payment card numbers (Luhn-valid, of a
// card network's prefix and length), IBANs (valid check digits) and the
// patterns an operator configures. Each value gets a token of its kind,
// <EMAIL_1>, <PHONE_2>, numbered per session by the Vault that keeps the
// session's map; Reveal turns tokens back into the values, and Stream
// does it for streamed text, holding back a token cut between two pieces.
//
// The detectors prefer missing a value to taking an ordinary number for
// one: dates, times, versions, order numbers, prices and IP addresses are
// left alone (testdata/ordinary.txt holds that to zero).
package pii

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Kinds of the built-in detectors.
const (
	Email = "EMAIL"
	Phone = "PHONE"
	Card  = "CARD"
	IBAN  = "IBAN"
)

// Match is one value found in a text, at text[Start:End].
type Match struct {
	Kind       string
	Start, End int
}

// Pattern is an operator's own kind of personal data: values matching
// Regexp are tokenized as <Kind_n>.
type Pattern struct {
	Kind   string
	Regexp *regexp.Regexp
}

// NewPattern compiles an operator's pattern named kind: upper case
// letters and digits, starting with a letter (EMPLOYEE, not EMPLOYEE_ID:
// a token is <KIND_n>).
func NewPattern(kind, expr string) (Pattern, error) {
	if !validKind(kind) {
		return Pattern{}, fmt.Errorf("pii: pattern name %q: want upper case letters and digits, starting with a letter, at most 24", kind)
	}
	switch kind {
	case Email, Phone, Card, IBAN:
		return Pattern{}, fmt.Errorf("pii: pattern name %q is a built-in kind", kind)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return Pattern{}, fmt.Errorf("pii: pattern %s: %w", kind, err)
	}
	if re.MatchString("") {
		return Pattern{}, fmt.Errorf("pii: pattern %s matches the empty text", kind)
	}
	return Pattern{Kind: kind, Regexp: re}, nil
}

// validKind says whether kind is a pattern's name: [A-Z][A-Z0-9]{0,23}.
func validKind(kind string) bool {
	if kind == "" || len(kind) > 24 || kind[0] < 'A' || kind[0] > 'Z' {
		return false
	}
	for i := range len(kind) {
		if c := kind[i]; !(c >= 'A' && c <= 'Z' || digit(c)) {
			return false
		}
	}
	return true
}

// Scanner finds personal data: the built-in kinds and its patterns.
type Scanner struct {
	Patterns []Pattern
}

// The detectors' expressions, compiled on first use (a process that
// tokenizes nothing compiles none).
type detectors struct{ email, intlPhone, natPhone, card, iban *regexp.Regexp }

var compiled = sync.OnceValue(func() detectors {
	return detectors{
		email: regexp.MustCompile(`[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}@[A-Za-z0-9](?:[A-Za-z0-9\-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]{0,62}[A-Za-z0-9])?)*\.[A-Za-z]{2,24}`),
		// An international number: + and 7 to 15 digits in groups.
		intlPhone: regexp.MustCompile(`\+[1-9][0-9]{0,3}(?:[ .\-]?\(?[0-9]{1,5}\)?){2,6}`),
		// A national number written as one: (555) 123-4567, 555-123-4567,
		// 555.123.4567, 020 7946 0958, 0171 1234567.
		natPhone: regexp.MustCompile(`\([0-9]{2,5}\) ?[0-9]{3,4}[ .\-][0-9]{3,5}|[2-9][0-9]{2}([\-.])[0-9]{3}([\-.])[0-9]{4}|0[1-9][0-9]{1,3}[ \-/][0-9]{3,4}[ \-]?[0-9]{3,4}`),
		// 13 to 19 digits, in groups separated by single spaces or dashes.
		card: regexp.MustCompile(`[0-9](?:[ \-]?[0-9]){12,18}`),
		// An IBAN: country, check digits, up to 30 letters and digits, in
		// groups of four or not.
		iban: regexp.MustCompile(`[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}`),
	}
})

// Find returns the values of text, in order, not overlapping: where two
// detectors match at once, the first in the order e-mail, IBAN, card,
// phone, then the patterns, wins.
func (s *Scanner) Find(text string) []Match {
	var all []Match
	add := func(kind string, re *regexp.Regexp, ok func(v string, start, end int) (int, int, bool)) {
		for _, m := range re.FindAllStringIndex(text, -1) {
			start, end, keep := m[0], m[1], true
			if ok != nil {
				start, end, keep = ok(text[start:end], start, end)
			}
			if keep {
				all = append(all, Match{Kind: kind, Start: start, End: end})
			}
		}
	}
	d := compiled()
	add(Email, d.email, func(v string, s, e int) (int, int, bool) { return s, e, boundary(text, s, e) })
	add(IBAN, d.iban, func(v string, s, e int) (int, int, bool) {
		v = strings.TrimRight(v, " ")
		e = s + len(v)
		return s, e, boundary(text, s, e) && validIBAN(v)
	})
	add(Card, d.card, func(v string, s, e int) (int, int, bool) {
		return s, e, boundary(text, s, e) && !decimalAround(text, s, e) && validCard(v)
	})
	add(Phone, d.intlPhone, func(v string, s, e int) (int, int, bool) {
		v = strings.TrimRight(v, " .-(")
		e = s + len(v)
		n := digits(v)
		return s, e, n >= 7 && n <= 15 && boundary(text, s, e) && !decimalAround(text, s, e)
	})
	add(Phone, d.natPhone, func(v string, s, e int) (int, int, bool) {
		return s, e, boundary(text, s, e) && !decimalAround(text, s, e) && sameSeparators(v)
	})
	for _, p := range s.Patterns {
		add(p.Kind, p.Regexp, nil)
	}
	// Keep the first detector's match where matches overlap.
	sort.SliceStable(all, func(i, j int) bool { return all[i].Start < all[j].Start })
	var out []Match
	for _, m := range all {
		if len(out) > 0 && m.Start < out[len(out)-1].End {
			continue
		}
		out = append(out, m)
	}
	return out
}

// boundary says that text[s:e] is not part of a longer word or number:
// no letter, digit or joining mark (- _ / @ . followed by an alphanumeric)
// touches it.
func boundary(text string, s, e int) bool {
	if s > 0 {
		c := text[s-1]
		if alnum(c) || c == '_' || c == '-' || c == '/' || c == '@' || c == '+' || c == '#' || c == '.' && s > 1 && alnum(text[s-2]) {
			return false
		}
	}
	if e < len(text) {
		c := text[e]
		if alnum(c) || c == '_' || c == '@' || (c == '-' || c == '/' || c == '.' || c == ':' || c == ',') && e+1 < len(text) && alnum(text[e+1]) {
			return false
		}
	}
	return true
}

// decimalAround says that digits continue a decimal or a list around
// text[s:e]: "1.5551234567", "12,555-1234".
func decimalAround(text string, s, e int) bool {
	return s > 1 && (text[s-1] == '.' || text[s-1] == ',') && digit(text[s-2])
}

func alnum(c byte) bool { return digit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func digit(c byte) bool { return c >= '0' && c <= '9' }

func digits(v string) int {
	n := 0
	for i := range len(v) {
		if digit(v[i]) {
			n++
		}
	}
	return n
}

// sameSeparators refuses 555-123.4567: a number writes one separator.
func sameSeparators(v string) bool {
	var sep byte
	for i := range len(v) {
		if c := v[i]; c == '-' || c == '.' {
			if sep != 0 && c != sep {
				return false
			}
			sep = c
		}
	}
	return true
}

// validCard checks a card number: 13 to 19 digits of a card network's
// prefix and length, separated consistently, passing the Luhn check.
func validCard(v string) bool {
	var sep byte
	var ds []byte
	for i := range len(v) {
		switch c := v[i]; {
		case digit(c):
			ds = append(ds, c)
		case sep == 0 || c == sep:
			sep = c
		default:
			return false
		}
	}
	return network(string(ds)) && luhn(ds)
}

// network says whether n has the prefix and length of a card network:
// Visa, Mastercard, American Express, Discover, JCB, Diners Club,
// UnionPay, Maestro.
func network(n string) bool {
	l := len(n)
	pre := func(p string) bool { return strings.HasPrefix(n, p) }
	in := func(lo, hi int, k int) bool {
		var x int
		fmt.Sscanf(n[:k], "%d", &x)
		return x >= lo && x <= hi
	}
	switch {
	case pre("4"):
		return l == 13 || l == 16 || l == 19
	case in(51, 55, 2), in(2221, 2720, 4):
		return l == 16
	case pre("34"), pre("37"):
		return l == 15
	case pre("6011"), pre("65"), in(644, 649, 3):
		return l >= 16 && l <= 19
	case in(3528, 3589, 4):
		return l >= 16 && l <= 19
	case in(300, 305, 3), pre("36"), pre("38"), pre("39"):
		return l >= 14 && l <= 19
	case pre("62"):
		return l >= 16 && l <= 19
	case pre("50"), in(56, 69, 2):
		return l >= 12 && l <= 19
	}
	return false
}

// luhn is the Luhn check of a card number's digits.
func luhn(ds []byte) bool {
	sum := 0
	for i := range ds {
		d := int(ds[len(ds)-1-i] - '0')
		if i%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// ibanLengths are the IBAN lengths of the countries that use them.
var ibanLengths = map[string]int{
	"AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22, "BR": 29, "BY": 28,
	"CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18,
	"FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28, "IE": 22,
	"IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20, "LB": 28, "LC": 32, "LI": 21, "LT": 20,
	"LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15,
	"PK": 24, "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24, "SC": 31, "SE": 24, "SI": 19,
	"SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24, "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}

// validIBAN checks an IBAN's country, length and check digits (ISO 13616:
// the number, its first four characters moved to its end and letters as
// 10 to 35, is 1 modulo 97).
func validIBAN(v string) bool {
	s := strings.ReplaceAll(v, " ", "")
	if want, ok := ibanLengths[s[:2]]; !ok || len(s) != want {
		return false
	}
	s = s[4:] + s[:4]
	r := 0
	for i := range len(s) {
		c := s[i]
		switch {
		case digit(c):
			r = (r*10 + int(c-'0')) % 97
		case c >= 'A' && c <= 'Z':
			r = (r*100 + int(c-'A'+10)) % 97
		default:
			return false
		}
	}
	return r == 1
}
