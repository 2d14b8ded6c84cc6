package memory

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestChunkerSplit(t *testing.T) {
	tests := []struct {
		name string
		c    Chunker
		text string
		want []string
	}{
		{"empty", Chunker{}, "", nil},
		{"blank", Chunker{}, " \n\t ", nil},
		{"short text is one trimmed chunk", Chunker{}, "  hello world \n", []string{"hello world"}},
		{"exactly the size", Chunker{Size: 11}, "hello world", []string{"hello world"}},
		{"multi-byte text under the size in characters", Chunker{Size: 5}, "héllo", []string{"héllo"}},
		{
			"sentence ends, overlap from a word start", Chunker{Size: 20, Overlap: 5},
			"The cat sat. The dog ran. A bird flew away.",
			[]string{"The cat sat.", "sat. The dog ran.", "ran. A bird flew", "flew away."},
		},
		{
			"line breaks end sentences", Chunker{Size: 12, Overlap: -1},
			"Line one\nLine two\nLine three",
			[]string{"Line one", "Line two", "Line three"},
		},
		{
			"no overlap", Chunker{Size: 16, Overlap: -1},
			"alpha beta gamma delta epsilon zeta eta theta",
			[]string{"alpha beta gamma", "delta epsilon", "zeta eta theta"},
		},
		{
			"text without spaces is cut by characters", Chunker{Size: 10, Overlap: 3},
			"一二三四五六七八九十一二三四五六七八九十一二三四五",
			[]string{"一二三四五六七八九十", "八九十一二三四五六七", "五六七八九十一二三四", "二三四五"},
		},
		{
			"Chinese full stops end sentences", Chunker{Size: 8, Overlap: -1},
			"我喜欢茶。你喜欢咖啡。他喜欢水。",
			[]string{"我喜欢茶。", "你喜欢咖啡。", "他喜欢水。"},
		},
		{
			"a word longer than the size", Chunker{Size: 8, Overlap: 2},
			"abcdefghijklmnop qr",
			[]string{"abcdefgh", "ghijklmn", "mnop qr"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.c.Split(tc.text)); diff != "" {
				t.Errorf("Split (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChunkerLimits(t *testing.T) {
	tests := []struct {
		c             Chunker
		size, overlap int
	}{
		{Chunker{}, DefaultChunkSize, DefaultChunkOverlap},
		{Chunker{Size: 100}, 100, 49},
		{Chunker{Size: 100, Overlap: 10}, 100, 10},
		{Chunker{Size: 100, Overlap: -1}, 100, 0},
		{Chunker{Size: 100, Overlap: 80}, 100, 49},
		{Chunker{Size: 1, Overlap: 5}, 1, 0},
	}
	for _, tc := range tests {
		size, overlap := tc.c.limits()
		if size != tc.size || overlap != tc.overlap {
			t.Errorf("%+v.limits() = %d, %d; want %d, %d", tc.c, size, overlap, tc.size, tc.overlap)
		}
	}
}

// Chunks of long mixed texts keep every word, in order, never exceed the
// size, never split a character, and overlap.
func TestChunkerProperties(t *testing.T) {
	words := []string{"memory", "café", "naïve", "東京", "🎉", "self-hosted", "lambda", "über", "x", "Ω", "longerwordhere"}
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 50 {
		var b strings.Builder
		for i := range 200 + rng.IntN(800) {
			if i > 0 {
				b.WriteString([]string{" ", " ", " ", "\n", ". ", "! ", "\n\n"}[rng.IntN(7)])
			}
			b.WriteString(words[rng.IntN(len(words))])
		}
		text := b.String()
		c := Chunker{Size: 100 + rng.IntN(700), Overlap: rng.IntN(60)}
		size, overlap := c.limits()
		chunks := c.Split(text)
		if len(chunks) < 2 {
			t.Fatalf("round %d: %d chunks of %d characters", round, len(chunks), utf8.RuneCountInString(text))
		}
		var joined []string
		for i, ch := range chunks {
			if n := utf8.RuneCountInString(ch); n > size || n == 0 {
				t.Fatalf("round %d: chunk %d has %d characters, size %d", round, i, n, size)
			}
			if !utf8.ValidString(ch) || strings.TrimSpace(ch) != ch {
				t.Fatalf("round %d: chunk %d = %q", round, i, ch)
			}
			if i > 0 && overlap > 0 {
				first := strings.Fields(ch)[0]
				if prev := chunks[i-1]; !strings.Contains(prev, first) {
					t.Errorf("round %d: chunk %d starts with %q, not in the end of chunk %d", round, i, first, i-1)
				}
			}
			joined = append(joined, strings.Fields(ch)...)
		}
		// Every word of the text appears in order (overlaps repeat some).
		j := 0
		for _, w := range strings.Fields(text) {
			for j < len(joined) && joined[j] != w {
				j++
			}
			if j == len(joined) {
				t.Fatalf("round %d: word %q lost", round, w)
			}
		}
	}
}

func ExampleChunker() {
	c := Chunker{Size: 24, Overlap: 8}
	for _, chunk := range c.Split("Agents remember facts. They search them by keyword and by meaning.") {
		fmt.Printf("%q\n", chunk)
	}
	// Output:
	// "Agents remember facts."
	// "facts. They search them"
	// "them by keyword and by"
	// "and by meaning."
}
