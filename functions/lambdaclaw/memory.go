package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/bedrock"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/openai"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/tools/memorytool"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// memoryStateDir is where, under the home directory, the indexer of
// workspace memory files keeps what it indexed.
const memoryStateDir = "memory-index"

// localMemory is agent memory in the local server: the embedded index in
// the database, the memory tools, the indexer of workspace memory files and
// the recorder of conversations. Its zero value is memory turned off.
type localMemory struct {
	mem   *memory.Memory
	tools []tool.Tool
	files *memorytool.Files
	conv  *memorytool.Conversations
	log   *slog.Logger
	// search says how memory searches, for logState.
	search string
}

// newLocalMemory builds agent memory as cfg says: nothing when it is off,
// else the embedded index, with the embedding model emb (newEmbedder) or
// none (nil).
func newLocalMemory(cfg *config.Config, db *sqlite.DB, emb memory.Embedder, log *slog.Logger) (*localMemory, error) {
	if !cfg.Memory.On() {
		return &localMemory{log: log}, nil
	}
	wv, wk := cfg.Memory.Weights()
	m, err := memory.New(db.MemoryIndex(), memory.Options{
		Embedder:     memory.Cached(emb, 0, 0),
		VectorWeight: wv, KeywordWeight: wk,
		HalfLife:  time.Duration(cfg.Memory.HalfLife),
		MMRLambda: cfg.Memory.MMRLambda, MinScore: cfg.Memory.MinScore,
		Logger: log,
	})
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	lm := &localMemory{mem: m, log: log}
	if lm.files, err = memorytool.NewFiles(m, filepath.Join(cfg.Home, memoryStateDir)); err != nil {
		return nil, err
	}
	if lm.tools, err = memorytool.Tools(memorytool.Config{Memory: m, Files: lm.files, Log: log}); err != nil {
		return nil, err
	}
	if cfg.Memory.RemembersConversations() {
		if lm.conv, err = memorytool.NewConversations(m); err != nil {
			return nil, err
		}
	}
	lm.search = memory.MethodHybrid
	if emb == nil {
		lm.search = memory.MethodBM25Fallback + " (no embeddings configured)"
	} else {
		lm.search += " with " + emb.Model()
	}
	return lm, nil
}

// logState logs whether agent memory is on and how it searches. serve
// logs it once it serves: a log line is scrubbed, which is work of its own.
func (lm *localMemory) logState() {
	if lm.mem == nil {
		lm.log.Info("agent memory is off")
		return
	}
	lm.log.Info("agent memory", "search", lm.search, "conversations", lm.conv != nil)
}

// newEmbedder builds the configured embedding model; none is nil. Agent
// memory and POST /v1/embeddings share it; the endpoint works with
// memory off.
func newEmbedder(ctx context.Context, e *config.Embeddings) (memory.RequestEmbedder, error) {
	if e == nil {
		return nil, nil
	}
	var emb memory.RequestEmbedder
	var err error
	switch e.Type {
	case config.EmbeddingsBedrock:
		var awsCfg aws.Config
		if awsCfg, err = sdkAWS(ctx); err != nil {
			return nil, fmt.Errorf("embeddings: loading AWS configuration: %w", err)
		}
		emb, err = bedrock.NewEmbedder(ctx, bedrock.EmbedConfig{
			Region: e.Region, ModelID: e.Model, Dimensions: e.Dimensions, Timeout: time.Duration(e.Timeout), BaseEndpoint: e.BaseURL,
			Credentials: awsCfg.Credentials,
		})
	case config.EmbeddingsOpenAI, "":
		emb, err = openai.NewEmbedder(openai.EmbedConfig{
			Name: "embeddings", BaseURL: e.BaseURL, APIKey: e.APIKey.Value(), Model: e.Model, Dimensions: e.Dimensions, Timeout: time.Duration(e.Timeout),
		})
	default:
		err = fmt.Errorf("unknown type %q", e.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	return emb, nil
}

// Tools returns the memory tools, none when memory is off.
func (lm *localMemory) Tools() []tool.Tool { return lm.tools }

// Recorder returns the recorder of conversations, nil when they are not
// remembered.
func (lm *localMemory) Recorder() agent.Recorder {
	if lm.conv == nil {
		return nil
	}
	return lm.conv
}

// IndexWorkspaces indexes the memory files of every agent's workspace in
// the background, so that a slow embedding service does not hold up the
// start (a memory_search meanwhile waits for its own agent). The returned
// func stops the indexing and waits for it.
func (lm *localMemory) IndexWorkspaces(agents agent.Registry) (stop func()) {
	if lm.files == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for name, a := range agents {
			rep, err := lm.files.Sync(ctx, name, a.Workspace)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				lm.log.Warn("memory files not indexed", "agent", name, "error", err)
			}
			if rep.Stored+rep.Forgotten > 0 {
				lm.log.Info("memory files indexed", "agent", name, "stored", rep.Stored, "forgotten", rep.Forgotten)
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}
