package sqlite

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
)

// benchDims is the dimension of the benchmark's vectors (all-MiniLM-L6-v2,
// bge-small and other small embedding models).
const benchDims = 384

// benchEmbedder embeds a text as a pseudo-random 384-dimensional vector
// seeded by the text's hash: deterministic, free, and as hard for the
// scan as real vectors.
type benchEmbedder struct{}

func (benchEmbedder) Model() string { return "bench-random-384" }

func (benchEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = benchVector(t)
	}
	return out, nil
}

func benchVector(text string) []float32 {
	h := fnv.New64a()
	h.Write([]byte(text))
	seed := h.Sum64()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	v := make([]float32, benchDims)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// Words of the benchmark's texts: function words, which most memories
// contain, and content words drawn with a Zipf distribution, as in
// natural text.
var (
	benchFunctionWords = strings.Fields(`the a an and or but of to in on at for with about from by as is was
		are were be been has have had do did will would can could should this that these those it its
		he she they we you i my our your their his her not no yes what when where who how`)
	benchContentWords = strings.Fields(`user prefers coffee tea morning evening meeting project deadline
		budget report client server database deploy release bug fix feature design review team manager
		sister brother mother father friend birthday party dinner lunch breakfast restaurant recipe
		garden flowers tomatoes dog cat walk park running gym yoga swim bike train flight hotel trip
		holiday beach mountain hiking ski winter summer spring autumn rain snow sunny weather phone
		laptop keyboard monitor printer password account email calendar reminder appointment doctor
		dentist medicine allergy peanuts gluten vegetarian vegan pizza pasta sushi curry salad soup
		bread cheese wine beer water juice chocolate cake cookies music guitar piano concert movie
		book novel author library school university course exam homework teacher student language
		spanish french german japanese chinese english lesson practice invoice payment bank loan rent
		house apartment kitchen bedroom office desk chair window door car bicycle bus station airport
		ticket passport visa embassy insurance tax salary raise promotion interview resume contract
		lawyer court deadline launch marketing sales customer support ticket outage incident postmortem
		kubernetes docker terraform python golang rust javascript typescript react frontend backend
		api latency throughput cache queue lambda opensearch sqlite postgres redis backup restore
		migration schema index query search memory agent model prompt token embedding vector
		quarterly roadmap okr sprint standup retro demo prototype mockup wireframe figma slides
		spreadsheet numbers forecast revenue growth churn pricing plan subscription trial refund
		shipping delivery package warehouse inventory supplier order invoice receipt discount coupon
		wedding anniversary graduation vacation camping fishing sailing boat lake river island city
		village country capital museum gallery theatre opera festival market bakery cafe bar club
		football basketball tennis golf chess poker marathon triathlon climbing surfing skating
		monday tuesday wednesday thursday friday saturday sunday january february march april may june
		july august september october november december tomorrow yesterday weekend tonight noon`)
)

// benchText is a short memory: 8 to 24 words, four in ten of them
// function words.
func benchText(rng *rand.Rand, zipf *rand.Zipf) string {
	n := 8 + rng.IntN(17)
	words := make([]string, n)
	for i := range words {
		if rng.IntN(10) < 4 {
			words[i] = benchFunctionWords[rng.IntN(len(benchFunctionWords))]
		} else {
			words[i] = benchContentWords[zipf.Uint64()]
		}
	}
	return strings.Join(words, " ") + "."
}

// benchQuery is two to four content words, and one query in two also has
// a function word ("what about the deadline").
func benchQuery(rng *rand.Rand, zipf *rand.Zipf) string {
	var words []string
	if rng.IntN(2) == 0 {
		words = append(words, benchFunctionWords[rng.IntN(len(benchFunctionWords))])
	}
	for range 2 + rng.IntN(3) {
		words = append(words, benchContentWords[zipf.Uint64()])
	}
	return strings.Join(words, " ")
}

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
	env.mem, err = memory.New(db.MemoryIndex(), memory.Options{Embedder: benchEmbedder{}})
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
	rng := rand.New(rand.NewPCG(uint64(from), uint64(to)))
	zipf := rand.NewZipf(rng, 1.07, 2, uint64(len(benchContentWords)-1))
	cats := []memory.Category{memory.Core, memory.Daily, memory.Conversation, memory.Custom}
	now := time.Now()
	const batch = 10_000
	recs := make([]memory.Record, 0, batch)
	for i := from; i < to; i++ {
		text := benchText(rng, zipf)
		at := now.Add(-time.Duration(rng.IntN(365*24)) * time.Hour)
		recs = append(recs, memory.Record{
			Entry: memory.Entry{
				Agent: "main", Owner: owner, Key: fmt.Sprintf("m%07d", i), Text: text, Category: cats[i%len(cats)],
				Source: "tool", CreatedAt: at, UpdatedAt: at,
			},
			Chunks: []memory.Chunk{{Seq: 0, Text: text, Vector: memory.Normalized(benchVector(text))}},
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

// heapMB is the heap in use after a collection, in MB.
func heapMB() float64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.HeapInuse) / 1e6
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
			rng := rand.New(rand.NewPCG(42, uint64(n)))
			zipf := rand.NewZipf(rng, 1.07, 2, uint64(len(benchContentWords)-1))
			queries := make([]string, 1000)
			for i := range queries {
				queries[i] = benchQuery(rng, zipf)
			}
			// The first search loads the vectors; it is not measured.
			if res, err := env.mem.Search(ctx, "main", owner, queries[0], memory.SearchOptions{}); err != nil || res.Method != memory.MethodHybrid {
				b.Fatalf("Search: %v, %v", res.Method, err)
			}
			heap := heapMB()
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
			slices.Sort(lat)
			pct := func(p float64) float64 {
				return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
			}
			b.ReportMetric(pct(0.50), "p50_ms")
			b.ReportMetric(pct(0.99), "p99_ms")
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
		rng := rand.New(rand.NewPCG(7, 7))
		zipf := rand.NewZipf(rng, 1.07, 2, uint64(len(benchContentWords)-1))
		ctx := b.Context()
		i := 0
		for b.Loop() {
			e := memory.Entry{Agent: "main", Key: fmt.Sprintf("s%07d", i), Text: benchText(rng, zipf), Category: memory.Daily}
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
