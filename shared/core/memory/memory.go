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
//
// # Owners
//
// A memory belongs to an agent and, when it was saved from a conversation,
// to the owner of that conversation: the principal the session belongs to
// ("key:<api key id>" for the HTTP API and WebSocket, "tg:<chat id>" for
// Telegram, "user:<name>" for a person linked across channels). A memory
// with an empty owner is agent-wide: the workspace files (MEMORY.md, the
// daily logs) and what the agent stores in work that belongs to no one,
// shared by all the agent's users.
//
// An entry is identified by (agent, owner, key): the same key saved by two
// owners is two memories, and an owner's memory never replaces an
// agent-wide one. Searching as an owner finds that owner's memories and
// the agent-wide ones, never another owner's; searching with an empty
// owner finds only agent-wide memories. Get and Forget look a key up for
// one owner, so another owner's key is, to them, a key that does not
// exist.
package memory

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
	// agent, key, text or query, an unknown category, an owner that is
	// blank, too long or has control characters, text that is not UTF-8 or
	// is too long.
	ErrInvalid = errors.New("invalid memory argument")
	// ErrNotEmbedded is returned by Memory.Store when the entry was stored
	// but embedding its text failed: it is searchable by keyword only
	// until it is stored again.
	ErrNotEmbedded = errors.New("memory stored without vectors")
)

// Entry is one memory of one agent. Key is unique per agent and owner.
type Entry struct {
	Agent string `json:"agent"`
	// Owner is the principal the memory belongs to ("key:…", "tg:…",
	// "user:…"); empty for an agent-wide memory, which all the agent's
	// users share. See the package documentation.
	Owner    string   `json:"owner,omitempty"`
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

// Record is an entry with its chunks, as an Index stores it.
type Record struct {
	Entry  Entry
	Chunks []Chunk
}

// BatchIndex is an Index that stores many records in one write. Memory
// uses it, when its index has it, to store many entries at once.
type BatchIndex interface {
	PutMany(ctx context.Context, recs []Record) error
}

// Index is the port search engines implement (embedded SQLite, OpenSearch).
// Every method is scoped to one agent, and to one owner: an agent never
// sees another's memories, and an owner never another owner's. An entry is
// identified by (Entry.Agent, Entry.Owner, Entry.Key). All adapters pass
// the conformance suite in memorytest.
type Index interface {
	// Put stores an entry and its chunks, replacing what its agent, owner
	// and key held.
	Put(ctx context.Context, e Entry, chunks []Chunk) error
	// Get returns the entry of exactly this agent, owner and key, or
	// ErrNotFound: an owner's Get never returns an agent-wide entry, nor
	// an agent-wide Get (owner "") an owner's.
	Get(ctx context.Context, agent, owner, key string) (Entry, error)
	// Delete removes the entry of exactly this agent, owner and key and
	// its chunks; a missing key is no error.
	Delete(ctx context.Context, agent, owner, key string) error
	// Keyword returns up to k chunks ranked by BM25 for the query, among
	// the owner's entries and the agent-wide ones (only those for owner
	// "").
	Keyword(ctx context.Context, agent, owner, query string, f Filter, k int) ([]Match, error)
	// Vector returns up to k chunks ranked by cosine similarity to v,
	// among the owner's entries and the agent-wide ones.
	Vector(ctx context.Context, agent, owner string, v []float32, f Filter, k int) ([]Match, error)
}

// Visible reports whether an owner's search may return e: e is the
// owner's own or agent-wide. Adapters check their results with it, a
// guard behind their query's filter.
func (e Entry) Visible(owner string) bool { return e.Owner == "" || e.Owner == owner }

// Embedder turns texts into vectors.
type Embedder interface {
	// Model names the model, so cached vectors of other models are not
	// reused.
	Model() string
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// RequestEmbedder is an Embedder that also answers the requests of
// lambdaclaw's OpenAI-compatible embeddings API (POST /v1/embeddings):
// vectors of a length chosen per request, and the tokens the provider
// counted. Both embedding adapters implement it and pass
// memorytest.RunEmbedder.
type RequestEmbedder interface {
	Embedder
	// EmbedRequest returns one vector per text, in order. A length the
	// model cannot make is a *DimensionsError, found with errors.As; it
	// never shortens vectors itself.
	EmbedRequest(ctx context.Context, r EmbedRequest) (Embeddings, error)
}

// EmbedRequest asks for the vectors of texts.
type EmbedRequest struct {
	Texts []string
	// Dimensions asks for vectors of this length; zero keeps the length
	// the embedder is configured with.
	Dimensions int
}

// Embeddings answers an EmbedRequest.
type Embeddings struct {
	// Vectors holds one vector per text, in the order of the texts.
	Vectors [][]float32
	// Tokens is how many input tokens the provider counted, zero when it
	// reports none.
	Tokens int
}

// DimensionsError says that an embedding model cannot make vectors of the
// length asked for. Its message is written for the API's clients: it
// names no provider, host or credential.
type DimensionsError struct {
	// Dimensions is the length asked for.
	Dimensions int
	// Supported lists the lengths the model makes, when they are known.
	Supported []int
}

func (e *DimensionsError) Error() string {
	msg := fmt.Sprintf("the embedding model cannot make vectors of %d dimensions", e.Dimensions)
	if len(e.Supported) == 0 {
		return msg
	}
	sizes := make([]string, len(e.Supported))
	for i, n := range e.Supported {
		sizes[i] = strconv.Itoa(n)
	}
	return msg + "; it makes " + strings.Join(sizes, ", ")
}
