// Package memory is what agents remember: explicit memories (seed 001
// bc_memory: store, recall, get, forget, search), their workspace MEMORY.md
// and daily logs, and past conversations. Search is hybrid: keyword (BM25)
// and semantic (vectors) results fused by min-max normalised, weighted
// scores with temporal decay (seed 004 bc_hybrid, seed 002 §4.1).
//
// The package holds the port search engines implement (Index), the port
// embedding models implement (Embedder), and the engine-independent logic:
// chunking, embedding cache, score fusion, decay, diversification and the
// graceful degradation reported in Results.Method.
package memory

import (
	"context"
	"errors"
	"time"
)

// Category groups memories (seed 001).
type Category string

// The categories of seed 001.
const (
	Core         Category = "core"
	Daily        Category = "daily"
	Conversation Category = "conversation"
	Custom       Category = "custom"
)

// Valid reports whether c is one of the four categories.
func (c Category) Valid() bool {
	switch c {
	case Core, Daily, Conversation, Custom:
		return true
	}
	return false
}

// Errors callers test with errors.Is.
var (
	// ErrNotFound is returned for a memory that does not exist.
	ErrNotFound = errors.New("memory not found")
	// ErrInvalid is returned for an argument Memory refuses: an empty
	// agent, key, text or query, an unknown category, text that is not
	// UTF-8 or is too long.
	ErrInvalid = errors.New("invalid memory argument")
	// ErrNotEmbedded is returned by Memory.Store when the entry was stored
	// but embedding its text failed: it is searchable by keyword only
	// until it is stored again.
	ErrNotEmbedded = errors.New("memory stored without vectors")
)

// Entry is one memory of one agent. Key is unique per agent.
type Entry struct {
	Agent    string   `json:"agent"`
	Key      string   `json:"key"`
	Text     string   `json:"text"`
	Category Category `json:"category"`
	// Source says where the memory came from: "tool", "MEMORY.md",
	// "memory/2026-05-01.md", "session:<id>".
	Source    string    `json:"source,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Decays reports whether the entry's score fades with age: core memories
// and MEMORY.md are long-term and do not.
func (e Entry) Decays() bool { return e.Category != Core && e.Source != "MEMORY.md" }

// Chunk is the unit an index searches: a piece of an entry's text, with its
// embedding when there is an embedding model.
type Chunk struct {
	Seq    int       `json:"seq"`
	Text   string    `json:"text"`
	Vector []float32 `json:"vector,omitempty"`
}

// Filter narrows a search.
type Filter struct {
	// Categories keeps only these categories; empty keeps all.
	Categories []Category
}

// Match is one chunk an engine found, with the engine's raw score (higher
// is better).
type Match struct {
	Entry Entry
	Chunk Chunk
	Score float64
}

// Index is the port search engines implement (embedded SQLite, OpenSearch).
// Every method is scoped to one agent: an agent never sees another's
// memories. All adapters pass the conformance suite in memorytest.
type Index interface {
	// Put stores an entry and its chunks, replacing what the key held.
	Put(ctx context.Context, e Entry, chunks []Chunk) error
	// Get returns an entry by key, or ErrNotFound.
	Get(ctx context.Context, agent, key string) (Entry, error)
	// Delete removes an entry and its chunks; a missing key is no error.
	Delete(ctx context.Context, agent, key string) error
	// Keyword returns up to k chunks ranked by BM25 for the query.
	Keyword(ctx context.Context, agent, query string, f Filter, k int) ([]Match, error)
	// Vector returns up to k chunks ranked by cosine similarity to v.
	Vector(ctx context.Context, agent string, v []float32, f Filter, k int) ([]Match, error)
}

// Embedder turns texts into vectors.
type Embedder interface {
	// Model names the model, so cached vectors of other models are not
	// reused.
	Model() string
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}
