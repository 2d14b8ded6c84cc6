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

// Secrets is a fake of Secrets Manager's GetSecretValue, PutSecretValue
// and DescribeSecret (awsJson1_1): it keeps the values it was given by
// secret id (an ARN or a name), "" for a secret created without a value
// (as a stack creates the channels' secrets), which GetSecretValue
// refuses as Secrets Manager does, with ResourceNotFoundException for its
// AWSCURRENT stage; any other id is ResourceNotFoundException. A request
// the service's model refuses (awsmodel) is answered ValidationException,
// and fails the test.
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
	var in struct{ SecretId, SecretString string }
	json.Unmarshal(b, &in)
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.values[in.SecretId]
	notFound := func(msg string) {
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"__type": "ResourceNotFoundException", "message": msg})
	}
	target := r.Header.Get("X-Amz-Target")
	if target == "secretsmanager.GetSecretValue" {
		f.calls[in.SecretId]++
	}
	if !ok {
		notFound("Secrets Manager can't find the specified secret.")
		return
	}
	switch target {
	case "secretsmanager.GetSecretValue":
		if v == "" {
			notFound("Secrets Manager can't find the specified secret value for staging label: AWSCURRENT")
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"ARN": in.SecretId, "Name": "s", "SecretString": v, "VersionId": "v1"})
	case "secretsmanager.PutSecretValue":
		f.values[in.SecretId] = in.SecretString
		json.NewEncoder(w).Encode(map[string]any{"ARN": in.SecretId, "Name": "s", "VersionId": "v2", "VersionStages": []string{"AWSCURRENT"}})
	case "secretsmanager.DescribeSecret":
		out := map[string]any{"ARN": in.SecretId, "Name": in.SecretId}
		if v != "" {
			out["VersionIdsToStages"] = map[string][]string{"v1": {"AWSCURRENT"}}
			out["LastChangedDate"] = 1.7e9
		}
		json.NewEncoder(w).Encode(out)
	default:
		notFound("this fake serves GetSecretValue, PutSecretValue and DescribeSecret")
	}
}

// Put stores value as the secret id's, as an operator would.
func (f *Secrets) Put(id, value string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.values[id] = value
}

// Value returns the stored value of the secret id ("" for none).
func (f *Secrets) Value(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.values[id]
}

// Calls counts the reads of the secret id.
func (f *Secrets) Calls(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id]
}
