package config

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Embedding model types.
const (
	EmbeddingsOpenAI  = "openai"
	EmbeddingsBedrock = "bedrock"
	// DefaultEmbeddingModel is the model of an openai embeddings section
	// that names none.
	DefaultEmbeddingModel = "text-embedding-3-small"
)

// Memory tunes agent memory and its hybrid search. The zero value is the
// default: memory on, with the weights, half-life, MMR and minimum score
// of package memory's defaults, and past conversations remembered.
type Memory struct {
	// Enabled turns agent memory on (the default) or off: the memory
	// tools, the indexing of workspace memory files and of conversations.
	Enabled *bool `yaml:"enabled"`
	// VectorWeight and KeywordWeight weigh the semantic and the keyword
	// score of a hit (default 0.7 and 0.3); they are scaled to sum to 1.
	VectorWeight  *float64 `yaml:"vector_weight"`
	KeywordWeight *float64 `yaml:"keyword_weight"`
	// HalfLife is the age at which a memory's score is halved (default
	// 720h, 30 days; "off" turns decay off). Core memories and MEMORY.md
	// never decay.
	HalfLife HalfLife `yaml:"half_life"`
	// MMRLambda in (0, 1) diversifies results by maximal marginal
	// relevance; 0 (the default) keeps score order.
	MMRLambda float64 `yaml:"mmr_lambda"`
	// MinScore drops hits scoring below it, in [0, 1] (default 0).
	MinScore float64 `yaml:"min_score"`
	// Conversations keeps each exchange of a durable session as a
	// conversation memory of its agent (default true).
	Conversations *bool `yaml:"conversations"`
}

// HalfLife is a duration such as "720h", or "off" (stored as -1).
type HalfLife time.Duration

// UnmarshalYAML reads a Go duration or "off".
func (h *HalfLife) UnmarshalYAML(n *yaml.Node) error {
	if strings.EqualFold(n.Value, "off") {
		*h = -1
		return nil
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: half_life: %w (write a duration such as 720h, or off)", n.Line, err)
	}
	if v <= 0 {
		return fmt.Errorf("line %d: half_life must be positive, or off", n.Line)
	}
	*h = HalfLife(v)
	return nil
}

// On reports whether memory is enabled.
func (m Memory) On() bool { return m.Enabled == nil || *m.Enabled }

// RemembersConversations reports whether exchanges become memories.
func (m Memory) RemembersConversations() bool {
	return m.On() && (m.Conversations == nil || *m.Conversations)
}

// Weights returns the vector and keyword weights, defaults applied.
func (m Memory) Weights() (vector, keyword float64) {
	vector, keyword = 0.7, 0.3
	if m.VectorWeight != nil {
		vector = *m.VectorWeight
	}
	if m.KeywordWeight != nil {
		keyword = *m.KeywordWeight
	}
	return vector, keyword
}

func (m Memory) validate() error {
	v, k := m.Weights()
	switch {
	case v < 0 || k < 0:
		return fmt.Errorf("config: memory: weights must not be negative (vector_weight %v, keyword_weight %v)", v, k)
	case v == 0 && k == 0:
		return fmt.Errorf("config: memory: vector_weight and keyword_weight are both 0; at least one must be positive")
	case m.MMRLambda < 0 || m.MMRLambda > 1:
		return fmt.Errorf("config: memory: mmr_lambda %v is outside [0, 1]", m.MMRLambda)
	case m.MinScore < 0 || m.MinScore > 1:
		return fmt.Errorf("config: memory: min_score %v is outside [0, 1]", m.MinScore)
	}
	return nil
}

// Embeddings is the embedding model of memory search: an
// OpenAI-compatible /v1/embeddings endpoint (OpenAI, Ollama, vLLM,
// LM Studio…) or Amazon Titan Text Embeddings V2 on Bedrock. Without it,
// memory search is keyword-only (method "bm25_fallback").
type Embeddings struct {
	// Type is "openai" (the default) or "bedrock".
	Type string `yaml:"type"`
	// BaseURL is the OpenAI-compatible API root (default OpenAI's); for
	// bedrock, an optional endpoint replacing the regional one.
	BaseURL string `yaml:"base_url"`
	APIKey  Secret `yaml:"api_key"`
	// Model is the embedding model: DefaultEmbeddingModel for openai,
	// amazon.titan-embed-text-v2:0 for bedrock when empty.
	Model string `yaml:"model"`
	// Dimensions asks for vectors of this length (text-embedding-3 models
	// shorten theirs; Titan V2 makes 256, 512 or 1024); 0 keeps the
	// model's default.
	Dimensions int `yaml:"dimensions"`
	// Region is Bedrock's region; AWS_REGION when empty.
	Region string `yaml:"region"`
	// Timeout bounds one embedding request (the adapter's default when 0).
	Timeout Duration `yaml:"timeout"`
}

// loadMemory resolves and checks the memory and embeddings sections.
func (c *Config) loadMemory(getenv func(string) string) error {
	if err := c.Memory.validate(); err != nil {
		return err
	}
	e := c.Embeddings
	if e == nil {
		return nil
	}
	if err := e.APIKey.resolve(c.Home, getenv); err != nil {
		return fmt.Errorf("config: embeddings: api_key: %w", err)
	}
	if e.Dimensions < 0 || e.Timeout < 0 {
		return fmt.Errorf("config: embeddings: dimensions and timeout must not be negative")
	}
	switch e.Type {
	case "", EmbeddingsOpenAI:
		e.Type = EmbeddingsOpenAI
		if e.Model == "" {
			e.Model = DefaultEmbeddingModel
		}
	case EmbeddingsBedrock:
		if e.Region == "" {
			e.Region = getenv("AWS_REGION")
		}
		switch {
		case e.Region == "":
			return fmt.Errorf("config: embeddings: bedrock needs a region (region in the config, or AWS_REGION)")
		case e.APIKey.Set():
			return fmt.Errorf("config: embeddings: bedrock signs with IAM credentials and takes no api_key")
		}
	default:
		return fmt.Errorf("config: embeddings: type is %q; want openai or bedrock", e.Type)
	}
	return nil
}
