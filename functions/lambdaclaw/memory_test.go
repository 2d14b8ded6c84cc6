package main

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

func TestLocalMemory(t *testing.T) {
	off, no := false, false
	tests := []struct {
		name         string
		memory       config.Memory
		embeddings   *config.Embeddings
		tools        []string
		conversation bool
	}{
		{"default", config.Memory{}, nil, []string{"memory_search", "memory_get", "memory_store", "memory_forget"}, true},
		{"off", config.Memory{Enabled: &off}, nil, nil, false},
		{"no conversations", config.Memory{Conversations: &no}, nil, []string{"memory_search", "memory_get", "memory_store", "memory_forget"}, false},
		{"openai embeddings", config.Memory{}, &config.Embeddings{Type: config.EmbeddingsOpenAI, BaseURL: "http://127.0.0.1:1/v1", Model: "m", Dimensions: 384},
			[]string{"memory_search", "memory_get", "memory_store", "memory_forget"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			db, err := sqlite.Open(filepath.Join(home, "db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			cfg := &config.Config{Home: home, Memory: tt.memory, Embeddings: tt.embeddings}
			emb, err := newEmbedder(context.Background(), tt.embeddings)
			if err != nil {
				t.Fatal(err)
			}
			lm, err := newLocalMemory(cfg, db, emb, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range lm.Tools() {
				names = append(names, tl.Definition().Name)
			}
			if !slices.Equal(names, tt.tools) {
				t.Errorf("tools = %v, want %v", names, tt.tools)
			}
			if got := lm.Recorder() != nil; got != tt.conversation {
				t.Errorf("recorder set = %v, want %v", got, tt.conversation)
			}
			lm.IndexWorkspaces(nil)()
		})
	}
}

func TestNewEmbedderErrors(t *testing.T) {
	for _, e := range []*config.Embeddings{
		{Type: config.EmbeddingsOpenAI, BaseURL: "ftp://x", Model: "m"},
		{Type: config.EmbeddingsBedrock, Region: "us-east-1", Dimensions: 384},
		{Type: "cohere"},
	} {
		if _, err := newEmbedder(context.Background(), e); err == nil {
			t.Errorf("newEmbedder(%+v) succeeded", e)
		}
	}
}
