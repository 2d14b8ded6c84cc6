package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory/memorytest"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// embedder is memorytest.Embedder that can be made to fail or misbehave.
type embedder struct {
	err   error
	empty bool // return no vectors
	zero  bool // return a zero vector
}

func (e embedder) Model() string { return "test" }

func (e embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	switch {
	case e.err != nil:
		return nil, e.err
	case e.empty:
		return nil, nil
	case e.zero:
		return [][]float32{make([]float32, memorytest.Dims)}, nil
	}
	return memorytest.Embedder{}.Embed(ctx, texts)
}

func newMem(t *testing.T, idx memory.Index, o memory.Options) *memory.Memory {
	t.Helper()
	if o.Now == nil {
		o.Now = func() time.Time { return now }
	}
	m, err := memory.New(idx, o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestNewValidates(t *testing.T) {
	idx := newFakeIndex()
	for name, o := range map[string]memory.Options{
		"negative weight":    {VectorWeight: -1},
		"lambda above 1":     {MMRLambda: 1.5},
		"negative lambda":    {MMRLambda: -0.1},
		"min score above 1":  {MinScore: 2},
		"negative min score": {MinScore: -1},
	} {
		if _, err := memory.New(idx, o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := memory.New(nil, memory.Options{}); err == nil {
		t.Error("nil index: no error")
	}
}

func TestSearchMethod(t *testing.T) {
	boom := errors.New("engine down")
	tests := []struct {
		name               string
		emb                memory.Embedder
		keywordErr, vecErr error
		method             string
		hits               int
		keywordRan, vecRan bool
		keywordOnlyScoring bool
		vectorOnlyScoring  bool
	}{
		{name: "both", emb: embedder{}, method: memory.MethodHybrid, hits: 2, keywordRan: true, vecRan: true},
		{name: "no embedder", method: memory.MethodBM25Fallback, hits: 1, keywordRan: true, keywordOnlyScoring: true},
		{name: "query embedding fails", emb: embedder{err: boom}, method: memory.MethodBM25Fallback, hits: 1, keywordRan: true, keywordOnlyScoring: true},
		{name: "no vector returned", emb: embedder{empty: true}, method: memory.MethodBM25Fallback, hits: 1, keywordRan: true, keywordOnlyScoring: true},
		{name: "zero vector returned", emb: embedder{zero: true}, method: memory.MethodBM25Fallback, hits: 1, keywordRan: true, keywordOnlyScoring: true},
		{name: "vector search fails", emb: embedder{}, vecErr: boom, method: memory.MethodBM25Fallback, hits: 1, keywordRan: true, vecRan: true, keywordOnlyScoring: true},
		{name: "keyword search fails", emb: embedder{}, keywordErr: boom, method: memory.MethodSemanticFallback, hits: 2, keywordRan: true, vecRan: true, vectorOnlyScoring: true},
		{name: "both fail", emb: embedder{}, keywordErr: boom, vecErr: boom, method: memory.MethodNone, keywordRan: true, vecRan: true},
		{name: "keyword fails, no embedder", keywordErr: boom, method: memory.MethodNone, keywordRan: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			idx := newFakeIndex()
			seed := newMem(t, idx, memory.Options{Embedder: memorytest.Embedder{}})
			for key, text := range map[string]string{"a": "apples are red", "b": "bananas are yellow"} {
				if err := seed.Store(t.Context(), memory.Entry{Agent: "x", Key: key, Text: text, Category: memory.Core}); err != nil {
					t.Fatal(err)
				}
			}
			idx.keywordErr, idx.vectorErr = tc.keywordErr, tc.vecErr
			m := newMem(t, idx, memory.Options{Embedder: tc.emb})
			res, err := m.Search(t.Context(), "x", "", "apples", memory.SearchOptions{})
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			if res.Method != tc.method || len(res.Hits) != tc.hits {
				t.Errorf("method %q with %d hits, want %q with %d", res.Method, len(res.Hits), tc.method, tc.hits)
			}
			if res.Hits == nil {
				t.Error("Hits is nil, want an empty slice")
			}
			if ran := idx.keywordCalls > 0; ran != tc.keywordRan {
				t.Errorf("keyword ran: %v, want %v", ran, tc.keywordRan)
			}
			if ran := idx.vectorCalls > 0; ran != tc.vecRan {
				t.Errorf("vector ran: %v, want %v", ran, tc.vecRan)
			}
			for _, h := range res.Hits {
				if tc.keywordOnlyScoring && (h.VectorScore != 0 || h.Score != h.KeywordScore) {
					t.Errorf("keyword-only hit scored %+v", h)
				}
				if tc.vectorOnlyScoring && (h.KeywordScore != 0 || h.Score != h.VectorScore) {
					t.Errorf("vector-only hit scored %+v", h)
				}
			}
		})
	}
}

func TestSearchArguments(t *testing.T) {
	idx := newFakeIndex()
	m := newMem(t, idx, memory.Options{Embedder: memorytest.Embedder{}})
	for _, q := range [][3]string{
		{"", "", "q"}, {" ", "", "q"}, {"a", "", ""}, {"a", "", " \n"},
		{"a", " ", "q"}, {"a", "key:\n1", "q"}, {"a", "key:\xff", "q"}, {"a", strings.Repeat("o", memory.MaxOwnerBytes+1), "q"},
	} {
		if _, err := m.Search(t.Context(), q[0], q[1], q[2], memory.SearchOptions{}); !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("Search(%q, %q, %q): err = %v, want ErrInvalid", q[0], q[1], q[2], err)
		}
	}
	for limit, k := range map[int]int{0: 40, 1: 4, 25: 100, 100: 400, 5000: 400} {
		if _, err := m.Search(t.Context(), "a", "key:1", "q", memory.SearchOptions{Limit: limit}); err != nil {
			t.Fatal(err)
		}
		if idx.lastK != k {
			t.Errorf("limit %d: asked the index for %d candidates, want %d", limit, idx.lastK, k)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := m.Search(ctx, "a", "", "q", memory.SearchOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled search: err = %v", err)
	}
	b, err := json.Marshal(memory.Results{Hits: []memory.Hit{}, Method: memory.MethodNone})
	if err != nil || string(b) != `{"hits":[],"method":"none"}` {
		t.Errorf("JSON = %s, %v", b, err)
	}
}

func TestSearchScoring(t *testing.T) {
	store := func(t *testing.T, m *memory.Memory, key, text string, c memory.Category, age time.Duration) {
		t.Helper()
		e := memory.Entry{Agent: "x", Key: key, Text: text, Category: c, CreatedAt: now.Add(-age), UpdatedAt: now.Add(-age)}
		if err := m.Store(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	scores := func(res memory.Results) map[string]float64 {
		out := map[string]float64{}
		for _, h := range res.Hits {
			out[h.Entry.Key] = math.Round(h.Score*1e6) / 1e6
		}
		return out
	}
	const day = 24 * time.Hour

	t.Run("weights are scaled to sum to 1", func(t *testing.T) {
		m := newMem(t, newFakeIndex(), memory.Options{KeywordWeight: 2, VectorWeight: 2, HalfLife: -1})
		store(t, m, "a", "apples", memory.Daily, 0)
		res, _ := m.Search(t.Context(), "x", "", "apples", memory.SearchOptions{})
		if diff := cmp.Diff(map[string]float64{"a": 1}, scores(res)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("custom half-life", func(t *testing.T) {
		m := newMem(t, newFakeIndex(), memory.Options{Embedder: memorytest.Embedder{}, HalfLife: 10 * day})
		store(t, m, "new", "apples", memory.Daily, 0)
		store(t, m, "old", "apples", memory.Daily, 10*day)
		store(t, m, "core", "apples", memory.Core, 100*day)
		res, _ := m.Search(t.Context(), "x", "", "apples", memory.SearchOptions{})
		if diff := cmp.Diff(map[string]float64{"new": 1, "old": 0.5, "core": 1}, scores(res)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("decay off", func(t *testing.T) {
		m := newMem(t, newFakeIndex(), memory.Options{Embedder: memorytest.Embedder{}, HalfLife: -1})
		store(t, m, "old", "apples", memory.Daily, 1000*day)
		res, _ := m.Search(t.Context(), "x", "", "apples", memory.SearchOptions{})
		if diff := cmp.Diff(map[string]float64{"old": 1}, scores(res)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("minimum score", func(t *testing.T) {
		m := newMem(t, newFakeIndex(), memory.Options{Embedder: memorytest.Embedder{}, MinScore: 0.4})
		store(t, m, "new", "apples", memory.Daily, 0)
		store(t, m, "old", "apples", memory.Daily, 60*day)
		res, _ := m.Search(t.Context(), "x", "", "apples", memory.SearchOptions{})
		if diff := cmp.Diff(map[string]float64{"new": 1}, scores(res)); diff != "" {
			t.Errorf("(-want +got):\n%s", diff)
		}
	})
	t.Run("MMR puts a different memory before a near duplicate", func(t *testing.T) {
		plain := newMem(t, newFakeIndex(), memory.Options{Embedder: memorytest.Embedder{}})
		diverse := newMem(t, newFakeIndex(), memory.Options{Embedder: memorytest.Embedder{}, MMRLambda: 0.3})
		for _, m := range []*memory.Memory{plain, diverse} {
			store(t, m, "a1", "trip to lisbon in may with the family", memory.Daily, 0)
			store(t, m, "a2", "trip to lisbon in may with the family again", memory.Daily, 0)
			store(t, m, "b", "budget for the lisbon trip", memory.Daily, 0)
			store(t, m, "c", "may the force be with you", memory.Daily, 0)
		}
		keys := func(m *memory.Memory) []string {
			res, _ := m.Search(t.Context(), "x", "", "lisbon trip may family", memory.SearchOptions{})
			var out []string
			for _, h := range res.Hits {
				out = append(out, h.Entry.Key)
			}
			return out
		}
		if diff := cmp.Diff([]string{"a1", "a2", "b", "c"}, keys(plain)); diff != "" {
			t.Errorf("without MMR (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"a1", "b", "a2", "c"}, keys(diverse)); diff != "" {
			t.Errorf("with MMR (-want +got):\n%s", diff)
		}
	})
}

func TestStore(t *testing.T) {
	valid := memory.Entry{Agent: "x", Key: "k", Text: "some text", Category: memory.Core}
	tests := []struct {
		name string
		edit func(*memory.Entry)
	}{
		{"empty agent", func(e *memory.Entry) { e.Agent = "" }},
		{"blank agent", func(e *memory.Entry) { e.Agent = "  " }},
		{"empty key", func(e *memory.Entry) { e.Key = "" }},
		{"long key", func(e *memory.Entry) { e.Key = strings.Repeat("k", memory.MaxKeyBytes+1) }},
		{"blank text", func(e *memory.Entry) { e.Text = " \n" }},
		{"long text", func(e *memory.Entry) { e.Text = strings.Repeat("t", memory.MaxTextBytes+1) }},
		{"text not UTF-8", func(e *memory.Entry) { e.Text = "bad \xff" }},
		{"key not UTF-8", func(e *memory.Entry) { e.Key = "\xfe" }},
		{"empty category", func(e *memory.Entry) { e.Category = "" }},
		{"blank owner", func(e *memory.Entry) { e.Owner = " " }},
		{"long owner", func(e *memory.Entry) { e.Owner = "user:" + strings.Repeat("o", memory.MaxOwnerBytes) }},
		{"owner not UTF-8", func(e *memory.Entry) { e.Owner = "key:\xff" }},
		{"owner with a control character", func(e *memory.Entry) { e.Owner = "key:1\x00" }},
		{"unknown category", func(e *memory.Entry) { e.Category = "secret" }},
	}
	idx := newFakeIndex()
	m := newMem(t, idx, memory.Options{Embedder: memorytest.Embedder{}})
	for _, tc := range tests {
		e := valid
		tc.edit(&e)
		if err := m.Store(t.Context(), e); !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", tc.name, err)
		}
	}
	if n := idx.Len(); n != 0 {
		t.Errorf("%d invalid entries were stored", n)
	}
	for _, ref := range [][3]string{{"", "", "k"}, {"x", "", ""}, {"x", "\t", "k"}, {"x", "key:\n", "k"}} {
		if _, err := m.Get(t.Context(), ref[0], ref[1], ref[2]); !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("Get(%q, %q, %q): err = %v", ref[0], ref[1], ref[2], err)
		}
		if err := m.Forget(t.Context(), ref[0], ref[1], ref[2]); !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("Forget(%q, %q, %q): err = %v", ref[0], ref[1], ref[2], err)
		}
	}
}

func TestStoreChunksAndTimes(t *testing.T) {
	idx := newFakeIndex()
	clock := now.Add(123456 * time.Nanosecond)
	m := newMem(t, idx, memory.Options{
		Embedder: memorytest.Embedder{},
		Chunker:  memory.Chunker{Size: 40, Overlap: 10},
		Now:      func() time.Time { return clock },
	})
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 5)
	if err := m.Store(t.Context(), memory.Entry{Agent: "x", Key: "k", Text: text, Category: memory.Daily}); err != nil {
		t.Fatal(err)
	}
	e, chunks, _ := idx.Record("x", "", "k")
	want := now // the clock to the millisecond
	if !e.CreatedAt.Equal(want) || !e.UpdatedAt.Equal(want) || e.CreatedAt.Location() != time.UTC {
		t.Errorf("times = %v, %v; want %v in UTC", e.CreatedAt, e.UpdatedAt, want)
	}
	if e.Text != text {
		t.Errorf("the entry's text was changed")
	}
	if len(chunks) < 5 {
		t.Fatalf("%d chunks of a %d-character text, size 40", len(chunks), len(text))
	}
	for i, c := range chunks {
		if c.Seq != i || len(c.Text) > 40 || len(c.Vector) != memorytest.Dims {
			t.Errorf("chunk %d = seq %d, %d chars, %d dims", i, c.Seq, len(c.Text), len(c.Vector))
		}
		var norm float64
		for _, x := range c.Vector {
			norm += float64(x) * float64(x)
		}
		if math.Abs(norm-1) > 1e-5 {
			t.Errorf("chunk %d vector is not unit length: %v", i, norm)
		}
	}

	// Re-storing keeps CreatedAt.
	clock = clock.Add(time.Hour)
	if err := m.Store(t.Context(), memory.Entry{Agent: "x", Key: "k", Text: "short now", Category: memory.Daily}); err != nil {
		t.Fatal(err)
	}
	e, chunks, _ = idx.Record("x", "", "k")
	if !e.CreatedAt.Equal(want) || !e.UpdatedAt.Equal(want.Add(time.Hour)) || len(chunks) != 1 {
		t.Errorf("after re-store: created %v, updated %v, %d chunks", e.CreatedAt, e.UpdatedAt, len(chunks))
	}
}

func TestStoreEmbeddingFailure(t *testing.T) {
	boom := errors.New("rate limited")
	for name, emb := range map[string]memory.Embedder{
		"error":       embedder{err: boom},
		"no vectors":  embedder{empty: true},
		"zero vector": embedder{zero: true},
	} {
		t.Run(name, func(t *testing.T) {
			idx := newFakeIndex()
			m := newMem(t, idx, memory.Options{Embedder: emb})
			err := m.Store(t.Context(), memory.Entry{Agent: "x", Key: "k", Text: "remember me", Category: memory.Core})
			if !errors.Is(err, memory.ErrNotEmbedded) {
				t.Fatalf("err = %v, want ErrNotEmbedded", err)
			}
			e, chunks, ok := idx.Record("x", "", "k")
			if !ok || len(chunks) != 1 || chunks[0].Vector != nil || chunks[0].Text != "remember me" {
				t.Errorf("stored %+v with %+v, want the entry with one chunk and no vector", e, chunks)
			}
		})
	}
}
