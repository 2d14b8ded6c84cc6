package cloud_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

func TestMemoryWithOpenSearch(t *testing.T) {
	cloudtest.Setup(t)
	// Writes go to DynamoDB only; the fake search engine sees no request.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected OpenSearch request %s %s", r.Method, r.URL.Path)
	}))
	defer srv.Close()
	t.Setenv("OPENSEARCH_ENDPOINT", srv.URL)
	t.Setenv("BEDROCK_EMBED_MODEL", "")
	r, err := cloud.New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if r.Memory == nil {
		t.Fatal("no memory with OPENSEARCH_ENDPOINT set")
	}
	var tools []string
	for _, d := range r.Agents["default"].Tools.Definitions() {
		tools = append(tools, d.Name)
	}
	for _, want := range []string{"memory_search", "memory_get", "memory_store", "memory_forget"} {
		if !slices.Contains(tools, want) {
			t.Errorf("tools %v lack %s", tools, want)
		}
	}
	e := memory.Entry{Agent: "default", Key: "pets", Text: "Ada has a cat.", Category: memory.Core}
	if err := r.Memory.Store(t.Context(), e); err != nil {
		t.Fatalf("Store: %v", err)
	}
	if got, err := r.Memory.Get(t.Context(), "default", "", "pets"); err != nil || got.Text != e.Text {
		t.Fatalf("Get: %+v, %v", got, err)
	}
}

func TestNoMemoryWithoutOpenSearch(t *testing.T) {
	cloudtest.Setup(t)
	t.Setenv("OPENSEARCH_ENDPOINT", "")
	r, err := cloud.New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if r.Memory != nil {
		t.Error("memory without OpenSearch")
	}
	for _, d := range r.Agents["default"].Tools.Definitions() {
		if strings.HasPrefix(d.Name, "memory_") {
			t.Errorf("tool %s without OpenSearch", d.Name)
		}
	}
}

func TestMemoryBadDimensions(t *testing.T) {
	cloudtest.Setup(t)
	t.Setenv("OPENSEARCH_ENDPOINT", "https://search.example")
	t.Setenv("EMBED_DIMENSIONS", "many")
	if _, err := cloud.New(t.Context()); err == nil || !strings.Contains(err.Error(), "EMBED_DIMENSIONS") {
		t.Errorf("New = %v, want an error about EMBED_DIMENSIONS", err)
	}
}
