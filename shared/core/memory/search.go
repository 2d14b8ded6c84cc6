package memory

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Methods reported in Results.Method: which searches a result set comes
// from (seed 002 §4.1, graceful degradation).
const (
	// MethodHybrid: keyword and vector search both ran and were fused.
	MethodHybrid = "hybrid"
	// MethodBM25Fallback: keyword search only, because there is no
	// embedder or embedding the query or the vector search failed.
	MethodBM25Fallback = "bm25_fallback"
	// MethodSemanticFallback: vector search only, because the keyword
	// search failed.
	MethodSemanticFallback = "semantic_fallback"
	// MethodNone: neither search could run; there are no hits.
	MethodNone = "none"
)

// SearchOptions narrow a search.
type SearchOptions struct {
	// Limit is the most hits returned: 0 means DefaultLimit, values above
	// MaxLimit mean MaxLimit.
	Limit int
	// Filter keeps only some categories.
	Filter Filter
}

// Hit is one memory a search found.
type Hit struct {
	Entry Entry `json:"entry"`
	// Snippet is the text of the entry's best matching chunk.
	Snippet string `json:"snippet"`
	// Score is the fused score in [0, 1] after decay: the weighted sum of
	// KeywordScore and VectorScore times 0.5^(age/half-life).
	Score float64 `json:"score"`
	// KeywordScore and VectorScore are the snippet's min-max normalised
	// BM25 and cosine scores in [0, 1] (0 when that search missed it).
	KeywordScore float64 `json:"keyword_score"`
	VectorScore  float64 `json:"vector_score"`
}

// Results is what a search returns: the hits, best first (or in MMR
// order when diversification is on), and the Method that produced them.
type Results struct {
	Hits   []Hit  `json:"hits"`
	Method string `json:"method"`
}

// Search finds the memories of the agent that owner may see (the owner's
// own and the agent-wide ones; only agent-wide ones for owner "") that
// best match query. It runs the
// keyword search and (with an embedder) the vector search side by side,
// fetching four candidates per wanted hit from each, min-max normalises
// each list, sums them with the configured weights (a side that did not
// run weighs nothing and the other weighs 1), keeps the best chunk of each
// entry, applies temporal decay, optional MMR and the minimum score.
//
// Search fails only for invalid arguments or a cancelled context: when a
// side fails the other one's results are returned and Method says so; when
// both fail the result is empty with Method "none".
func (m *Memory) Search(ctx context.Context, agent, owner, query string, o SearchOptions) (Results, error) {
	switch {
	case strings.TrimSpace(agent) == "":
		return Results{}, fmt.Errorf("memory: search: %w: agent is empty", ErrInvalid)
	case strings.TrimSpace(query) == "":
		return Results{}, fmt.Errorf("memory: search: %w: query is empty", ErrInvalid)
	}
	if err := validateOwner(owner); err != nil {
		return Results{}, fmt.Errorf("memory: search: %w", err)
	}
	limit := o.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	limit = min(limit, MaxLimit)
	k := limit * candidates

	var kw []Match
	var kwErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		kw, kwErr = m.idx.Keyword(ctx, agent, owner, query, o.Filter, k)
	}()
	vec, vecOK := m.vectorSearch(ctx, agent, owner, query, o.Filter, k)
	<-done
	if err := ctx.Err(); err != nil {
		return Results{}, fmt.Errorf("memory: search: %w", err)
	}
	if kwErr != nil {
		m.log.Warn("memory keyword search failed", "agent", agent, "err", kwErr)
	}

	res := Results{Hits: []Hit{}}
	var wk, wv float64
	switch {
	case kwErr == nil && vecOK:
		res.Method, wk, wv = MethodHybrid, m.wk, m.wv
	case kwErr == nil:
		res.Method, wk, wv, vec = MethodBM25Fallback, 1, 0, nil
	case vecOK:
		res.Method, wk, wv, kw = MethodSemanticFallback, 0, 1, nil
	default:
		res.Method = MethodNone
		return res, nil
	}

	// The index's filter keeps other owners' memories out; this guards
	// the guard.
	hidden := func(mt Match) bool { return mt.Entry.Agent != agent || !mt.Entry.Visible(owner) }
	kw, vec = slices.DeleteFunc(kw, hidden), slices.DeleteFunc(vec, hidden)
	cands := fuse(kw, vec, wk, wv)
	now := m.now()
	for i := range cands {
		if cands[i].Entry.Decays() {
			cands[i].Score *= decay(now.Sub(cands[i].Entry.UpdatedAt), m.halfLife)
		}
	}
	sortCandidates(cands)
	cands = slices.DeleteFunc(cands, func(c candidate) bool { return c.Score < m.minScore })
	if m.mmr > 0 {
		cands = diversify(cands, m.mmr, limit)
	}
	for _, c := range cands[:min(limit, len(cands))] {
		res.Hits = append(res.Hits, c.Hit)
	}
	return res, nil
}

// vectorSearch embeds the query and runs the vector search. It reports
// false when there is no embedder or either step failed.
func (m *Memory) vectorSearch(ctx context.Context, agent, owner, query string, f Filter, k int) ([]Match, bool) {
	if m.emb == nil {
		return nil, false
	}
	vecs, err := m.emb.Embed(ctx, []string{query})
	if err == nil && (len(vecs) != 1 || Normalized(vecs[0]) == nil) {
		err = fmt.Errorf("model %q returned no usable vector", m.emb.Model())
	}
	if err != nil {
		m.log.Warn("memory query embedding failed", "agent", agent, "err", err)
		return nil, false
	}
	matches, err := m.idx.Vector(ctx, agent, owner, Normalized(vecs[0]), f, k)
	if err != nil {
		m.log.Warn("memory vector search failed", "agent", agent, "err", err)
		return nil, false
	}
	return matches, true
}

// candidate is a hit being ranked, with the vector of its snippet when
// known (for MMR).
type candidate struct {
	Hit
	seq    int
	vector []float32
}

// entryID identifies an entry among an agent's: an owner's key and the
// same agent-wide key are two entries.
type entryID struct{ owner, key string }

// fuse turns the keyword and vector matches into one candidate per entry.
// Each list is min-max normalised; a chunk's fused score is
// wk·keyword + wv·vector; an entry's is that of its best chunk (the lower
// Seq on a tie).
func fuse(kw, vec []Match, wk, wv float64) []candidate {
	type chunkKey struct {
		entryID
		seq int
	}
	type part struct {
		match  Match
		kn, vn float64
		vector []float32
	}
	parts := map[chunkKey]*part{}
	var order []chunkKey
	add := func(list []Match, vector bool) {
		scores := make([]float64, len(list))
		for i, mt := range list {
			scores[i] = mt.Score
		}
		for i, n := range normalize(scores) {
			mt := list[i]
			ck := chunkKey{entryID{mt.Entry.Owner, mt.Entry.Key}, mt.Chunk.Seq}
			p, ok := parts[ck]
			if !ok {
				p = &part{match: mt}
				parts[ck] = p
				order = append(order, ck)
			}
			if vector {
				p.vn = max(p.vn, n)
			} else {
				p.kn = max(p.kn, n)
			}
			if p.vector == nil && len(mt.Chunk.Vector) > 0 {
				p.vector = mt.Chunk.Vector
			}
		}
	}
	add(kw, false)
	add(vec, true)

	best := map[entryID]int{} // entry → index in out
	var out []candidate
	for _, ck := range order {
		p := parts[ck]
		c := candidate{
			Hit: Hit{
				Entry:        p.match.Entry,
				Snippet:      p.match.Chunk.Text,
				Score:        wk*p.kn + wv*p.vn,
				KeywordScore: p.kn,
				VectorScore:  p.vn,
			},
			seq:    ck.seq,
			vector: p.vector,
		}
		i, ok := best[ck.entryID]
		switch {
		case !ok:
			best[ck.entryID] = len(out)
			out = append(out, c)
		case c.Score > out[i].Score || c.Score == out[i].Score && c.seq < out[i].seq:
			out[i] = c
		}
	}
	return out
}

// normalize min-max normalises scores to [0, 1]. When all scores are
// equal (a single result, or ties) every one becomes 1: each was the best
// its search had.
func normalize(scores []float64) []float64 {
	if len(scores) == 0 {
		return nil
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range scores {
		if math.IsNaN(s) {
			continue
		}
		lo, hi = min(lo, s), max(hi, s)
	}
	out := make([]float64, len(scores))
	span := hi - lo
	for i, s := range scores {
		switch {
		case math.IsNaN(s):
			out[i] = 0
		case span <= 1e-12*max(1, math.Abs(hi)):
			out[i] = 1
		default:
			out[i] = (s - lo) / span
		}
	}
	return out
}

// decay is the temporal decay multiplier 0.5^(age/halfLife): 1 for age 0
// or less, or when halfLife turns decay off (not positive).
func decay(age, halfLife time.Duration) float64 {
	if halfLife <= 0 || age <= 0 {
		return 1
	}
	return math.Exp2(-float64(age) / float64(halfLife))
}

// sortCandidates orders by score, then the more recently updated, then
// key and owner, so equal scores rank deterministically.
func sortCandidates(c []candidate) {
	slices.SortStableFunc(c, func(a, b candidate) int {
		if a.Score != b.Score {
			return cmp.Compare(b.Score, a.Score)
		}
		if !a.Entry.UpdatedAt.Equal(b.Entry.UpdatedAt) {
			return b.Entry.UpdatedAt.Compare(a.Entry.UpdatedAt)
		}
		return cmp.Or(strings.Compare(a.Entry.Key, b.Entry.Key), strings.Compare(a.Entry.Owner, b.Entry.Owner))
	})
}

// diversify picks up to limit candidates by maximal marginal relevance:
// each next one maximises λ·score − (1−λ)·(its greatest similarity to
// those already picked). c must be sorted best first; ties keep that
// order, so the first pick is always the best hit.
func diversify(c []candidate, lambda float64, limit int) []candidate {
	n := min(limit, len(c))
	out := make([]candidate, 0, n)
	used := make([]bool, len(c))
	maxSim := make([]float64, len(c))
	toks := make([]map[string]struct{}, len(c))
	for len(out) < n {
		pick, best := -1, math.Inf(-1)
		for i := range c {
			if used[i] {
				continue
			}
			if v := lambda*c[i].Score - (1-lambda)*maxSim[i]; v > best {
				pick, best = i, v
			}
		}
		used[pick] = true
		out = append(out, c[pick])
		for i := range c {
			if !used[i] {
				maxSim[i] = max(maxSim[i], similarity(c, toks, i, pick))
			}
		}
	}
	return out
}

// similarity of candidates i and j: the cosine of their vectors when both
// have one, else the Jaccard index of their snippets' words. toks caches
// word sets.
func similarity(c []candidate, toks []map[string]struct{}, i, j int) float64 {
	if a, b := c[i].vector, c[j].vector; len(a) > 0 && len(a) == len(b) {
		return Cosine(a, b)
	}
	for _, x := range []int{i, j} {
		if toks[x] == nil {
			toks[x] = wordSet(c[x].Snippet)
		}
	}
	return jaccard(toks[i], toks[j])
}

// wordSet returns the lower-cased words (runs of letters and digits) of s.
func wordSet(s string) map[string]struct{} {
	set := map[string]struct{}{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	}) {
		set[w] = struct{}{}
	}
	return set
}

// jaccard returns |a∩b| / |a∪b|, 0 for two empty sets.
func jaccard(a, b map[string]struct{}) float64 {
	if len(a) > len(b) {
		a, b = b, a
	}
	inter := 0
	for w := range a {
		if _, ok := b[w]; ok {
			inter++
		}
	}
	union := len(a) + len(b) - inter
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}
