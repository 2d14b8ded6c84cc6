package sqlite

import (
	"encoding/binary"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
)

// parallelRows is the number of vectors above which a scan is split
// across goroutines.
const parallelRows = 4096

// vectorCache is the in-process copy of the stored vectors, per memory
// space, loaded on a space's first vector search. It reflects the database
// at generation gen: every space it holds is exactly as stored then.
type vectorCache struct {
	writeMu sync.Mutex // serialises the index's writes in this process
	loadMu  sync.Mutex // one load at a time

	mu     sync.RWMutex
	gen    int64
	spaces map[space]*spaceVectors
}

// vectorRow is a chunk's vector as the caller gave it; apply normalises
// it, only for spaces in the cache.
type vectorRow struct {
	chunk  int64
	vector []float32
}

// vectorChange is what a committed write did to one memory.
type vectorChange struct {
	space    space
	memory   int64
	category memory.Category
	rows     []vectorRow
	deleted  bool
}

// vectorHit is a chunk a scan found, with a copy of its vector.
type vectorHit struct {
	chunk  int64
	score  float32
	vector []float32
}

// reset empties the cache, which then reflects generation gen. The caller
// holds mu (or owns the cache).
func (c *vectorCache) reset(gen int64) {
	c.gen = gen
	c.spaces = map[space]*spaceVectors{}
}

// apply records a write committed as generation gen. If the cache did not
// reflect the generation just before, a write it never saw came between
// (another process, or a load that raced this write): it starts over.
func (c *vectorCache) apply(gen int64, changes []vectorChange) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen-1 {
		c.reset(gen)
		return
	}
	c.gen = gen
	for _, ch := range changes {
		sv := c.spaces[ch.space]
		if sv == nil {
			continue
		}
		sv.remove(ch.memory)
		if !ch.deleted {
			for _, r := range ch.rows {
				if v := memory.Normalized(r.vector); v != nil {
					sv.add(r.chunk, ch.memory, ch.category, v)
				}
			}
		}
	}
}

// get returns the space's vectors if the cache holds them as of
// generation gen.
func (c *vectorCache) get(gen int64, sp space) (*spaceVectors, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	sv, ok := c.spaces[sp]
	return sv, ok && c.gen == gen
}

// install adds a space's vectors read at generation gen.
func (c *vectorCache) install(gen int64, sp space, sv *spaceVectors) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		c.reset(gen)
	}
	c.spaces[sp] = sv
}

// search scans the space's vectors if the cache holds them as of
// generation gen (or, with stale, as of any generation); ok is false when
// they must be loaded first.
func (c *vectorCache) search(gen int64, sp space, q []float32, cats []memory.Category, k int, stale bool) (hits []vectorHit, ok bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	sv, found := c.spaces[sp]
	if !found || c.gen != gen && !stale {
		return nil, false
	}
	return sv.search(q, cats, k), true
}

// searchIn scans sv, which the cache holds or held, under the lock that
// keeps writes from changing it meanwhile.
func (c *vectorCache) searchIn(sv *spaceVectors, q []float32, cats []memory.Category, k int) []vectorHit {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return sv.search(q, cats, k)
}

// spaceVectors are one memory space's vectors, one block per dimension
// (more than one only after a change of embedding model).
type spaceVectors struct {
	blocks []*vectorBlock
}

// vectorBlock holds vectors of one dimension in one slice: row r is
// data[r*dims : (r+1)*dims].
type vectorBlock struct {
	dims     int
	data     []float32
	chunks   []int64
	memories []int64
	cats     []uint16
	catNames []memory.Category
	byMemory map[int64][]int32 // memory id → its rows
}

// block returns the block of vectors of dims, creating it with room for
// capHint rows.
func (sv *spaceVectors) block(dims, capHint int) *vectorBlock {
	for _, b := range sv.blocks {
		if b.dims == dims {
			return b
		}
	}
	b := &vectorBlock{
		dims:     dims,
		data:     make([]float32, 0, capHint*dims),
		chunks:   make([]int64, 0, capHint),
		memories: make([]int64, 0, capHint),
		cats:     make([]uint16, 0, capHint),
		byMemory: make(map[int64][]int32, capHint),
	}
	sv.blocks = append(sv.blocks, b)
	return b
}

// add appends a unit-length vector.
func (sv *spaceVectors) add(chunk, mem int64, cat memory.Category, v []float32) {
	b := sv.block(len(v), 0)
	b.data = append(b.data, v...)
	b.appendRow(chunk, mem, cat)
}

// addBlob appends a stored vector, normalising it; a vector with no
// direction is left out, as it can match nothing.
func (sv *spaceVectors) addBlob(chunk, mem int64, cat memory.Category, blob []byte, capHint int) {
	b := sv.block(len(blob)/4, capHint)
	start := len(b.data)
	var sum float64
	for i := 0; i < len(blob); i += 4 {
		x := math.Float32frombits(binary.LittleEndian.Uint32(blob[i:]))
		b.data = append(b.data, x)
		sum += float64(x) * float64(x)
	}
	if sum == 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		b.data = b.data[:start]
		return
	}
	inv := 1 / math.Sqrt(sum)
	for i := start; i < len(b.data); i++ {
		b.data[i] = float32(float64(b.data[i]) * inv)
	}
	b.appendRow(chunk, mem, cat)
}

// appendRow records the metadata of the row whose vector was just
// appended.
func (b *vectorBlock) appendRow(chunk, mem int64, cat memory.Category) {
	code := slices.Index(b.catNames, cat)
	if code < 0 {
		code = len(b.catNames)
		b.catNames = append(b.catNames, cat)
	}
	row := int32(len(b.chunks))
	b.chunks = append(b.chunks, chunk)
	b.memories = append(b.memories, mem)
	b.cats = append(b.cats, uint16(code))
	b.byMemory[mem] = append(b.byMemory[mem], row)
}

// remove drops the rows of a memory, moving the last rows into their
// places.
func (sv *spaceVectors) remove(mem int64) {
	for _, b := range sv.blocks {
		rows := b.byMemory[mem]
		if len(rows) == 0 {
			continue
		}
		delete(b.byMemory, mem)
		// From the highest row down, so the last row is never one still
		// to be removed.
		slices.Sort(rows)
		for i := len(rows) - 1; i >= 0; i-- {
			b.removeRow(int(rows[i]))
		}
	}
}

// removeRow replaces row r by the last row.
func (b *vectorBlock) removeRow(r int) {
	last := len(b.chunks) - 1
	if r != last {
		d := b.dims
		copy(b.data[r*d:(r+1)*d], b.data[last*d:(last+1)*d])
		b.chunks[r], b.memories[r], b.cats[r] = b.chunks[last], b.memories[last], b.cats[last]
		moved := b.byMemory[b.memories[r]]
		if i := slices.Index(moved, int32(last)); i >= 0 {
			moved[i] = int32(r)
		}
	}
	b.data = b.data[:last*b.dims]
	b.chunks = b.chunks[:last]
	b.memories = b.memories[:last]
	b.cats = b.cats[:last]
}

// search returns the k rows of dimension len(q) most similar to q (unit
// length) among the categories cats (all when empty), best first.
func (sv *spaceVectors) search(q []float32, cats []memory.Category, k int) []vectorHit {
	var b *vectorBlock
	for _, x := range sv.blocks {
		if x.dims == len(q) {
			b = x
		}
	}
	if b == nil || len(b.chunks) == 0 {
		return nil
	}
	var allowed []bool
	if len(cats) > 0 {
		allowed = make([]bool, len(b.catNames))
		some := false
		for i, n := range b.catNames {
			allowed[i] = slices.Contains(cats, n)
			some = some || allowed[i]
		}
		if !some {
			return nil
		}
	}

	n := len(b.chunks)
	workers := 1
	if n >= parallelRows {
		workers = min(runtime.GOMAXPROCS(0), n/(parallelRows/2))
	}
	heaps := make([]topK, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*n/workers, (w+1)*n/workers
		wg.Go(func() { heaps[w] = b.scan(q, allowed, k, lo, hi) })
	}
	wg.Wait()

	var all topK
	for _, h := range heaps {
		all = append(all, h...)
	}
	slices.SortFunc(all, byRank)
	all = all[:min(k, len(all))]
	hits := make([]vectorHit, len(all))
	d := b.dims
	for i, s := range all {
		hits[i] = vectorHit{chunk: s.chunk, score: s.score, vector: slices.Clone(b.data[int(s.row)*d : (int(s.row)+1)*d])}
	}
	return hits
}

// scan keeps the k best rows in [lo, hi).
func (b *vectorBlock) scan(q []float32, allowed []bool, k, lo, hi int) topK {
	h := make(topK, 0, k)
	d := b.dims
	data := b.data
	for r := lo; r < hi; r++ {
		if allowed != nil && !allowed[b.cats[r]] {
			continue
		}
		s := memory.Dot(q, data[r*d:(r+1)*d])
		if len(h) == k && s < h[0].score {
			continue
		}
		h.offer(scored{score: s, row: int32(r), chunk: b.chunks[r]}, k)
	}
	return h
}

// scored is a row and its similarity.
type scored struct {
	score float32
	row   int32
	chunk int64
}

// worse orders results: lower score, then higher chunk id (so ties rank
// the older chunk first, deterministically).
func worse(a, b scored) bool {
	return a.score < b.score || a.score == b.score && a.chunk > b.chunk
}

// byRank is the comparison that sorts results best first.
func byRank(a, b scored) int {
	switch {
	case worse(a, b):
		return 1
	case worse(b, a):
		return -1
	}
	return 0
}

// topK is a min-heap of at most k results: the worst is at the root.
type topK []scored

// offer adds s if there is room or it beats the worst.
func (h *topK) offer(s scored, k int) {
	if k <= 0 {
		return
	}
	if len(*h) < k {
		*h = append(*h, s)
		h.up(len(*h) - 1)
		return
	}
	if !worse((*h)[0], s) {
		return
	}
	(*h)[0] = s
	h.down(0)
}

func (h topK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !worse(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (h topK) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && worse(h[r], h[l]) {
			m = r
		}
		if !worse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
