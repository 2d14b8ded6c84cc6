package opensearch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
)

var update = flag.Bool("update", false, "rewrite the golden request bodies in testdata")

// exchange is one request the fake cluster expects and the recorded
// response it answers with.
type exchange struct {
	method, path string
	status       int
	resp         string // file in testdata; empty for no body
}

// request is what the fake cluster received.
type request struct {
	method, path string
	query        url.Values
	header       http.Header
	body         []byte
}

// cluster is an httptest server standing in for OpenSearch: it answers a
// script of exchanges in order and records the requests.
type cluster struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	script []exchange
	got    []request
}

func newCluster(t *testing.T, script ...exchange) *cluster {
	t.Helper()
	c := &cluster{t: t, script: script}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *cluster) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		c.t.Errorf("reading request body: %v", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, request{method: r.Method, path: r.URL.Path, query: r.URL.Query(), header: r.Header.Clone(), body: body})
	if len(c.script) == 0 {
		c.t.Errorf("unexpected request %s %s", r.Method, r.URL)
		http.Error(w, "unexpected request", http.StatusInternalServerError)
		return
	}
	x := c.script[0]
	c.script = c.script[1:]
	if r.Method != x.method || r.URL.Path != x.path {
		c.t.Errorf("request %s %s, want %s %s", r.Method, r.URL.Path, x.method, x.path)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(x.status)
	if x.resp != "" {
		w.Write(readTestdata(c.t, x.resp))
	}
}

// requests returns the requests received, failing the test if part of the
// script was not used.
func (c *cluster) requests() []request {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.script) > 0 {
		c.t.Errorf("%d expected requests were not sent, first %s %s", len(c.script), c.script[0].method, c.script[0].path)
	}
	return c.got
}

func (c *cluster) index(t *testing.T, mod func(*Config)) *Index {
	t.Helper()
	cfg := Config{URL: c.srv.URL, Index: "mem-test", Dims: 4, Transport: c.srv.Client().Transport}
	if mod != nil {
		mod(&cfg)
	}
	x, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// golden compares a request body with testdata/name as JSON (line by line
// for .ndjson), or rewrites the file with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	ndjson := strings.HasSuffix(name, ".ndjson")
	if *update {
		out := got
		if !ndjson {
			var buf bytes.Buffer
			if err := json.Indent(&buf, got, "", "  "); err != nil {
				t.Fatalf("%s: request body is not JSON: %v", name, err)
			}
			buf.WriteByte('\n')
			out = buf.Bytes()
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if ndjson {
		if !bytes.HasSuffix(got, []byte("\n")) {
			t.Errorf("%s: NDJSON body does not end with a newline", name)
		}
		gl, wl := lines(got), lines(want)
		if len(gl) != len(wl) {
			t.Fatalf("%s: %d lines, want %d:\n%s", name, len(gl), len(wl), got)
		}
		for i := range gl {
			if d := cmp.Diff(decode(t, wl[i]), decode(t, gl[i])); d != "" {
				t.Errorf("%s line %d (-want +got):\n%s", name, i+1, d)
			}
		}
		return
	}
	if d := cmp.Diff(decode(t, want), decode(t, got)); d != "" {
		t.Errorf("%s (-want +got):\n%s", name, d)
	}
}

func lines(b []byte) [][]byte {
	return bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	return v
}

var (
	created = time.Date(2026, 5, 1, 9, 30, 0, 123456789, time.UTC)
	updated = time.Date(2026, 5, 2, 10, 0, 0, 0, time.UTC)
	pets    = memory.Entry{
		Agent:     "ada",
		Key:       "notes/pets",
		Text:      "The cat is called Mochi. She likes the window sill in the morning.",
		Category:  memory.Core,
		Source:    "tool",
		CreatedAt: created,
		UpdatedAt: updated,
	}
	petChunks = []memory.Chunk{
		{Seq: 0, Text: "The cat is called Mochi.", Vector: []float32{1, 0, 0, 0}},
		{Seq: 1, Text: "She likes the window sill in the morning.", Vector: []float32{0, 1, 0, 0}},
	}
	herbs = memory.Entry{
		Agent:     "ada",
		Key:       "daily/2026-05-03",
		Text:      "Bought a window box for herbs.",
		Category:  memory.Daily,
		Source:    "memory/2026-05-03.md",
		CreatedAt: time.Date(2026, 5, 3, 18, 0, 0, 0, time.UTC),
		UpdatedAt: time.Date(2026, 5, 3, 18, 0, 0, 0, time.UTC),
	}
)

// kitten is an owner's memory under the same key as pets, which is
// agent-wide.
var (
	kitten = memory.Entry{
		Agent:     "ada",
		Owner:     "key:k1",
		Key:       "notes/pets",
		Text:      "Ann has a kitten. Her kitten sleeps by the window.",
		Category:  memory.Core,
		Source:    "tool",
		CreatedAt: time.Date(2026, 5, 4, 8, 0, 0, 0, time.UTC),
		UpdatedAt: time.Date(2026, 5, 4, 8, 0, 0, 0, time.UTC),
	}
	kittenChunks = []memory.Chunk{
		{Seq: 0, Text: "Ann has a kitten.", Vector: []float32{1, 0, 0, 0}},
		{Seq: 1, Text: "Her kitten sleeps by the window.", Vector: []float32{0, 1, 0, 0}},
	}
)

func TestEnsureIndex(t *testing.T) {
	mapping := func(status int, resp string) []exchange {
		return []exchange{{"PUT", "/mem-test/_mapping", status, resp}}
	}
	for _, tc := range []struct {
		name, engine, golden string
		status               int
		resp                 string
		// then is what follows the create-index request: the put-mapping
		// request that brings an existing index up to date.
		then    []exchange
		wantErr bool
	}{
		{name: "created", golden: "req_create_index.json", status: 200, resp: "resp_create_index.json"},
		{name: "lucene", engine: "lucene", golden: "req_create_index_lucene.json", status: 200, resp: "resp_create_index.json"},
		{name: "exists", golden: "req_create_index.json", status: 400, resp: "resp_index_exists.json", then: mapping(200, "resp_put_mapping.json")},
		{name: "exists, mapping refused", golden: "req_create_index.json", status: 400, resp: "resp_index_exists.json", then: mapping(403, "resp_403_unsigned.json"), wantErr: true},
		{name: "forbidden", golden: "req_create_index.json", status: 403, resp: "resp_403_unsigned.json", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, append([]exchange{{"PUT", "/mem-test", tc.status, tc.resp}}, tc.then...)...)
			x := c.index(t, func(cfg *Config) { cfg.Engine = tc.engine })
			err := x.EnsureIndex(context.Background())
			if (err != nil) != tc.wantErr {
				t.Fatalf("EnsureIndex: %v, want error %v", err, tc.wantErr)
			}
			reqs := c.requests()
			golden(t, tc.golden, reqs[0].body)
			if len(tc.then) > 0 {
				golden(t, "req_put_mapping.json", reqs[1].body)
			}
		})
	}
}

// Put lists the entry's chunks and replaces them in one _bulk request. An
// owner's memory is indexed with its owner, under ids of its own, and
// replaces only the owner's chunks.
func TestPut(t *testing.T) {
	for _, tc := range []struct {
		name              string
		entry             memory.Entry
		chunks            []memory.Chunk
		ids               string
		wantIDs, wantBulk string
	}{
		{"agent-wide", pets, petChunks, "resp_search_ids.json", "req_search_ids.json", "req_bulk_put.ndjson"},
		{"owner", kitten, kittenChunks, "resp_search_empty.json", "req_search_ids_owner.json", "req_bulk_put_owner.ndjson"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t,
				exchange{"POST", "/mem-test/_search", 200, tc.ids},
				exchange{"POST", "/mem-test/_bulk", 200, "resp_bulk_ok.json"},
			)
			x := c.index(t, nil)
			if err := x.Put(context.Background(), tc.entry, tc.chunks); err != nil {
				t.Fatalf("Put: %v", err)
			}
			reqs := c.requests()
			golden(t, tc.wantIDs, reqs[0].body)
			golden(t, tc.wantBulk, reqs[1].body)
			bulk := reqs[1]
			if got := bulk.query.Get("refresh"); got != "wait_for" {
				t.Errorf("bulk refresh = %q, want wait_for", got)
			}
			if got := bulk.header.Get("Content-Type"); got != "application/x-ndjson" {
				t.Errorf("bulk Content-Type = %q, want application/x-ndjson", got)
			}
		})
	}
}

func TestDeleteOwner(t *testing.T) {
	c := newCluster(t, exchange{"POST", "/mem-test/_delete_by_query", 200, "resp_delete_by_query.json"})
	x := c.index(t, nil)
	if err := x.Delete(context.Background(), "ada", "key:k1", "notes/pets"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	golden(t, "req_delete_by_query_owner.json", c.requests()[0].body)
}

func TestVectorOwner(t *testing.T) {
	c := newCluster(t,
		exchange{"POST", "/mem-test/_search", 200, "resp_search_knn.json"},
		exchange{"POST", "/mem-test/_search", 200, "resp_search_head.json"},
	)
	x := c.index(t, nil)
	got, err := x.Vector(context.Background(), "ada", "key:k1", []float32{0, 0.6, 0.8, 0}, memory.Filter{Categories: []memory.Category{memory.Core, memory.Daily}}, 8)
	if err != nil {
		t.Fatalf("Vector: %v", err)
	}
	// Agent-wide memories are the owner's to find.
	if len(got) != 2 || got[0].Entry.Key != herbs.Key || got[1].Entry.Text != pets.Text {
		t.Errorf("Vector = %+v, want herbs and pets", got)
	}
	golden(t, "req_search_knn_owner.json", c.requests()[0].body)
}

func TestPutServerless(t *testing.T) {
	c := newCluster(t,
		exchange{"POST", "/mem-test/_search", 200, "resp_search_ids_serverless.json"},
		exchange{"POST", "/mem-test/_bulk", 200, "resp_bulk_ok.json"},
	)
	x := c.index(t, func(cfg *Config) {
		cfg.Serverless = true
		cfg.Region = "eu-west-1"
		cfg.Credentials = testCredentials
	})
	if err := x.Put(context.Background(), pets, petChunks); err != nil {
		t.Fatalf("Put: %v", err)
	}
	reqs := c.requests()
	golden(t, "req_bulk_put_serverless.ndjson", reqs[1].body)
	if reqs[1].query.Has("refresh") {
		t.Errorf("bulk on Serverless sent refresh=%q; Serverless has no refresh", reqs[1].query.Get("refresh"))
	}
}

func TestPutUnicodeAndNoChunks(t *testing.T) {
	c := newCluster(t,
		exchange{"POST", "/mem-test/_search", 200, "resp_search_empty.json"},
		exchange{"POST", "/mem-test/_bulk", 200, "resp_bulk_ok.json"},
	)
	x := c.index(t, nil)
	e := memory.Entry{Agent: "añа", Key: "日記/1", Text: "Ünïcödé <b>&</b> 🐈", Category: memory.Custom, CreatedAt: created, UpdatedAt: updated}
	if err := x.Put(context.Background(), e, nil); err != nil {
		t.Fatalf("Put: %v", err)
	}
	body := c.requests()[1].body
	golden(t, "req_bulk_put_unicode.ndjson", body)
	if !bytes.Contains(body, []byte("<b>&</b> 🐈")) {
		t.Errorf("bulk body escapes the text:\n%s", body)
	}
}

func TestPutBulkPartialFailure(t *testing.T) {
	c := newCluster(t,
		exchange{"POST", "/mem-test/_search", 200, "resp_search_ids.json"},
		exchange{"POST", "/mem-test/_bulk", 200, "resp_bulk_partial.json"},
	)
	x := c.index(t, nil)
	err := x.Put(context.Background(), pets, petChunks)
	var be *BulkError
	if !errors.As(err, &be) {
		t.Fatalf("Put: %v, want a *BulkError", err)
	}
	want := &BulkError{Actions: 3, Failed: []BulkFailure{{
		Action: "index",
		ID:     "ada/notes%2Fpets/1",
		Status: 400,
		Type:   "mapper_parsing_exception",
		Reason: "failed to parse field [vector] of type [knn_vector] in document with id 'ada/notes%2Fpets/1'. Preview of field's value: '[0.6, 0.8, 0.0]'",
	}}}
	if d := cmp.Diff(want, be); d != "" {
		t.Errorf("BulkError (-want +got):\n%s", d)
	}
	for _, s := range []string{"1 of 3 actions failed", `index "ada/notes%2Fpets/1"`, "mapper_parsing_exception"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
	if be.Retryable() {
		t.Error("a mapping failure is reported retryable")
	}
}

func TestPutClientIDOnServerlessCollection(t *testing.T) {
	// What a vector collection answers when it is given an id: the error
	// must reach the caller, naming the item.
	c := newCluster(t,
		exchange{"POST", "/mem-test/_search", 200, "resp_search_empty.json"},
		exchange{"POST", "/mem-test/_bulk", 200, "resp_bulk_serverless_id.json"},
	)
	x := c.index(t, nil)
	err := x.Put(context.Background(), pets, petChunks[:1])
	if err == nil || !strings.Contains(err.Error(), "Document ID is not supported") {
		t.Fatalf("Put: %v, want the item's error", err)
	}
}

func TestPutWithoutIndex(t *testing.T) {
	c := newCluster(t, exchange{"POST", "/mem-test/_search", 404, "resp_index_not_found.json"})
	x := c.index(t, nil)
	err := x.Put(context.Background(), pets, petChunks)
	if !errors.Is(err, ErrIndexNotFound) {
		t.Fatalf("Put: %v, want ErrIndexNotFound", err)
	}
	if len(c.requests()) != 1 {
		t.Error("Put sent a _bulk request to a missing index, which would create it with guessed mappings")
	}
}

func TestPutRejectsWrongDimensions(t *testing.T) {
	c := newCluster(t)
	x := c.index(t, nil)
	err := x.Put(context.Background(), pets, []memory.Chunk{{Seq: 0, Text: "x", Vector: []float32{1, 2, 3}}})
	if err == nil || !strings.Contains(err.Error(), "3 dimensions") {
		t.Fatalf("Put: %v, want a dimension error", err)
	}
	c.requests()
}

func TestGet(t *testing.T) {
	for _, tc := range []struct {
		name, owner, resp, golden string
		want                      memory.Entry
	}{
		{"agent-wide", "", "resp_search_head.json", "req_search_get.json", pets},
		{"owner", "key:k1", "resp_search_head_owner.json", "req_search_get_owner.json", kitten},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, exchange{"POST", "/mem-test/_search", 200, tc.resp})
			x := c.index(t, nil)
			got, err := x.Get(context.Background(), "ada", tc.owner, "notes/pets")
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Get (-want +got):\n%s", d)
			}
			golden(t, tc.golden, c.requests()[0].body)
		})
	}
	for _, tc := range []struct {
		name, owner, resp string
		status            int
	}{
		{"missing key", "", "resp_search_empty.json", 200},
		{"missing index", "", "resp_index_not_found.json", 404},
		// A head of another owner in the response (a filter that did not
		// hold) is not the entry asked for.
		{"another owner's head", "key:k2", "resp_search_head_owner.json", 200},
		{"an owner's head, asked agent-wide", "", "resp_search_head_owner.json", 200},
		{"an agent-wide head, asked by an owner", "key:k1", "resp_search_head.json", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, exchange{"POST", "/mem-test/_search", tc.status, tc.resp})
			x := c.index(t, nil)
			if got, err := x.Get(context.Background(), "ada", tc.owner, "notes/pets"); !errors.Is(err, memory.ErrNotFound) {
				t.Fatalf("Get = %+v, %v; want memory.ErrNotFound", got, err)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	t.Run("domain", func(t *testing.T) {
		c := newCluster(t, exchange{"POST", "/mem-test/_delete_by_query", 200, "resp_delete_by_query.json"})
		x := c.index(t, nil)
		if err := x.Delete(context.Background(), "ada", "", "notes/pets"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		r := c.requests()[0]
		golden(t, "req_delete_by_query.json", r.body)
		want := url.Values{"conflicts": {"proceed"}, "refresh": {"true"}}
		if d := cmp.Diff(want, r.query); d != "" {
			t.Errorf("query parameters (-want +got):\n%s", d)
		}
	})
	t.Run("domain failures", func(t *testing.T) {
		c := newCluster(t, exchange{"POST", "/mem-test/_delete_by_query", 200, "resp_delete_by_query_failures.json"})
		x := c.index(t, nil)
		err := x.Delete(context.Background(), "ada", "", "notes/pets")
		var be *BulkError
		if !errors.As(err, &be) || len(be.Failed) != 1 || be.Failed[0].ID != "ada/notes%2Fpets/2" || be.Failed[0].Status != 429 {
			t.Fatalf("Delete: %#v, want a *BulkError for ada/notes%%2Fpets/2", err)
		}
		if !be.Retryable() {
			t.Error("a 429 failure is not reported retryable")
		}
	})
	t.Run("missing index", func(t *testing.T) {
		c := newCluster(t, exchange{"POST", "/mem-test/_delete_by_query", 404, "resp_index_not_found.json"})
		x := c.index(t, nil)
		if err := x.Delete(context.Background(), "ada", "", "notes/pets"); err != nil {
			t.Fatalf("Delete: %v, want nil", err)
		}
	})
	t.Run("serverless", func(t *testing.T) {
		c := newCluster(t,
			exchange{"POST", "/mem-test/_search", 200, "resp_search_ids_serverless.json"},
			exchange{"POST", "/mem-test/_bulk", 200, "resp_bulk_ok.json"},
		)
		x := c.index(t, func(cfg *Config) {
			cfg.Serverless, cfg.Region, cfg.Credentials = true, "eu-west-1", testCredentials
		})
		if err := x.Delete(context.Background(), "ada", "", "notes/pets"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		reqs := c.requests()
		golden(t, "req_search_ids.json", reqs[0].body)
		golden(t, "req_bulk_delete_serverless.ndjson", reqs[1].body)
	})
	t.Run("serverless lookup fails", func(t *testing.T) {
		c := newCluster(t, exchange{"POST", "/mem-test/_search", 403, "resp_403_unsigned.json"})
		x := c.index(t, func(cfg *Config) {
			cfg.Serverless, cfg.Region, cfg.Credentials = true, "eu-west-1", testCredentials
		})
		if err := x.Delete(context.Background(), "ada", "", "notes/pets"); !errors.Is(err, ErrForbidden) {
			t.Fatalf("Delete: %v, want ErrForbidden", err)
		}
		c.requests()
	})
	t.Run("serverless nothing stored", func(t *testing.T) {
		c := newCluster(t, exchange{"POST", "/mem-test/_search", 200, "resp_search_empty.json"})
		x := c.index(t, func(cfg *Config) {
			cfg.Serverless, cfg.Region, cfg.Credentials = true, "eu-west-1", testCredentials
		})
		if err := x.Delete(context.Background(), "ada", "", "notes/pets"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		c.requests()
	})
}

// A keyword search filters to the agent's documents the owner may see
// (agent-wide ones only, without an owner); a document of another owner in
// the response is dropped. A match on a chunk other than its entry's head
// gets the entry's text from the head of the same owner's entry, also
// when an agent-wide entry has the same key.
func TestKeyword(t *testing.T) {
	for _, tc := range []struct {
		name, owner, query string
		filter             memory.Filter
		resp, heads        string
		wantReq, wantHeads string
		want               []memory.Match
	}{
		{
			name: "agent-wide", query: "window café", filter: memory.Filter{Categories: []memory.Category{memory.Core, memory.Daily}},
			resp: "resp_search_keyword.json", heads: "resp_search_head.json",
			wantReq: "req_search_keyword.json", wantHeads: "req_search_heads.json",
			want: []memory.Match{
				{Entry: pets, Chunk: memory.Chunk{Seq: 1, Text: "She likes the window sill in the morning.", Vector: []float32{0, 1, 0, 0}}, Score: 1.3862942},
				{Entry: herbs, Chunk: memory.Chunk{Seq: 0, Text: "Bought a window box for herbs.", Vector: []float32{0, 0, 1, 0}}, Score: 0.2876821},
			},
		},
		{
			name: "owner", owner: "key:k1", query: "kitten window",
			resp: "resp_search_keyword_owner.json", heads: "resp_search_heads_owner.json",
			wantReq: "req_search_keyword_owner.json", wantHeads: "req_search_heads_owner.json",
			want: []memory.Match{
				{Entry: kitten, Chunk: memory.Chunk{Seq: 1, Text: "Her kitten sleeps by the window.", Vector: []float32{0, 1, 0, 0}}, Score: 1.3862942},
				{Entry: herbs, Chunk: memory.Chunk{Seq: 0, Text: "Bought a window box for herbs.", Vector: []float32{0, 0, 1, 0}}, Score: 0.2876821},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t,
				exchange{"POST", "/mem-test/_search", 200, tc.resp},
				exchange{"POST", "/mem-test/_search", 200, tc.heads},
			)
			x := c.index(t, nil)
			got, err := x.Keyword(context.Background(), "ada", tc.owner, tc.query, tc.filter, 8)
			if err != nil {
				t.Fatalf("Keyword: %v", err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Keyword (-want +got):\n%s", d)
			}
			reqs := c.requests()
			golden(t, tc.wantReq, reqs[0].body)
			golden(t, tc.wantHeads, reqs[1].body)
		})
	}
}

func TestKeywordEmptyQuery(t *testing.T) {
	c := newCluster(t)
	x := c.index(t, nil)
	got, err := x.Keyword(context.Background(), "ada", "", "  ", memory.Filter{}, 8)
	if err != nil || got != nil {
		t.Fatalf("Keyword: %v, %v; want nothing", got, err)
	}
	c.requests()
}

func TestVector(t *testing.T) {
	c := newCluster(t,
		exchange{"POST", "/mem-test/_search", 200, "resp_search_knn.json"},
		exchange{"POST", "/mem-test/_search", 200, "resp_search_head.json"},
	)
	x := c.index(t, nil)
	got, err := x.Vector(context.Background(), "ada", "", []float32{0, 0.6, 0.8, 0}, memory.Filter{}, 8)
	if err != nil {
		t.Fatalf("Vector: %v", err)
	}
	// cosinesimil scores are (1 + cos) / 2: 0.95 is a cosine of 0.9, 0.5
	// one of 0.
	want := []memory.Match{
		{Entry: herbs, Chunk: memory.Chunk{Seq: 0, Text: "Bought a window box for herbs.", Vector: []float32{0, 0, 1, 0}}, Score: 0.9},
		{Entry: pets, Chunk: memory.Chunk{Seq: 1, Text: "She likes the window sill in the morning.", Vector: []float32{0, 1, 0, 0}}, Score: 0},
	}
	if d := cmp.Diff(want, got, cmpFloat); d != "" {
		t.Errorf("Vector (-want +got):\n%s", d)
	}
	golden(t, "req_search_knn.json", c.requests()[0].body)
}

var cmpFloat = cmp.Comparer(func(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 })

func TestVectorNeedsNoRequest(t *testing.T) {
	c := newCluster(t)
	x := c.index(t, nil)
	if _, err := x.Vector(context.Background(), "ada", "", []float32{1, 0, 0}, memory.Filter{}, 8); err == nil {
		t.Error("Vector with 3 dimensions on a 4-dimension index: no error")
	}
	got, err := x.Vector(context.Background(), "ada", "", []float32{0, 0, 0, 0}, memory.Filter{}, 8)
	if err != nil || got != nil {
		t.Errorf("Vector with a zero vector: %v, %v; want nothing (cosinesimil rejects it)", got, err)
	}
	c.requests()
}

func TestErrorResponses(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int
		resp      string
		want      *Error
		is        error
		retryable bool
	}{
		{
			name: "search phase failure", status: 400, resp: "resp_400_root_cause.json",
			want: &Error{Op: "search", Status: 400, Type: "search_phase_execution_exception", Reason: "all shards failed",
				RootCause: "illegal_argument_exception: Query vector has invalid dimension: 3. Dimension should be: 4"},
		},
		{
			name: "unsigned request to a domain", status: 403, resp: "resp_403_unsigned.json",
			want: &Error{Op: "search", Status: 403,
				Reason: "User: anonymous is not authorized to perform: es:ESHttpPost because no resource-based policy allows the es:ESHttpPost action"},
			is: ErrForbidden,
		},
		{
			name: "rejected", status: 429, resp: "resp_429.json",
			want: &Error{Op: "search", Status: 429, Type: "es_rejected_execution_exception",
				Reason: "rejected execution of coordinating operation [coordinating_and_primary_bytes=0, replica_bytes=0, all_bytes=0, coordinating_operation_bytes=53687091, max_coordinating_and_primary_bytes=53687091]"},
			retryable: true,
		},
		{
			name: "shard failure in a 200", status: 200, resp: "resp_search_shard_failure.json",
			want: &Error{Op: "search", Status: 200, Type: "shard_failure", Reason: "1 of 2 shards failed",
				RootCause: "circuit_breaking_exception: [parent] Data too large, data for [<reused_arrays>] would be [1031220648/983.4mb], which is larger than the limit of [1020054732/972.7mb]"},
		},
		{
			name: "not JSON", status: 500, resp: "resp_500.txt",
			want:      &Error{Op: "search", Status: 500, Reason: "upstream connect error or disconnect/reset before headers. reset reason: connection termination"},
			retryable: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := []exchange{{"POST", "/mem-test/_search", tc.status, tc.resp}}
			c := newCluster(t, script...)
			x := c.index(t, nil)
			_, err := x.Keyword(context.Background(), "ada", "", "cat", memory.Filter{}, 8)
			var oe *Error
			if !errors.As(err, &oe) {
				t.Fatalf("Keyword: %v, want an *Error", err)
			}
			if d := cmp.Diff(tc.want, oe); d != "" {
				t.Errorf("Error (-want +got):\n%s", d)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("errors.Is(%v, %v) = false", err, tc.is)
			}
			if oe.Retryable() != tc.retryable {
				t.Errorf("Retryable() = %v, want %v", oe.Retryable(), tc.retryable)
			}
		})
	}
}

func TestRetriesUnavailable(t *testing.T) {
	// opensearch-go retries 502, 503 and 504 itself.
	c := newCluster(t,
		exchange{"POST", "/mem-test/_search", 503, ""},
		exchange{"POST", "/mem-test/_search", 200, "resp_search_head.json"},
	)
	x := c.index(t, nil)
	if _, err := x.Get(context.Background(), "ada", "", "notes/pets"); err != nil {
		t.Fatalf("Get after a 503: %v", err)
	}
	c.requests()
}

func TestMissingIndexSearchesFindNothing(t *testing.T) {
	c := newCluster(t,
		exchange{"POST", "/mem-test/_search", 404, "resp_index_not_found.json"},
		exchange{"POST", "/mem-test/_search", 404, "resp_index_not_found.json"},
	)
	x := c.index(t, nil)
	kw, err := x.Keyword(context.Background(), "ada", "", "cat", memory.Filter{}, 8)
	if err != nil || len(kw) != 0 {
		t.Errorf("Keyword on a missing index: %v, %v; want nothing", kw, err)
	}
	vec, err := x.Vector(context.Background(), "ada", "", []float32{1, 0, 0, 0}, memory.Filter{}, 8)
	if err != nil || len(vec) != 0 {
		t.Errorf("Vector on a missing index: %v, %v; want nothing", vec, err)
	}
	c.requests()
}

func TestErrorIsIndexNotFound(t *testing.T) {
	e := parseError("search", 404, readTestdata(t, "resp_index_not_found.json"))
	if !errors.Is(e, ErrIndexNotFound) || errors.Is(e, ErrForbidden) {
		t.Errorf("%v: Is(ErrIndexNotFound) = %v, Is(ErrForbidden) = %v", e, errors.Is(e, ErrIndexNotFound), errors.Is(e, ErrForbidden))
	}
	want := "opensearch search: status 404: index_not_found_exception: no such index [mem-test]"
	if e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
}

func TestDocID(t *testing.T) {
	long := strings.Repeat("k", 600)
	ids := map[string][4]any{}
	for _, e := range [][4]any{
		{"a/b", "", "c", 0},
		{"a", "", "b/c", 0},
		{"a", "b", "c", 0},
		{"a", "", "b", 0},
		{"a", "b/c", "d", 0},
		{"a", "b", "c/d", 0},
		{"a/b", "c", "d", 0},
		{"ada", "", long, 3},
		{"ada", "key:k1", long, 3},
		{"ada", "key:k2", long, 3},
		{"ada", "key:k1", long, 4},
	} {
		id := docID(e[0].(string), e[1].(string), e[2].(string), e[3].(int))
		if other, dup := ids[id]; dup {
			t.Errorf("%q and %q share id %q", e, other, id)
		}
		ids[id] = e
		if len(id) > maxIDBytes || !strings.HasSuffix(id, fmt.Sprint("/", e[3])) {
			t.Errorf("id %q of %q: %d bytes", id, e, len(id))
		}
	}
	// Agent-wide entries keep the ids they had before owners.
	if got := docID("ada", "", "notes/pets", 1); got != "ada/notes%2Fpets/1" {
		t.Errorf("agent-wide id %q, want ada/notes%%2Fpets/1", got)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{URL: "http://localhost:9200"},
		{URL: "localhost:9200", Dims: 4},
		{URL: "http://localhost:9200", Dims: 4, Engine: "nmslib"},
		{URL: "http://localhost:9200", Dims: 4, Refresh: "sometimes"},
		{URL: "https://x.eu-west-1.aoss.amazonaws.com", Dims: 4, Serverless: true},
	} {
		if _, err := New(context.Background(), cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
}

func TestClip(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exact", 5, "exact"},
		{"日本語のテキスト", 3, "日本語"},
		{"one two three four five six seven eight nine ten eleven", 50, "one two three four five six seven eight nine ten"},
		{strings.Repeat("x", 30), 20, strings.Repeat("x", 20)},
	} {
		if got := clip(tc.s, tc.n); got != tc.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
	long := strings.Repeat("貓", 5000)
	c := newCluster(t, exchange{"POST", "/mem-test/_search", 200, "resp_search_empty.json"})
	x := c.index(t, nil)
	if _, err := x.Keyword(context.Background(), "ada", "", long, memory.Filter{}, 8); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Query struct {
			Bool struct {
				Must []struct {
					Match struct {
						Text struct{ Query string } `json:"text"`
					} `json:"match"`
				} `json:"must"`
			} `json:"bool"`
		} `json:"query"`
	}
	if err := json.Unmarshal(c.requests()[0].body, &body); err != nil {
		t.Fatal(err)
	}
	if q := body.Query.Bool.Must[0].Match.Text.Query; q != strings.Repeat("貓", maxQueryRunes) {
		t.Errorf("query of %d runes sent, want %d", len([]rune(q)), maxQueryRunes)
	}
}

// The client asks the endpoint nothing on its own: the transport polls no
// node stats (opensearch-go's default, every 5 s) and checks no node's
// health, so a client left idle makes no request. The cluster fails the
// test on any request, as it has no script.
func TestIdleClientAsksNothing(t *testing.T) {
	c := newCluster(t)
	c.index(t, nil)
	time.Sleep(6 * time.Second) // past the client's 5 s polling interval
	if got := c.requests(); len(got) != 0 {
		t.Errorf("an idle client made %d requests, the first %s %s", len(got), got[0].method, got[0].path)
	}
}
