package cloud

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/bedrock"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/dynamo"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/opensearch"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/tools/memorytool"
)

// NewSearchIndex returns the OpenSearch index the environment names, or
// nil when OPENSEARCH_ENDPOINT is not set (search=none):
//
//	OPENSEARCH_ENDPOINT   https://… of the domain (set by infra with search=opensearch)
//	OPENSEARCH_ENGINE     faiss (default) or lucene
//	OPENSEARCH_INDEX      index name (default lambdaclaw-memory)
//	EMBED_DIMENSIONS      vector length (default 1024, Titan V2's)
//	AWS_REGION            requests are SigV4-signed (service "es") for it;
//	                      unset, they are sent unsigned (a cluster of your own)
func NewSearchIndex(ctx context.Context, getenv func(string) string) (*opensearch.Index, error) {
	ep := getenv("OPENSEARCH_ENDPOINT")
	if ep == "" {
		return nil, nil
	}
	dims, err := embedDimensions(getenv)
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

func embedDimensions(getenv func(string) string) (int, error) {
	v := getenv("EMBED_DIMENSIONS")
	if v == "" {
		return bedrock.DefaultEmbedDimensions, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("cloud: EMBED_DIMENSIONS=%q is not a positive number", v)
	}
	return n, nil
}

// newEmbedder returns the Titan embedder BEDROCK_EMBED_MODEL names, at
// EMBED_DIMENSIONS, or nil when it is not set. Agent memory and the api
// function's POST /v1/embeddings share it.
func newEmbedder(ctx context.Context, getenv func(string) string) (memory.RequestEmbedder, error) {
	model := getenv("BEDROCK_EMBED_MODEL")
	if model == "" {
		return nil, nil
	}
	dims, err := embedDimensions(getenv)
	if err != nil {
		return nil, err
	}
	region := getenv("BEDROCK_REGION")
	if region == "" {
		region = getenv("AWS_REGION")
	}
	e, err := bedrock.NewEmbedder(ctx, bedrock.EmbedConfig{Region: region, ModelID: model, Dimensions: dims, BaseEndpoint: getenv("BEDROCK_ENDPOINT")})
	if err != nil {
		return nil, fmt.Errorf("cloud: %w", err)
	}
	return e, nil
}

// newMemory builds the agents' memory when OpenSearch is configured: the
// entries in DynamoDB (the source of truth, indexed into OpenSearch by
// functions/indexer from the table's stream), search through OpenSearch,
// vectors from emb (newEmbedder) unless it is nil. Without
// OPENSEARCH_ENDPOINT it returns nil and no tools: the AWS deployment
// offers no memory without a search engine rather than scanning the table.
func newMemory(ctx context.Context, db *dynamo.Store, emb memory.Embedder, getenv func(string) string, log *slog.Logger) (*memory.Memory, []tool.Tool, error) {
	search, err := NewSearchIndex(ctx, getenv)
	if err != nil || search == nil {
		return nil, nil, err
	}
	idx, err := dynamo.NewMemoryIndex(db, search)
	if err != nil {
		return nil, nil, err
	}
	m, err := memory.New(idx, memory.Options{Embedder: memory.Cached(emb, 0, 0), Logger: log})
	if err != nil {
		return nil, nil, err
	}
	tools, err := memorytool.Tools(memorytool.Config{Memory: m, Log: log})
	if err != nil {
		return nil, nil, err
	}
	return m, tools, nil
}
