package dynamo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
)

// Search of the memory items in the function's process.
//
// A memory space, the memories of one agent and one owner, is read into
// the process by its first search: its head (strongly consistent), then
// its entry items (a strongly consistent, paginated Query of the space's
// sort key prefix). The copy is kept for later searches, within the
// cache's byte budget, the least recently searched spaces evicted first.
// Each later search first asks the table what changed: one strongly
// consistent Query of the space's change items after the copy's version,
// which ends with the head; the entries those changes name are read again
// (BatchGetItem, strongly consistent) and replace their copies. When
// nothing changed that Query returns the head alone, one read unit. A
// search therefore sees every write that completed before it began,
// whichever process made it. Writes of this process update its copy
// directly.
//
// A copy is read whole again when more than maxDelta changes came since,
// when it was last confirmed current more than half of memoryLogTTL ago
// (older change items may have expired), or when its head went back (the
// items were deleted and written anew).
//
// Keyword search ranks chunks by BM25 (Lucene's formula, k1 = 1.2,
// b = 0.75) with the statistics of the chunks the searcher may see, the
// agent-wide space and the owner's together. Words are lower-cased runs
// of letters and digits (diacritics count, as with OpenSearch's standard
// analyzer); the first maxQueryTerms distinct words of a query are
// searched, and any may match: user text is never syntax. Vector search
// is the dot product of the normalised query with every chunk's
// normalised vector of the same length.

// Limits of the in-process search.
const (
	// maxDelta is the most changes a cached space catches up with one by
	// one; beyond, it is read whole again.
	maxDelta = 64
	// maxQueryTerms bounds how many words of a query are searched.
	maxQueryTerms = 32
	// Estimated bytes of the bookkeeping of an entry, a chunk and a word
	// of a space's vocabulary, beyond their texts and vectors.
	entryOverhead = 160
	chunkOverhead = 96
	wordOverhead  = 64
)

// BM25 parameters (Lucene's defaults).
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// ErrMemoryTooLarge is wrapped by the error of a search whose memory
// space does not fit in the cache's budget (MemoryConfig.CacheBytes): such
// a space needs OpenSearch.
var ErrMemoryTooLarge = errors.New("memory space larger than the in-process search allows")

// spaceID identifies a memory space: the memories of one agent and one
// owner ("" for the agent-wide ones).
type spaceID struct{ agent, owner string }

// spaceCache holds the spaces searched in this process.
type spaceCache struct {
	store  *Store
	budget int64

	mu      sync.RWMutex // guards everything below and the spaces' contents
	spaces  map[spaceID]*space
	loading map[spaceID]chan struct{} // closed when the load ends
	// tooLarge remembers the head version at which a space was found too
	// large, so that searches do not read it again until it changes.
	tooLarge map[spaceID]int64
	bytes    int64 // of the cached spaces
	uses     uint64
}

// space is the copy of one memory space, as of version ver. Its chunks
// are rows of one slice, and their vectors rows of one contiguous slice
// of floats, so that a search reads memory in order.
type space struct {
	id spaceID
	// ver is the version of the space the copy reflects at least: every
	// change up to it is in the copy.
	ver int64
	// checked is when the table last confirmed the copy current (the
	// start of that read).
	checked time.Time
	used    uint64
	// bytes estimates the memory the copy holds beyond vecs (size adds
	// them).
	bytes   int64
	entries map[string]*cachedEntry
	rows    []chunkRow
	// dims is the length of the vectors in vecs, set by the first vector;
	// row i's is vecs[i*dims:(i+1)*dims] when the row has one of that
	// length (a change of embedding model leaves vectors of another
	// length in their rows).
	dims int
	vecs []float32
	// words numbers the vocabulary; df counts, by word number, the chunks
	// holding the word.
	words  map[string]uint32
	df     []int32
	tokens int64
}

// cachedEntry is an entry of a cached space and the rows of its chunks.
type cachedEntry struct {
	entry memory.Entry
	rows  []int
	bytes int64
}

// chunkRow is a chunk of a cached entry.
type chunkRow struct {
	entry    *cachedEntry
	category memory.Category
	seq      int
	text     string
	// vec says the row has a vector of the space's dims in vecs; odd
	// holds a vector of another length.
	vec bool
	odd []float32
	// words are the chunk's word numbers, ascending, and counts how often
	// each occurs.
	words  []uint32
	counts []uint16
	// length is the number of words in the chunk.
	length int32
}

func newSpaceCache(s *Store, budget int64) *spaceCache {
	return &spaceCache{
		store: s, budget: budget,
		spaces: map[spaceID]*space{}, loading: map[spaceID]chan struct{}{}, tooLarge: map[spaceID]int64{},
	}
}

func newSpace(id spaceID) *space {
	return &space{id: id, entries: map[string]*cachedEntry{}, words: map[string]uint32{}}
}

// put adds the entry, replacing the one under its key.
func (sp *space) put(e memory.Entry, chunks []memory.Chunk) {
	sp.remove(e.Key)
	ce := &cachedEntry{entry: e, rows: make([]int, len(chunks))}
	ce.bytes = entryOverhead + int64(len(e.Agent)+len(e.Owner)+len(e.Key)+len(e.Text)+len(e.Source))
	for i, c := range chunks {
		row := chunkRow{entry: ce, category: e.Category, seq: c.Seq, text: c.Text}
		if c.Text == e.Text {
			row.text = e.Text // one copy of a one-chunk entry's text
		} else {
			ce.bytes += int64(len(c.Text))
		}
		v := memory.Normalized(c.Vector)
		if v != nil && sp.dims == 0 {
			// The first vector: the rows before it get empty ones.
			sp.dims = len(v)
			sp.vecs = make([]float32, len(sp.rows)*sp.dims)
		}
		switch {
		case v != nil && len(v) == sp.dims:
			row.vec = true
			sp.vecs = append(sp.vecs, v...)
		case v != nil:
			row.odd = v
			ce.bytes += 4 * int64(len(v))
			fallthrough
		default:
			sp.vecs = append(sp.vecs, make([]float32, sp.dims)...) // keeps rows and vectors aligned
		}
		sp.index(&row, c.Text)
		ce.bytes += chunkOverhead + 6*int64(len(row.words))
		ce.rows[i] = len(sp.rows)
		sp.rows = append(sp.rows, row)
	}
	sp.entries[e.Key] = ce
	sp.bytes += ce.bytes
}

// index sets the row's words from text and counts them in the space's
// statistics.
func (sp *space) index(row *chunkRow, text string) {
	ws := words(text)
	row.length = int32(len(ws))
	slices.Sort(ws)
	type wordCount struct {
		id uint32
		n  int
	}
	var counted []wordCount
	for j := 0; j < len(ws); {
		n := 1
		for j+n < len(ws) && ws[j+n] == ws[j] {
			n++
		}
		id, ok := sp.words[ws[j]]
		if !ok {
			id = uint32(len(sp.df))
			sp.words[ws[j]] = id
			sp.df = append(sp.df, 0)
			sp.bytes += wordOverhead + int64(len(ws[j]))
		}
		sp.df[id]++
		counted = append(counted, wordCount{id, n})
		j += n
	}
	slices.SortFunc(counted, func(a, b wordCount) int { return cmp.Compare(a.id, b.id) })
	row.words = make([]uint32, len(counted))
	row.counts = make([]uint16, len(counted))
	for j, wc := range counted {
		row.words[j], row.counts[j] = wc.id, uint16(min(wc.n, math.MaxUint16))
	}
	sp.tokens += int64(row.length)
}

// remove drops the entry under key, if there is one, moving the last rows
// into the places of its rows. Its words stay in the vocabulary, with the
// counts of the chunks that still hold them.
func (sp *space) remove(key string) {
	ce, ok := sp.entries[key]
	if !ok {
		return
	}
	// From the highest row down, so that a row moved into a freed place
	// is never one still to be removed.
	rows := slices.Clone(ce.rows)
	slices.Sort(rows)
	for _, r := range slices.Backward(rows) {
		row := &sp.rows[r]
		for _, id := range row.words {
			sp.df[id]--
		}
		sp.tokens -= int64(row.length)
		last := len(sp.rows) - 1
		if r != last {
			moved := sp.rows[last]
			sp.rows[r] = moved
			if sp.dims > 0 {
				copy(sp.vecs[r*sp.dims:(r+1)*sp.dims], sp.vecs[last*sp.dims:])
			}
			i := slices.Index(moved.entry.rows, last)
			moved.entry.rows[i] = r
		}
		sp.rows = sp.rows[:last]
		if sp.dims > 0 {
			sp.vecs = sp.vecs[:last*sp.dims]
		}
	}
	delete(sp.entries, key)
	sp.bytes -= ce.bytes
}

// size estimates the memory the copy holds.
func (sp *space) size() int64 { return sp.bytes + 4*int64(len(sp.vecs)) }

// vector returns row i's vector, nil without one.
func (sp *space) vector(i int) []float32 {
	if sp.rows[i].vec {
		return sp.vecs[i*sp.dims : (i+1)*sp.dims : (i+1)*sp.dims]
	}
	return sp.rows[i].odd
}

// count returns how often word id occurs in the chunk.
func (r *chunkRow) count(id uint32) int {
	if i, ok := slices.BinarySearch(r.words, id); ok {
		return int(r.counts[i])
	}
	return 0
}

// words splits text into lower-cased runs of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}

// queryWords returns the first maxQueryTerms distinct words of a query.
func queryWords(q string) []string {
	var out []string
	for _, w := range words(q) {
		if !slices.Contains(out, w) {
			out = append(out, w)
			if len(out) == maxQueryTerms {
				break
			}
		}
	}
	return out
}

// visible returns the current copies of the spaces owner may see: the
// agent-wide one and, for an owner, the owner's, read side by side. It
// marks them used first, in that order, for the eviction of the least
// recently used.
func (c *spaceCache) visible(ctx context.Context, agent, owner string) ([]*space, error) {
	ids := []spaceID{{agent, ""}}
	if owner != "" {
		ids = append(ids, spaceID{agent, owner})
	}
	c.mu.Lock()
	for _, id := range ids {
		if sp := c.spaces[id]; sp != nil {
			c.uses++
			sp.used = c.uses
		}
	}
	c.mu.Unlock()
	out := make([]*space, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() { out[i], errs[i] = c.fresh(ctx, id) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// fresh returns the copy of space id with every change that completed
// before the call, reading the space whole when it is not cached.
func (c *spaceCache) fresh(ctx context.Context, id spaceID) (*space, error) {
	for {
		c.mu.Lock()
		if done, ok := c.loading[id]; ok {
			// Another search is reading the space; it may have begun
			// before this call, so this one catches up after it.
			c.mu.Unlock()
			select {
			case <-done:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		sp := c.spaces[id]
		if sp == nil || c.store.now().Sub(sp.checked) > memoryLogTTL/2 {
			done := make(chan struct{})
			c.loading[id] = done
			c.mu.Unlock()
			sp, err := c.load(ctx, id)
			c.mu.Lock()
			delete(c.loading, id)
			close(done)
			if err == nil {
				c.install(sp)
			}
			c.mu.Unlock()
			return sp, err
		}
		c.mu.Unlock()
		current, err := c.catchUp(ctx, sp)
		if err != nil || current {
			return sp, err
		}
		c.mu.Lock()
		if c.spaces[id] == sp {
			c.evict(sp)
		}
		c.mu.Unlock()
	}
}

// load reads space id whole: the version from its head, then its
// entries. It fails with ErrMemoryTooLarge, having read no more than the
// budget, for a space that does not fit.
func (c *spaceCache) load(ctx context.Context, id spaceID) (*space, error) {
	start := c.store.now()
	head, err := c.store.getItem(ctx, memoryHeadKey(id.agent, id.owner))
	if err != nil {
		return nil, fmt.Errorf("dynamo: memory search: read the head of %s: %w", id, err)
	}
	ver := getN(head, attrMemVersion)
	c.mu.RLock()
	large, known := c.tooLarge[id]
	c.mu.RUnlock()
	if known && large == ver {
		return nil, fmt.Errorf("dynamo: memory search of %s: %w (%d bytes)", id, ErrMemoryTooLarge, c.budget)
	}
	sp := newSpace(id)
	sp.ver, sp.checked = ver, start
	p := dynamodb.NewQueryPaginator(c.store.db, &dynamodb.QueryInput{
		TableName:              c.store.table,
		ConsistentRead:         aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :pfx)"),
		ExpressionAttributeValues: item{
			":pk":  attrS(pfxMemory + id.agent),
			":pfx": attrS(memoryEntryPrefix(id.owner)),
		},
	})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("dynamo: memory search: read %s: %w", id, err)
		}
		for _, it := range out.Items {
			e, chunks, err := memoryFromItem(it)
			if err != nil {
				return nil, fmt.Errorf("dynamo: memory search: read %s: %w", id, err)
			}
			sp.put(e, chunks)
		}
		if sp.size() > c.budget {
			c.mu.Lock()
			c.tooLarge[id] = ver
			c.mu.Unlock()
			return nil, fmt.Errorf("dynamo: memory search of %s: %w (%d bytes)", id, ErrMemoryTooLarge, c.budget)
		}
	}
	c.mu.Lock()
	delete(c.tooLarge, id)
	c.mu.Unlock()
	return sp, nil
}

// catchUp applies to sp the changes committed since its version. It
// reports false when sp cannot catch up and must be read whole: too many
// changes, or a head that went back.
func (c *spaceCache) catchUp(ctx context.Context, sp *space) (bool, error) {
	c.mu.RLock()
	base := sp.ver
	c.mu.RUnlock()
	start := c.store.now()
	pfx := memoryLogPrefix(sp.id.owner)
	out, err := c.store.db.Query(ctx, &dynamodb.QueryInput{
		TableName:              c.store.table,
		ConsistentRead:         aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :from AND :head"),
		ExpressionAttributeValues: item{
			":pk":   attrS(pfxMemory + sp.id.agent),
			":from": attrS(memoryLogSortKey(sp.id.owner, base+1)),
			":head": attrS(pfx + skMemoryHead),
		},
		Limit: aws.Int32(maxDelta + 1),
	})
	if err != nil {
		return false, fmt.Errorf("dynamo: memory search: changes of %s: %w", sp.id, err)
	}
	head := int64(-1)
	end := base // the last of the changes base+1, base+2, … found
	var keys []string
	for _, it := range out.Items {
		suffix := strings.TrimPrefix(getS(it, attrSK), pfx)
		if suffix == skMemoryHead {
			head = getN(it, attrMemVersion)
			continue
		}
		if v, err := strconv.ParseInt(suffix, 10, 64); err == nil && v == end+1 {
			end = v
			keys = append(keys, getList(it, attrMemKeys)...)
		}
	}
	switch {
	case head < 0 && len(out.LastEvaluatedKey) > 0:
		return false, nil // more than maxDelta changes
	case head < 0:
		head = 0 // never written since heads exist
	}
	if head < base {
		return false, nil
	}
	if end == base {
		// Nothing changed, or change base+1 committed while the Query
		// passed its place: the copy is current as of base either way.
		if head == base {
			c.mu.Lock()
			if sp.ver == base {
				sp.checked = start
			}
			c.mu.Unlock()
		}
		return true, nil
	}
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	items, err := c.store.batchGet(ctx, sp.id.agent, sp.id.owner, keys)
	if err != nil {
		return false, fmt.Errorf("dynamo: memory search: changes of %s: %w", sp.id, err)
	}
	decoded := make(map[string]memory.Record, len(items))
	for _, it := range items {
		e, chunks, err := memoryFromItem(it)
		if err != nil {
			return false, fmt.Errorf("dynamo: memory search: changes of %s: %w", sp.id, err)
		}
		decoded[e.Key] = memory.Record{Entry: e, Chunks: chunks}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	// A copy already past end holds newer reads than these.
	if sp.ver <= end {
		c.update(sp, func() {
			for _, k := range keys {
				if r, ok := decoded[k]; ok {
					sp.put(r.Entry, r.Chunks)
				} else {
					sp.remove(k)
				}
			}
			sp.ver, sp.checked = end, start
		})
	}
	return true, nil
}

// written applies a write this process committed as version ver+1 of
// space id (rec nil for a delete) to the cached copy, if it is at ver.
func (c *spaceCache) written(id spaceID, ver int64, key string, rec *memory.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sp := c.spaces[id]
	if sp == nil || sp.ver != ver {
		return
	}
	c.update(sp, func() {
		if rec == nil {
			sp.remove(key)
		} else {
			sp.put(rec.Entry, rec.Chunks)
		}
		sp.ver = ver + 1
	})
}

// update changes sp with f, keeping the cache's byte count, and evicts
// spaces while the cache is over budget. The caller holds mu.
func (c *spaceCache) update(sp *space, f func()) {
	cached := c.spaces[sp.id] == sp
	before := sp.size()
	f()
	if cached {
		c.bytes += sp.size() - before
		c.shrink(sp)
	}
}

// install caches sp, replacing the copy of its space, and evicts the least
// recently used others while over budget. The caller holds mu.
func (c *spaceCache) install(sp *space) {
	if old := c.spaces[sp.id]; old != nil {
		c.bytes -= old.size()
	}
	c.spaces[sp.id] = sp
	c.bytes += sp.size()
	c.shrink(sp)
}

// shrink evicts the least recently used spaces but keep while the cache
// is over budget, and keep too when it alone is. The caller holds mu.
func (c *spaceCache) shrink(keep *space) {
	c.uses++
	keep.used = c.uses
	for c.bytes > c.budget {
		var lru *space
		for _, sp := range c.spaces {
			if sp != keep && (lru == nil || sp.used < lru.used) {
				lru = sp
			}
		}
		if lru == nil {
			lru = keep
		}
		c.evict(lru)
		if lru == keep {
			return
		}
	}
}

// evict drops sp from the cache; searches holding it finish with it. The
// caller holds mu.
func (c *spaceCache) evict(sp *space) {
	delete(c.spaces, sp.id)
	c.bytes -= sp.size()
}

// String names a space in errors.
func (id spaceID) String() string {
	if id.owner == "" {
		return fmt.Sprintf("the agent-wide memories of %q", id.agent)
	}
	return fmt.Sprintf("the memories of %q for %q", id.agent, id.owner)
}

// batchGet reads, strongly consistent, the memory items of agent and owner
// under keys; missing items are left out.
func (s *Store) batchGet(ctx context.Context, agent, owner string, keys []string) ([]item, error) {
	var out []item
	for len(keys) > 0 {
		n := min(len(keys), 100)
		req := make([]item, n)
		for i, k := range keys[:n] {
			req[i] = memoryKey(agent, owner, k)
		}
		keys = keys[n:]
		for attempt := 0; len(req) > 0; attempt++ {
			res, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
				RequestItems: map[string]dynamodb.KeysAndAttributes{*s.table: {Keys: req, ConsistentRead: aws.Bool(true)}},
			})
			if err != nil {
				return nil, err
			}
			out = append(out, res.Responses[*s.table]...)
			req = res.UnprocessedKeys[*s.table].Keys
			if len(req) > 0 {
				if attempt >= 10 {
					return nil, fmt.Errorf("%d reads still unprocessed after %d attempts", len(req), attempt+1)
				}
				if err := sleep(ctx, backoff(attempt)); err != nil {
					return nil, err
				}
			}
		}
	}
	return out, nil
}

// keeps reports whether the filter keeps category cat.
func keeps(f memory.Filter, cat memory.Category) bool {
	return len(f.Categories) == 0 || slices.Contains(f.Categories, cat)
}

// keyword ranks the chunks of the spaces owner may see by BM25 for query.
func (c *spaceCache) keyword(ctx context.Context, agent, owner, query string, f memory.Filter, k int) ([]memory.Match, error) {
	terms := queryWords(query)
	if len(terms) == 0 || k <= 0 {
		return nil, nil
	}
	return c.rank(ctx, agent, owner, func(spaces []*space) []memory.Match { return rankKeyword(spaces, terms, f, k) })
}

// rank returns what rank makes of the current copies of the spaces owner
// may see, under the cache's read lock.
func (c *spaceCache) rank(ctx context.Context, agent, owner string, rank func([]*space) []memory.Match) ([]memory.Match, error) {
	spaces, err := c.visible(ctx, agent, owner)
	if err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	return rank(spaces), nil
}

// rankKeyword ranks the chunks of spaces by BM25 for the terms; the caller
// holds the cache's lock.
func rankKeyword(spaces []*space, terms []string, f memory.Filter, k int) []memory.Match {
	var n, total float64
	df := make([]float64, len(terms))
	for _, sp := range spaces {
		n += float64(len(sp.rows))
		total += float64(sp.tokens)
		for i, t := range terms {
			if id, ok := sp.words[t]; ok {
				df[i] += float64(sp.df[id])
			}
		}
	}
	if n == 0 {
		return nil
	}
	avg := total / n
	type term struct {
		id  uint32
		idf float64
	}
	top := topK{k: k}
	for _, sp := range spaces {
		var ts []term
		for i, t := range terms {
			if id, ok := sp.words[t]; ok && sp.df[id] > 0 {
				ts = append(ts, term{id, math.Log(1 + (n-df[i]+0.5)/(df[i]+0.5))})
			}
		}
		if len(ts) == 0 {
			continue
		}
		for i := range sp.rows {
			row := &sp.rows[i]
			var score float64
			for _, t := range ts {
				if tf := float64(row.count(t.id)); tf > 0 {
					score += t.idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*float64(row.length)/avg))
				}
			}
			if score > 0 && keeps(f, row.category) {
				top.offer(scored{score, sp, i})
			}
		}
	}
	return top.matches()
}

// vector ranks the chunks of the spaces owner may see by cosine
// similarity to v.
func (c *spaceCache) vector(ctx context.Context, agent, owner string, v []float32, f memory.Filter, k int) ([]memory.Match, error) {
	q := memory.Normalized(v)
	if q == nil || k <= 0 {
		return nil, nil
	}
	return c.rank(ctx, agent, owner, func(spaces []*space) []memory.Match { return rankVector(spaces, q, f, k) })
}

// rankVector ranks the chunks of spaces by the dot product of their
// vectors with q, of unit length; the caller holds the cache's lock.
func rankVector(spaces []*space, q []float32, f memory.Filter, k int) []memory.Match {
	top := topK{k: k}
	for _, sp := range spaces {
		for i := range sp.rows {
			row := &sp.rows[i]
			var v []float32
			switch {
			case row.vec && sp.dims == len(q):
				v = sp.vecs[i*sp.dims : (i+1)*sp.dims]
			case len(row.odd) == len(q):
				v = row.odd
			default:
				continue
			}
			if keeps(f, row.category) {
				top.offer(scored{float64(memory.Dot(q, v)), sp, i})
			}
		}
	}
	return top.matches()
}

// scored is a row of a space with its score.
type scored struct {
	score float64
	sp    *space
	row   int
}

// before reports whether a ranks before b: the higher score, then owner,
// key and seq, so that equal scores rank the same in every process.
func (a scored) before(b scored) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	ra, rb := &a.sp.rows[a.row], &b.sp.rows[b.row]
	ea, eb := &ra.entry.entry, &rb.entry.entry
	if ea.Owner != eb.Owner {
		return ea.Owner < eb.Owner
	}
	if ea.Key != eb.Key {
		return ea.Key < eb.Key
	}
	return ra.seq < rb.seq
}

// topK keeps the k best chunks offered, in a heap whose root is the worst
// kept.
type topK struct {
	k    int
	heap []scored
}

func (t *topK) offer(s scored) {
	h := t.heap
	if len(h) < t.k {
		h = append(h, s)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if !h[p].before(h[i]) {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		t.heap = h
		return
	}
	if !s.before(h[0]) {
		return
	}
	h[0] = s
	for i := 0; ; {
		worst, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && h[worst].before(h[l]) {
			worst = l
		}
		if r < len(h) && h[worst].before(h[r]) {
			worst = r
		}
		if worst == i {
			break
		}
		h[i], h[worst] = h[worst], h[i]
		i = worst
	}
}

// matches returns the kept chunks, best first, as matches carrying
// copies of their entry and vector.
func (t *topK) matches() []memory.Match {
	slices.SortFunc(t.heap, func(a, b scored) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	out := make([]memory.Match, len(t.heap))
	for i, s := range t.heap {
		row := &s.sp.rows[s.row]
		out[i] = memory.Match{
			Entry: row.entry.entry,
			Chunk: memory.Chunk{Seq: row.seq, Text: row.text, Vector: slices.Clone(s.sp.vector(s.row))},
			Score: s.score,
		}
	}
	return out
}
