package bedrock

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm/llmtest"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
)

var testCredentials = credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "")

// call is what the fake Bedrock runtime received.
type call struct {
	method, path, rawPath string
	header                http.Header
	body                  titanRequest
}

// runtime is an httptest server standing in for the Bedrock runtime
// endpoint. answer writes the response for each call.
type runtime struct {
	*httptest.Server
	mu    sync.Mutex
	calls []call
}

func newRuntime(t *testing.T, answer func(w http.ResponseWriter, req titanRequest)) *runtime {
	t.Helper()
	rt := &runtime{}
	rt.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("reading body: %v", err)
		}
		if err := modelRefuses(t, r, data); err != nil {
			t.Errorf("Bedrock would refuse this request: %v", err)
		}
		var req titanRequest
		if err := json.Unmarshal(data, &req); err != nil {
			t.Errorf("request body %q is not JSON: %v", data, err)
		}
		rt.mu.Lock()
		rt.calls = append(rt.calls, call{method: r.Method, path: r.URL.Path, rawPath: r.URL.EscapedPath(), header: r.Header.Clone(), body: req})
		rt.mu.Unlock()
		answer(w, req)
	}))
	t.Cleanup(rt.Close)
	return rt
}

func (rt *runtime) recorded() []call {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]call(nil), rt.calls...)
}

func newEmbedder(t *testing.T, endpoint string, mod func(*EmbedConfig)) *Embedder {
	t.Helper()
	cfg := EmbedConfig{Region: "us-east-1", Credentials: testCredentials, BaseEndpoint: endpoint, MaxAttempts: 1}
	if mod != nil {
		mod(&cfg)
	}
	e, err := NewEmbedder(context.Background(), cfg)
	if err != nil {
		t.Fatalf("NewEmbedder: %v", err)
	}
	return e
}

// vectorFor is the fake model: a 256-dimension vector whose first
// component is the text's length.
func vectorFor(text string) []float32 {
	v := make([]float32, 256)
	v[0] = float32(len(text))
	v[1] = 0.5
	return v
}

func writeTitan(w http.ResponseWriter, req titanRequest) {
	v := vectorFor(req.InputText)
	body, _ := json.Marshal(map[string]any{
		"embedding":           v,
		"inputTextTokenCount": len(strings.Fields(req.InputText)),
		"embeddingsByType":    map[string]any{"float": v},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
}

// TestEmbedSigned checks what Bedrock alone asks of a call: the model id
// escaped in the path, a SigV4 signature for bedrock in the region, the
// content type and Titan's options; and the model's name with the length.
// What every embedder does is in the conformance suite.
func TestEmbedSigned(t *testing.T) {
	rt := newRuntime(t, writeTitan)
	e := newEmbedder(t, rt.URL, func(c *EmbedConfig) { c.Dimensions = 256 })
	if _, err := e.Embed(context.Background(), []string{"the cat sleeps"}); err != nil {
		t.Fatalf("Embed: %v", err)
	}
	calls := rt.recorded()
	if len(calls) != 1 {
		t.Fatalf("%d calls, want 1", len(calls))
	}
	c := calls[0]
	if c.method != http.MethodPost || c.path != "/model/amazon.titan-embed-text-v2:0/invoke" {
		t.Errorf("call %s %s, want POST /model/amazon.titan-embed-text-v2:0/invoke", c.method, c.path)
	}
	if c.rawPath != "/model/amazon.titan-embed-text-v2%3A0/invoke" {
		t.Errorf("path on the wire %s: the model id's colon is not escaped", c.rawPath)
	}
	if !strings.HasPrefix(c.header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") ||
		!strings.Contains(c.header.Get("Authorization"), "/us-east-1/bedrock/aws4_request") {
		t.Errorf("Authorization = %q, want SigV4 for bedrock in us-east-1", c.header.Get("Authorization"))
	}
	if ct := c.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if c.body.Dimensions != 256 || !c.body.Normalize {
		t.Errorf("body %+v, want dimensions 256 and normalize true", c.body)
	}
	if e.Model() != "amazon.titan-embed-text-v2:0@256" {
		t.Errorf("Model() = %q", e.Model())
	}
}

func TestEmbedRequestBody(t *testing.T) {
	// The body exactly as Titan V2's documentation gives it.
	var raw []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ = io.ReadAll(r.Body)
		writeTitan(w, titanRequest{InputText: "x"})
	}))
	defer srv.Close()
	e := newEmbedder(t, srv.URL, func(c *EmbedConfig) { c.Dimensions = 256 })
	if _, err := e.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if want := `{"inputText":"x","dimensions":256,"normalize":true}`; string(raw) != want {
		t.Errorf("body %s, want %s", raw, want)
	}
}

func TestEmbedBoundedConcurrency(t *testing.T) {
	var inFlight, peak atomic.Int32
	rt := newRuntime(t, func(w http.ResponseWriter, req titanRequest) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		writeTitan(w, req)
	})
	e := newEmbedder(t, rt.URL, func(c *EmbedConfig) { c.Dimensions = 256; c.Concurrency = 3 })
	var texts []string
	for i := range 10 {
		texts = append(texts, strings.Repeat("w", i+1))
	}
	got, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	for i, v := range got {
		if v[0] != float32(i+1) {
			t.Errorf("vector %d belongs to a text of length %v: out of order", i, v[0])
		}
	}
	if p := peak.Load(); p > 3 || p < 2 {
		t.Errorf("peak concurrency %d, want at most 3 (and some)", p)
	}
}

// TestEmbedModelNotReady checks an exception of Bedrock beyond those of
// the conformance suite, and that the embedder makes a call once when
// told to.
func TestEmbedModelNotReady(t *testing.T) {
	rt := newRuntime(t, func(w http.ResponseWriter, _ titanRequest) {
		writeBedrockError(w, http.StatusTooManyRequests, "ModelNotReadyException", "Model is not ready to serve inference requests.")
	})
	_, err := newEmbedder(t, rt.URL, nil).Embed(context.Background(), []string{"the cat"})
	llmtest.CheckError(t, err, llm.Error{Provider: "bedrock", Status: 429, Retryable: true}, "", "ModelNotReadyException")
	if n := len(rt.recorded()); n != 1 {
		t.Errorf("%d calls with MaxAttempts 1", n)
	}
}

func TestEmbedRetriesThrottling(t *testing.T) {
	var n atomic.Int32
	rt := newRuntime(t, func(w http.ResponseWriter, req titanRequest) {
		if n.Add(1) == 1 {
			w.Header().Set("X-Amzn-Errortype", "ThrottlingException")
			w.WriteHeader(429)
			io.WriteString(w, `{"message":"Too many requests, please wait before trying again."}`)
			return
		}
		writeTitan(w, req)
	})
	e := newEmbedder(t, rt.URL, func(c *EmbedConfig) { c.Dimensions = 256; c.MaxAttempts = 2 })
	if _, err := e.Embed(context.Background(), []string{"the cat"}); err != nil {
		t.Fatalf("Embed after one throttle with 2 attempts: %v", err)
	}
}

func TestNewEmbedder(t *testing.T) {
	for _, cfg := range []EmbedConfig{
		{Credentials: testCredentials},
		{Region: "us-east-1", Credentials: testCredentials, Dimensions: 300},
		{Region: "us-east-1", Credentials: testCredentials, Concurrency: -1},
		{Region: "us-east-1", Credentials: testCredentials, BaseEndpoint: "localhost:1"},
	} {
		if _, err := NewEmbedder(context.Background(), cfg); err == nil {
			t.Errorf("NewEmbedder(%+v): no error", cfg)
		}
	}
}

// TestEmbedRequestLengths checks that a request's length replaces the
// configured one, and that a length Titan V2 does not make is refused
// before any call, naming the lengths it makes.
func TestEmbedRequestLengths(t *testing.T) {
	rt := newRuntime(t, func(w http.ResponseWriter, req titanRequest) {
		v := make([]float32, req.Dimensions)
		body, _ := json.Marshal(map[string]any{"embedding": v, "inputTextTokenCount": 3})
		w.Write(body)
	})
	e := newEmbedder(t, rt.URL, func(c *EmbedConfig) { c.Dimensions = 256 })
	got, err := e.EmbedRequest(context.Background(), memory.EmbedRequest{Texts: []string{"a", "b"}, Dimensions: 512})
	if err != nil {
		t.Fatalf("EmbedRequest: %v", err)
	}
	if len(got.Vectors) != 2 || len(got.Vectors[0]) != 512 || got.Tokens != 6 {
		t.Errorf("got %d vectors of %d dimensions and %d tokens, want 2 of 512 and 6", len(got.Vectors), len(got.Vectors[0]), got.Tokens)
	}
	for _, c := range rt.recorded() {
		if c.body.Dimensions != 512 {
			t.Errorf("call for %d dimensions, want 512", c.body.Dimensions)
		}
	}
	calls := len(rt.recorded())
	_, err = e.EmbedRequest(context.Background(), memory.EmbedRequest{Texts: []string{"a"}, Dimensions: 768})
	var de *memory.DimensionsError
	if !errors.As(err, &de) {
		t.Fatalf("768 dimensions: error %v, want a *memory.DimensionsError", err)
	}
	if diff := cmp.Diff(&memory.DimensionsError{Dimensions: 768, Supported: []int{256, 512, 1024}}, de); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
	if want := "the embedding model cannot make vectors of 768 dimensions; it makes 256, 512, 1024"; de.Error() != want {
		t.Errorf("message %q, want %q", de.Error(), want)
	}
	if n := len(rt.recorded()); n != calls {
		t.Errorf("%d calls for a length Titan does not make", n-calls)
	}
}
