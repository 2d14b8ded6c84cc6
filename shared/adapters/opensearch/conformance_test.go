package opensearch

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"net/http"
	"os"
	"testing"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory/memorytest"
)

// TestConformance runs the memory.Index conformance suite against a real
// cluster, each subtest on a fresh index that is deleted afterwards:
//
//	OPENSEARCH_URL        the endpoint (user:password@ in it for basic auth)
//	OPENSEARCH_REGION     sign requests with SigV4 for this region
//	OPENSEARCH_SERVERLESS 1 for a Serverless collection (eventually
//	                      consistent: expect read-after-write failures)
//	OPENSEARCH_ENGINE     faiss (default) or lucene
//	OPENSEARCH_INSECURE   1 to accept a self-signed certificate (a local
//	                      cluster with the security plugin)
func TestConformance(t *testing.T) {
	endpoint := os.Getenv("OPENSEARCH_URL")
	if endpoint == "" {
		t.Skip("OPENSEARCH_URL is not set: the conformance suite needs a real OpenSearch cluster, which cannot run here")
	}
	cfg := Config{
		URL:        endpoint,
		Dims:       memorytest.Dims,
		Region:     os.Getenv("OPENSEARCH_REGION"),
		Serverless: os.Getenv("OPENSEARCH_SERVERLESS") == "1",
		Engine:     os.Getenv("OPENSEARCH_ENGINE"),
	}
	if os.Getenv("OPENSEARCH_INSECURE") == "1" {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
		cfg.Transport = tr
	}
	memorytest.Run(t, func(t *testing.T) memory.Index {
		c := cfg
		c.Index = "lambdaclaw-test-" + randomHex(t)
		x, err := New(t.Context(), c)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		if err := x.EnsureIndex(t.Context()); err != nil {
			t.Fatalf("EnsureIndex: %v", err)
		}
		t.Cleanup(func() {
			err := x.do(context.Background(), "delete index", http.MethodDelete, opensearchapi.IndicesDeleteReq{Indices: []string{c.Index}}, nil)
			if err != nil {
				t.Errorf("deleting index %s: %v", c.Index, err)
			}
			x.Close()
		})
		return x
	})
}

func randomHex(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
