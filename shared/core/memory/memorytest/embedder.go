package memorytest

import (
	"context"
	"errors"
	"hash/fnv"
)

// Dims is the length of the vectors Embedder returns and of every vector
// the suite puts in an index; an adapter whose index fixes the dimension
// (an OpenSearch knn_vector field) must be built for it.
const Dims = 64

// Embedder is a deterministic memory.Embedder for tests: feature hashing
// of words. Each lower-cased word (a run of letters and digits) adds 1 to
// one of Dims dimensions chosen by its FNV-1a hash, so texts that share
// words point the same way and texts that share none mostly do not.
// A text without words embeds to a fixed unit vector.
type Embedder struct{}

// Model names the fake model.
func (Embedder) Model() string { return "memorytest-hash-64" }

// Embed returns one vector of Dims per text.
func (Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = Vector(t)
	}
	return out, nil
}

// Vector is the vector Embedder gives text, unnormalised.
func Vector(text string) []float32 {
	v := make([]float32, Dims)
	ws := words(text)
	if len(ws) == 0 {
		v[0] = 1
		return v
	}
	for _, w := range ws {
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%Dims]++
	}
	return v
}

// errEmbedder is returned by failingEmbedder.
var errEmbedder = errors.New("memorytest: embedding service unavailable")

// failingEmbedder is an embedding model that is always down.
type failingEmbedder struct{}

func (failingEmbedder) Model() string { return "memorytest-down" }

func (failingEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, errEmbedder
}
