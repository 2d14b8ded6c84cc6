package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory/memorytest"
)

// benchDims is the dimension of the benchmark's vectors (all-MiniLM-L6-v2,
// bge-small and other small embedding models).
const benchDims = 384

// benchEnv is a database holding n memories of one agent.
type benchEnv struct {
	dir string
	db  *DB
	mem *memory.Memory
}

func newBenchEnv(b *testing.B, n int) *benchEnv {
	b.Helper()
	dir, err := os.MkdirTemp("", "lambdaclaw-bench-")
	if err != nil {
		b.Fatal(err)
	}
	db, err := Open(filepath.Join(dir, "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	env := &benchEnv{dir: dir, db: db}
	start := time.Now()
	if err := benchFill(b.Context(), db.MemoryIndex(), "", 0, n); err != nil {
		b.Fatal(err)
	}
	b.Logf("%d memories stored in %v", n, time.Since(start).Round(time.Millisecond))
	env.mem, err = memory.New(db.MemoryIndex(), memory.Options{Embedder: memorytest.BenchEmbedder{Dims: benchDims}})
	if err != nil {
		b.Fatal(err)
	}
	return env
}

func (e *benchEnv) close(b *testing.B) {
	if err := e.db.Close(); err != nil {
		b.Error(err)
	}
	os.RemoveAll(e.dir)
}

// benchFill stores memories from..to-1 of agent "main" and owner (""
// for agent-wide ones) with PutMany in transactions of 10,000, with the
// chunks and vectors Memory.Store would make.
func benchFill(ctx context.Context, idx *MemoryIndex, owner string, from, to int) error {
	corpus := memorytest.NewCorpus(uint64(from), uint64(to))
	cats := []memory.Category{memory.Core, memory.Daily, memory.Conversation, memory.Custom}
	now := time.Now()
	const batch = 10_000
	recs := make([]memory.Record, 0, batch)
	for i := from; i < to; i++ {
		text := corpus.Text()
		at := now.Add(-time.Duration(corpus.Rand.IntN(365*24)) * time.Hour)
		recs = append(recs, memory.Record{
			Entry: memory.Entry{
				Agent: "main", Owner: owner, Key: fmt.Sprintf("m%07d", i), Text: text, Category: cats[i%len(cats)],
				Source: "tool", CreatedAt: at, UpdatedAt: at,
			},
			Chunks: []memory.Chunk{{Seq: 0, Text: text, Vector: memory.Normalized(memorytest.BenchVector(text, benchDims))}},
		})
		if len(recs) == batch || i == to-1 {
			if err := idx.PutMany(ctx, recs); err != nil {
				return err
			}
			recs = recs[:0]
		}
	}
	return nil
}

// BenchmarkMemorySearch measures Memory.Search, hybrid (BM25 through FTS5
// plus a scan of 384-dimensional vectors), limit 10, over 1k, 10k and
// 100k agent-wide memories of one agent, and over 10k memories of which
// 1k are agent-wide and 9k the memories of 9 owners, 1k each, searched
// as one of the owners (who sees 2k of them). It reports the latency
// percentiles and the heap in use once the vectors are loaded.
func BenchmarkMemorySearch(b *testing.B) {
	for _, c := range []struct {
		name              string
		agentWide, owners int
	}{
		{"1k", 1_000, 0},
		{"10k", 10_000, 0},
		{"100k", 100_000, 0},
		{"10k_owners", 1_000, 9},
	} {
		const perOwner = 1_000
		n := c.agentWide + c.owners*perOwner
		var env *benchEnv
		owner := ""
		if c.owners > 0 {
			owner = "key:owner-0"
		}
		b.Run(c.name, func(b *testing.B) {
			if env == nil {
				env = newBenchEnv(b, c.agentWide)
				for o := range c.owners {
					from := c.agentWide + o*perOwner
					if err := benchFill(b.Context(), env.db.MemoryIndex(), fmt.Sprint("key:owner-", o), from, from+perOwner); err != nil {
						b.Fatal(err)
					}
				}
			}
			ctx := b.Context()
			corpus := memorytest.NewCorpus(42, uint64(n))
			queries := make([]string, 1000)
			for i := range queries {
				queries[i] = corpus.Query()
			}
			// The first search loads the vectors; it is not measured.
			if res, err := env.mem.Search(ctx, "main", owner, queries[0], memory.SearchOptions{}); err != nil || res.Method != memory.MethodHybrid {
				b.Fatalf("Search: %v, %v", res.Method, err)
			}
			heap := memorytest.HeapMB()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				res, err := env.mem.Search(ctx, "main", owner, queries[i%len(queries)], memory.SearchOptions{})
				lat = append(lat, time.Since(t0))
				if err != nil || len(res.Hits) == 0 {
					b.Fatalf("Search(%q): %d hits, %v", queries[i%len(queries)], len(res.Hits), err)
				}
			}
			b.StopTimer()
			memorytest.ReportLatencies(b, lat)
			b.ReportMetric(heap, "heap_MB")
		})
		if env != nil {
			env.close(b)
		}
	}
}

// BenchmarkMemoryIndex measures indexing throughput: Memory.Store one
// entry at a time (chunking, embedding, one transaction each), and
// PutMany in transactions of 10,000.
func BenchmarkMemoryIndex(b *testing.B) {
	b.Run("Store", func(b *testing.B) {
		env := newBenchEnv(b, 0)
		defer env.close(b)
		corpus := memorytest.NewCorpus(7, 7)
		ctx := b.Context()
		i := 0
		for b.Loop() {
			e := memory.Entry{Agent: "main", Key: fmt.Sprintf("s%07d", i), Text: corpus.Text(), Category: memory.Daily}
			if err := env.mem.Store(ctx, e); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "entries/s")
	})
	b.Run("PutMany", func(b *testing.B) {
		env := newBenchEnv(b, 0)
		defer env.close(b)
		ctx := b.Context()
		const per = 10_000
		n := 0
		for b.Loop() {
			if err := benchFill(ctx, env.db.MemoryIndex(), "", n, n+per); err != nil {
				b.Fatal(err)
			}
			n += per
		}
		b.ReportMetric(float64(b.N*per)/b.Elapsed().Seconds(), "entries/s")
	})
}
