package cloud

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/dynamo"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/tools/memorytool"
)

// newMemory builds the agents' memory: the entries in the table, searched
// in the function's process (dynamo.MemoryIndex: nothing runs, and
// nothing is billed, while nobody searches), or through search when it is
// not nil (OpenSearch, which functions/indexer feeds from the table's
// stream); vectors from emb (Turns.Embedder), keyword search only when it
// is nil. It returns the memory, its tools and the recorder of conversations
// (nil with MEMORY_CONVERSATIONS=off):
//
//	MEMORY_CONVERSATIONS  on (default) or off: remember the exchanges of stateful sessions
//	MEMORY_CACHE_MB       the most memory the searched memories may take in a
//	                      function (default a quarter of the function's memory,
//	                      AWS_LAMBDA_FUNCTION_MEMORY_SIZE, else 128)
func newMemory(db *dynamo.Store, emb memory.Embedder, search memory.Index, getenv func(string) string, log *slog.Logger) (*memory.Memory, []tool.Tool, agent.Recorder, error) {
	remember, err := onOff(getenv, "MEMORY_CONVERSATIONS", true)
	if err != nil {
		return nil, nil, nil, err
	}
	cacheBytes, err := memoryCacheBytes(getenv)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg := dynamo.MemoryConfig{CacheBytes: cacheBytes, Search: search}
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
