package cloud

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/bedrock"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/dynamo"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/opensearch"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/tools/memorytool"
)

// NewSearchIndex returns the OpenSearch index the environment names, or
// nil when OPENSEARCH_ENDPOINT is not set (search=none, where memories are
// searched in the functions' processes):
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

// newMemory builds the agents' memory: the entries in the table, searched
// in the function's process (dynamo.MemoryIndex: nothing runs, and
// nothing is billed, while nobody searches), or through OpenSearch when
// OPENSEARCH_ENDPOINT is set (functions/indexer feeds it from the table's
// stream); vectors from emb (newEmbedder), keyword search only when it is
// nil. It returns the memory, its tools and the recorder of conversations
// (nil with MEMORY_CONVERSATIONS=off):
//
//	MEMORY_CONVERSATIONS  on (default) or off: remember the exchanges of stateful sessions
//	MEMORY_CACHE_MB       the most memory the searched memories may take in a
//	                      function (default a quarter of the function's memory,
//	                      AWS_LAMBDA_FUNCTION_MEMORY_SIZE, else 128)
func newMemory(ctx context.Context, db *dynamo.Store, emb memory.Embedder, getenv func(string) string, log *slog.Logger) (*memory.Memory, []tool.Tool, agent.Recorder, error) {
	remember, err := onOff(getenv, "MEMORY_CONVERSATIONS", true)
	if err != nil {
		return nil, nil, nil, err
	}
	cacheBytes, err := memoryCacheBytes(getenv)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg := dynamo.MemoryConfig{CacheBytes: cacheBytes}
	search, err := NewSearchIndex(ctx, getenv)
	if err != nil {
		return nil, nil, nil, err
	}
	if search != nil {
		cfg.Search = search
	}
	idx, err := dynamo.NewMemoryIndex(db, cfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cloud: %w", err)
	}
	m, err := memory.New(idx, memory.Options{Embedder: memory.Cached(emb, 0, 0), Logger: log})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cloud: %w", err)
	}
	tools, err := memorytool.Tools(memorytool.Config{Memory: m, Log: log})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cloud: %w", err)
	}
	var rec agent.Recorder
	if remember {
		if rec, err = memorytool.NewConversations(m); err != nil {
			return nil, nil, nil, fmt.Errorf("cloud: %w", err)
		}
	}
	return m, tools, rec, nil
}

// memoryCacheBytes reads MEMORY_CACHE_MB, or makes it a quarter of the
// function's memory.
func memoryCacheBytes(getenv func(string) string) (int64, error) {
	if v := getenv("MEMORY_CACHE_MB"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return 0, fmt.Errorf("cloud: MEMORY_CACHE_MB=%q is not a positive number of MB", v)
		}
		return int64(n) << 20, nil
	}
	if n, err := strconv.Atoi(getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")); err == nil && n > 0 {
		return int64(n) << 20 / 4, nil
	}
	return 0, nil // dynamo.DefaultMemoryCacheBytes
}

// onOff reads a switch of the environment: on, true or 1; off, false or 0;
// def when unset.
func onOff(getenv func(string) string, name string, def bool) (bool, error) {
	switch v := strings.ToLower(getenv(name)); v {
	case "":
		return def, nil
	case "on", "true", "1":
		return true, nil
	case "off", "false", "0":
		return false, nil
	default:
		return false, fmt.Errorf("cloud: %s=%q: want on or off", name, getenv(name))
	}
}
