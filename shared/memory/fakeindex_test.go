package memory_test

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/lambdaclaw/lambdaclaw/shared/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/memory/memorytest"
)

// fakeIndex is a memory.Index in maps: BM25 (Lucene's formula) over the
// chunks of one agent and brute-force cosine. It is the reference the
// conformance suite is checked against, and lets tests inject failures.
type fakeIndex struct {
	mu      sync.Mutex
	entries map[[2]string]fakeRecord // by agent, key

	// Errors to return instead of searching.
	keywordErr, vectorErr error
	// Calls counts Keyword and Vector calls, and k the last k asked.
	keywordCalls, vectorCalls, lastK int
}

type fakeRecord struct {
	entry  memory.Entry
	chunks []memory.Chunk
}

func newFakeIndex() *fakeIndex { return &fakeIndex{entries: map[[2]string]fakeRecord{}} }

func (x *fakeIndex) Put(_ context.Context, e memory.Entry, chunks []memory.Chunk) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.entries[[2]string{e.Agent, e.Key}] = fakeRecord{e, slices.Clone(chunks)}
	return nil
}

func (x *fakeIndex) Get(_ context.Context, agent, key string) (memory.Entry, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	r, ok := x.entries[[2]string{agent, key}]
	if !ok {
		return memory.Entry{}, memory.ErrNotFound
	}
	return r.entry, nil
}

func (x *fakeIndex) Delete(_ context.Context, agent, key string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.entries, [2]string{agent, key})
	return nil
}

// chunksOf returns the agent's chunks that pass f, in key and seq order.
func (x *fakeIndex) chunksOf(agent string, f memory.Filter) []memory.Match {
	var out []memory.Match
	for k, r := range x.entries {
		if k[0] != agent || len(f.Categories) > 0 && !slices.Contains(f.Categories, r.entry.Category) {
			continue
		}
		for _, c := range r.chunks {
			out = append(out, memory.Match{Entry: r.entry, Chunk: c})
		}
	}
	slices.SortFunc(out, func(a, b memory.Match) int {
		return cmp.Or(strings.Compare(a.Entry.Key, b.Entry.Key), cmp.Compare(a.Chunk.Seq, b.Chunk.Seq))
	})
	return out
}

func (x *fakeIndex) Keyword(_ context.Context, agent, query string, f memory.Filter, k int) ([]memory.Match, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.keywordCalls++
	x.lastK = k
	if x.keywordErr != nil {
		return nil, x.keywordErr
	}
	terms := slices.Compact(slices.Sorted(slices.Values(words(query))))
	all := x.chunksOf(agent, memory.Filter{}) // statistics over all the agent's chunks
	docs := make([][]string, len(all))
	df := map[string]int{}
	var total float64
	for i, m := range all {
		docs[i] = words(m.Chunk.Text)
		total += float64(len(docs[i]))
		for _, w := range slices.Compact(slices.Sorted(slices.Values(docs[i]))) {
			df[w]++
		}
	}
	const k1, b = 1.2, 0.75
	var out []memory.Match
	for i, m := range all {
		if len(f.Categories) > 0 && !slices.Contains(f.Categories, m.Entry.Category) {
			continue
		}
		var score float64
		for _, t := range terms {
			tf := float64(strings.Count(" "+strings.Join(docs[i], " ")+" ", " "+t+" "))
			if tf == 0 {
				continue
			}
			n, docsN := float64(df[t]), float64(len(all))
			idf := math.Log(1 + (docsN-n+0.5)/(n+0.5))
			avg := total / docsN
			score += idf * tf * (k1 + 1) / (tf + k1*(1-b+b*float64(len(docs[i]))/avg))
		}
		if score > 0 {
			m.Score = score
			out = append(out, m)
		}
	}
	return topK(out, k), nil
}

func (x *fakeIndex) Vector(_ context.Context, agent string, v []float32, f memory.Filter, k int) ([]memory.Match, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.vectorCalls++
	x.lastK = k
	if x.vectorErr != nil {
		return nil, x.vectorErr
	}
	var out []memory.Match
	for _, m := range x.chunksOf(agent, f) {
		if len(m.Chunk.Vector) == len(v) && len(v) > 0 {
			m.Score = memory.Cosine(v, m.Chunk.Vector)
			out = append(out, m)
		}
	}
	return topK(out, k), nil
}

// topK sorts by score, stably, and keeps k.
func topK(ms []memory.Match, k int) []memory.Match {
	slices.SortStableFunc(ms, func(a, b memory.Match) int { return cmp.Compare(b.Score, a.Score) })
	return ms[:min(k, len(ms))]
}

// words splits text like the fake embedder: lower-cased runs of letters
// and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}

// TestConformanceFake runs the conformance suite against the fake, which
// checks the suite asks only what a plain engine does.
func TestConformanceFake(t *testing.T) {
	memorytest.Run(t, func(t *testing.T) memory.Index { return newFakeIndex() })
}
