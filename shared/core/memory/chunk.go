package memory

import (
	"strings"
	"unicode"
)

// Chunk sizes of seed 004 bc_chunker, in characters (runes).
const (
	DefaultChunkSize    = 800
	DefaultChunkOverlap = 100
)

// Chunker splits long texts into overlapping chunks for indexing (seed 004
// bc_chunker). Sizes count characters (runes), never bytes, so a chunk
// never ends inside a UTF-8 sequence. The zero value uses the defaults.
type Chunker struct {
	// Size is the most characters in a chunk; 0 means DefaultChunkSize.
	Size int
	// Overlap is how many characters, at most, of the end of one chunk
	// the next one repeats, so that a phrase cut by a chunk boundary is
	// still whole in one chunk; 0 means DefaultChunkOverlap, a negative
	// value means none. It is capped below Size/2.
	Overlap int
}

// limits returns the effective size and overlap.
func (c Chunker) limits() (size, overlap int) {
	size, overlap = c.Size, c.Overlap
	if size <= 0 {
		size = DefaultChunkSize
	}
	switch {
	case overlap == 0:
		overlap = DefaultChunkOverlap
	case overlap < 0:
		overlap = 0
	}
	if overlap >= size/2 {
		overlap = max(0, size/2-1)
	}
	return size, overlap
}

// Split returns the chunks of text: none for blank text, the trimmed text
// alone when it fits in one chunk, otherwise chunks of at most Size
// characters. A chunk ends at the last sentence end (., !, ?, 。, ！, ？ or a
// line break) in its second half, else at the last space there, else (a
// text without spaces, such as Chinese) after exactly Size characters. The
// next chunk starts at the first word that begins within Overlap
// characters of the previous chunk's end, or at the word that spans that
// point.
func (c Chunker) Split(text string) []string {
	size, overlap := c.limits()
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	// Cheap test first: len counts bytes, which is at least the runes.
	if len(text) <= size {
		return []string{text}
	}
	r := []rune(text)
	if len(r) <= size {
		return []string{text}
	}
	var out []string
	start := 0
	for {
		for start < len(r) && unicode.IsSpace(r[start]) {
			start++
		}
		if start >= len(r) {
			return out
		}
		if len(r)-start <= size {
			return append(out, strings.TrimSpace(string(r[start:])))
		}
		end := cutPoint(r, start, size)
		out = append(out, strings.TrimSpace(string(r[start:end])))
		start = restartPoint(r, start, end, size, overlap)
	}
}

// cutPoint returns where the chunk that starts at lo ends (exclusive): the
// best boundary in the second half of the allowed span.
func cutPoint(r []rune, lo, size int) int {
	hi := lo + size
	word := -1
	for i := hi; i > lo+size/2; i-- {
		if sentenceEnd(r, i) {
			return i
		}
		if word < 0 && (unicode.IsSpace(r[i]) || unicode.IsSpace(r[i-1])) {
			word = i
		}
	}
	if word > 0 {
		return word
	}
	return hi
}

// sentenceEnd reports whether a sentence ends just before r[i].
func sentenceEnd(r []rune, i int) bool {
	switch r[i-1] {
	case '\n', '。', '！', '？':
		return true
	case '.', '!', '?':
		return i == len(r) || unicode.IsSpace(r[i])
	}
	return false
}

// restartPoint returns where the chunk after [lo, end) starts, so that it
// repeats about overlap characters: the first word that starts in the
// last overlap characters, else the start of the word that spans them
// (if it is less than half a chunk back), else, in text without spaces,
// exactly overlap characters back. It is always after lo, and less than
// half a chunk before end, so splitting advances.
func restartPoint(r []rune, lo, end, size, overlap int) int {
	if overlap <= 0 {
		return end
	}
	wordStart := func(i int) bool { return !unicode.IsSpace(r[i]) && unicode.IsSpace(r[i-1]) }
	from := max(end-overlap, lo+1)
	for i := from; i < end; i++ {
		if wordStart(i) {
			return i
		}
	}
	for i := from - 1; i > lo && end-i < size/2; i-- {
		if wordStart(i) {
			return i
		}
	}
	return from
}
