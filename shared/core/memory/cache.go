package memory

import (
	"container/list"
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Defaults of the embedding cache (seed 004 bc_embedding_cache: 24 h TTL).
const (
	DefaultCacheSize = 10_000
	DefaultCacheTTL  = 24 * time.Hour
)

// Cached wraps e with an in-memory cache of vectors keyed by the SHA-256
// of the text and the model name (seed 004 bc_embedding_cache), so that
// re-storing unchanged text and repeating a query cost no embedding call.
// It keeps at most size vectors (0 means DefaultCacheSize), evicting the
// least recently used, each for at most ttl (0 means DefaultCacheTTL). The
// result is safe for concurrent use if e is. Cached(nil, …) is nil, so a
// missing embedder stays missing.
func Cached(e Embedder, size int, ttl time.Duration) Embedder {
	if e == nil {
		return nil
	}
	return newCache(e, size, ttl, time.Now)
}

// cacheKey identifies a cached vector.
type cacheKey struct {
	sum   [sha256.Size]byte
	model string
}

// cacheItem is one cached vector, the value of an LRU list element.
type cacheItem struct {
	key     cacheKey
	vector  []float32
	expires time.Time
}

// cache is the Embedder Cached returns.
type cache struct {
	next Embedder
	size int
	ttl  time.Duration
	now  func() time.Time

	mu    sync.Mutex
	lru   *list.List // front: most recently used; values are *cacheItem
	items map[cacheKey]*list.Element
}

func newCache(e Embedder, size int, ttl time.Duration, now func() time.Time) *cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	if ttl <= 0 {
		ttl = DefaultCacheTTL
	}
	return &cache{next: e, size: size, ttl: ttl, now: now, lru: list.New(), items: make(map[cacheKey]*list.Element)}
}

// Model names the wrapped embedder's model.
func (c *cache) Model() string { return c.next.Model() }

// Embed returns cached vectors for the texts it has seen and asks the
// wrapped embedder, in one call, for the others (each distinct text once).
// Returned vectors are copies the caller may modify.
func (c *cache) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	model := c.next.Model()
	out := make([][]float32, len(texts))
	var missTexts []string
	var missKeys []cacheKey
	missIdx := map[cacheKey][]int{}

	c.mu.Lock()
	now := c.now()
	for i, t := range texts {
		k := cacheKey{sum: sha256.Sum256([]byte(t)), model: model}
		if v, ok := c.getLocked(k, now); ok {
			out[i] = slices.Clone(v)
			continue
		}
		if _, seen := missIdx[k]; !seen {
			missTexts = append(missTexts, t)
			missKeys = append(missKeys, k)
		}
		missIdx[k] = append(missIdx[k], i)
	}
	c.mu.Unlock()

	if len(missTexts) == 0 {
		return out, nil
	}
	vecs, err := c.next.Embed(ctx, missTexts)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(missTexts) {
		return nil, fmt.Errorf("embed: model %q returned %d vectors for %d texts", model, len(vecs), len(missTexts))
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	now = c.now()
	for j, k := range missKeys {
		v := slices.Clone(vecs[j])
		if len(v) > 0 {
			c.putLocked(k, v, now)
		}
		// Copies of what the cache holds, so callers cannot change it.
		for _, i := range missIdx[k] {
			out[i] = slices.Clone(v)
		}
	}
	return out, nil
}

// getLocked returns a live cached vector and marks it recently used.
func (c *cache) getLocked(k cacheKey, now time.Time) ([]float32, bool) {
	el, ok := c.items[k]
	if !ok {
		return nil, false
	}
	it := el.Value.(*cacheItem)
	if !now.Before(it.expires) {
		c.lru.Remove(el)
		delete(c.items, k)
		return nil, false
	}
	c.lru.MoveToFront(el)
	return it.vector, true
}

// putLocked stores a vector, evicting the least recently used beyond size.
func (c *cache) putLocked(k cacheKey, v []float32, now time.Time) {
	if el, ok := c.items[k]; ok {
		it := el.Value.(*cacheItem)
		it.vector, it.expires = v, now.Add(c.ttl)
		c.lru.MoveToFront(el)
		return
	}
	c.items[k] = c.lru.PushFront(&cacheItem{key: k, vector: v, expires: now.Add(c.ttl)})
	for c.lru.Len() > c.size {
		last := c.lru.Back()
		c.lru.Remove(last)
		delete(c.items, last.Value.(*cacheItem).key)
	}
}

// len returns how many vectors the cache holds, live or expired.
func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
