package pii

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// found lists the kind and text of each match.
func found(s *Scanner, text string) []string {
	var out []string
	for _, m := range s.Find(text) {
		out = append(out, m.Kind+" "+text[m.Start:m.End])
	}
	return out
}

func TestFind(t *testing.T) {
	emp, err := NewPattern("EMPLOYEE", `EMP-[0-9]{6}`)
	if err != nil {
		t.Fatal(err)
	}
	s := &Scanner{Patterns: []Pattern{emp}}
	tests := []struct {
		text string
		want []string
	}{
		// E-mail addresses.
		{"write to ana.garcia@example.com today", []string{"EMAIL ana.garcia@example.com"}},
		{"<bob+tag@mail.example.co.uk>", []string{"EMAIL bob+tag@mail.example.co.uk"}},
		{"ANA_GARCIA@EXAMPLE.ORG, o'neil@x.io", []string{"EMAIL ANA_GARCIA@EXAMPLE.ORG", "EMAIL neil@x.io"}},
		{"not an address: user@localhost, @handle, a@b", nil},
		// Phone numbers.
		{"call +1 (555) 123-4567 now", []string{"PHONE +1 (555) 123-4567"}},
		{"+44 20 7946 0958", []string{"PHONE +44 20 7946 0958"}},
		{"+4915112345678", []string{"PHONE +4915112345678"}},
		{"(555) 123-4567 or 555-123-4567 or 555.123.4567", []string{"PHONE (555) 123-4567", "PHONE 555-123-4567", "PHONE 555.123.4567"}},
		{"London 020 7946 0958, Berlin 030 12345678", []string{"PHONE 020 7946 0958", "PHONE 030 12345678"}},
		{"+1 555", nil},
		// Card numbers: Luhn-valid, of a network's prefix and length.
		{"card 4111 1111 1111 1111 exp 12/29", []string{"CARD 4111 1111 1111 1111"}},
		{"4111-1111-1111-1111", []string{"CARD 4111-1111-1111-1111"}},
		{"5500005555555559 and 378282246310005", []string{"CARD 5500005555555559", "CARD 378282246310005"}},
		{"4111 1111 1111 1112", nil}, // Luhn fails
		{"1234567812345670", nil},    // Luhn passes, no network
		{"4111 1111-1111 1111", nil}, // mixed separators
		// IBANs with valid check digits.
		{"IBAN DE89 3704 0044 0532 0130 00 please", []string{"IBAN DE89 3704 0044 0532 0130 00"}},
		{"GB82WEST12345698765432", []string{"IBAN GB82WEST12345698765432"}},
		{"DE89 3704 0044 0532 0130 01", nil}, // check digits fail
		{"XX89370400440532013000", nil},      // no such country
		// The operator's patterns.
		{"employee EMP-004211 joined", []string{"EMPLOYEE EMP-004211"}},
		// Several kinds in one text, in order.
		{"ana@example.com / +33 1 42 68 53 00 / FR14 2004 1010 0505 0001 3M02 606",
			[]string{"EMAIL ana@example.com", "PHONE +33 1 42 68 53 00", "IBAN FR14 2004 1010 0505 0001 3M02 606"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, found(s, tt.text)); diff != "" {
			t.Errorf("Find(%q) (-want +got):\n%s", tt.text, diff)
		}
	}
}

// TestNoFalsePositives holds the detectors to no match on ordinary
// numbers: dates, times, versions, order numbers, prices, addresses.
func TestNoFalsePositives(t *testing.T) {
	f, err := os.Open("testdata/ordinary.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := &Scanner{}
	sc := bufio.NewScanner(f)
	lines := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		lines++
		if got := found(s, line); len(got) > 0 {
			t.Errorf("false positives %q in %q", got, line)
		}
	}
	if lines < 15 {
		t.Fatalf("the corpus has %d lines", lines)
	}
}

func TestNewPattern(t *testing.T) {
	for _, tt := range []struct{ kind, expr, want string }{
		{"employee", `x`, "want upper case letters"},
		{"EMPLOYEE_ID", `x`, "want upper case letters"},
		{"EMAIL", `x`, "is a built-in kind"},
		{"BADGE", `(`, "missing closing )"},
		{"BADGE", `x*`, "matches the empty text"},
	} {
		if _, err := NewPattern(tt.kind, tt.expr); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewPattern(%q, %q) = %v, want %q", tt.kind, tt.expr, err, tt.want)
		}
	}
}

var values = map[string]string{"<EMAIL_1>": `ana@example.com`, "<PHONE_2>": "+44 20 7946 0958", "<BADGE_1>": `a"b\c`}

func value(tok string) (string, bool) { v, ok := values[tok]; return v, ok }

func TestReveal(t *testing.T) {
	got := Reveal("mail <EMAIL_1>, call <PHONE_2>; <EMAIL_9> and <email_1> stay", value)
	if want := "mail ana@example.com, call +44 20 7946 0958; <EMAIL_9> and <email_1> stay"; got != want {
		t.Errorf("Reveal = %q, want %q", got, want)
	}
	got = RevealJSON(`{"path":"x.txt","content":"to <EMAIL_1> and <BADGE_1>"}`, value)
	if want := `{"path":"x.txt","content":"to ana@example.com and a\"b\\c"}`; got != want {
		t.Errorf("RevealJSON = %q, want %q", got, want)
	}
}

// TestStream: a token cut anywhere between pieces is revealed whole, and
// text that only looks like the start of one is not held for long.
func TestStream(t *testing.T) {
	text := "Write to <EMAIL_1> or call <PHONE_2>. 3 < 4, <b>bold</b>, <EMAIL_1"
	want := "Write to ana@example.com or call +44 20 7946 0958. 3 < 4, <b>bold</b>, <EMAIL_1"
	for size := 1; size <= len(text); size++ {
		var got strings.Builder
		pieces := 0
		s := NewStream(func(p string) { got.WriteString(p); pieces++ }, value)
		for i := 0; i < len(text); i += size {
			s.Write(text[i:min(i+size, len(text))])
		}
		s.Flush()
		if got.String() != want {
			t.Fatalf("pieces of %d: %q, want %q", size, got.String(), want)
		}
	}
	// A '<' that cannot start a token is not held.
	var got []string
	s := NewStream(func(p string) { got = append(got, p) }, value)
	s.Write("a < b")
	if !cmp.Equal([]string{"a < b"}, got) {
		t.Errorf("emitted %q, want a < b at once", got)
	}
	s.Write(" <EMAIL_")
	if !cmp.Equal([]string{"a < b", " "}, got) {
		t.Errorf("emitted %q, want the start of a token held", got)
	}
}
