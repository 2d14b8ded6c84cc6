package memorytest

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm/llmtest"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
)

// EmbedModel is the model the harness builds the embedder under test with.
const EmbedModel = "test-embed"

// EmbedHarness is what an embedding adapter's tests give RunEmbedder: a
// fake of its service, speaking its wire format.
type EmbedHarness struct {
	// Provider is the name the adapter's errors carry.
	Provider string
	// Secret is the credential the embedder is built with. No error may
	// show it.
	Secret string
	// Start starts a fake of the embedding service that answers each
	// call as s says (see EmbedScript.Next) and returns the embedder under
	// test pointed at it, with model EmbedModel, configured as cfg says.
	// It should fail t if it cannot, and release the fake with t.Cleanup.
	Start func(t *testing.T, cfg EmbedConfig, s *EmbedScript) memory.Embedder
}

// EmbedConfig is the embedder a case needs.
type EmbedConfig struct {
	// Dims is the length of the vectors to ask for: 256 or 512.
	Dims int
	// Batch is the most texts the embedder sends in one request, or has
	// in flight at once when its service takes one per request.
	Batch int
	// Timeout bounds each request.
	Timeout time.Duration
	// Down asks for a fake that is not there: nothing listens where the
	// embedder is pointed.
	Down bool
}

// EmbedCall is a request the fake received: the model, the length of the
// vectors asked for and the texts.
type EmbedCall struct {
	Model string
	Dims  int
	Texts []string
}

// EmbedAnswer is how the fake answers every request.
type EmbedAnswer struct {
	// Failure, when set, is the error the service answers with.
	Failure *llmtest.Failure
	// Dims, when not zero, is the length of the vectors sent back in
	// place of the one asked for.
	Dims int
	// End is how the answer ends: llmtest.Finished (the vectors, each
	// EmbedVector of its text), Silent, Hangup or Malformed (half a
	// body).
	End llmtest.End
}

// EmbedScript holds a case's answer and records the requests the fake
// receives.
type EmbedScript struct {
	answer EmbedAnswer
	// arrived gets a value as each request is recorded.
	arrived chan struct{}
	mu      sync.Mutex
	calls   []EmbedCall
}

// Next records call and returns the answer the fake must send.
func (s *EmbedScript) Next(call EmbedCall) EmbedAnswer {
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.mu.Unlock()
	select {
	case s.arrived <- struct{}{}:
	default:
	}
	return s.answer
}

func (s *EmbedScript) received() []EmbedCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]EmbedCall(nil), s.calls...)
}

// EmbedVector is the vector the fake answers text with at dims
// dimensions: small integers and halves, exact in JSON and in float32,
// that differ for texts of other lengths or bytes.
func EmbedVector(text string, dims int) []float32 {
	h := fnv.New32a()
	h.Write([]byte(text))
	v := make([]float32, dims)
	for i := range v {
		v[i] = 0.5
	}
	v[0] = float32(len(text))
	v[1] = float32(h.Sum32() % 4096)
	return v
}

// EmbedTokens is how many input tokens the fake reports for text: its
// words. A fake answering several texts at once reports their sum.
func EmbedTokens(text string) int { return len(strings.Fields(text)) }

// RunEmbedder runs the conformance suite of memory.Embedder against the
// embedder h starts: vectors in the order of the texts, of the length
// asked for, and errors classified as the llm providers classify theirs
// (every failure an *llm.Error). The embedder must be a
// memory.RequestEmbedder too: per-request lengths, the tokens the
// service counted, and a *memory.DimensionsError for a length the model
// cannot make.
func RunEmbedder(t *testing.T, h EmbedHarness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h EmbedHarness)
	}{
		{"Order", testEmbedOrder},
		{"Dimensions", testEmbedDimensions},
		{"NoTexts", testEmbedNoTexts},
		{"EmptyText", testEmbedEmptyText},
		{"ErrorAnswer", testEmbedErrorAnswer},
		{"InvalidAnswer", testEmbedInvalidAnswer},
		{"Unreachable", testEmbedUnreachable},
		{"Timeout", testEmbedTimeout},
		{"CallerCancels", testEmbedCallerCancels},
		{"Request", testEmbedRequest},
		{"RequestUnsupportedLength", testEmbedRequestUnsupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, h) })
	}
}

const (
	embedDims  = 256
	embedBatch = 3
)

// start starts the harness's fake answering with a, and the embedder
// pointed at it: embedDims, embedBatch and a long timeout unless cfg sets
// them.
func (h EmbedHarness) start(t *testing.T, cfg EmbedConfig, a EmbedAnswer) (memory.Embedder, *EmbedScript) {
	t.Helper()
	if cfg.Dims == 0 {
		cfg.Dims = embedDims
	}
	if cfg.Batch == 0 {
		cfg.Batch = embedBatch
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 20 * time.Second
	}
	s := &EmbedScript{answer: a, arrived: make(chan struct{}, 64)}
	return h.Start(t, cfg, s), s
}

// checkError checks that err is an *llm.Error of the embedder under test
// classified as want, that it mentions mention and never shows the secret.
func (h EmbedHarness) checkError(t *testing.T, err error, want llm.Error, mention string) {
	t.Helper()
	want.Provider = h.Provider
	llmtest.CheckError(t, err, want, h.Secret, mention)
}

// testEmbedOrder checks that texts, more than one batch of them, come
// back as their vectors in order, each text sent once, whole, with the
// model and length asked for.
func testEmbedOrder(t *testing.T, h EmbedHarness) {
	texts := []string{"the cat sleeps", "le chat dort 🐈", "Grüße", "a", "bb", "ccc", "the cat sleeps"}
	e, s := h.start(t, EmbedConfig{}, EmbedAnswer{})
	got, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	var want [][]float32
	for _, text := range texts {
		want = append(want, EmbedVector(text, embedDims))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("vectors (-want +got):\n%s", diff)
	}
	var sent []string
	for _, c := range s.received() {
		if c.Model != EmbedModel || c.Dims != embedDims || len(c.Texts) > embedBatch {
			t.Errorf("request for %d texts of model %q at %d dimensions, want at most %d of %q at %d",
				len(c.Texts), c.Model, c.Dims, embedBatch, EmbedModel, embedDims)
		}
		sent = append(sent, c.Texts...)
	}
	slices.Sort(sent)
	if diff := cmp.Diff(slices.Sorted(slices.Values(texts)), sent); diff != "" {
		t.Errorf("texts sent (-want +got):\n%s", diff)
	}
}

// testEmbedDimensions checks vectors of each length asked for, and that
// the model's name tells the lengths apart, so that a cache never mixes
// them.
func testEmbedDimensions(t *testing.T, h EmbedHarness) {
	names := map[int]string{}
	for _, dims := range []int{256, 512} {
		t.Run(fmt.Sprint(dims), func(t *testing.T) {
			e, _ := h.start(t, EmbedConfig{Dims: dims}, EmbedAnswer{})
			got, err := e.Embed(context.Background(), []string{"the cat"})
			if err != nil {
				t.Fatalf("Embed: %v", err)
			}
			if len(got) != 1 || len(got[0]) != dims {
				t.Errorf("got %d vectors, the first of %d dimensions; want one of %d", len(got), len(got[0]), dims)
			}
			if !strings.Contains(e.Model(), EmbedModel) {
				t.Errorf("Model() = %q does not name %q", e.Model(), EmbedModel)
			}
			names[dims] = e.Model()
		})
	}
	if names[256] == names[512] {
		t.Errorf("Model() = %q at 256 and at 512 dimensions", names[256])
	}
}

// testEmbedNoTexts checks that nothing to embed makes no request.
func testEmbedNoTexts(t *testing.T, h EmbedHarness) {
	e, s := h.start(t, EmbedConfig{}, EmbedAnswer{})
	for _, texts := range [][]string{nil, {}} {
		got, err := e.Embed(context.Background(), texts)
		if err != nil || len(got) != 0 {
			t.Errorf("Embed(%#v) = %v, %v; want no vectors", texts, got, err)
		}
	}
	if n := len(s.received()); n != 0 {
		t.Errorf("%d requests for no texts", n)
	}
}

// testEmbedEmptyText checks that an empty text, which services refuse,
// fails the call at once, naming it, without a request.
func testEmbedEmptyText(t *testing.T, h EmbedHarness) {
	e, s := h.start(t, EmbedConfig{}, EmbedAnswer{})
	_, err := e.Embed(context.Background(), []string{"a", ""})
	h.checkError(t, err, llm.Error{}, "text 1 is empty")
	if n := len(s.received()); n != 0 {
		t.Errorf("%d requests for an empty text", n)
	}
}

// testEmbedErrorAnswer checks the classification of the service's error
// answers.
func testEmbedErrorAnswer(t *testing.T, h EmbedHarness) {
	tests := []struct {
		failure llmtest.Failure
		want    llm.Error
	}{
		{llmtest.Failure{Kind: llmtest.Unauthorized, Message: "The security token included in the request is invalid."}, llm.Error{Status: 401}},
		{llmtest.Failure{Kind: llmtest.Forbidden, Message: "You don't have access to the model with the specified model ID."}, llm.Error{Status: 403}},
		{llmtest.Failure{Kind: llmtest.RateLimited, Message: "Too many requests, please wait before trying again.", RetryAfter: "7"},
			llm.Error{Status: 429, Retryable: true, RetryAfter: 7 * time.Second}},
		{llmtest.Failure{Kind: llmtest.ServerError, Message: "The server had an error while processing your request."}, llm.Error{Status: 500, Retryable: true}},
		{llmtest.Failure{Kind: llmtest.Unavailable, Message: "The service is overloaded, try again later."}, llm.Error{Status: 503, Retryable: true}},
		{llmtest.Failure{Kind: llmtest.ContextOverflow, Message: "This model's maximum context length is 8192 tokens, however you requested 9000 tokens."},
			llm.Error{Status: 400, ContextOverflow: true}},
		{llmtest.Failure{Kind: llmtest.InvalidRequest, Message: "Malformed input request, please reformat your input and try again."}, llm.Error{Status: 400}},
	}
	for _, tt := range tests {
		t.Run(string(tt.failure.Kind), func(t *testing.T) {
			f := tt.failure
			e, _ := h.start(t, EmbedConfig{}, EmbedAnswer{Failure: &f})
			_, err := e.Embed(context.Background(), []string{"the cat", "le chat"})
			h.checkError(t, err, tt.want, f.Message)
		})
	}
}

// testEmbedInvalidAnswer checks answers that cannot be used: not
// retryable, since the service would answer the same again.
func testEmbedInvalidAnswer(t *testing.T, h EmbedHarness) {
	tests := []struct {
		name    string
		answer  EmbedAnswer
		mention string
	}{
		{"malformed", EmbedAnswer{End: llmtest.Malformed}, "invalid response"},
		{"vectors of another length", EmbedAnswer{Dims: 3}, "dimensions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := h.start(t, EmbedConfig{}, tt.answer)
			_, err := e.Embed(context.Background(), []string{"the cat"})
			h.checkError(t, err, llm.Error{Status: 200}, tt.mention)
		})
	}
}

// testEmbedUnreachable checks a service that cannot be reached, or closes
// the connection without an answer: retryable.
func testEmbedUnreachable(t *testing.T, h EmbedHarness) {
	tests := []struct {
		name   string
		cfg    EmbedConfig
		answer EmbedAnswer
	}{
		{"service down", EmbedConfig{Down: true}, EmbedAnswer{}},
		{"hangup", EmbedConfig{}, EmbedAnswer{End: llmtest.Hangup}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := h.start(t, tt.cfg, tt.answer)
			_, err := e.Embed(context.Background(), []string{"the cat"})
			h.checkError(t, err, llm.Error{Retryable: true}, "")
		})
	}
}

// testEmbedTimeout checks a request that gets no answer within the
// timeout: retryable, wrapping context.DeadlineExceeded.
func testEmbedTimeout(t *testing.T, h EmbedHarness) {
	e, _ := h.start(t, EmbedConfig{Timeout: 50 * time.Millisecond}, EmbedAnswer{End: llmtest.Silent})
	_, err := e.Embed(context.Background(), []string{"the cat"})
	h.checkError(t, err, llm.Error{Retryable: true}, "")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %v does not wrap context.DeadlineExceeded", err)
	}
}

// testEmbedCallerCancels checks a call the caller abandons while its
// request waits: not retryable, wrapping context.Canceled.
func testEmbedCallerCancels(t *testing.T, h EmbedHarness) {
	e, s := h.start(t, EmbedConfig{}, EmbedAnswer{End: llmtest.Silent})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.arrived:
			cancel()
		case <-ctx.Done():
		}
	}()
	_, err := e.Embed(ctx, []string{"the cat"})
	h.checkError(t, err, llm.Error{}, "")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v does not wrap context.Canceled", err)
	}
}

// requestEmbedder returns e as a memory.RequestEmbedder, failing t if it
// is not one.
func requestEmbedder(t *testing.T, e memory.Embedder) memory.RequestEmbedder {
	t.Helper()
	re, ok := e.(memory.RequestEmbedder)
	if !ok {
		t.Fatalf("%T is not a memory.RequestEmbedder", e)
	}
	return re
}

// testEmbedRequest checks EmbedRequest: the vectors in order, of the
// configured length or of the one the request asks for, every request
// asking for it, and the tokens the service counted in all the requests.
func testEmbedRequest(t *testing.T, h EmbedHarness) {
	texts := []string{"the cat sleeps", "le chat dort 🐈", "Grüße", "a b c d", "e"}
	for _, dims := range []int{0, 512} {
		t.Run(fmt.Sprint(dims), func(t *testing.T) {
			e, s := h.start(t, EmbedConfig{}, EmbedAnswer{})
			got, err := requestEmbedder(t, e).EmbedRequest(context.Background(), memory.EmbedRequest{Texts: texts, Dimensions: dims})
			if err != nil {
				t.Fatalf("EmbedRequest: %v", err)
			}
			length := dims
			if length == 0 {
				length = embedDims
			}
			var want memory.Embeddings
			for _, text := range texts {
				want.Vectors = append(want.Vectors, EmbedVector(text, length))
				want.Tokens += EmbedTokens(text)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("embeddings (-want +got):\n%s", diff)
			}
			for _, c := range s.received() {
				if c.Dims != length {
					t.Errorf("request for %d dimensions, want %d", c.Dims, length)
				}
			}
		})
	}
}

// testEmbedRequestUnsupported checks a length the model cannot make,
// which the service ignores (answering with vectors of its own length):
// a *memory.DimensionsError naming the length, not retryable.
func testEmbedRequestUnsupported(t *testing.T, h EmbedHarness) {
	e, _ := h.start(t, EmbedConfig{}, EmbedAnswer{Dims: 1024})
	_, err := requestEmbedder(t, e).EmbedRequest(context.Background(), memory.EmbedRequest{Texts: []string{"the cat"}, Dimensions: 300})
	var le *llm.Error
	if !errors.As(err, &le) || le.Provider != h.Provider || le.Retryable {
		t.Errorf("error %v (%T): want a non-retryable *llm.Error of %s", err, err, h.Provider)
	}
	var de *memory.DimensionsError
	if !errors.As(err, &de) || de.Dimensions != 300 {
		t.Errorf("error %v: want a *memory.DimensionsError for 300 dimensions", err)
	}
	if err != nil && h.Secret != "" && strings.Contains(err.Error(), h.Secret) {
		t.Errorf("error %q shows the secret", err)
	}
}
