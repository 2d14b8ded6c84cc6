// Package search opens the OpenSearch index of the agents' memories that a
// stack deployed with search=opensearch names in its functions'
// environment: the api and step functions search there, and the indexer
// function feeds it from the table's stream. It is apart from the
// composition root (package cloud) so that the functions link the
// OpenSearch client only where they use it.
package search

import (
	"context"
	"fmt"
	"strconv"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/opensearch"
)

// DefaultDimensions is the length of the memory vectors without
// EMBED_DIMENSIONS: Titan V2's default (bedrock.DefaultEmbedDimensions,
// which a test of package turns holds it to).
const DefaultDimensions = 1024

// NewIndex returns the OpenSearch index the environment names, or nil
// when OPENSEARCH_ENDPOINT is not set (search=none, where memories are
// searched in the functions' processes):
//
//	OPENSEARCH_ENDPOINT   https://… of the domain (set by infra with search=opensearch)
//	OPENSEARCH_ENGINE     faiss (default) or lucene
//	OPENSEARCH_INDEX      index name (default lambdaclaw-memory)
//	EMBED_DIMENSIONS      vector length (default 1024, Titan V2's)
//	AWS_REGION            requests are SigV4-signed (service "es") for it;
//	                      unset, they are sent unsigned (a cluster of your own)
func NewIndex(ctx context.Context, getenv func(string) string) (*opensearch.Index, error) {
	ep := getenv("OPENSEARCH_ENDPOINT")
	if ep == "" {
		return nil, nil
	}
	dims, err := Dimensions(getenv)
	if err != nil {
		return nil, err
	}
	x, err := opensearch.New(ctx, opensearch.Config{
		URL:    ep,
		Index:  getenv("OPENSEARCH_INDEX"),
		Engine: getenv("OPENSEARCH_ENGINE"),
		Dims:   dims,
		Region: getenv("AWS_REGION"),
	})
	if err != nil {
		return nil, fmt.Errorf("cloud: %w", err)
	}
	return x, nil
}

// Dimensions reads EMBED_DIMENSIONS, the length of the memory vectors.
func Dimensions(getenv func(string) string) (int, error) {
	v := getenv("EMBED_DIMENSIONS")
	if v == "" {
		return DefaultDimensions, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("cloud: EMBED_DIMENSIONS=%q is not a positive number", v)
	}
	return n, nil
}
