package fakellm

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
)

// TestEmbeddingsWithSDK checks the endpoint with OpenAI's Go SDK: the
// vectors of the length asked for, in order, the usage, and the request
// recorded.
func TestEmbeddingsWithSDK(t *testing.T) {
	s := New()
	defer s.Close()
	c := newClient(s)
	texts := []string{"the cat sleeps", "le chat dort 🐈"}
	res, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
		Model:      "text-embedding-3-small",
		Input:      openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		Dimensions: param.NewOpt[int64](8),
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := DiffEmbeddings(res, "text-embedding-3-small", texts, 8); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
	reqs := s.EmbeddingRequests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests recorded, want 1", len(reqs))
	}
	r := reqs[0]
	if diff := cmp.Diff(EmbeddingRequest{Model: "text-embedding-3-small", Input: texts, Dimensions: 8, APIKey: "sk-test"}, r,
		cmpopts.IgnoreFields(EmbeddingRequest{}, "Body")); diff != "" {
		t.Errorf("recorded request (-want +got):\n%s", diff)
	}
}

// TestEmbeddingVectorShortens checks that a shorter vector is the start
// of the model's own, as text-embedding-3 models shorten theirs, and that
// texts differ.
func TestEmbeddingVectorShortens(t *testing.T) {
	full := EmbeddingVector("the cat", 1536)
	if diff := cmp.Diff(full[:256], EmbeddingVector("the cat", 256)); diff != "" {
		t.Errorf("256 dimensions are not the start of 1536 (-want +got):\n%s", diff)
	}
	if cmp.Equal(EmbeddingVector("the cat", 16), EmbeddingVector("the dog", 16)) {
		t.Error("two texts have the same vector")
	}
}

// post sends body to the fake's /v1/embeddings and decodes the answer.
func post(t *testing.T, s *Server, body string) (int, http.Header, map[string]any) {
	t.Helper()
	res, err := http.Post(s.URL+"/v1/embeddings", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		t.Fatalf("answer: %v", err)
	}
	return res.StatusCode, res.Header, out
}

func TestEmbeddingsBase64(t *testing.T) {
	s := New()
	defer s.Close()
	status, _, out := post(t, s, `{"model":"text-embedding-3-large","input":"the cat","encoding_format":"base64"}`)
	if status != http.StatusOK {
		t.Fatalf("status %d: %v", status, out)
	}
	b64 := out["data"].([]any)[0].(map[string]any)["embedding"].(string)
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	var got []float32
	for i := 0; i+4 <= len(raw); i += 4 {
		got = append(got, math.Float32frombits(binary.LittleEndian.Uint32(raw[i:])))
	}
	if diff := cmp.Diff(EmbeddingVector("the cat", 3072), got); diff != "" {
		t.Errorf("vector (-want +got):\n%s", diff)
	}
}

// TestEmbeddingsRefused checks the 400s of OpenAI's API, and that they
// are recorded with their message.
func TestEmbeddingsRefused(t *testing.T) {
	tooMany, _ := json.Marshal(make([]string, MaxEmbeddingInputs+1))
	tests := []struct {
		name    string
		body    string
		mention string
	}{
		{"not JSON", `{"model":`, "could not parse the JSON body"},
		{"no model", `{"input":"a"}`, "you must provide a model parameter"},
		{"empty text", `{"model":"m","input":["a",""]}`, "'$.input' is invalid"},
		{"no texts", `{"model":"m","input":[]}`, "'$.input' is invalid"},
		{"too many texts", `{"model":"m","input":` + string(tooMany) + `}`, "'$.input' is invalid"},
		{"token arrays", `{"model":"m","input":[[1,2]]}`, "token arrays"},
		{"text too long", `{"model":"m","input":"` + strings.Repeat("a", 4*MaxEmbeddingTokens) + `"}`, "maximum context length is 8192 tokens"},
		{"encoding_format", `{"model":"m","input":"a","encoding_format":"int8"}`, "'encoding_format'"},
		{"ada shortens nothing", `{"model":"text-embedding-ada-002","input":"a","dimensions":256}`, "does not support specifying dimensions"},
		{"zero dimensions", `{"model":"m","input":"a","dimensions":0}`, "Must be between 1 and 1536"},
		{"more dimensions than the model's", `{"model":"text-embedding-3-large","input":"a","dimensions":3073}`, "Must be between 1 and 3072"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New()
			defer s.Close()
			status, _, out := post(t, s, tt.body)
			msg := fmt.Sprint(out["error"].(map[string]any)["message"])
			if status != http.StatusBadRequest || !strings.Contains(msg, tt.mention) {
				t.Errorf("answer %d %q, want 400 mentioning %q", status, msg, tt.mention)
			}
			if reqs := s.EmbeddingRequests(); len(reqs) != 1 || reqs[0].Invalid != msg {
				t.Errorf("recorded %+v, want the request with its message", reqs)
			}
		})
	}
}

// TestEmbeddingsScripted checks scripted answers: an error status with
// Retry-After, then a raw body, then the vectors again; and
// ResetEmbeddings.
func TestEmbeddingsScripted(t *testing.T) {
	s := New()
	defer s.Close()
	s.EnqueueEmbeddings(Reply{Status: http.StatusTooManyRequests, RetryAfter: "3"}, Reply{Raw: `{"object":"list","data":[]}`})
	c := newClient(s)
	params := openai.EmbeddingNewParams{Model: "m", Input: openai.EmbeddingNewParamsInputUnion{OfString: param.NewOpt("a")}}
	_, err := c.Embeddings.New(context.Background(), params)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || apiErr.Response.Header.Get("Retry-After") != "3" {
		t.Errorf("first answer: %v, want a 429 with Retry-After 3", err)
	}
	if res, err := c.Embeddings.New(context.Background(), params); err != nil || len(res.Data) != 0 {
		t.Errorf("second answer: %+v, %v; want the raw body", res, err)
	}
	if res, err := c.Embeddings.New(context.Background(), params); err != nil || len(res.Data) != 1 {
		t.Errorf("third answer: %+v, %v; want a vector", res, err)
	}
	if n := len(s.EmbeddingRequests()); n != 3 {
		t.Errorf("%d requests recorded, want 3", n)
	}
	s.ResetEmbeddings()
	if n := len(s.EmbeddingRequests()); n != 0 {
		t.Errorf("%d requests recorded after ResetEmbeddings", n)
	}
}
