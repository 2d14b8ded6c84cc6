package channel

import (
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		max  int
		want []string
	}{
		{"short", "hello", 10, []string{"hello"}},
		{"paragraph", "aaaa bb\n\ncccc", 10, []string{"aaaa bb", "cccc"}},
		{"line", "aaaa\nbbbb cc", 10, []string{"aaaa", "bbbb cc"}},
		{"word", "aaa bbb ccc ddd", 8, []string{"aaa bbb", "ccc ddd"}},
		{"long word", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		// 😀 is two UTF-16 units, as Telegram counts.
		{"utf16", "😀😀😀", 4, []string{"😀😀", "😀"}},
	} {
		if got := Split(tc.text, tc.max); strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: Split = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		s    string
		max  int
		want string
	}{
		{"Approve", 20, "Approve"},
		{"exactly twenty chars", 20, "exactly twenty chars"},
		{"twenty-one characters", 20, "twenty-one characte…"}, // the "…" is one of the 20
		{"ab😀cd", 4, "ab…"},                                   // the emoji is two units: it does not fit beside "…"
		{"ab😀", 4, "ab😀"},
	} {
		if got := Cut(tc.s, tc.max); got != tc.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.s, tc.max, got, tc.want)
		}
	}
}
