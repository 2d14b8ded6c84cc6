package dynamo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory/memorytest"
)

// benchDims is the length of the benchmark's vectors: Titan Text
// Embeddings V2's default, which the AWS deployment stores.
const benchDims = 1024

// BenchmarkMemorySearch measures Memory.Search over the in-process search
// of the table's memory items, against DynamoDB Local: hybrid, limit 10,
// 1024-dimension vectors, over 1k and 10k agent-wide memories of one
// agent, and over 10k memories of which 1k are agent-wide and 9k the
// memories of 9 owners, 1k each, searched as one of the owners (who sees
// 2k). Sub-benchmarks:
//
//   - warm: nothing changed since the process's last search; each side
//     asks the table for changes with one Query per space;
//   - rank: the work of the process alone, the keyword and the vector
//     ranking of 40 candidates each (what a search of 10 hits asks for),
//     without the table's round trips;
//   - changed: before each search (not timed) another process replaced
//     one memory of the searched space; the search catches up with one
//     Query and one BatchGetItem.
//
// Each reports the latency percentiles (p50_ms, p99_ms). warm and changed
// report the heap in use, and warm the first search of a fresh process,
// which reads the spaces whole (load_ms, the median of three), and the
// size of the items it reads (load_MB). Run it with a fixed count, for
// stable percentiles, and a DynamoDB Local of its own per case (the
// engine slows down once it has held the 45 MB of the 10k case), as make
// bench does:
//
//	bash tests/dynamodb-local.sh run go test ./shared/adapters/dynamo/ -run '^$' -bench 'MemorySearch/10k$' -benchtime 1000x
func BenchmarkMemorySearch(b *testing.B) {
	if os.Getenv("DYNAMODB_ENDPOINT") == "" {
		b.Skip("DYNAMODB_ENDPOINT is not set: run it through tests/dynamodb-local.sh run")
	}
	for _, c := range []struct {
		name              string
		agentWide, owners int
	}{
		{"1k", 1_000, 0},
		{"10k", 10_000, 0},
		{"10k_owners", 1_000, 9},
	} {
		b.Run(c.name, func(b *testing.B) {
			const perOwner = 1_000
			table := newTable(b, testClient(b))
			bytes, err := benchFill(b, table, "", 0, c.agentWide)
			if err != nil {
				b.Fatal(err)
			}
			owner := ""
			for o := range c.owners {
				owner = "key:owner-0"
				from := c.agentWide + o*perOwner
				n, err := benchFill(b, table, fmt.Sprint("key:owner-", o), from, from+perOwner)
				if err != nil {
					b.Fatal(err)
				}
				if o == 0 {
					bytes += n
				}
			}
			corpus := memorytest.NewCorpus(42, uint64(c.agentWide+c.owners*perOwner))
			queries := make([]string, 1000)
			for i := range queries {
				queries[i] = corpus.Query()
			}
			b.Run("warm", func(b *testing.B) {
				loads := make([]time.Duration, 3)
				var p *benchProcess
				for i := range loads {
					p = newBenchProcess(b, table)
					t0 := time.Now()
					p.search(b, owner, queries[i])
					loads[i] = time.Since(t0)
				}
				slices.Sort(loads)
				heap := memorytest.HeapMB()
				lat := make([]time.Duration, 0, b.N)
				for i := 0; b.Loop(); i++ {
					t0 := time.Now()
					p.search(b, owner, queries[i%len(queries)])
					lat = append(lat, time.Since(t0))
				}
				memorytest.ReportLatencies(b, lat)
				b.ReportMetric(float64(loads[1].Microseconds())/1000, "load_ms")
				b.ReportMetric(float64(bytes)/1e6, "load_MB")
				b.ReportMetric(heap, "heap_MB")
			})
			b.Run("rank", func(b *testing.B) {
				p := newBenchProcess(b, table)
				p.search(b, owner, queries[0])
				spaces, err := p.idx.spaces.visible(b.Context(), "main", owner)
				if err != nil {
					b.Fatal(err)
				}
				emb := memorytest.BenchEmbedder{Dims: benchDims}
				lat := make([]time.Duration, 0, b.N)
				for i := 0; b.Loop(); i++ {
					q := queries[i%len(queries)]
					v := memory.Normalized(memorytest.BenchVector(q, emb.Dims))
					t0 := time.Now()
					kw := rankKeyword(spaces, queryWords(q), memory.Filter{}, 40)
					vec := rankVector(spaces, v, memory.Filter{}, 40)
					lat = append(lat, time.Since(t0))
					if len(kw)+len(vec) == 0 {
						b.Fatalf("nothing ranked for %q", q)
					}
				}
				memorytest.ReportLatencies(b, lat)
			})
			b.Run("changed", func(b *testing.B) {
				p, writer := newBenchProcess(b, table), newBenchProcess(b, table)
				p.search(b, owner, queries[0])
				heap := memorytest.HeapMB()
				lat := make([]time.Duration, 0, b.N)
				for i := 0; b.Loop(); i++ {
					b.StopTimer()
					text := corpus.Text()
					e := memory.Entry{Agent: "main", Owner: owner, Key: "changed", Text: text, Category: memory.Daily, CreatedAt: time.Now(), UpdatedAt: time.Now()}
					if err := writer.idx.Put(b.Context(), e, benchChunks(text)); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
					t0 := time.Now()
					p.search(b, owner, queries[i%len(queries)])
					lat = append(lat, time.Since(t0))
				}
				memorytest.ReportLatencies(b, lat)
				b.ReportMetric(heap, "heap_MB")
			})
		})
	}
}

// benchProcess is a function instance searching the benchmark's table.
type benchProcess struct {
	idx *MemoryIndex
	mem *memory.Memory
}

func newBenchProcess(b *testing.B, table string) *benchProcess {
	b.Helper()
	s, err := New(b.Context(), Config{Table: table, Client: testClient(b)})
	if err != nil {
		b.Fatal(err)
	}
	idx, err := NewMemoryIndex(s, MemoryConfig{CacheBytes: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	mem, err := memory.New(idx, memory.Options{Embedder: memorytest.BenchEmbedder{Dims: benchDims}})
	if err != nil {
		b.Fatal(err)
	}
	return &benchProcess{idx: idx, mem: mem}
}

func (p *benchProcess) search(b *testing.B, owner, q string) {
	res, err := p.mem.Search(b.Context(), "main", owner, q, memory.SearchOptions{})
	if err != nil || res.Method != memory.MethodHybrid || len(res.Hits) == 0 {
		b.Fatalf("Search(%q) = %d hits, method %q, %v", q, len(res.Hits), res.Method, err)
	}
}

// benchChunks is the one chunk of a short text, embedded.
func benchChunks(text string) []memory.Chunk {
	return []memory.Chunk{{Seq: 0, Text: text, Vector: memory.Normalized(memorytest.BenchVector(text, benchDims))}}
}

// benchFill writes memories from..to-1 of agent "main" and owner (""
// for agent-wide ones) as items, 25 to a BatchWriteItem, four batches at
// a time, as Memory.Store would make them (written before heads exist,
// they are version 0 of their space). It returns their size in bytes.
func benchFill(b *testing.B, table, owner string, from, to int) (int, error) {
	corpus := memorytest.NewCorpus(uint64(from), uint64(to))
	cats := []memory.Category{memory.Core, memory.Daily, memory.Conversation, memory.Custom}
	now := time.Now()
	var batches [][]dynamodb.WriteRequest
	var batch []dynamodb.WriteRequest
	size := 0
	for i := from; i < to; i++ {
		text := corpus.Text()
		at := now.Add(-time.Duration(corpus.Rand.IntN(365*24)) * time.Hour)
		e := memory.Entry{Agent: "main", Owner: owner, Key: fmt.Sprintf("m%07d", i), Text: text, Category: cats[i%len(cats)], Source: "tool", CreatedAt: at, UpdatedAt: at}
		it := memoryItem(e, benchChunks(text))
		size += itemSize(it)
		batch = append(batch, dynamodb.WriteRequest{PutRequest: &dynamodb.PutRequest{Item: it}})
		if len(batch) == 25 || i == to-1 {
			batches = append(batches, batch)
			batch = nil
		}
	}
	client := testClient(b)
	work := make(chan []dynamodb.WriteRequest)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() {
			for reqs := range work {
				for len(reqs) > 0 && errs[w] == nil {
					out, err := client.BatchWriteItem(context.Background(), &dynamodb.BatchWriteItemInput{RequestItems: map[string][]dynamodb.WriteRequest{table: reqs}})
					reqs, errs[w] = out.UnprocessedItems[table], err
				}
			}
		})
	}
	for _, reqs := range batches {
		work <- reqs
	}
	close(work)
	wg.Wait()
	return size, errors.Join(errs...)
}
