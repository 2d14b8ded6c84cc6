package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

func TestLoadMemory(t *testing.T) {
	type memoryView struct {
		On, Conversations bool
		Vector, Keyword   float64
		HalfLife          config.HalfLife
		MMR, MinScore     float64
		Embeddings        *config.Embeddings
	}
	tests := []struct {
		name string
		yaml string
		env  map[string]string
		want memoryView
	}{
		{
			name: "defaults: on, keyword-only",
			want: memoryView{On: true, Conversations: true, Vector: 0.7, Keyword: 0.3},
		},
		{
			name: "tuned, conversations off",
			yaml: "memory:\n  vector_weight: 0.5\n  keyword_weight: 0.5\n  half_life: 168h\n  mmr_lambda: 0.7\n  min_score: 0.2\n  conversations: false\n",
			want: memoryView{On: true, Vector: 0.5, Keyword: 0.5, HalfLife: config.HalfLife(168 * time.Hour), MMR: 0.7, MinScore: 0.2},
		},
		{
			name: "decay off, one weight set",
			yaml: "memory:\n  half_life: off\n  keyword_weight: 0\n",
			want: memoryView{On: true, Conversations: true, Vector: 0.7, HalfLife: -1},
		},
		{
			name: "disabled",
			yaml: "memory:\n  enabled: false\n",
			want: memoryView{Vector: 0.7, Keyword: 0.3},
		},
		{
			name: "openai embeddings: default model, key resolved",
			yaml: "embeddings:\n  base_url: http://localhost:11434/v1\n  api_key: {env: EMBED_KEY}\n  dimensions: 384\n",
			env:  map[string]string{"EMBED_KEY": "sk-embed"},
			want: memoryView{On: true, Conversations: true, Vector: 0.7, Keyword: 0.3, Embeddings: &config.Embeddings{
				Type: "openai", BaseURL: "http://localhost:11434/v1", APIKey: config.Secret{Env: "EMBED_KEY"}, Model: "text-embedding-3-small", Dimensions: 384}},
		},
		{
			name: "bedrock embeddings: region from the environment",
			yaml: "embeddings:\n  type: bedrock\n  dimensions: 512\n",
			env:  map[string]string{"AWS_REGION": "eu-west-1"},
			want: memoryView{On: true, Conversations: true, Vector: 0.7, Keyword: 0.3, Embeddings: &config.Embeddings{
				Type: "bedrock", Region: "eu-west-1", Dimensions: 512}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, path := writeConfig(t, tt.yaml)
			e := map[string]string{"LAMBDACLAW_HOME": dir}
			for k, v := range tt.env {
				e[k] = v
			}
			c, err := config.Load(path, env(e))
			if err != nil {
				t.Fatal(err)
			}
			m := c.Memory
			got := memoryView{On: m.On(), Conversations: m.RemembersConversations(), HalfLife: m.HalfLife, MMR: m.MMRLambda, MinScore: m.MinScore, Embeddings: c.Embeddings}
			got.Vector, got.Keyword = m.Weights()
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreUnexported(config.Secret{})); diff != "" {
				t.Errorf("memory (-want +got):\n%s", diff)
			}
			if c.Embeddings != nil && c.Embeddings.APIKey.Env != "" && c.Embeddings.APIKey.Value() != tt.env[c.Embeddings.APIKey.Env] {
				t.Errorf("api_key resolved to %q", c.Embeddings.APIKey.Value())
			}
		})
	}
}

func TestLoadMemoryErrors(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"negative weight", "memory:\n  vector_weight: -1\n", "must not be negative"},
		{"zero weights", "memory:\n  vector_weight: 0\n  keyword_weight: 0\n", "at least one must be positive"},
		{"mmr out of range", "memory:\n  mmr_lambda: 1.5\n", "mmr_lambda 1.5 is outside [0, 1]"},
		{"min score out of range", "memory:\n  min_score: 2\n", "min_score 2 is outside [0, 1]"},
		{"bad half-life", "memory:\n  half_life: 30d\n", "720h, or off"},
		{"zero half-life", "memory:\n  half_life: 0s\n", "must be positive, or off"},
		{"unknown field", "memory:\n  halflife: 1h\n", "halflife"},
		{"unknown type", "embeddings:\n  type: cohere\n", `type is "cohere"; want openai or bedrock`},
		{"literal key", "embeddings:\n  api_key: sk-x\n", "{env: OPENAI_API_KEY}"},
		{"bedrock without region", "embeddings:\n  type: bedrock\n", "bedrock needs a region"},
		{"bedrock with key", "embeddings:\n  type: bedrock\n  region: us-east-1\n  api_key: {env: K}\n", "takes no api_key"},
		{"negative dimensions", "embeddings:\n  dimensions: -3\n", "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, path := writeConfig(t, tt.yaml)
			_, err := config.Load(path, env(map[string]string{"LAMBDACLAW_HOME": dir}))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}
