package scrub

import (
	"os"
	"strings"
)

// prose returns the sentences of testdata/prose.txt: prose that mentions a
// secret, a password, a token or a key before ordinary words and codes,
// which the false-positive corpus (negatives) must keep unchanged.
func prose() []string {
	b, err := os.ReadFile("testdata/prose.txt")
	if err != nil {
		panic(err)
	}
	var out []string
	for line := range strings.Lines(string(b)) {
		if line = strings.TrimSuffix(line, "\n"); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	if len(out) < 20 {
		panic("testdata/prose.txt holds fewer than 20 sentences")
	}
	return out
}
