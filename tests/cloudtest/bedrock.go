package cloudtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest/awsmodel"
)

// Bedrock is a fake of Bedrock Runtime's Converse (rest-json: POST
// /model/<modelId>/converse, BEDROCK_ENDPOINT) for the one-token call of
// `lambdaclaw doctor`: a model answers one word, unless Refuse made it
// answer an exception, as Bedrock does (the X-Amzn-Errortype header, a
// JSON message). It checks that each request is signed for the bedrock
// service. A request the service's model refuses (awsmodel) is answered
// ValidationException, and fails the test.
type Bedrock struct {
	// URL is the endpoint.
	URL string

	t      testing.TB
	model  *awsmodel.Model
	mu     sync.Mutex
	refuse map[string]BedrockError
	calls  []map[string]any
}

// BedrockError is an exception Bedrock answers a call with.
type BedrockError struct {
	Status        int
	Code, Message string
}

// NewBedrock starts the fake; it stops when the test ends.
func NewBedrock(t testing.TB) *Bedrock {
	f := &Bedrock{t: t, model: awsmodel.Load(t, "bedrock-runtime"), refuse: map[string]BedrockError{}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Refuse makes calls of the model modelID fail with e.
func (f *Bedrock) Refuse(modelID string, e BedrockError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refuse[modelID] = e
}

// Calls returns the inputs of the Converse calls so far.
func (f *Bedrock) Calls() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.calls...)
}

func (f *Bedrock) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Requestid", "fake-request")
	fail := func(e BedrockError) {
		w.Header().Set("X-Amzn-Errortype", e.Code)
		w.WriteHeader(e.Status)
		json.NewEncoder(w).Encode(map[string]string{"message": e.Message})
	}
	if m := credentialScope.FindStringSubmatch(r.Header.Get("Authorization")); m == nil || m[2] != "bedrock" {
		fail(BedrockError{http.StatusForbidden, "IncompleteSignature", "Authorization header requires a SigV4 signature for bedrock"})
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var op string
	var in map[string]any
	if err == nil {
		op, in, err = f.model.FromREST(r, "", body)
	}
	if err := refused(f.t, f.model, op, in, err); err != nil {
		fail(BedrockError{http.StatusBadRequest, "ValidationException", err.Error()})
		return
	}
	if op != "Converse" {
		f.t.Errorf("the fake Bedrock does not serve %s", op)
		fail(BedrockError{http.StatusBadRequest, "ValidationException", "the fake serves Converse only, not " + op})
		return
	}
	id, _ := in["modelId"].(string)
	f.mu.Lock()
	f.calls = append(f.calls, in)
	e, refuse := f.refuse[id]
	f.mu.Unlock()
	if refuse {
		fail(e)
		return
	}
	json.NewEncoder(w).Encode(map[string]any{
		"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": []any{map[string]any{"text": "Hi"}}}},
		"stopReason": "max_tokens",
		"usage":      map[string]any{"inputTokens": 8, "outputTokens": 1, "totalTokens": 9},
		"metrics":    map[string]any{"latencyMs": 120},
	})
}
