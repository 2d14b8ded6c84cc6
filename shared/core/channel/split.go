package channel

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// utf16Len is the length of s in UTF-16 code units, the unit of MaxLen.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// prefixWithin returns the byte length of the longest prefix of s that is
// at most max UTF-16 units long.
func prefixWithin(s string, max int) int {
	n := 0
	for i, r := range s {
		n += utf16.RuneLen(r)
		if n > max {
			return i
		}
	}
	return len(s)
}

// Cut returns s cut to at most max UTF-16 units, ending in "…" when it
// was cut (a draft longer than a message).
func Cut(s string, max int) string {
	if utf16Len(s) <= max {
		return s
	}
	return s[:prefixWithin(s, max-1)] + "…"
}

// Split cuts text into chunks of at most max UTF-16 units (max > 0),
// preferring to cut between paragraphs, then lines, then words; a single
// word longer than max is cut between runes. The chunks joined with the
// whitespace cut at give back the text.
func Split(text string, max int) []string {
	if max < 2 {
		max = 2 // every rune (one or two units) fits
	}
	text = strings.TrimSpace(text)
	var out []string
	for text != "" {
		if utf16Len(text) <= max {
			out = append(out, text)
			break
		}
		limit := prefixWithin(text, max)
		head := text[:limit]
		cut := -1
		for _, sep := range []string{"\n\n", "\n", " "} {
			if i := strings.LastIndex(head, sep); i > 0 {
				cut = i
				break
			}
		}
		if cut <= 0 {
			cut = limit
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
		}
		chunk := strings.TrimRight(text[:cut], " \n")
		if chunk != "" {
			out = append(out, chunk)
		}
		text = strings.TrimLeft(text[cut:], " \n")
	}
	return out
}
