package fakellm

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
)

// The embeddings endpoint, POST /v1/embeddings, speaks OpenAI's wire
// format: input as a string or an array of strings, dimensions,
// encoding_format float or base64 (little-endian float32), usage, and
// OpenAI's 400s for what its API refuses. Its vectors are
// EmbeddingVector of each text, made at the model's own length
// (EmbeddingModelDims) and cut to the length asked for, as
// text-embedding-3 models shorten theirs.

// Limits of the fake's embeddings API, OpenAI's.
const (
	// MaxEmbeddingInputs is the most texts one request may carry.
	MaxEmbeddingInputs = 2048
	// MaxEmbeddingTokens is the most tokens (EmbeddingTokens) one text
	// may have.
	MaxEmbeddingTokens = 8192
)

// embeddingModel is what the fake knows of an embedding model: its
// vectors' length, and whether it shortens them to the dimensions asked
// for.
type embeddingModel struct {
	dims     int
	shortens bool
}

// embeddingModels are the models the fake knows by name; any other model
// behaves as text-embedding-3-small.
var embeddingModels = map[string]embeddingModel{
	"text-embedding-3-small": {1536, true},
	"text-embedding-3-large": {3072, true},
	"text-embedding-ada-002": {1536, false},
}

// EmbeddingModelDims returns the length of model's own vectors and
// whether it makes shorter ones when asked (text-embedding-ada-002 does
// not; it refuses dimensions).
func EmbeddingModelDims(model string) (dims int, shortens bool) {
	m, ok := embeddingModels[model]
	if !ok {
		m = embeddingModels["text-embedding-3-small"]
	}
	return m.dims, m.shortens
}

// EmbeddingVector is the fake's vector of text at dims dimensions:
// multiples of 0.25 in [-8, 8], exact in JSON and in float32, made by a
// generator seeded with the text's hash, so that the vector at fewer
// dimensions is the start of the longer one. It is not normalised.
func EmbeddingVector(text string, dims int) []float32 {
	h := fnv.New64a()
	h.Write([]byte(text))
	x := h.Sum64()
	v := make([]float32, dims)
	for i := range v {
		// splitmix64
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		v[i] = float32(int(z%65)-32) / 4
	}
	return v
}

// EmbeddingTokens is how many tokens the fake counts in text: a quarter
// of its bytes, plus one.
func EmbeddingTokens(text string) int { return len(text)/4 + 1 }

// DiffEmbeddings returns how res, an answer the openai SDK decoded,
// differs from the fake's answer to texts at dims dimensions under model
// (the vectors in order, the usage); "" when it does not.
func DiffEmbeddings(res *openai.CreateEmbeddingResponse, model string, texts []string, dims int) string {
	type item struct {
		Object    string
		Index     int64
		Embedding []float64
	}
	type answer struct {
		Object, Model        string
		Data                 []item
		PromptTokens, Tokens int64
	}
	want := answer{Object: "list", Model: model}
	for i, t := range texts {
		v := EmbeddingVector(t, dims)
		f := make([]float64, len(v))
		for j, x := range v {
			f[j] = float64(x)
		}
		want.Data = append(want.Data, item{"embedding", int64(i), f})
		want.PromptTokens += int64(EmbeddingTokens(t))
	}
	want.Tokens = want.PromptTokens
	got := answer{Object: string(res.Object), Model: res.Model, PromptTokens: res.Usage.PromptTokens, Tokens: res.Usage.TotalTokens}
	for _, d := range res.Data {
		got.Data = append(got.Data, item{string(d.Object), d.Index, d.Embedding})
	}
	return cmp.Diff(want, got)
}

// EmbeddingRequest is a parsed embeddings request.
type EmbeddingRequest struct {
	Model string
	Input []string
	// Dimensions is the length asked for, 0 when none was.
	Dimensions     int
	EncodingFormat string
	// APIKey is the bearer token of the Authorization header.
	APIKey string
	// Body is the raw request body.
	Body []byte
	// Invalid is the error message the fake answered with when it
	// rejected the request as the real API would (status 400); empty
	// otherwise.
	Invalid string
}

// embeddingState is a server's embeddings script and record.
type embeddingState struct {
	mu       sync.Mutex
	script   []Reply
	requests []EmbeddingRequest
}

// embeddingStates holds each Server's embeddingState, so that the
// endpoint needs no field of its own in Server.
var embeddingStates sync.Map // *Server → *embeddingState

func (s *Server) embeddings() *embeddingState {
	st, _ := embeddingStates.LoadOrStore(s, &embeddingState{})
	return st.(*embeddingState)
}

// EnqueueEmbeddings appends answers to the embeddings script: each valid
// request takes the next one, and with the script empty gets its vectors.
// Of a Reply, the embeddings endpoint uses the error fields (Status,
// ErrorMessage, ErrorType, ErrorCode), RetryAfter, Delay, Hang and Raw.
func (s *Server) EnqueueEmbeddings(replies ...Reply) {
	st := s.embeddings()
	st.mu.Lock()
	st.script = append(st.script, replies...)
	st.mu.Unlock()
}

// EmbeddingRequests returns a copy of the recorded embeddings requests in
// arrival order.
func (s *Server) EmbeddingRequests() []EmbeddingRequest {
	st := s.embeddings()
	st.mu.Lock()
	defer st.mu.Unlock()
	return append([]EmbeddingRequest(nil), st.requests...)
}

// ResetEmbeddings clears the embeddings script and the recorded
// embeddings requests.
func (s *Server) ResetEmbeddings() {
	st := s.embeddings()
	st.mu.Lock()
	st.script, st.requests = nil, nil
	st.mu.Unlock()
}

// wireEmbeddingRequest is the request as sent.
type wireEmbeddingRequest struct {
	Model          *string         `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     *int            `json:"dimensions"`
	EncodingFormat string          `json:"encoding_format"`
	User           string          `json:"user"`
}

// invalidInput is OpenAI's answer to an input it cannot embed.
const invalidInput = "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."

// parseEmbeddings decodes a request body. It returns the parsed request
// and, when the real API would reject it, the 400 message.
func parseEmbeddings(body []byte) (EmbeddingRequest, string) {
	req := EmbeddingRequest{Body: body}
	var w wireEmbeddingRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return req, "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"
	}
	if w.Model != nil {
		req.Model = *w.Model
	}
	if w.Dimensions != nil {
		req.Dimensions = *w.Dimensions
	}
	req.EncodingFormat = w.EncodingFormat
	var one string
	if err := json.Unmarshal(w.Input, &one); err == nil {
		req.Input = []string{one}
	} else if err := json.Unmarshal(w.Input, &req.Input); err != nil {
		return req, invalidInput + " (fakellm: input must be a string or an array of strings; it takes no token arrays)"
	}
	if req.Model == "" {
		return req, "you must provide a model parameter"
	}
	if len(req.Input) == 0 || len(req.Input) > MaxEmbeddingInputs {
		return req, invalidInput
	}
	for _, t := range req.Input {
		if t == "" {
			return req, invalidInput
		}
		if n := EmbeddingTokens(t); n > MaxEmbeddingTokens {
			return req, fmt.Sprintf("This model's maximum context length is %d tokens, however you requested %d tokens (%d in your prompt; 0 for the completion). Please reduce your prompt; or completion length.", MaxEmbeddingTokens, n, n)
		}
	}
	if f := req.EncodingFormat; f != "" && f != "float" && f != "base64" {
		return req, fmt.Sprintf("Invalid value for 'encoding_format': %q. Supported values are: 'float' and 'base64'.", f)
	}
	dims, shortens := EmbeddingModelDims(req.Model)
	switch {
	case w.Dimensions == nil:
	case !shortens:
		return req, "This model does not support specifying dimensions."
	case req.Dimensions < 1 || req.Dimensions > dims:
		return req, fmt.Sprintf("Invalid value for 'dimensions' = %d. Must be between 1 and %d.", req.Dimensions, dims)
	}
	return req, ""
}

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	var body bytes.Buffer
	if _, err := body.ReadFrom(r.Body); err != nil {
		return
	}
	req, invalid := parseEmbeddings(body.Bytes())
	req.Invalid = invalid
	req.APIKey = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	st := s.embeddings()
	st.mu.Lock()
	st.requests = append(st.requests, req)
	var reply Reply
	if invalid == "" && len(st.script) > 0 {
		reply, st.script = st.script[0], st.script[1:]
	}
	st.mu.Unlock()
	if invalid != "" {
		writeError(w, Reply{Status: http.StatusBadRequest, ErrorMessage: invalid, ErrorType: "invalid_request_error"})
		return
	}
	if !s.hold(w, r, reply) {
		return
	}
	if reply.RetryAfter != "" {
		w.Header().Set("Retry-After", reply.RetryAfter)
	}
	switch {
	case reply.Status >= 400:
		writeError(w, reply)
	case reply.Raw != "":
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(reply.Raw))
	default:
		writeEmbeddings(w, req)
	}
}

// hold waits as reply says (Hang, Delay) and reports whether to answer:
// false when the client went away or the server closed.
func (s *Server) hold(w http.ResponseWriter, r *http.Request, reply Reply) bool {
	var wait <-chan time.Time
	switch {
	case reply.Hang:
	case reply.Delay > 0:
		t := time.NewTimer(reply.Delay)
		defer t.Stop()
		wait = t.C
	default:
		return true
	}
	select {
	case <-wait:
		return true
	case <-r.Context().Done():
	case <-s.closed:
	}
	return false
}

// writeEmbeddings answers req with its vectors, as OpenAI does.
func writeEmbeddings(w http.ResponseWriter, req EmbeddingRequest) {
	dims, _ := EmbeddingModelDims(req.Model)
	if req.Dimensions > 0 {
		dims = req.Dimensions
	}
	data := make([]map[string]any, len(req.Input))
	tokens := 0
	for i, t := range req.Input {
		var emb any = EmbeddingVector(t, dims)
		if req.EncodingFormat == "base64" {
			raw := make([]byte, 0, 4*dims)
			for _, f := range emb.([]float32) {
				raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(f))
			}
			emb = base64.StdEncoding.EncodeToString(raw)
		}
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": emb}
		tokens += EmbeddingTokens(t)
	}
	b, _ := json.Marshal(map[string]any{
		"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens},
	})
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}
