package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Defaults and limits of Memory.
const (
	DefaultVectorWeight  = 0.7
	DefaultKeywordWeight = 0.3
	DefaultHalfLife      = 30 * 24 * time.Hour
	DefaultLimit         = 10
	MaxLimit             = 100
	// MaxKeyBytes, MaxOwnerBytes and MaxTextBytes bound what Store
	// accepts.
	MaxKeyBytes   = 512
	MaxOwnerBytes = 256
	MaxTextBytes  = 1 << 20
	// embedBatch is how many chunks one Embed call carries.
	embedBatch = 64
	// candidates is how many results per result wanted each search side
	// returns before fusion.
	candidates = 4
)

// Options configure a Memory. The zero value is a keyword-only memory with
// the defaults of seed 002 §4.1 adapted by issue 4.
type Options struct {
	// Embedder turns texts into vectors; nil makes search keyword-only
	// (Results.Method "bm25_fallback"). Wrap it with Cached.
	Embedder Embedder
	// VectorWeight and KeywordWeight weigh the normalised vector and
	// keyword scores; they are scaled to sum to 1. Both zero means 0.7 and
	// 0.3. Negative weights are an error.
	VectorWeight  float64
	KeywordWeight float64
	// HalfLife is the age at which a decaying memory's score is halved:
	// the score is multiplied by 0.5^(age/HalfLife), age counted from
	// UpdatedAt. Zero means DefaultHalfLife (30 days); negative turns decay
	// off. Entries whose Decays is false never decay.
	HalfLife time.Duration
	// MMRLambda turns on maximal marginal relevance diversification when
	// it is in (0, 1): each next hit maximises
	// λ·score − (1−λ)·(greatest similarity to a hit already chosen).
	// 0 (the default) keeps plain score order; 1 is the same as 0.
	MMRLambda float64
	// MinScore drops hits whose final score (in [0, 1]) is below it.
	MinScore float64
	// Chunker splits texts; the zero value uses 800/100 characters.
	Chunker Chunker
	// Now is the clock for timestamps and decay; nil means time.Now.
	Now func() time.Time
	// Logger receives a warning when a search side fails; nil discards.
	Logger *slog.Logger
}

// Memory is the service agents and tools use: it validates, chunks and
// embeds what is stored, and fuses keyword and vector search over an Index
// (seed 004 bc_hybrid, seed 002 §4.1). It is safe for concurrent use if
// its Index and Embedder are.
type Memory struct {
	idx      Index
	emb      Embedder
	wv, wk   float64
	halfLife time.Duration
	mmr      float64
	minScore float64
	chunker  Chunker
	now      func() time.Time
	log      *slog.Logger
}

// New returns a Memory over idx.
func New(idx Index, o Options) (*Memory, error) {
	if idx == nil {
		return nil, errors.New("memory: nil index")
	}
	if o.VectorWeight < 0 || o.KeywordWeight < 0 {
		return nil, fmt.Errorf("memory: negative weight (vector %v, keyword %v)", o.VectorWeight, o.KeywordWeight)
	}
	if o.MMRLambda < 0 || o.MMRLambda > 1 {
		return nil, fmt.Errorf("memory: MMR lambda %v is outside [0, 1]", o.MMRLambda)
	}
	if o.MinScore < 0 || o.MinScore > 1 {
		return nil, fmt.Errorf("memory: minimum score %v is outside [0, 1]", o.MinScore)
	}
	m := &Memory{
		idx:      idx,
		emb:      o.Embedder,
		wv:       o.VectorWeight,
		wk:       o.KeywordWeight,
		halfLife: o.HalfLife,
		mmr:      o.MMRLambda,
		minScore: o.MinScore,
		chunker:  o.Chunker,
		now:      o.Now,
		log:      o.Logger,
	}
	if m.wv == 0 && m.wk == 0 {
		m.wv, m.wk = DefaultVectorWeight, DefaultKeywordWeight
	}
	sum := m.wv + m.wk
	m.wv, m.wk = m.wv/sum, m.wk/sum
	if m.halfLife == 0 {
		m.halfLife = DefaultHalfLife
	}
	if m.mmr == 1 {
		m.mmr = 0
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	return m, nil
}

// Store validates e, splits its text into chunks, embeds them and puts the
// entry in the index, replacing what its key held for its owner (e.Owner;
// empty stores an agent-wide memory). Zero times are set: a re-stored key
// keeps its CreatedAt, UpdatedAt becomes now. Times are kept to the
// millisecond, in UTC.
//
// When embedding fails the entry is still stored, keyword-only, and the
// error wraps ErrNotEmbedded: a memory is never lost to an embedding
// outage. Any other error means nothing was stored.
func (m *Memory) Store(ctx context.Context, e Entry) error {
	return m.StoreMany(ctx, []Entry{e})
}

// StoreMany stores entries as Store does each, with one call of the
// embedding model for all their chunks and, when the index is a
// BatchIndex, one write. Either every entry is stored or, on an error that
// does not wrap ErrNotEmbedded, none when the index writes in batches.
func (m *Memory) StoreMany(ctx context.Context, es []Entry) error {
	now := m.now()
	recs := make([]Record, len(es))
	counts := make([]int, len(es))
	var all []Chunk
	for i, e := range es {
		if err := validateEntry(e); err != nil {
			return fmt.Errorf("memory: store %q: %w", e.Key, err)
		}
		if e.CreatedAt.IsZero() {
			old, err := m.idx.Get(ctx, e.Agent, e.Owner, e.Key)
			switch {
			case err == nil:
				e.CreatedAt = old.CreatedAt
			case errors.Is(err, ErrNotFound):
				e.CreatedAt = now
			default:
				return fmt.Errorf("memory: store %q: %w", e.Key, err)
			}
		}
		if e.UpdatedAt.IsZero() {
			e.UpdatedAt = now
		}
		e.CreatedAt, e.UpdatedAt = millis(e.CreatedAt), millis(e.UpdatedAt)
		texts := m.chunker.Split(e.Text)
		for j, t := range texts {
			all = append(all, Chunk{Seq: j, Text: t})
		}
		recs[i].Entry, counts[i] = e, len(texts)
	}
	var embedErr error
	if m.emb != nil {
		if embedErr = m.embedChunks(ctx, all); embedErr != nil {
			for i := range all {
				all[i].Vector = nil
			}
		}
	}
	for i, n := range counts {
		recs[i].Chunks, all = all[:n:n], all[n:]
	}
	what := fmt.Sprintf("%d entries", len(recs))
	if len(recs) == 1 {
		what = strconv.Quote(recs[0].Entry.Key)
	}
	if b, ok := m.idx.(BatchIndex); ok {
		if err := b.PutMany(ctx, recs); err != nil {
			return fmt.Errorf("memory: store %s: %w", what, err)
		}
	} else {
		for _, r := range recs {
			if err := m.idx.Put(ctx, r.Entry, r.Chunks); err != nil {
				return fmt.Errorf("memory: store %q: %w", r.Entry.Key, err)
			}
		}
	}
	if embedErr != nil {
		return fmt.Errorf("memory: store %s: %w: %w", what, ErrNotEmbedded, embedErr)
	}
	return nil
}

// embedChunks sets the unit-length vector of every chunk, in batches.
func (m *Memory) embedChunks(ctx context.Context, chunks []Chunk) error {
	for lo := 0; lo < len(chunks); lo += embedBatch {
		batch := chunks[lo:min(lo+embedBatch, len(chunks))]
		texts := make([]string, len(batch))
		for i, c := range batch {
			texts[i] = c.Text
		}
		vecs, err := m.emb.Embed(ctx, texts)
		if err != nil {
			return fmt.Errorf("embed with %q: %w", m.emb.Model(), err)
		}
		if len(vecs) != len(texts) {
			return fmt.Errorf("embed with %q: %d vectors for %d texts", m.emb.Model(), len(vecs), len(texts))
		}
		for i, v := range vecs {
			u := Normalized(v)
			if u == nil {
				return fmt.Errorf("embed with %q: vector %d has no direction", m.emb.Model(), lo+i)
			}
			if lo+i > 0 && len(u) != len(chunks[0].Vector) {
				return fmt.Errorf("embed with %q: vectors of %d and %d dimensions", m.emb.Model(), len(chunks[0].Vector), len(u))
			}
			batch[i].Vector = u
		}
	}
	return nil
}

// Get returns the memory key names for owner: the owner's own memory
// under key, else the agent-wide one (only that one for owner ""). It
// never returns another owner's memory: for their keys the error wraps
// ErrNotFound, as for a key that does not exist. The entry's Owner says
// which one was found.
func (m *Memory) Get(ctx context.Context, agent, owner, key string) (Entry, error) {
	if err := validateRef(agent, owner, key); err != nil {
		return Entry{}, fmt.Errorf("memory: get %q: %w", key, err)
	}
	e, err := m.idx.Get(ctx, agent, owner, key)
	if errors.Is(err, ErrNotFound) && owner != "" {
		e, err = m.idx.Get(ctx, agent, "", key)
	}
	if err != nil {
		return Entry{}, fmt.Errorf("memory: get %q: %w", key, err)
	}
	return e, nil
}

// Forget removes owner's own memory stored under key (with owner "", the
// agent-wide one), from Get and from search. It never removes another
// owner's memory, nor, for an owner, an agent-wide one: those are left as
// they are, as for a missing key, which is no error.
func (m *Memory) Forget(ctx context.Context, agent, owner, key string) error {
	if err := validateRef(agent, owner, key); err != nil {
		return fmt.Errorf("memory: forget %q: %w", key, err)
	}
	if err := m.idx.Delete(ctx, agent, owner, key); err != nil {
		return fmt.Errorf("memory: forget %q: %w", key, err)
	}
	return nil
}

// validateRef checks an agent, an owner and a key.
func validateRef(agent, owner, key string) error {
	switch {
	case strings.TrimSpace(agent) == "":
		return fmt.Errorf("%w: agent is empty", ErrInvalid)
	case strings.TrimSpace(key) == "":
		return fmt.Errorf("%w: key is empty", ErrInvalid)
	case len(key) > MaxKeyBytes:
		return fmt.Errorf("%w: key is longer than %d bytes", ErrInvalid, MaxKeyBytes)
	case !utf8.ValidString(agent) || !utf8.ValidString(key):
		return fmt.Errorf("%w: agent or key is not UTF-8", ErrInvalid)
	}
	return validateOwner(owner)
}

// validateOwner checks an owner: empty (agent-wide), or a principal of at
// most MaxOwnerBytes of UTF-8 text without control characters that is not
// only spaces (which would look agent-wide and be anything but).
func validateOwner(owner string) error {
	switch {
	case owner == "":
		return nil
	case strings.TrimSpace(owner) == "":
		return fmt.Errorf("%w: owner is blank", ErrInvalid)
	case len(owner) > MaxOwnerBytes:
		return fmt.Errorf("%w: owner is longer than %d bytes", ErrInvalid, MaxOwnerBytes)
	case !utf8.ValidString(owner) || strings.ContainsFunc(owner, unicode.IsControl):
		return fmt.Errorf("%w: owner is not UTF-8 text without control characters", ErrInvalid)
	}
	return nil
}

// validateEntry checks what Store accepts.
func validateEntry(e Entry) error {
	if err := validateRef(e.Agent, e.Owner, e.Key); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(e.Text) == "":
		return fmt.Errorf("%w: text is empty", ErrInvalid)
	case len(e.Text) > MaxTextBytes:
		return fmt.Errorf("%w: text is longer than %d bytes", ErrInvalid, MaxTextBytes)
	case !utf8.ValidString(e.Text) || !utf8.ValidString(e.Source):
		return fmt.Errorf("%w: text or source is not UTF-8", ErrInvalid)
	case !e.Category.Valid():
		return fmt.Errorf("%w: category %q is not one of core, daily, conversation, custom", ErrInvalid, e.Category)
	}
	return nil
}

// millis rounds t down to the millisecond, in UTC: what indexes keep.
func millis(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }
