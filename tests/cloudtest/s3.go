package cloudtest

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	s3fs "github.com/lambdaclaw/lambdaclaw/shared/adapters/s3"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest/awsmodel"
)

// S3Bucket is the bucket S3 creates.
const S3Bucket = "lambdaclaw-workspaces"

// S3 starts an S3-compatible server for the test (gofakes3 with its
// in-memory backend, whose conditional PutObject checks and writes under
// one lock, as S3 does atomically) and creates the versioned bucket
// S3Bucket in it, as the stack's workspace bucket is. Clients reach it at
// endpoint with path-style addressing (awsapi.NewS3 does). A request not
// signed with SigV4 for the s3 service is refused with 403, so a client
// that would not work against S3 does not pass here; one S3's model
// refuses (awsmodel: where gofakes3 does not check) is answered 400
// InvalidArgument and fails the test. The server stops when the test
// ends.
func S3(t testing.TB) (endpoint, bucket string) {
	t.Helper()
	backend := s3mem.New()
	if err := backend.CreateBucket(S3Bucket); err != nil {
		t.Fatalf("s3 fake: create bucket: %v", err)
	}
	if err := backend.SetVersioningConfiguration(S3Bucket, gofakes3.VersioningConfiguration{Status: gofakes3.VersioningEnabled}); err != nil {
		t.Fatalf("s3 fake: versioning: %v", err)
	}
	fake := gofakes3.New(backend).Server()
	model := awsmodel.Load(t, "s3")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m := credentialScope.FindStringSubmatch(r.Header.Get("Authorization")); m == nil || m[2] != "s3" {
			http.Error(w, "want a SigV4 signature for s3", http.StatusForbidden)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		op, in, err := model.FromREST(r, "", body)
		if err := refused(t, model, op, in, err); err != nil {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusBadRequest)
			xml.NewEncoder(w).Encode(struct {
				XMLName xml.Name `xml:"Error"`
				Code    string
				Message string
			}{Code: "InvalidArgument", Message: err.Error()})
			return
		}
		fake.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, S3Bucket
}

// S3Client returns a client of the server at endpoint with static test
// credentials, path-style as at any endpoint of one's own.
func S3Client(t testing.TB, endpoint string) s3fs.API {
	t.Helper()
	cfg := aws.Config{
		Region:      "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	}
	api, err := awsapi.NewS3(cfg, endpoint)
	if err != nil {
		t.Fatalf("s3 client: %v", err)
	}
	return api
}

// S3FS starts S3 and returns its bucket as a filestore.FS under prefix.
func S3FS(t *testing.T, prefix string) *s3fs.FS {
	t.Helper()
	endpoint, bucket := S3(t)
	return s3FS(t, endpoint, bucket, prefix)
}

func s3FS(t testing.TB, endpoint, bucket, prefix string) *s3fs.FS {
	t.Helper()
	f, err := s3fs.New(S3Client(t, endpoint), bucket, prefix)
	if err != nil {
		t.Fatalf("s3 adapter: %v", err)
	}
	return f
}

// S3Workspace starts S3 and returns its endpoint, its bucket's root and
// the workspace of agent in it (agents/<agent>/), as the sandbox's tests
// use them.
func S3Workspace(t testing.TB, agent string) (endpoint string, root *s3fs.FS, workspace filestore.FS) {
	t.Helper()
	endpoint, bucket := S3(t)
	root = s3FS(t, endpoint, bucket, "")
	workspace, err := root.Sub("agents/" + agent)
	if err != nil {
		t.Fatalf("s3 adapter: %v", err)
	}
	return endpoint, root, workspace
}
