package dynamo

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/google/go-cmp/cmp"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory/memorytest"
)

// opCounter is the HTTP client of a DynamoDB client that counts the
// operations it sends.
type opCounter struct {
	mu  sync.Mutex
	ops map[string]int
}

func (c *opCounter) Do(r *http.Request) (*http.Response, error) {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	c.mu.Lock()
	c.ops[op]++
	c.mu.Unlock()
	return http.DefaultClient.Do(r)
}

// take returns the counts since the last take.
func (c *opCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.ops
	c.ops = map[string]int{}
	return ops
}

// process is one function instance: its own store and memory index on a
// shared table, with its own clock and a count of its requests.
type process struct {
	idx   *MemoryIndex
	mem   *memory.Memory
	ops   *opCounter
	clock *clock
}

// newProcess returns a process on table with a search cache of budget
// bytes (0 for the default).
func newProcess(t *testing.T, table string, budget int64) *process {
	t.Helper()
	ops := &opCounter{ops: map[string]int{}}
	client := dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(endpoint(t)),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
		HTTPClient:   ops,
	})
	s, err := New(t.Context(), Config{Table: table, Client: client})
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: memorytest.Now}
	s.now = c.now
	idx := newMemoryIndex(t, s, budget)
	mem, err := memory.New(idx, memory.Options{Embedder: memorytest.Embedder{}, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	ops.take()
	return &process{idx: idx, mem: mem, ops: ops, clock: c}
}

// newProcesses returns n processes on one fresh table.
func newProcesses(t *testing.T, n int, budget int64) []*process {
	t.Helper()
	table := newTable(t, testClient(t))
	out := make([]*process, n)
	for i := range out {
		out[i] = newProcess(t, table, budget)
	}
	return out
}

func (p *process) store(t *testing.T, owner, key, text string) {
	t.Helper()
	e := memory.Entry{Agent: "main", Owner: owner, Key: key, Text: text, Category: memory.Custom}
	if err := p.mem.Store(t.Context(), e); err != nil {
		t.Fatalf("Store(%q): %v", key, err)
	}
}

// keyword returns "owner/key" of the keyword matches of query as owner.
func (p *process) keyword(t *testing.T, owner, query string) []string {
	t.Helper()
	ms, err := p.idx.Keyword(t.Context(), "main", owner, query, memory.Filter{}, 100)
	if err != nil {
		t.Fatalf("Keyword(%q): %v", query, err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Entry.Owner+"/"+m.Entry.Key+": "+m.Chunk.Text)
	}
	slices.Sort(out)
	return out
}

// TestMemorySearchAcrossProcesses: a search sees what another process
// wrote before it began, catching up with one Query (and a BatchGetItem of
// what changed) instead of reading the space again.
func TestMemorySearchAcrossProcesses(t *testing.T) {
	ps := newProcesses(t, 2, 0)
	writer, reader := ps[0], ps[1]
	writer.store(t, "", "tea", "green tea in the morning")
	writer.store(t, "key:a", "tea", "mint tea for key a")

	if d := cmp.Diff([]string{"/tea: green tea in the morning", "key:a/tea: mint tea for key a"}, reader.keyword(t, "key:a", "tea")); d != "" {
		t.Fatalf("first search (-want +got):\n%s", d)
	}
	// The first search read each space whole: its head, then its entries.
	if d := cmp.Diff(map[string]int{"GetItem": 2, "Query": 2}, reader.ops.take()); d != "" {
		t.Errorf("requests of the first search (-want +got):\n%s", d)
	}
	reader.keyword(t, "key:a", "tea")
	if d := cmp.Diff(map[string]int{"Query": 2}, reader.ops.take()); d != "" {
		t.Errorf("requests of a search with nothing changed (-want +got):\n%s", d)
	}

	for _, step := range []struct {
		name  string
		write func()
		want  []string
	}{
		{"put", func() { writer.store(t, "key:a", "coffee", "tea or coffee for key a") },
			[]string{"/tea: green tea in the morning", "key:a/coffee: tea or coffee for key a", "key:a/tea: mint tea for key a"}},
		{"replace", func() { writer.store(t, "", "tea", "black tea at noon") },
			[]string{"/tea: black tea at noon", "key:a/coffee: tea or coffee for key a", "key:a/tea: mint tea for key a"}},
		{"delete", func() {
			if err := writer.mem.Forget(t.Context(), "main", "key:a", "tea"); err != nil {
				t.Fatal(err)
			}
		}, []string{"/tea: black tea at noon", "key:a/coffee: tea or coffee for key a"}},
		{"another owner", func() { writer.store(t, "key:b", "tea", "tea for key b") },
			[]string{"/tea: black tea at noon", "key:a/coffee: tea or coffee for key a"}},
	} {
		step.write()
		if d := cmp.Diff(step.want, reader.keyword(t, "key:a", "tea")); d != "" {
			t.Errorf("after the other process's %s (-want +got):\n%s", step.name, d)
		}
		want := map[string]int{"Query": 2, "BatchGetItem": 1}
		if step.name == "another owner" {
			want = map[string]int{"Query": 2} // key:b's space is not key:a's
		}
		if d := cmp.Diff(want, reader.ops.take()); d != "" {
			t.Errorf("requests of the search after the %s (-want +got):\n%s", step.name, d)
		}
	}
	// The writer's own copy follows its writes without reading them back.
	writer.keyword(t, "key:a", "tea")
	writer.ops.take()
	writer.store(t, "key:a", "mate", "mate tea for key a")
	writer.ops.take()
	if got := writer.keyword(t, "key:a", "mate"); !slices.Equal(got, []string{"key:a/mate: mate tea for key a"}) {
		t.Errorf("the writer's search for its own write = %q", got)
	}
	if d := cmp.Diff(map[string]int{"Query": 2}, writer.ops.take()); d != "" {
		t.Errorf("requests of the writer's search after its write (-want +got):\n%s", d)
	}
}

// TestMemorySearchReadsAgain: a copy too far behind, not confirmed for
// half a day, or whose space was written anew is read whole again.
func TestMemorySearchReadsAgain(t *testing.T) {
	ps := newProcesses(t, 2, 0)
	writer, reader := ps[0], ps[1]
	writer.store(t, "", "k0", "lantern number 0")
	if got := reader.keyword(t, "", "lantern"); len(got) != 1 {
		t.Fatalf("first search = %q", got)
	}
	reader.ops.take()

	for i := 1; i <= maxDelta+1; i++ {
		writer.store(t, "", fmt.Sprintf("k%d", i), fmt.Sprintf("lantern number %d", i))
	}
	if got := reader.keyword(t, "", "lantern"); len(got) != maxDelta+2 {
		t.Errorf("after %d changes the search found %d, want %d", maxDelta+1, len(got), maxDelta+2)
	}
	if d := cmp.Diff(map[string]int{"Query": 2, "GetItem": 1}, reader.ops.take()); d != "" {
		t.Errorf("requests after too many changes (-want +got): the changes, then the head and the entries:\n%s", d)
	}

	reader.clock.add(memoryLogTTL/2 + time.Second)
	reader.keyword(t, "", "lantern")
	if d := cmp.Diff(map[string]int{"Query": 1, "GetItem": 1}, reader.ops.take()); d != "" {
		t.Errorf("requests after half a day (-want +got): the head and the entries:\n%s", d)
	}

	// Every item of the space deleted behind the index's back and one
	// memory written anew: the head went back to 1.
	for _, pfx := range []string{pfxMemoryEntry, pfxMemoryLog} {
		items, err := writer.idx.store.queryPrefix(t.Context(), pfxMemory+"main", pfx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := writer.idx.store.deleteKeys(t.Context(), items); err != nil {
			t.Fatal(err)
		}
	}
	writer.store(t, "", "fresh", "a new lantern")
	if d := cmp.Diff([]string{"/fresh: a new lantern"}, reader.keyword(t, "", "lantern")); d != "" {
		t.Errorf("after the space was written anew (-want +got):\n%s", d)
	}
}

// TestMemorySearchTooLarge: a space over the cache's budget fails the
// search side with ErrMemoryTooLarge and is not read again until it
// changes; Memory.Search answers without hits.
func TestMemorySearchTooLarge(t *testing.T) {
	ps := newProcesses(t, 2, 2_000)
	writer, reader := ps[0], ps[1]
	for i := range 10 {
		writer.store(t, "", fmt.Sprintf("k%d", i), strings.Repeat("bulky text ", 20))
	}
	_, err := reader.idx.Keyword(t.Context(), "main", "", "bulky", memory.Filter{}, 5)
	if !errors.Is(err, ErrMemoryTooLarge) {
		t.Fatalf("Keyword over a large space: %v, want ErrMemoryTooLarge", err)
	}
	reader.ops.take()
	res, err := reader.mem.Search(t.Context(), "main", "", "bulky", memory.SearchOptions{})
	if err != nil || res.Method != memory.MethodNone || len(res.Hits) != 0 {
		t.Errorf("Search over a large space = %+v, %v; want no hits, method none", res, err)
	}
	if d := cmp.Diff(map[string]int{"GetItem": 2}, reader.ops.take()); d != "" {
		t.Errorf("requests of searches of a space known too large (-want +got): the head only:\n%s", d)
	}
	// Smaller again, it is searched.
	for i := range 9 {
		if err := writer.mem.Forget(t.Context(), "main", "", fmt.Sprintf("k%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if got := reader.keyword(t, "", "bulky"); len(got) != 1 {
		t.Errorf("search of the space made small = %q", got)
	}
}

// TestMemorySearchEviction: within its budget the cache keeps the spaces
// searched last and reads an evicted one again.
func TestMemorySearchEviction(t *testing.T) {
	ps := newProcesses(t, 2, 0)
	writer := ps[0]
	text := strings.Repeat("owl ", 100)
	for _, owner := range []string{"key:a", "key:b"} {
		for i := range 5 {
			writer.store(t, owner, fmt.Sprint(i), text)
		}
	}
	writer.store(t, "", "wide", "owl")
	// Measure one owner's space, then give a reader room for the
	// agent-wide space and one owner's.
	probe := newMemoryIndex(t, writer.idx.store, 0)
	if _, err := probe.Keyword(t.Context(), "main", "key:a", "owl", memory.Filter{}, 1); err != nil {
		t.Fatal(err)
	}
	budget := probe.spaces.bytes + probe.spaces.bytes/4
	reader := newProcess(t, *writer.idx.store.table, budget)

	search := func(owner string) map[string]int {
		t.Helper()
		if got := reader.keyword(t, owner, "owl"); len(got) != 6 {
			t.Fatalf("search as %s = %d matches, want 6", owner, len(got))
		}
		if reader.idx.spaces.bytes > budget {
			t.Errorf("cache holds %d bytes, over its budget of %d", reader.idx.spaces.bytes, budget)
		}
		return reader.ops.take()
	}
	read, kept := map[string]int{"GetItem": 2, "Query": 2}, map[string]int{"Query": 2}
	for i, step := range []struct {
		owner string
		want  map[string]int
	}{
		{"key:a", read},
		{"key:a", kept},
		{"key:b", map[string]int{"GetItem": 1, "Query": 2}}, // evicts key:a
		{"key:a", map[string]int{"GetItem": 1, "Query": 2}},
	} {
		if d := cmp.Diff(step.want, search(step.owner)); d != "" {
			t.Errorf("search %d as %s: requests (-want +got):\n%s", i, step.owner, d)
		}
	}
}

// TestMemoryConcurrentWriters: writers in several processes take the
// versions of one space in turn; none is lost and a third process finds
// every memory.
func TestMemoryConcurrentWriters(t *testing.T) {
	ps := newProcesses(t, 3, 0)
	const each = 8
	var wg sync.WaitGroup
	errs := make(chan error, 2*each)
	for w, p := range ps[:2] {
		wg.Go(func() {
			for i := range each {
				e := memory.Entry{Agent: "main", Key: fmt.Sprintf("w%d-%d", w, i), Text: "kite note", Category: memory.Daily}
				if err := p.mem.Store(t.Context(), e); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := ps[2].keyword(t, "", "kite"); len(got) != 2*each {
		t.Errorf("a third process found %d memories, want %d", len(got), 2*each)
	}
	head, err := ps[2].idx.store.getItem(t.Context(), memoryHeadKey("main", ""))
	if err != nil || getN(head, attrMemVersion) != 2*each {
		t.Errorf("head = %v, %v; want version %d", head, err, 2*each)
	}
}

// TestMemoryChangeItems: a write leaves the head of its space and a
// change item naming its key, which expires after a day and which the
// stream consumer ignores.
func TestMemoryChangeItems(t *testing.T) {
	s := newStore(t)
	c := &clock{t: time.Unix(1_777_593_600, 0)}
	s.now = c.now
	idx := newMemoryIndex(t, s, 0)
	ctx := t.Context()
	e := memory.Entry{Agent: "ada", Owner: "key:k1", Key: "pets", Text: "a cat", Category: memory.Core}
	if err := idx.Put(ctx, e, []memory.Chunk{{Text: e.Text}}); err != nil {
		t.Fatal(err)
	}
	if err := idx.Delete(ctx, "ada", "key:k1", "pets"); err != nil {
		t.Fatal(err)
	}
	items, err := s.queryPrefix(ctx, "MEM#ada", pfxMemoryLog, 0)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		SK      string
		Ver     int64
		Keys    []string
		Expires int64
	}
	var got []row
	for _, it := range items {
		got = append(got, row{getS(it, attrSK), getN(it, attrMemVersion), getList(it, attrMemKeys), getN(it, attrExpiresAt)})
		if _, ok, err := memoryChange("1", "MODIFY", key(getS(it, attrPK), getS(it, attrSK)), it); ok || err != nil {
			t.Errorf("stream change of %s = %v, %v; want an item the indexer ignores", getS(it, attrSK), ok, err)
		}
	}
	day := c.now().Add(24 * time.Hour).Unix()
	want := []row{
		{SK: "LOG#6#key:k1#00000000000000000001", Keys: []string{"pets"}, Expires: day},
		{SK: "LOG#6#key:k1#00000000000000000002", Keys: []string{"pets"}, Expires: day},
		{SK: "LOG#6#key:k1#HEAD", Ver: 2},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("items of the space (-want +got):\n%s", d)
	}
}

// TestMemoryKeywordStatistics: BM25 takes its statistics from the chunks
// the searcher may see, as the reference index does, with the same
// scores.
func TestMemoryKeywordStatistics(t *testing.T) {
	ctx := t.Context()
	idx := newMemoryIndex(t, newStore(t), 0)
	ref := memorytest.NewMapIndex()
	for _, e := range []memory.Entry{
		{Key: "a", Text: "river boat river"},
		{Key: "b", Text: "the boat on the lake"},
		{Owner: "key:a", Key: "c", Text: "a river walk"},
		{Owner: "key:b", Key: "d", Text: "river river river river"},
	} {
		e.Agent, e.Category = "main", memory.Custom
		chunks := []memory.Chunk{{Text: e.Text}}
		for _, x := range []memory.Index{idx, ref} {
			if err := x.Put(ctx, e, chunks); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, owner := range []string{"", "key:a", "key:b"} {
		got, err := idx.Keyword(ctx, "main", owner, "river boat", memory.Filter{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := ref.Keyword(ctx, "main", owner, "river boat", memory.Filter{}, 10)
		approx := cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })
		if d := cmp.Diff(want, got, approx); d != "" {
			t.Errorf("Keyword as %q against the reference (-want +got):\n%s", owner, d)
		}
	}
}

// TestMemorySearchCancelled: a search whose context ends while another
// reads the space returns the context's error.
func TestMemorySearchCancelled(t *testing.T) {
	idx := newMemoryIndex(t, newStore(t), 0)
	ctx, cancel := context.WithCancel(t.Context())
	id := spaceID{"main", ""}
	done := make(chan struct{})
	idx.spaces.loading[id] = done // a load in flight
	cancel()
	if _, err := idx.Keyword(ctx, "main", "", "x", memory.Filter{}, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Keyword while a load is in flight, cancelled: %v", err)
	}
	delete(idx.spaces.loading, id)
	close(done)
}

// TestSpaceMatchesReference puts and removes entries of several chunks in
// a space, some without vectors and some with vectors of another length,
// and checks after every change that its rankings are the reference
// index's: rows moved into the places of removed ones keep their entry,
// vector and words.
func TestSpaceMatchesReference(t *testing.T) {
	ctx := t.Context()
	corpus := memorytest.NewCorpus(3, 3)
	sp := newSpace(spaceID{"main", ""})
	ref := memorytest.NewMapIndex()
	queries := []string{"coffee deadline", "the project review", "birthday party cake", "lambda cache"}
	for step := range 300 {
		key := fmt.Sprint("k", corpus.Rand.IntN(40))
		if corpus.Rand.IntN(4) == 0 {
			sp.remove(key)
			if err := ref.Delete(ctx, "main", "", key); err != nil {
				t.Fatal(err)
			}
		} else {
			e := memory.Entry{Agent: "main", Key: key, Category: memory.Custom, Text: corpus.Text()}
			var chunks []memory.Chunk
			for seq := range 1 + corpus.Rand.IntN(3) {
				text := corpus.Text()
				c := memory.Chunk{Seq: seq, Text: text}
				switch corpus.Rand.IntN(5) {
				case 0: // no vector
				case 1:
					c.Vector = memory.Normalized(memorytest.BenchVector(text, 8))
				default:
					c.Vector = memory.Normalized(memorytest.BenchVector(text, 16))
				}
				chunks = append(chunks, c)
			}
			sp.put(e, chunks)
			if err := ref.Put(ctx, e, chunks); err != nil {
				t.Fatal(err)
			}
		}
		for _, q := range queries {
			want, _ := ref.Keyword(ctx, "main", "", q, memory.Filter{}, 10)
			if d := cmp.Diff(summary(want), summary(rankKeyword([]*space{sp}, queryWords(q), memory.Filter{}, 10))); d != "" {
				t.Fatalf("step %d: keyword %q (-reference +space):\n%s", step, q, d)
			}
			for _, dims := range []int{8, 16} {
				v := memory.Normalized(memorytest.BenchVector(q, dims))
				want, _ := ref.Vector(ctx, "main", "", v, memory.Filter{}, 10)
				if d := cmp.Diff(summary(want), summary(rankVector([]*space{sp}, v, memory.Filter{}, 10))); d != "" {
					t.Fatalf("step %d: vector of %d dimensions for %q (-reference +space):\n%s", step, dims, q, d)
				}
			}
		}
	}
	if len(sp.vecs) != len(sp.rows)*sp.dims {
		t.Errorf("%d floats for %d rows of %d dimensions", len(sp.vecs), len(sp.rows), sp.dims)
	}
}

// summary describes matches for comparison: entry, chunk, score to four
// places, and the chunk's vector by its first values.
func summary(ms []memory.Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf("%s/%s %q #%d %q %.4f %.4f", m.Entry.Owner, m.Entry.Key, m.Entry.Text, m.Chunk.Seq, m.Chunk.Text, m.Score, m.Chunk.Vector[:min(3, len(m.Chunk.Vector))])
	}
	return out
}
