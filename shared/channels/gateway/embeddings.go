package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
)

// MaxEmbeddingInputs is the most texts one POST /v1/embeddings request
// may carry, as with OpenAI's API.
const MaxEmbeddingInputs = 2048

// Embedder makes the vectors of POST /v1/embeddings. The embedding
// adapters (memory.RequestEmbedder) implement it.
type Embedder interface {
	EmbedRequest(ctx context.Context, r memory.EmbedRequest) (memory.Embeddings, error)
}

// embeddingRequest is OpenAI's request to create embeddings. User is
// accepted and not used; other fields are refused, as OpenAI refuses
// them.
type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     json.RawMessage `json:"dimensions"`
	EncodingFormat string          `json:"encoding_format"`
	User           string          `json:"user"`
}

// embeddings answers OpenAI's "create embeddings" with the embedder every
// agent shares; the model names an agent the key may use.
func (g *Gateway) embeddings(w http.ResponseWriter, r *http.Request) {
	var req embeddingRequest
	if _, ok := g.openRequest(w, r, &req, &req.Model); !ok {
		return
	}
	if g.cfg.Embedder == nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "embeddings_not_configured",
			"this server has no embedding model: configure one (the embeddings section of the config file, or BEDROCK_EMBED_MODEL on AWS)")
		return
	}
	texts, err := embeddingInputs(req.Input)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_input", err.Error())
		return
	}
	dims, err := embeddingDimensions(req.Dimensions)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_dimensions", err.Error())
		return
	}
	var b64 bool
	switch req.EncodingFormat {
	case "", "float":
	case "base64":
		b64 = true
	default:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_encoding_format",
			fmt.Sprintf("encoding_format %q is not one of float, base64", req.EncodingFormat))
		return
	}
	res, err := g.cfg.Embedder.EmbedRequest(r.Context(), memory.EmbedRequest{Texts: texts, Dimensions: dims})
	if err == nil && len(res.Vectors) != len(texts) {
		err = fmt.Errorf("embedder returned %d vectors for %d texts", len(res.Vectors), len(texts))
	}
	if err != nil {
		g.embeddingFailure(w, r, err)
		return
	}
	g.writeEmbeddings(w, r, req.Model, res, b64)
}

// embeddingInputs reads input: a string, or an array of at most
// MaxEmbeddingInputs strings, none of them empty. Token arrays are
// refused: the embedders take text.
func embeddingInputs(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if !set(raw) {
		return nil, errors.New("input is required: a string or an array of strings")
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		if one == "" {
			return nil, errors.New("input must not be an empty string")
		}
		return []string{one}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New("input must be a string or an array of strings")
	}
	switch {
	case len(items) == 0:
		return nil, errors.New("input must not be an empty array")
	case len(items) > MaxEmbeddingInputs:
		return nil, fmt.Errorf("input has %d items; at most %d may be embedded in one request", len(items), MaxEmbeddingInputs)
	}
	texts := make([]string, len(items))
	for i, item := range items {
		if err := json.Unmarshal(item, &texts[i]); err != nil {
			if c := item[0]; c == '[' || c == '-' || c >= '0' && c <= '9' {
				return nil, errors.New("token arrays are not supported: send input as a string or an array of strings")
			}
			return nil, fmt.Errorf("input[%d] must be a string", i)
		}
		if texts[i] == "" {
			return nil, fmt.Errorf("input[%d] must not be an empty string", i)
		}
	}
	return texts, nil
}

// embeddingDimensions reads dimensions: absent or null (0, the embedding
// model's own length), or a positive integer.
func embeddingDimensions(raw json.RawMessage) (int, error) {
	raw = bytes.TrimSpace(raw)
	if !set(raw) {
		return 0, nil
	}
	n, err := strconv.Atoi(string(raw))
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("dimensions must be a positive integer, not %s", raw)
	}
	return n, nil
}

// embeddingFailure answers a failed embedding call. A length the model
// cannot make and an input too long for it are the client's to fix
// (400); a request the provider refused otherwise is too (400, its reason
// in the log); a provider that fails to answer is a 502, with the
// provider's Retry-After. Like chat completions, the client is never told
// the provider's own message.
func (g *Gateway) embeddingFailure(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return // the client went away
	}
	var de *memory.DimensionsError
	var le *llm.Error
	isLLM := errors.As(err, &le)
	switch {
	case errors.As(err, &de):
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_dimensions", de.Error())
		return
	case isLLM && le.ContextOverflow:
		writeError(w, http.StatusBadRequest, "invalid_request_error", "context_length_exceeded",
			"an input is longer than the embedding model accepts; shorten or split it")
		return
	}
	g.log(r).Warn("embedding failed", "error", scrub.Scrub(err.Error()))
	switch {
	case !isLLM:
		writeError(w, http.StatusInternalServerError, "server_error", "internal_error", "could not make the embeddings")
	case !le.Retryable && (le.Status == http.StatusBadRequest || le.Status == http.StatusRequestEntityTooLarge || le.Status == http.StatusUnprocessableEntity):
		writeError(w, http.StatusBadRequest, "invalid_request_error", "input_rejected", withRequestID(
			fmt.Sprintf("the embedding model refused the input (status %d); the server's log has the reason", le.Status), requestID(r.Context())))
	default:
		if le.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int((le.RetryAfter+time.Second-1)/time.Second)))
		}
		writeError(w, http.StatusBadGateway, "server_error", "upstream_error", "the embedding model failed to answer; try again in a moment")
	}
}

// embeddingItem is one entry of the answer's data; Embedding is a
// []float32 or, base64-encoded, a string.
type embeddingItem struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"`
}

// writeEmbeddings writes OpenAI's answer, one entry at a time so that no
// second copy of the vectors is made: {"object":"list","data":[…],
// "model":…,"usage":{"prompt_tokens":n,"total_tokens":n}}.
func (g *Gateway) writeEmbeddings(w http.ResponseWriter, r *http.Request, model string, res memory.Embeddings, b64 bool) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString(`{"object":"list","data":[`)
	for i, v := range res.Vectors {
		item := embeddingItem{Object: "embedding", Index: i, Embedding: v}
		if b64 {
			item.Embedding = base64Floats(v)
		}
		b, err := json.Marshal(item)
		if err != nil {
			// Only a NaN or an infinity, which no provider sends in JSON:
			// the answer stays cut, which the client sees as broken.
			g.log(r).Error("encoding embeddings", "error", err)
			return
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		if _, err := bw.Write(b); err != nil {
			return // the client went away
		}
	}
	tail, _ := json.Marshal(struct {
		Model string         `json:"model"`
		Usage embeddingUsage `json:"usage"`
	}{model, embeddingUsage{PromptTokens: res.Tokens, TotalTokens: res.Tokens}})
	bw.WriteString(`],`)
	bw.Write(tail[1:])
	bw.WriteByte('\n')
	bw.Flush()
}

type embeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// base64Floats encodes v as OpenAI's encoding_format "base64" does: the
// vector's float32 values, little-endian, in standard base64.
func base64Floats(v []float32) string {
	raw := make([]byte, 0, 4*len(v))
	for _, f := range v {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(f))
	}
	return base64.StdEncoding.EncodeToString(raw)
}
