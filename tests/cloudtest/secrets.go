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

// Secrets is a fake of Secrets Manager's GetSecretValue (awsJson1_1): it
// answers the values it was given by secret id (an ARN or a name), and
// ResourceNotFoundException for any other id. A request the service's
// model refuses (awsmodel) is answered ValidationException, and fails the
// test.
type Secrets struct {
	// URL is the endpoint, as SECRETSMANAGER_ENDPOINT holds it.
	URL string

	t      testing.TB
	model  *awsmodel.Model
	mu     sync.Mutex
	values map[string]string
	calls  map[string]int
}

// NewSecrets starts the fake with values by secret id; it stops when the
// test ends.
func NewSecrets(t testing.TB, values map[string]string) *Secrets {
	f := &Secrets{t: t, model: awsmodel.Load(t, "secretsmanager"), values: values, calls: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

func (f *Secrets) serve(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	b, _ := io.ReadAll(r.Body)
	op, tree, err := f.model.FromAWSJSON(r.Header.Get("X-Amz-Target"), b)
	if err := refused(f.t, f.model, op, tree, err); err != nil {
		awsJSON{w, "application/x-amz-json-1.1"}.fail(http.StatusBadRequest, "ValidationException", err.Error())
		return
	}
	var in struct{ SecretId string }
	json.Unmarshal(b, &in)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[in.SecretId]++
	v, ok := f.values[in.SecretId]
	if r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" || !ok {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"__type":"ResourceNotFoundException","message":"Secrets Manager can't find the specified secret."}`)
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"ARN": in.SecretId, "Name": "s", "SecretString": v, "VersionId": "v1"})
}

// Calls counts the reads of the secret id.
func (f *Secrets) Calls(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id]
}
