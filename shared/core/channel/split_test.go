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
