package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
)

// Limits of the keyword search.
const (
	// maxQueryTerms bounds how many words of a query are searched.
	maxQueryTerms = 32
	// keywordBudget is how many chunks, at most, one keyword search
	// scores with bm25().
	keywordBudget = 2500
	// spaceShift places a memory space's chunk ids: space number <<
	// spaceShift plus a counter.
	spaceShift = 36
)

// MemoryIndex is the embedded memory.Index: entries and chunks in tables,
// BM25 through an FTS5 table, and cosine similarity computed in process.
//
// Scoping: the memories of one agent and one owner (the agent-wide ones
// have the empty owner) form a memory space. Spaces are numbered and a
// space's chunks have ids (FTS5 rowids) in a range of their own, so
// searches read only the spaces the caller may see: the agent-wide space
// and, for an owner, the owner's. FTS5 seeks to each space's rowid range
// and the vector copy is loaded per space; the results of the two spaces
// are merged by score. The entry's agent and owner are checked again on
// the way out. An entry is identified by (agent, owner, key).
//
// Keyword search: every chunk is a row of memory_fts (tokenizer unicode61
// with diacritics removed, so "cafe" finds "café"). User text never
// reaches FTS5 as syntax: each space-separated word becomes a quoted
// phrase (FTS5 tokenizes inside it) and the words are OR-ed, so a query
// like `NEAR(` or `"` is just words. Chunks are ranked by bm25(), negated
// so that higher is better; its document frequencies are those of the
// whole table, all spaces together.
//
// bm25() costs about 2 µs per matching chunk in this pure-Go SQLite, so a
// query of common words over a large memory would take a hundred
// milliseconds. The search therefore scores at most keywordBudget chunks
// per space: when the query's words match more, it keeps its rarest words
// whose matches fit the budget (like Elasticsearch's cutoff_frequency,
// common words then only rank through the vector side), and when even the
// rarest word matches more, it scores that word's newest keywordBudget
// chunks. Below the budget the ranking is exact BM25.
//
// Vector search: vectors are stored as little-endian float32 BLOBs. The
// first vector search of a space loads that space's vectors, normalised,
// into one contiguous slice per dimension; later writes update the copy.
// A search is a dot product with every row, split across GOMAXPROCS
// goroutines for large sets, keeping the top k in a heap. Every memory
// write bumps a generation number in the database; a search compares it
// with the copy's, so writes by another process (or a copy that missed a
// write) cause a reload rather than stale results.
type MemoryIndex struct {
	db     *DB
	st     memoryStatements
	cache  vectorCache
	budget int      // keywordBudget, smaller in tests
	spaces sync.Map // space → committed space number
}

// space is a memory space: the memories of one agent and one owner (""
// for the agent-wide ones).
type space struct{ agent, owner string }

// visibleSpaces returns the spaces a search of owner reads: the agent-wide
// space and, for an owner, the owner's own.
func visibleSpaces(agent, owner string) []space {
	if owner == "" {
		return []space{{agent, ""}}
	}
	return []space{{agent, ""}, {agent, owner}}
}

var (
	_ memory.Index      = (*MemoryIndex)(nil)
	_ memory.BatchIndex = (*MemoryIndex)(nil)
)

// MemoryIndex returns the database's memory index. Every call returns the
// same index, which shares the database's connections and lives until
// Close.
func (db *DB) MemoryIndex() *MemoryIndex { return db.mem }

// memoryColumns are the columns of an entry, in the order scanEntry reads.
const memoryColumns = `m.agent, m.owner, m.key, m.text, m.category, m.source, m.created_at, m.updated_at`

// memoryStatements are the memory index's statements, prepared on first
// use (stmt).
type memoryStatements struct {
	// writer
	spaceInsert  stmt
	spaceID      stmt
	nextChunk    stmt
	upsert       stmt
	memoryID     stmt
	deleteFTS    stmt
	deleteChunks stmt
	deleteMemory stmt
	insertChunk  stmt
	insertFTS    stmt
	bump         stmt

	// reader
	get        stmt
	space      stmt
	count      stmt
	keyword    stmt
	keywordIn  stmt
	byChunk    stmt
	generation stmt
	countVecs  stmt
	vectors    stmt
	all        []*stmt
}

// keywordSelect reads a keyword match: the chunk, its entry and score.
const keywordSelect = `SELECT c.seq, c.text, ` + memoryColumns + `, f.score`

// keywordWindow is the FTS5 query both keyword statements start from: the
// matches of ?1 among the space's rowids ?2 to ?3, newest first, at most
// ?4 of them, with their BM25 score. Below the budget that is every match.
const keywordWindow = `SELECT rowid, -bm25(memory_fts) AS score FROM memory_fts
	WHERE memory_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3
	ORDER BY rowid DESC LIMIT ?4`

func newMemoryIndex(db *DB) *MemoryIndex {
	x := &MemoryIndex{db: db, budget: keywordBudget}
	x.cache.reset(-1)
	s := &x.st
	list := []struct {
		db    *sql.DB
		dst   *stmt
		query string
	}{
		{db.w, &s.spaceInsert, `INSERT INTO memory_spaces (agent, owner) VALUES (?, ?) ON CONFLICT (agent, owner) DO NOTHING`},
		{db.w, &s.spaceID, `SELECT id FROM memory_spaces WHERE agent = ? AND owner = ?`},
		{db.w, &s.nextChunk, `SELECT coalesce(max(id), ?1) + 1 FROM memory_chunks WHERE id BETWEEN ?1 AND ?2`},
		{db.w, &s.upsert, `INSERT INTO memories (agent, owner, key, text, category, source, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (agent, owner, key) DO UPDATE SET text = excluded.text, category = excluded.category,
				source = excluded.source, created_at = excluded.created_at, updated_at = excluded.updated_at
			RETURNING id`},
		{db.w, &s.memoryID, `SELECT id FROM memories WHERE agent = ? AND owner = ? AND key = ?`},
		{db.w, &s.deleteFTS, `DELETE FROM memory_fts WHERE rowid IN (SELECT id FROM memory_chunks WHERE memory_id = ?)`},
		{db.w, &s.deleteChunks, `DELETE FROM memory_chunks WHERE memory_id = ?`},
		{db.w, &s.deleteMemory, `DELETE FROM memories WHERE id = ?`},
		{db.w, &s.insertChunk, `INSERT INTO memory_chunks (id, memory_id, seq, text, vector) VALUES (?, ?, ?, ?, ?)`},
		{db.w, &s.insertFTS, `INSERT INTO memory_fts (rowid, body) VALUES (?, ?)`},
		{db.w, &s.bump, `UPDATE memory_state SET generation = generation + 1 WHERE id = 1 RETURNING generation`},

		{db.r, &s.get, `SELECT ` + memoryColumns + ` FROM memories m WHERE m.agent = ? AND m.owner = ? AND m.key = ?`},
		{db.r, &s.space, `SELECT id FROM memory_spaces WHERE agent = ? AND owner = ?`},
		{db.r, &s.count, `SELECT count(*) FROM (SELECT 1 FROM memory_fts
			WHERE memory_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3 LIMIT ?4)`},
		// Unfiltered: the best k of the window, then their entries.
		{db.r, &s.keyword, keywordSelect + `
			FROM (SELECT rowid, score FROM (` + keywordWindow + `) ORDER BY score DESC, rowid LIMIT ?5) AS f
			JOIN memory_chunks c ON c.id = f.rowid
			JOIN memories m ON m.id = c.memory_id
			WHERE m.agent = ?6 AND m.owner = ?7
			ORDER BY f.score DESC, c.id`},
		// Filtered by category: the window's entries, then the best k.
		{db.r, &s.keywordIn, keywordSelect + `
			FROM (` + keywordWindow + `) AS f
			JOIN memory_chunks c ON c.id = f.rowid
			JOIN memories m ON m.id = c.memory_id
			WHERE m.agent = ?6 AND m.owner = ?7 AND m.category IN (SELECT value FROM json_each(?8))
			ORDER BY f.score DESC, c.id LIMIT ?5`},
		// CROSS JOIN fixes the order: look the k ids up, never scan the
		// agent's memories.
		{db.r, &s.byChunk, `SELECT c.id, c.seq, c.text, ` + memoryColumns + `
			FROM json_each(?1) AS j
			CROSS JOIN memory_chunks c ON c.id = j.value
			CROSS JOIN memories m ON m.id = c.memory_id
			WHERE m.agent = ?2 AND m.owner IN ('', ?3)`},
		{db.r, &s.generation, `SELECT generation FROM memory_state WHERE id = 1`},
		{db.r, &s.countVecs, `SELECT count(*) FROM memory_chunks
			WHERE id BETWEEN ?1 AND ?2 AND vector IS NOT NULL`},
		{db.r, &s.vectors, `SELECT c.id, c.memory_id, m.category, c.vector
			FROM memory_chunks c CROSS JOIN memories m ON m.id = c.memory_id
			WHERE c.id BETWEEN ?1 AND ?2 AND c.vector IS NOT NULL AND m.agent = ?3 AND m.owner = ?4`},
	}
	for _, p := range list {
		p.dst.define(p.db, p.query)
		s.all = append(s.all, p.dst)
	}
	return x
}

// chunkRange returns the first and last chunk id of a space's range.
func chunkRange(space int64) (lo, hi int64) {
	return space << spaceShift, (space+1)<<spaceShift - 1
}

// spaceNumber returns the number of a committed space; ok is false for a
// space that has no memories yet.
func (x *MemoryIndex) spaceNumber(ctx context.Context, sp space) (id int64, ok bool, err error) {
	if v, ok := x.spaces.Load(sp); ok {
		return v.(int64), true, nil
	}
	err = x.st.space.QueryRowContext(ctx, sp.agent, sp.owner).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	x.spaces.Store(sp, id)
	return id, true, nil
}

// close releases the prepared statements.
func (x *MemoryIndex) close() error { return closeAll(x.st.all) }

// scanEntry reads the memoryColumns of one row.
func scanEntry(e *memory.Entry, created, updated *int64) []any {
	return []any{&e.Agent, &e.Owner, &e.Key, &e.Text, &e.Category, &e.Source, created, updated}
}

// Put stores an entry and its chunks, replacing what its agent, owner and
// key held.
func (x *MemoryIndex) Put(ctx context.Context, e memory.Entry, chunks []memory.Chunk) error {
	return x.PutMany(ctx, []memory.Record{{Entry: e, Chunks: chunks}})
}

// PutMany stores many entries in one transaction, each replacing what its
// agent, owner and key held: much faster than Put one by one for bulk
// indexing.
func (x *MemoryIndex) PutMany(ctx context.Context, recs []memory.Record) error {
	for _, r := range recs {
		if r.Entry.Agent == "" || r.Entry.Key == "" {
			return fmt.Errorf("sqlite: put memory: %w: empty agent or key", memory.ErrInvalid)
		}
	}
	if len(recs) == 0 {
		return nil
	}
	// Writes are serialised in this process so that the in-memory copy of
	// the vectors is updated in the order the database was.
	x.cache.writeMu.Lock()
	defer x.cache.writeMu.Unlock()

	s := &x.st
	tx, err := begin(ctx, x.db.w, &s.upsert, &s.deleteFTS, &s.deleteChunks, &s.insertChunk, &s.insertFTS, &s.spaceInsert, &s.spaceID, &s.nextChunk, &s.bump)
	if err != nil {
		return fmt.Errorf("sqlite: put memory: begin: %w", err)
	}
	defer tx.Rollback()
	upsert, delFTS, delChunks := x.st.upsert.in(ctx, tx), x.st.deleteFTS.in(ctx, tx), x.st.deleteChunks.in(ctx, tx)
	insChunk, insFTS := x.st.insertChunk.in(ctx, tx), x.st.insertFTS.in(ctx, tx)

	type spaceIDs struct{ number, next, hi int64 }
	ids := map[space]*spaceIDs{}
	changes := make([]vectorChange, 0, len(recs))
	for _, r := range recs {
		e := r.Entry
		sp := space{e.Agent, e.Owner}
		a := ids[sp]
		if a == nil {
			a = &spaceIDs{}
			if _, err := x.st.spaceInsert.in(ctx, tx).ExecContext(ctx, sp.agent, sp.owner); err != nil {
				return fmt.Errorf("sqlite: put memory %q: space: %w", e.Key, err)
			}
			if err := x.st.spaceID.in(ctx, tx).QueryRowContext(ctx, sp.agent, sp.owner).Scan(&a.number); err != nil {
				return fmt.Errorf("sqlite: put memory %q: space: %w", e.Key, err)
			}
			var lo int64
			lo, a.hi = chunkRange(a.number)
			if err := x.st.nextChunk.in(ctx, tx).QueryRowContext(ctx, lo, a.hi).Scan(&a.next); err != nil {
				return fmt.Errorf("sqlite: put memory %q: chunk id: %w", e.Key, err)
			}
			ids[sp] = a
		}

		var id int64
		err := upsert.QueryRowContext(ctx, e.Agent, e.Owner, e.Key, e.Text, string(e.Category), e.Source,
			toMillis(e.CreatedAt), toMillis(e.UpdatedAt)).Scan(&id)
		if err != nil {
			return fmt.Errorf("sqlite: put memory %q: %w", e.Key, err)
		}
		if _, err := delFTS.ExecContext(ctx, id); err != nil {
			return fmt.Errorf("sqlite: put memory %q: %w", e.Key, err)
		}
		if _, err := delChunks.ExecContext(ctx, id); err != nil {
			return fmt.Errorf("sqlite: put memory %q: %w", e.Key, err)
		}
		ch := vectorChange{space: sp, memory: id, category: e.Category}
		for _, c := range r.Chunks {
			if a.next > a.hi {
				return fmt.Errorf("sqlite: put memory %q: a memory space of agent %q has used up its chunk ids", e.Key, e.Agent)
			}
			cid := a.next
			a.next++
			var blob any
			if len(c.Vector) > 0 {
				blob = encodeVector(c.Vector)
			}
			if _, err := insChunk.ExecContext(ctx, cid, id, c.Seq, c.Text, blob); err != nil {
				return fmt.Errorf("sqlite: put memory %q: chunk %d: %w", e.Key, c.Seq, err)
			}
			if _, err := insFTS.ExecContext(ctx, cid, c.Text); err != nil {
				return fmt.Errorf("sqlite: put memory %q: chunk %d: %w", e.Key, c.Seq, err)
			}
			if len(c.Vector) > 0 {
				ch.rows = append(ch.rows, vectorRow{chunk: cid, vector: c.Vector})
			}
		}
		changes = append(changes, ch)
	}
	var gen int64
	if err := x.st.bump.in(ctx, tx).QueryRowContext(ctx).Scan(&gen); err != nil {
		return fmt.Errorf("sqlite: put memory: generation: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: put memory: commit: %w", err)
	}
	// Only now are the spaces' numbers certain: a rolled back number could
	// go to another space.
	for sp, a := range ids {
		x.spaces.Store(sp, a.number)
	}
	x.cache.apply(gen, changes)
	return nil
}

// Get returns the entry of the agent, owner and key, or
// memory.ErrNotFound.
func (x *MemoryIndex) Get(ctx context.Context, agent, owner, key string) (memory.Entry, error) {
	var e memory.Entry
	var created, updated int64
	err := x.st.get.QueryRowContext(ctx, agent, owner, key).Scan(scanEntry(&e, &created, &updated)...)
	if errors.Is(err, sql.ErrNoRows) {
		return memory.Entry{}, fmt.Errorf("sqlite: get memory %q: %w", key, memory.ErrNotFound)
	}
	if err != nil {
		return memory.Entry{}, fmt.Errorf("sqlite: get memory %q: %w", key, err)
	}
	e.CreatedAt, e.UpdatedAt = fromMillis(created), fromMillis(updated)
	return e, nil
}

// Delete removes the entry of the agent, owner and key and its chunks; a
// missing key is no error.
func (x *MemoryIndex) Delete(ctx context.Context, agent, owner, key string) error {
	x.cache.writeMu.Lock()
	defer x.cache.writeMu.Unlock()

	s := &x.st
	tx, err := begin(ctx, x.db.w, &s.memoryID, &s.deleteFTS, &s.deleteChunks, &s.deleteMemory, &s.bump)
	if err != nil {
		return fmt.Errorf("sqlite: delete memory %q: begin: %w", key, err)
	}
	defer tx.Rollback()
	var id int64
	err = x.st.memoryID.in(ctx, tx).QueryRowContext(ctx, agent, owner, key).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: delete memory %q: %w", key, err)
	}
	for _, st := range []*stmt{&x.st.deleteFTS, &x.st.deleteChunks, &x.st.deleteMemory} {
		if _, err := st.in(ctx, tx).ExecContext(ctx, id); err != nil {
			return fmt.Errorf("sqlite: delete memory %q: %w", key, err)
		}
	}
	var gen int64
	if err := x.st.bump.in(ctx, tx).QueryRowContext(ctx).Scan(&gen); err != nil {
		return fmt.Errorf("sqlite: delete memory %q: generation: %w", key, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: delete memory %q: commit: %w", key, err)
	}
	x.cache.apply(gen, []vectorChange{{space: space{agent, owner}, memory: id, deleted: true}})
	return nil
}

// Keyword returns up to k chunks ranked by BM25 for the words of query,
// among the agent-wide chunks of the agent and the owner's; any word may
// match. A query without words finds nothing.
func (x *MemoryIndex) Keyword(ctx context.Context, agent, owner, query string, f memory.Filter, k int) ([]memory.Match, error) {
	terms := queryTerms(query)
	if len(terms) == 0 || k <= 0 {
		return nil, nil
	}
	var cats string
	if len(f.Categories) > 0 {
		b, err := json.Marshal(f.Categories)
		if err != nil {
			return nil, fmt.Errorf("sqlite: keyword search: %w", err)
		}
		cats = string(b)
	}
	var out []memory.Match
	spaces := visibleSpaces(agent, owner)
	for _, sp := range spaces {
		ms, err := x.keywordIn(ctx, sp, terms, cats, k)
		if err != nil {
			return nil, fmt.Errorf("sqlite: keyword search: %w", err)
		}
		out = append(out, ms...)
	}
	if len(spaces) > 1 {
		// BM25 scores of one table are comparable across rowid ranges.
		slices.SortStableFunc(out, func(a, b memory.Match) int { return cmp.Compare(b.Score, a.Score) })
		out = out[:min(k, len(out))]
	}
	return out, nil
}

// keywordIn returns up to k chunks of one space ranked by BM25 for terms,
// of the categories in cats (a JSON array; all when empty).
func (x *MemoryIndex) keywordIn(ctx context.Context, sp space, terms []string, cats string, k int) ([]memory.Match, error) {
	num, ok, err := x.spaceNumber(ctx, sp)
	if err != nil || !ok {
		return nil, err
	}
	lo, hi := chunkRange(num)
	if terms, err = x.affordableTerms(ctx, terms, lo, hi); err != nil {
		return nil, err
	}
	expr := strings.Join(terms, " OR ")
	var rows *sql.Rows
	if cats == "" {
		rows, err = x.st.keyword.QueryContext(ctx, expr, lo, hi, x.budget, k, sp.agent, sp.owner)
	} else {
		rows, err = x.st.keywordIn.QueryContext(ctx, expr, lo, hi, x.budget, k, sp.agent, sp.owner, cats)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []memory.Match
	for rows.Next() {
		var m memory.Match
		var created, updated int64
		dest := append([]any{&m.Chunk.Seq, &m.Chunk.Text}, scanEntry(&m.Entry, &created, &updated)...)
		if err := rows.Scan(append(dest, &m.Score)...); err != nil {
			return nil, err
		}
		m.Entry.CreatedAt, m.Entry.UpdatedAt = fromMillis(created), fromMillis(updated)
		out = append(out, m)
	}
	return out, rows.Err()
}

// affordableTerms returns the terms to search: all of them when their
// matches among the rowids lo to hi fit the budget, else the rarest ones
// whose matches together fit it (at least one). Counting stops at the
// budget, so it costs little.
func (x *MemoryIndex) affordableTerms(ctx context.Context, terms []string, lo, hi int64) ([]string, error) {
	count := func(expr string) (int, error) {
		var n int
		err := x.st.count.QueryRowContext(ctx, expr, lo, hi, x.budget+1).Scan(&n)
		return n, err
	}
	n, err := count(strings.Join(terms, " OR "))
	if err != nil || n <= x.budget || len(terms) == 1 {
		return terms, err
	}
	type term struct {
		expr string
		df   int
	}
	ts := make([]term, len(terms))
	for i, t := range terms {
		ts[i].expr = t
		if ts[i].df, err = count(t); err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(ts, func(a, b term) int { return a.df - b.df })
	keep := []string{ts[0].expr}
	sum := ts[0].df
	for _, t := range ts[1:] {
		if sum+t.df > x.budget {
			break
		}
		keep = append(keep, t.expr)
		sum += t.df
	}
	return keep, nil
}

// Vector returns up to k chunks ranked by cosine similarity to v, among
// the agent-wide chunks of the agent and the owner's. Chunks whose vectors
// have another length than v are not compared.
func (x *MemoryIndex) Vector(ctx context.Context, agent, owner string, v []float32, f memory.Filter, k int) ([]memory.Match, error) {
	q := memory.Normalized(v)
	if q == nil || k <= 0 {
		return nil, nil
	}
	var top []vectorHit
	spaces := visibleSpaces(agent, owner)
	for _, sp := range spaces {
		hits, err := x.topVectors(ctx, sp, q, f.Categories, k)
		if err != nil {
			return nil, fmt.Errorf("sqlite: vector search: %w", err)
		}
		top = append(top, hits...)
	}
	if len(top) == 0 {
		return nil, nil
	}
	if len(spaces) > 1 {
		slices.SortFunc(top, func(a, b vectorHit) int {
			return byRank(scored{score: a.score, chunk: a.chunk}, scored{score: b.score, chunk: b.chunk})
		})
		top = top[:min(k, len(top))]
	}
	ids := make([]int64, len(top))
	for i, t := range top {
		ids[i] = t.chunk
	}
	idsJSON, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("sqlite: vector search: %w", err)
	}
	rows, err := x.st.byChunk.QueryContext(ctx, string(idsJSON), agent, owner)
	if err != nil {
		return nil, fmt.Errorf("sqlite: vector search: %w", err)
	}
	defer rows.Close()
	found := make(map[int64]memory.Match, len(top))
	for rows.Next() {
		var id int64
		var m memory.Match
		var created, updated int64
		dest := append([]any{&id, &m.Chunk.Seq, &m.Chunk.Text}, scanEntry(&m.Entry, &created, &updated)...)
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("sqlite: vector search: %w", err)
		}
		m.Entry.CreatedAt, m.Entry.UpdatedAt = fromMillis(created), fromMillis(updated)
		found[id] = m
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: vector search: %w", err)
	}
	out := make([]memory.Match, 0, len(top))
	for _, t := range top {
		// A chunk deleted since the scan is simply not returned.
		if m, ok := found[t.chunk]; ok {
			m.Score = float64(t.score)
			m.Chunk.Vector = t.vector
			out = append(out, m)
		}
	}
	return out, nil
}

// topVectors scans the space's in-memory vectors, loading them first when
// the copy is missing or older than the database. While other writes keep
// moving the database on, the second try accepts a copy a write or two
// behind, and the third scans the vectors it just loaded.
func (x *MemoryIndex) topVectors(ctx context.Context, sp space, q []float32, cats []memory.Category, k int) ([]vectorHit, error) {
	for attempt := 0; ; attempt++ {
		var gen int64
		if err := x.st.generation.QueryRowContext(ctx).Scan(&gen); err != nil {
			return nil, err
		}
		if hits, ok := x.cache.search(gen, sp, q, cats, k, attempt >= 1); ok {
			return hits, nil
		}
		sv, err := x.load(ctx, sp)
		if err != nil {
			return nil, err
		}
		if attempt >= 1 {
			return x.cache.searchIn(sv, q, cats, k), nil
		}
	}
}

// load reads the space's vectors and their generation in one read
// transaction and installs them in the cache.
func (x *MemoryIndex) load(ctx context.Context, sp space) (*spaceVectors, error) {
	// One load at a time: concurrent searches of a cold space wait for
	// the first instead of each reading every vector.
	x.cache.loadMu.Lock()
	defer x.cache.loadMu.Unlock()

	tx, err := begin(ctx, x.db.r, &x.st.generation, &x.st.countVecs, &x.st.vectors)
	if err != nil {
		return nil, fmt.Errorf("load vectors: %w", err)
	}
	defer tx.Rollback()
	var gen int64
	if err := x.st.generation.in(ctx, tx).QueryRowContext(ctx).Scan(&gen); err != nil {
		return nil, fmt.Errorf("load vectors: %w", err)
	}
	if sv, ok := x.cache.get(gen, sp); ok {
		return sv, nil
	}
	sv := &spaceVectors{}
	num, ok, err := x.spaceNumber(ctx, sp)
	if err != nil {
		return nil, fmt.Errorf("load vectors: %w", err)
	}
	if !ok {
		x.cache.install(gen, sp, sv)
		return sv, nil
	}
	lo, hi := chunkRange(num)
	var n int
	if err := x.st.countVecs.in(ctx, tx).QueryRowContext(ctx, lo, hi).Scan(&n); err != nil {
		return nil, fmt.Errorf("load vectors: %w", err)
	}
	rows, err := x.st.vectors.in(ctx, tx).QueryContext(ctx, lo, hi, sp.agent, sp.owner)
	if err != nil {
		return nil, fmt.Errorf("load vectors: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var chunk, mem int64
		var cat string
		var blob []byte
		if err := rows.Scan(&chunk, &mem, &cat, &blob); err != nil {
			return nil, fmt.Errorf("load vectors: %w", err)
		}
		if len(blob) == 0 || len(blob)%4 != 0 {
			return nil, fmt.Errorf("load vectors: chunk %d: vector of %d bytes", chunk, len(blob))
		}
		sv.addBlob(chunk, mem, memory.Category(cat), blob, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load vectors: %w", err)
	}
	x.cache.install(gen, sp, sv)
	return sv, nil
}

// queryTerms turns user text into FTS5 terms: each distinct
// space-separated word (case-insensitively) as a quoted phrase, its
// quotes doubled, so that nothing the user types is FTS5 syntax. Words
// without a letter or digit are dropped (FTS5 would find nothing in
// them), and so are words after the first maxQueryTerms.
func queryTerms(query string) []string {
	// NUL and other control characters would end or bend the query
	// string; they separate words like spaces.
	query = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(query, " "))
	var terms []string
	seen := map[string]bool{}
	for _, w := range strings.Fields(query) {
		if !strings.ContainsFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }) {
			continue
		}
		if lw := strings.ToLower(w); !seen[lw] {
			seen[lw] = true
			terms = append(terms, `"`+strings.ReplaceAll(w, `"`, `""`)+`"`)
		}
		if len(terms) == maxQueryTerms {
			break
		}
	}
	return terms
}

// encodeVector is the stored form of a vector: little-endian float32.
func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}
