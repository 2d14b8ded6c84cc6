package memorytest

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
)

// MapIndex is a memory.Index in maps: BM25 (Lucene's formula) over the
// chunks an owner may see and brute-force cosine. It is the reference the
// conformance suite is checked against, and the search engine of tests
// whose subject is elsewhere (the DynamoDB adapter, which delegates
// search). It is safe for concurrent use.
type MapIndex struct {
	mu      sync.Mutex
	entries map[entryID]record
}

// entryID is what identifies an entry.
type entryID struct{ agent, owner, key string }

type record struct {
	entry  memory.Entry
	chunks []memory.Chunk
}

var _ memory.Index = (*MapIndex)(nil)

// NewMapIndex returns an empty MapIndex.
func NewMapIndex() *MapIndex { return &MapIndex{entries: map[entryID]record{}} }

// Put implements memory.Index.
func (x *MapIndex) Put(_ context.Context, e memory.Entry, chunks []memory.Chunk) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.entries[entryID{e.Agent, e.Owner, e.Key}] = record{e, slices.Clone(chunks)}
	return nil
}

// Get implements memory.Index.
func (x *MapIndex) Get(_ context.Context, agent, owner, key string) (memory.Entry, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	r, ok := x.entries[entryID{agent, owner, key}]
	if !ok {
		return memory.Entry{}, memory.ErrNotFound
	}
	return r.entry, nil
}

// Delete implements memory.Index.
func (x *MapIndex) Delete(_ context.Context, agent, owner, key string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	delete(x.entries, entryID{agent, owner, key})
	return nil
}

// Record returns the entry stored for agent, owner and key, and its
// chunks.
func (x *MapIndex) Record(agent, owner, key string) (memory.Entry, []memory.Chunk, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	r, ok := x.entries[entryID{agent, owner, key}]
	return r.entry, slices.Clone(r.chunks), ok
}

// Len returns the number of entries stored.
func (x *MapIndex) Len() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.entries)
}

// chunksOf returns the chunks of agent that owner may see and that pass
// f, in owner, key and seq order.
func (x *MapIndex) chunksOf(agent, owner string, f memory.Filter) []memory.Match {
	var out []memory.Match
	for id, r := range x.entries {
		if id.agent != agent || !r.entry.Visible(owner) || len(f.Categories) > 0 && !slices.Contains(f.Categories, r.entry.Category) {
			continue
		}
		for _, c := range r.chunks {
			out = append(out, memory.Match{Entry: r.entry, Chunk: c})
		}
	}
	slices.SortFunc(out, func(a, b memory.Match) int {
		return cmp.Or(strings.Compare(a.Entry.Owner, b.Entry.Owner), strings.Compare(a.Entry.Key, b.Entry.Key), cmp.Compare(a.Chunk.Seq, b.Chunk.Seq))
	})
	return out
}

// Keyword implements memory.Index. The statistics are those of the chunks
// the owner may see.
func (x *MapIndex) Keyword(_ context.Context, agent, owner, query string, f memory.Filter, k int) ([]memory.Match, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	terms := slices.Compact(slices.Sorted(slices.Values(words(query))))
	all := x.chunksOf(agent, owner, memory.Filter{})
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
			var tf float64
			for _, w := range docs[i] {
				if w == t {
					tf++
				}
			}
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

// Vector implements memory.Index.
func (x *MapIndex) Vector(_ context.Context, agent, owner string, v []float32, f memory.Filter, k int) ([]memory.Match, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []memory.Match
	for _, m := range x.chunksOf(agent, owner, f) {
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
