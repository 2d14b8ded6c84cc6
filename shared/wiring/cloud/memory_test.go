package cloud_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
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
	r, err := newRoot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if r.Memory == nil {
		t.Fatal("no memory with OPENSEARCH_ENDPOINT set")
	}
	var tools []string
	for _, d := range agentOf(t, r, "default").Tools.Definitions() {
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

// Without OpenSearch (the default deployment) the agents have memory
// all the same, searched in the function's process: what one function
// stores another finds, and the exchanges of stateful runs are recorded.
func TestMemoryWithoutOpenSearch(t *testing.T) {
	cloudtest.Setup(t)
	t.Setenv("OPENSEARCH_ENDPOINT", "")
	t.Setenv("BEDROCK_EMBED_MODEL", "")
	writer, err := newRoot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	reader, err := newRoot(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, d := range agentOf(t, reader, "default").Tools.Definitions() {
		tools = append(tools, d.Name)
	}
	for _, want := range []string{"memory_search", "memory_get", "memory_store", "memory_forget"} {
		if !slices.Contains(tools, want) {
			t.Errorf("tools %v lack %s", tools, want)
		}
	}
	if reader.Loop.Recorder == nil {
		t.Error("no recorder of conversations")
	}
	if res, err := reader.Memory.Search(t.Context(), "default", "key:k1", "cat Miso", memory.SearchOptions{}); err != nil || len(res.Hits) != 0 {
		t.Fatalf("Search before the store = %+v, %v; want nothing", res, err)
	}
	e := memory.Entry{Agent: "default", Owner: "key:k1", Key: "pets", Text: "Ada has a cat called Miso.", Category: memory.Core}
	if err := writer.Memory.Store(t.Context(), e); err != nil {
		t.Fatalf("Store: %v", err)
	}
	res, err := reader.Memory.Search(t.Context(), "default", "key:k1", "cat Miso", memory.SearchOptions{})
	if err != nil || res.Method != memory.MethodBM25Fallback || len(res.Hits) != 1 || res.Hits[0].Entry.Key != "pets" {
		t.Errorf("Search in another function = %+v, %v; want pets by keyword", res, err)
	}
	if res, _ := reader.Memory.Search(t.Context(), "default", "key:k2", "cat Miso", memory.SearchOptions{}); len(res.Hits) != 0 {
		t.Errorf("another owner found %+v", res.Hits)
	}
}

func TestMemoryEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		recorder bool
		err      string
	}{
		{"defaults", nil, true, ""},
		{"conversations off", map[string]string{"MEMORY_CONVERSATIONS": "off"}, false, ""},
		{"conversations on", map[string]string{"MEMORY_CONVERSATIONS": "ON"}, true, ""},
		{"conversations maybe", map[string]string{"MEMORY_CONVERSATIONS": "maybe"}, false, "MEMORY_CONVERSATIONS"},
		{"cache in MB", map[string]string{"MEMORY_CACHE_MB": "64"}, true, ""},
		{"cache negative", map[string]string{"MEMORY_CACHE_MB": "-1"}, false, "MEMORY_CACHE_MB"},
		{"cache not a number", map[string]string{"MEMORY_CACHE_MB": "lots"}, false, "MEMORY_CACHE_MB"},
		{"function memory", map[string]string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512"}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cloudtest.Setup(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			r, err := newRoot(t.Context())
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("New = %v, want an error about %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Loop.Recorder != nil; got != tc.recorder {
				t.Errorf("recorder set: %v, want %v", got, tc.recorder)
			}
		})
	}
}

func TestMemoryBadDimensions(t *testing.T) {
	cloudtest.Setup(t)
	t.Setenv("OPENSEARCH_ENDPOINT", "https://search.example")
	t.Setenv("EMBED_DIMENSIONS", "many")
	if _, err := newRoot(t.Context()); err == nil || !strings.Contains(err.Error(), "EMBED_DIMENSIONS") {
		t.Errorf("New = %v, want an error about EMBED_DIMENSIONS", err)
	}
}
