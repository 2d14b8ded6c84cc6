package sqlite

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory/memorytest"
)

func TestMemoryIndex(t *testing.T) {
	memorytest.Run(t, func(t *testing.T) memory.Index {
		return open(t, tempPath(t)).MemoryIndex()
	})
}

func newTestMemory(t *testing.T, idx memory.Index) *memory.Memory {
	t.Helper()
	m, err := memory.New(idx, memory.Options{Embedder: memorytest.Embedder{}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMemoryHostileKeywordQueries(t *testing.T) {
	idx := open(t, tempPath(t)).MemoryIndex()
	m := newTestMemory(t, idx)
	if err := m.Store(t.Context(), memory.Entry{Agent: "main", Key: "k", Text: "plain words and quotes", Category: memory.Custom}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"\x00", "quotes\x00\"", "\"\x00", "\xff\xfe quotes", "quotes \"", "\u2028quotes", "NEAR/3", "quotes NEAR/2 plain",
		"{body}: x", "body : \"plain\"", "body:plain", "-body:x", "quotes AND rowid:1", "^", "\"\"\"\"\"",
	} {
		kw, err := idx.Keyword(t.Context(), "main", "", q, memory.Filter{}, 10)
		if err != nil {
			t.Errorf("Keyword(%q): %v", q, err)
		}
		for _, mt := range kw {
			if mt.Entry.Agent != "main" {
				t.Errorf("Keyword(%q) escaped its scope: %+v", q, mt.Entry)
			}
		}
	}
	// Another agent's matching memory stays out of every result.
	other := memory.Entry{Agent: "other", Key: "k", Text: "plain words and quotes", Category: memory.Custom}
	if err := m.Store(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	kw, err := idx.Keyword(t.Context(), "main", "", `words OR rowid > 0`, memory.Filter{}, 10)
	if err != nil || len(kw) != 1 || kw[0].Entry.Agent != "main" {
		t.Errorf("query syntax in words = %+v, %v; want main's entry only", kw, err)
	}
}

func TestQueryTerms(t *testing.T) {
	tests := []struct {
		query string
		want  []string
	}{
		{"hello world", []string{`"hello"`, `"world"`}},
		{`say "hi" * NEAR(`, []string{`"say"`, `"""hi"""`, `"NEAR("`}},
		{"Hello hello HELLO", []string{`"Hello"`}},
		{"nul\x00byte\ttab", []string{`"nul"`, `"byte"`, `"tab"`}},
		{"bad \xff utf8", []string{`"bad"`, `"utf8"`}},
		{"東京 タワー 🎉", []string{`"東京"`, `"タワー"`}},
		{"* ( ) \" -- ", nil},
		{"", nil},
	}
	for _, tc := range tests {
		if diff := gocmp.Diff(tc.want, queryTerms(tc.query)); diff != "" {
			t.Errorf("queryTerms(%q) (-want +got):\n%s", tc.query, diff)
		}
	}
	var long []string
	for i := range 2 * maxQueryTerms {
		long = append(long, fmt.Sprint("w", i))
	}
	if n := len(queryTerms(strings.Join(long, " "))); n != maxQueryTerms {
		t.Errorf("%d terms of a long query, want %d", n, maxQueryTerms)
	}
}

// Beyond the budget, keyword search keeps the rarest words, or scores the
// newest matches of the rarest word.
func TestMemoryKeywordBudget(t *testing.T) {
	idx := open(t, tempPath(t)).MemoryIndex()
	idx.budget = 20
	ctx := t.Context()
	var recs []memory.Record
	add := func(key, text string) {
		e := memory.Entry{Agent: "main", Key: key, Text: text, Category: memory.Daily}
		recs = append(recs, memory.Record{Entry: e, Chunks: []memory.Chunk{{Text: text}}})
	}
	for i := range 100 {
		add(fmt.Sprintf("common-%03d", i), fmt.Sprintf("the user said thing %d", i))
	}
	add("rare-1", "the user likes zebras")
	add("rare-2", "zebras zebras everywhere")
	if err := idx.PutMany(ctx, recs); err != nil {
		t.Fatal(err)
	}
	// Another agent's chunks, and another owner's, do not count against
	// this one's budget.
	if err := idx.Put(ctx, memory.Entry{Agent: "other", Key: "k", Text: "zebras", Category: memory.Daily}, []memory.Chunk{{Text: "zebras"}}); err != nil {
		t.Fatal(err)
	}
	recs = recs[:0]
	for i := range 2 * idx.budget {
		e := memory.Entry{Agent: "main", Owner: "key:b", Key: fmt.Sprint("b-", i), Text: "zebras", Category: memory.Daily}
		recs = append(recs, memory.Record{Entry: e, Chunks: []memory.Chunk{{Text: e.Text}}})
	}
	if err := idx.PutMany(ctx, recs); err != nil {
		t.Fatal(err)
	}

	lo, hi := chunkRange(1)
	terms, err := idx.affordableTerms(ctx, queryTerms("user zebras the"), lo, hi)
	if diff := gocmp.Diff([]string{`"zebras"`}, terms); err != nil || diff != "" {
		t.Errorf("affordableTerms (-want +got), %v:\n%s", err, diff)
	}
	kw, err := idx.Keyword(ctx, "main", "", "user zebras the", memory.Filter{}, 5)
	if err != nil {
		t.Fatal(err)
	}
	if got := keysOf(kw); !slices.Equal(got, []string{"rare-2", "rare-1"}) {
		t.Errorf("common and rare words = %q, want the rare word's matches, best first", got)
	}
	kw, err = idx.Keyword(ctx, "main", "", "user said", memory.Filter{}, 5)
	if err != nil || len(kw) != 5 {
		t.Fatalf("only common words: %d matches, %v; want 5", len(kw), err)
	}
	for _, m := range kw {
		if m.Entry.Key < "common-080" && m.Entry.Key != "rare-1" {
			t.Errorf("only common words: %q is outside the newest %d matches", m.Entry.Key, idx.budget)
		}
	}
	kw, err = idx.Keyword(ctx, "main", "", "user said", memory.Filter{Categories: []memory.Category{memory.Daily}}, 5)
	if err != nil || len(kw) != 5 {
		t.Errorf("only common words, filtered: %d matches, %v; want 5", len(kw), err)
	}
}

func keysOf(ms []memory.Match) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Entry.Key)
	}
	return out
}

func TestMemoryReopenKeepsMemories(t *testing.T) {
	path := tempPath(t)
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	m := newTestMemory(t, db.MemoryIndex())
	for i := range 20 {
		e := memory.Entry{Agent: "main", Key: fmt.Sprint(i), Text: fmt.Sprintf("Fact number %d about sailing.", i), Category: memory.Core}
		if err := m.Store(t.Context(), e); err != nil {
			t.Fatal(err)
		}
	}
	before, err := m.Search(t.Context(), "main", "", "sailing fact 7", memory.SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = open(t, path)
	m = newTestMemory(t, db.MemoryIndex())
	after, err := m.Search(t.Context(), "main", "", "sailing fact 7", memory.SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(before, after); diff != "" {
		t.Errorf("search after reopening (-before +after):\n%s", diff)
	}
	if after.Method != memory.MethodHybrid || len(after.Hits) != 10 || after.Hits[0].Entry.Key != "7" {
		t.Errorf("after reopening: %s, %d hits, first %q", after.Method, len(after.Hits), after.Hits[0].Entry.Key)
	}
}

// Two DBs on one file stand for two processes: writes by one must reach
// the other's in-memory vectors.
func TestMemoryWritesByAnotherProcess(t *testing.T) {
	path := tempPath(t)
	a, b := open(t, path).MemoryIndex(), open(t, path).MemoryIndex()
	ma, mb := newTestMemory(t, a), newTestMemory(t, b)
	ctx := t.Context()
	store := func(m *memory.Memory, key, text string) {
		t.Helper()
		if err := m.Store(ctx, memory.Entry{Agent: "main", Key: key, Text: text, Category: memory.Daily}); err != nil {
			t.Fatal(err)
		}
	}
	vectorKeys := func(x *MemoryIndex) []string {
		t.Helper()
		ms, err := x.Vector(ctx, "main", "", memorytest.Vector("boats"), memory.Filter{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ks []string
		for _, m := range ms {
			ks = append(ks, m.Entry.Key)
		}
		slices.Sort(ks)
		return ks
	}
	store(ma, "one", "boats in the harbour")
	if got := vectorKeys(a); !slices.Equal(got, []string{"one"}) {
		t.Fatalf("a sees %q", got)
	}
	store(mb, "two", "more boats")
	if got := vectorKeys(a); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("after b stored, a sees %q", got)
	}
	store(ma, "three", "even more boats")
	if got := vectorKeys(b); !slices.Equal(got, []string{"one", "three", "two"}) {
		t.Errorf("after a stored, b sees %q", got)
	}
	if err := mb.Forget(ctx, "main", "", "one"); err != nil {
		t.Fatal(err)
	}
	if got := vectorKeys(a); !slices.Equal(got, []string{"three", "two"}) {
		t.Errorf("after b forgot, a sees %q", got)
	}
}

// The in-memory vectors, after random puts and deletes, rank exactly like
// a brute-force scan; large sets take the parallel path.
func TestVectorCacheMatchesBruteForce(t *testing.T) {
	for _, n := range []int{50, 3 * parallelRows} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(n)))
			const dims = 16
			cats := []memory.Category{memory.Core, memory.Daily, memory.Custom}
			type row struct {
				chunk int64
				cat   memory.Category
				vec   []float32
			}
			truth := map[int64][]row{} // by memory id
			av := &spaceVectors{}
			var nextChunk int64
			for i := range n * 2 {
				mem := int64(rng.IntN(n))
				// Replace the memory's rows, or delete it one time in four.
				av.remove(mem)
				delete(truth, mem)
				if i%4 == 3 {
					continue
				}
				cat := cats[rng.IntN(len(cats))]
				for range 1 + rng.IntN(3) {
					v := make([]float32, dims)
					for j := range v {
						v[j] = float32(rng.NormFloat64())
					}
					v = memory.Normalized(v)
					nextChunk++
					av.add(nextChunk, mem, cat, v)
					truth[mem] = append(truth[mem], row{nextChunk, cat, v})
				}
			}
			vecs := map[int64][]float32{}
			for _, rows := range truth {
				for _, r := range rows {
					vecs[r.chunk] = r.vec
				}
			}
			q := make([]float32, dims)
			for j := range q {
				q[j] = float32(rng.NormFloat64())
			}
			q = memory.Normalized(q)
			for _, filter := range [][]memory.Category{nil, {memory.Daily}, {memory.Core, memory.Custom}} {
				var want []scored
				for _, rows := range truth {
					for _, r := range rows {
						if len(filter) == 0 || slices.Contains(filter, r.cat) {
							want = append(want, scored{score: memory.Dot(q, r.vec), chunk: r.chunk})
						}
					}
				}
				slices.SortFunc(want, func(x, y scored) int { return cmp.Or(cmp.Compare(y.score, x.score), cmp.Compare(x.chunk, y.chunk)) })
				want = want[:min(25, len(want))]
				got := av.search(q, filter, 25)
				if len(got) != len(want) {
					t.Fatalf("filter %v: %d hits, want %d", filter, len(got), len(want))
				}
				for i := range got {
					if got[i].chunk != want[i].chunk || got[i].score != want[i].score {
						t.Fatalf("filter %v: hit %d = chunk %d (%v), want chunk %d (%v)", filter, i, got[i].chunk, got[i].score, want[i].chunk, want[i].score)
					}
					if !slices.Equal(got[i].vector, vecs[got[i].chunk]) {
						t.Fatalf("hit %d: vector differs", i)
					}
				}
			}
		})
	}
}

func TestVectorRoundTrip(t *testing.T) {
	v := []float32{0, 1, -2.5, 3.25e-8, 1e30}
	av := &spaceVectors{}
	av.addBlob(1, 1, memory.Core, encodeVector(v), 1)
	want := memory.Normalized(v)
	if diff := gocmp.Diff(want, av.blocks[0].data); diff != "" {
		t.Errorf("decoded vector (-want +got):\n%s", diff)
	}
	av.addBlob(2, 2, memory.Core, encodeVector([]float32{0, 0, 0, 0, 0}), 1)
	if len(av.blocks[0].chunks) != 1 {
		t.Errorf("a zero vector was kept")
	}
}

// TestMemoryMigrationToOwners opens a database whose memories were
// written before memories had owners: they become agent-wide, keep their
// chunks, vectors and full-text rows, and owners can then store under
// the same keys. Remembered conversations, whose owner is unknown, are
// forgotten rather than shared.
func TestMemoryMigrationToOwners(t *testing.T) {
	ctx := t.Context()
	path := tempPath(t)
	const text = "The boat is moored in the harbour."
	lo, _ := chunkRange(1)
	writeOldSchema(t, path, 4,
		"INSERT INTO memory_agents (id, name) VALUES (1, 'main')",
		"INSERT INTO memories (id, agent, key, text, category, source, created_at, updated_at) VALUES (7, 'main', 'boat', '"+text+"', 'core', 'tool', 1000, 2000)",
		fmt.Sprintf("INSERT INTO memory_chunks (id, memory_id, seq, text, vector) VALUES (%d, 7, 0, '%s', X'%x')", lo+1, text, encodeVector(memorytest.Vector(text))),
		fmt.Sprintf("INSERT INTO memory_fts (rowid, body) VALUES (%d, '%s')", lo+1, text),
		"INSERT INTO memories (id, agent, key, text, category, source, created_at, updated_at) VALUES (8, 'main', 'run:r1', 'User: my harbour berth is 12', 'conversation', 'session:s-1', 1000, 2000)",
		fmt.Sprintf("INSERT INTO memory_chunks (id, memory_id, seq, text) VALUES (%d, 8, 0, 'User: my harbour berth is 12')", lo+2),
		fmt.Sprintf("INSERT INTO memory_fts (rowid, body) VALUES (%d, 'User: my harbour berth is 12')", lo+2),
	)

	db := open(t, path)
	idx := db.MemoryIndex()
	want := memory.Entry{Agent: "main", Key: "boat", Text: text, Category: memory.Core, Source: "tool",
		CreatedAt: fromMillis(1000), UpdatedAt: fromMillis(2000)}
	if got, err := idx.Get(ctx, "main", "", "boat"); err != nil || !gocmp.Equal(want, got) {
		t.Errorf("Get after migration = %+v, %v; want %+v", got, err, want)
	}
	if got, err := idx.Get(ctx, "main", "", "run:r1"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("an old conversation memory after migration = %+v, %v; want it forgotten", got, err)
	}
	for _, owner := range []string{"", "key:a"} {
		kw, err := idx.Keyword(ctx, "main", owner, "harbour", memory.Filter{}, 10)
		if err != nil || len(kw) != 1 || !gocmp.Equal(want, kw[0].Entry) {
			t.Errorf("Keyword as %q after migration = %+v, %v; want the old entry", owner, kw, err)
		}
		vec, err := idx.Vector(ctx, "main", owner, memorytest.Vector(text), memory.Filter{}, 10)
		if err != nil || len(vec) != 1 || vec[0].Chunk.Text != text || vec[0].Score < 0.999 {
			t.Errorf("Vector as %q after migration = %+v, %v; want the old chunk", owner, vec, err)
		}
	}

	// The old key is agent-wide: an owner's store makes a memory of its own.
	m := newTestMemory(t, idx)
	if err := m.Store(ctx, memory.Entry{Agent: "main", Owner: "key:a", Key: "boat", Text: "Ann's boat is a red kayak.", Category: memory.Custom}); err != nil {
		t.Fatal(err)
	}
	if err := m.Store(ctx, memory.Entry{Agent: "main", Key: "harbour", Text: "The harbour closes at dusk.", Category: memory.Core}); err != nil {
		t.Fatal(err)
	}
	if got, err := idx.Get(ctx, "main", "", "boat"); err != nil || got.Text != text {
		t.Errorf("the old memory after an owner stored its key = %q, %v", got.Text, err)
	}
	res, err := m.Search(ctx, "main", "key:a", "boat harbour", memory.SearchOptions{})
	if err != nil || len(res.Hits) != 3 {
		t.Errorf("search as the owner = %+v, %v; want the old memory, the owner's and the new agent-wide one", res.Hits, err)
	}

	// The rebuilt chunks still reference the memories, and the keys hold.
	var fk string
	if err := db.r.QueryRowContext(ctx, `SELECT "table" FROM pragma_foreign_key_list('memory_chunks')`).Scan(&fk); err != nil || fk != "memories" {
		t.Errorf("memory_chunks references %q, %v; want memories", fk, err)
	}
	if _, err := db.w.ExecContext(ctx, "INSERT INTO memory_chunks (id, memory_id, seq, text) VALUES (1, 999, 0, 'x')"); !isForeignKeyError(err) {
		t.Errorf("a chunk of a missing memory: err = %v, want a foreign key violation", err)
	}
	rows, err := db.r.QueryContext(ctx, "PRAGMA foreign_key_check")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if rows.Next() {
		t.Error("foreign_key_check finds violations after the migration")
	}
}
