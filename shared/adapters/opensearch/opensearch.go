package opensearch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	osgo "github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
	"github.com/opensearch-project/opensearch-go/v4/opensearchtransport"
	"github.com/opensearch-project/opensearch-go/v4/signer/awsv2"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
)

// Defaults for Config.
const (
	DefaultIndex   = "lambdaclaw-memory"
	DefaultEngine  = "faiss"
	DefaultTimeout = 30 * time.Second
)

// maxChunks bounds the chunks of one entry the adapter looks up when it
// replaces or deletes the entry: OpenSearch's default
// index.max_result_window.
const maxChunks = 10000

// maxIDBytes is OpenSearch's limit on a document id.
const maxIDBytes = 512

// maxQueryRunes bounds the keyword query text. A match query becomes one
// clause per token and OpenSearch refuses more than 1024 clauses by
// default (indices.query.bool.max_clause_count); 1000 characters make at
// most 1000 tokens, whatever the script.
const maxQueryRunes = 1000

// Config describes one index on one OpenSearch endpoint.
type Config struct {
	// URL is the endpoint: a managed domain
	// (https://search-….<region>.es.amazonaws.com), a Serverless collection
	// (https://<id>.<region>.aoss.amazonaws.com) or a cluster of your own.
	URL string
	// Index is the index name; DefaultIndex when empty.
	Index string
	// Dims is the dimension of the vectors (the embedding model's). Required.
	Dims int
	// Engine is the k-NN engine of the vector field: "faiss" (the default,
	// and the engine Serverless vector collections accept; cosinesimil
	// needs OpenSearch 2.19 or later with it) or "lucene" (cosinesimil on
	// older domains).
	Engine string
	// Serverless says URL is an OpenSearch Serverless collection: requests
	// are signed for service "aoss" rather than "es", documents get ids
	// chosen by OpenSearch (vector collections refuse ids chosen by the
	// client), and entries are deleted by id rather than by
	// _delete_by_query, which Serverless does not offer.
	Serverless bool
	// Region is the AWS region requests are signed for with SigV4. Empty
	// sends requests unsigned, for a cluster of your own; Serverless
	// requires it.
	Region string
	// Credentials sign the requests; nil takes the environment's
	// (awsapi.EnvConfig: a Lambda function's role).
	Credentials aws.CredentialsProvider
	// Refresh is the refresh policy of writes: "wait_for" (the default on a
	// domain: a write returns once searches see it), "true", or "false".
	// Serverless has no refresh (writes become searchable within seconds),
	// so its default is to send none.
	Refresh string
	// Timeout bounds each HTTP attempt; DefaultTimeout when zero.
	Timeout time.Duration
	// Transport sends the requests; http.DefaultTransport when nil.
	Transport http.RoundTripper
}

// Index is a memory.Index on OpenSearch. It is safe for concurrent use.
type Index struct {
	client     *osgo.Client
	index      string
	dims       int
	engine     string
	serverless bool
	refresh    string
}

var _ memory.Index = (*Index)(nil)

// New returns an Index for cfg. It reads the environment's AWS
// credentials when requests are signed and no Credentials are given; it
// sends no request.
func New(ctx context.Context, cfg Config) (*Index, error) {
	x := &Index{
		index:      cfg.Index,
		dims:       cfg.Dims,
		engine:     cfg.Engine,
		serverless: cfg.Serverless,
		refresh:    cfg.Refresh,
	}
	if x.index == "" {
		x.index = DefaultIndex
	}
	if x.engine == "" {
		x.engine = DefaultEngine
	}
	if cfg.Dims <= 0 {
		return nil, fmt.Errorf("opensearch: vector dimension must be positive, got %d", cfg.Dims)
	}
	if x.engine != "faiss" && x.engine != "lucene" {
		return nil, fmt.Errorf("opensearch: engine %q: want faiss or lucene", x.engine)
	}
	switch x.refresh {
	case "":
		if !x.serverless {
			x.refresh = "wait_for"
		}
	case "true", "false", "wait_for":
	default:
		return nil, fmt.Errorf("opensearch: refresh %q: want true, false or wait_for", x.refresh)
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("opensearch: URL %q is not an http(s) URL", cfg.URL)
	}
	if cfg.Serverless && cfg.Region == "" {
		return nil, errors.New("opensearch: a Serverless collection needs a region to sign requests for")
	}
	timeout := cfg.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	endpoint, err := url.Parse(strings.TrimSuffix(cfg.URL, "/"))
	if err != nil {
		return nil, fmt.Errorf("opensearch: URL %q: %w", cfg.URL, err)
	}
	oc := opensearchtransport.Config{
		URLs:           []*url.URL{endpoint},
		Transport:      cfg.Transport,
		RequestTimeout: timeout,
		// The single endpoint of a domain or collection is a load balancer:
		// node discovery, health checks and the polling of node stats (every
		// 5 s, for load shedding across nodes) would address nodes the
		// client cannot reach, or ask one behind the balancer for nothing.
		HealthCheckMaxRetries: -1,
		NodeStatsInterval:     -1,
	}
	if cfg.Region != "" {
		awsCfg := aws.Config{Region: cfg.Region, Credentials: cfg.Credentials}
		if awsCfg.Credentials == nil {
			loaded, err := awsapi.EnvConfig(os.Getenv)
			if err != nil {
				return nil, fmt.Errorf("opensearch: %w", err)
			}
			awsCfg.Credentials = loaded.Credentials
		}
		service := "es"
		if cfg.Serverless {
			service = "aoss"
		}
		s, err := awsv2.NewSignerWithService(awsCfg, service)
		if err != nil {
			return nil, fmt.Errorf("opensearch: SigV4 signer: %w", err)
		}
		oc.Signer = s
	}
	// The transport built here rather than by osgo.NewClient, whose Config
	// cannot turn the node stats' polling off.
	tp, err := opensearchtransport.New(oc)
	if err != nil {
		return nil, fmt.Errorf("opensearch: %w", err)
	}
	x.client = &osgo.Client{Transport: tp}
	return x, nil
}

// Close releases the client's idle connections and background work.
func (x *Index) Close() error { return x.client.Close() }

// EnsureIndex creates the index with its mapping if it does not exist.
// An existing index gets the fields it lacks (the owner, for an index made
// before memories had owners) with a put-mapping request; its other
// fields are left as they are.
func (x *Index) EnsureIndex(ctx context.Context) error {
	body, err := json.Marshal(indexBody(x.dims, x.engine))
	if err != nil {
		return err
	}
	err = x.do(ctx, "create index", http.MethodPut, opensearchapi.IndicesCreateReq{Index: x.index, Body: bytes.NewReader(body)}, nil)
	var oe *Error
	if !errors.As(err, &oe) || oe.Type != "resource_already_exists_exception" {
		return err
	}
	body, err = json.Marshal(mappingBody())
	if err != nil {
		return err
	}
	return x.do(ctx, "put mapping", http.MethodPut, opensearchapi.MappingPutReq{Indices: []string{x.index}, Body: bytes.NewReader(body)}, nil)
}

// Put stores e and its chunks, replacing what its agent, owner and key
// held. The new chunks and the removal of the old ones travel in one _bulk
// request.
func (x *Index) Put(ctx context.Context, e memory.Entry, chunks []memory.Chunk) error {
	if e.Agent == "" || e.Key == "" {
		return errors.New("opensearch put: agent and key are required")
	}
	for _, c := range chunks {
		if len(c.Vector) != 0 && len(c.Vector) != x.dims {
			return fmt.Errorf("opensearch put %s/%s: chunk %d has %d dimensions, the index %d", e.Agent, e.Key, c.Seq, len(c.Vector), x.dims)
		}
	}
	old, err := x.chunkIDs(ctx, e.Agent, e.Owner, e.Key)
	if errors.Is(err, ErrIndexNotFound) {
		// A _bulk request would create the index with guessed mappings.
		return fmt.Errorf("%w (create it with EnsureIndex)", err)
	}
	if err != nil {
		return err
	}
	ds := docs(e, chunks)
	actions := make([]bulkAction, 0, len(old)+len(ds))
	keep := map[string]bool{}
	indexes := make([]bulkAction, len(ds))
	for i := range ds {
		indexes[i] = bulkAction{op: "index", doc: &ds[i]}
		if !x.serverless {
			// On a domain the ids are the entry's, so that writing an
			// entry again overwrites its chunks.
			indexes[i].id = docID(e.Agent, e.Owner, e.Key, ds[i].Seq)
			keep[indexes[i].id] = true
		}
	}
	for _, id := range old {
		if !keep[id] {
			actions = append(actions, bulkAction{op: "delete", id: id})
		}
	}
	actions = append(actions, indexes...)
	return x.bulk(ctx, actions)
}

// Get returns the entry of the agent, owner and key, or
// memory.ErrNotFound.
func (x *Index) Get(ctx context.Context, agent, owner, key string) (memory.Entry, error) {
	var res searchResponse
	err := x.search(ctx, headsBody(agent, ownerIs(owner), []string{key}, 1), &res)
	if errors.Is(err, ErrIndexNotFound) {
		return memory.Entry{}, memory.ErrNotFound
	}
	if err != nil {
		return memory.Entry{}, err
	}
	for _, h := range res.Hits.Hits {
		d, err := h.doc()
		if err != nil {
			return memory.Entry{}, err
		}
		if d.Agent == agent && d.Owner == owner && d.Key == key {
			return d.entry(), nil
		}
	}
	return memory.Entry{}, memory.ErrNotFound
}

// Delete removes the entry of the agent, owner and key and its chunks. A
// missing key, or a missing index, is no error.
func (x *Index) Delete(ctx context.Context, agent, owner, key string) error {
	if x.serverless {
		ids, err := x.chunkIDs(ctx, agent, owner, key)
		if errors.Is(err, ErrIndexNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		actions := make([]bulkAction, len(ids))
		for i, id := range ids {
			actions[i] = bulkAction{op: "delete", id: id}
		}
		return x.bulk(ctx, actions)
	}
	body, err := json.Marshal(deleteByQueryBody(agent, owner, key))
	if err != nil {
		return err
	}
	req := opensearchapi.DocumentDeleteByQueryReq{
		Indices: []string{x.index},
		Body:    bytes.NewReader(body),
		// A chunk rewritten while the deletion runs is a conflict; the
		// rest are deleted all the same.
		Params: opensearchapi.DocumentDeleteByQueryParams{Conflicts: "proceed"},
	}
	if x.refresh == "true" || x.refresh == "wait_for" {
		// _delete_by_query knows no wait_for: it refreshes or not.
		req.Params.Refresh = new(true)
	}
	var res struct {
		Deleted  int `json:"deleted"`
		Failures []struct {
			ID     string `json:"id"`
			Status int    `json:"status"`
			Cause  struct {
				Type   string `json:"type"`
				Reason string `json:"reason"`
			} `json:"cause"`
		} `json:"failures"`
	}
	err = x.do(ctx, "delete by query", http.MethodPost, req, &res)
	if errors.Is(err, ErrIndexNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(res.Failures) > 0 {
		be := &BulkError{Actions: res.Deleted + len(res.Failures)}
		for _, f := range res.Failures {
			be.Failed = append(be.Failed, BulkFailure{Action: "delete", ID: f.ID, Status: f.Status, Type: f.Cause.Type, Reason: truncate(f.Cause.Reason)})
		}
		return be
	}
	return nil
}

// Keyword returns up to k chunks of the agent's memories the owner may see
// (its own and the agent-wide ones) ranked by OpenSearch's BM25 score for
// query: any of its words may match. The query is text, never query
// syntax; of a very long one the first 1000 characters count.
func (x *Index) Keyword(ctx context.Context, agent, owner, query string, f memory.Filter, k int) ([]memory.Match, error) {
	if strings.TrimSpace(query) == "" || k <= 0 {
		return nil, nil
	}
	body := keywordBody(agent, owner, clip(query, maxQueryRunes), f, min(k, maxChunks))
	return x.matches(ctx, agent, owner, body, func(score float64) float64 { return score })
}

// Vector returns up to k chunks of the agent's memories the owner may see
// nearest to v, each scored with its cosine similarity to v.
func (x *Index) Vector(ctx context.Context, agent, owner string, v []float32, f memory.Filter, k int) ([]memory.Match, error) {
	if len(v) == 0 || k <= 0 {
		return nil, nil
	}
	if len(v) != x.dims {
		return nil, fmt.Errorf("opensearch vector search: query has %d dimensions, the index %d", len(v), x.dims)
	}
	if norm(v) == 0 {
		// No direction, no similarity; cosinesimil rejects it.
		return nil, nil
	}
	return x.matches(ctx, agent, owner, vectorBody(agent, owner, v, f, min(k, maxChunks)), cosine)
}

// cosine turns a cosinesimil score back into the cosine similarity. Both
// engines score cosinesimil as (2 - d) / 2 with d = 1 - cos, that is
// (1 + cos) / 2.
func cosine(score float64) float64 {
	return max(-1, min(1, 2*score-1))
}

// entryID identifies an entry of an agent.
type entryID struct{ owner, key string }

// matches runs a search and turns its hits into matches with whole
// entries: a hit on a chunk other than an entry's head is completed with
// the entry's text from its head document.
func (x *Index) matches(ctx context.Context, agent, owner string, body obj, score func(float64) float64) ([]memory.Match, error) {
	var res searchResponse
	err := x.search(ctx, body, &res)
	if errors.Is(err, ErrIndexNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]memory.Match, 0, len(res.Hits.Hits))
	texts := map[entryID]string{}
	for _, h := range res.Hits.Hits {
		d, err := h.doc()
		if err != nil {
			return nil, err
		}
		if d.Agent != agent || !d.entry().Visible(owner) {
			// The filter keeps other agents and owners out; this guards
			// the guard.
			continue
		}
		if d.Head {
			texts[entryID{d.Owner, d.Key}] = d.EntryText
		}
		out = append(out, memory.Match{
			Entry: d.entry(),
			Chunk: memory.Chunk{Seq: d.Seq, Text: d.Text, Vector: d.Vector},
			Score: score(h.Score),
		})
	}
	// The heads of the entries whose head did not match: one request for
	// all of them, the owner's and the agent-wide ones (a key may be both).
	var missing []string
	for _, m := range out {
		if _, ok := texts[entryID{m.Entry.Owner, m.Entry.Key}]; !ok && !slices.Contains(missing, m.Entry.Key) {
			missing = append(missing, m.Entry.Key)
		}
	}
	if len(missing) > 0 {
		size := len(missing)
		if owner != "" {
			size *= 2
		}
		var heads searchResponse
		if err := x.search(ctx, headsBody(agent, visibleTo(owner), missing, size), &heads); err != nil {
			return nil, err
		}
		for _, h := range heads.Hits.Hits {
			d, err := h.doc()
			if err != nil {
				return nil, err
			}
			if d.Agent == agent && d.entry().Visible(owner) {
				texts[entryID{d.Owner, d.Key}] = d.EntryText
			}
		}
	}
	for i := range out {
		out[i].Entry.Text = texts[entryID{out[i].Entry.Owner, out[i].Entry.Key}]
	}
	return out, nil
}

// chunkIDs returns the ids of an entry's chunk documents.
func (x *Index) chunkIDs(ctx context.Context, agent, owner, key string) ([]string, error) {
	var res searchResponse
	if err := x.search(ctx, idsBody(agent, owner, key), &res); err != nil {
		return nil, err
	}
	ids := make([]string, len(res.Hits.Hits))
	for i, h := range res.Hits.Hits {
		ids[i] = h.ID
	}
	return ids, nil
}

// searchResponse is the part of a _search response the adapter reads.
type searchResponse struct {
	TimedOut bool `json:"timed_out"`
	Shards   struct {
		Total      int `json:"total"`
		Successful int `json:"successful"`
		Failed     int `json:"failed"`
		Failures   []struct {
			Reason struct {
				Type   string `json:"type"`
				Reason string `json:"reason"`
			} `json:"reason"`
		} `json:"failures"`
	} `json:"_shards"`
	Hits struct {
		Hits []hit `json:"hits"`
	} `json:"hits"`
}

type hit struct {
	ID     string          `json:"_id"`
	Score  float64         `json:"_score"`
	Source json.RawMessage `json:"_source"`
}

func (h hit) doc() (doc, error) {
	var d doc
	if err := json.Unmarshal(h.Source, &d); err != nil {
		return doc{}, fmt.Errorf("opensearch search: document %q: %w", h.ID, err)
	}
	return d, nil
}

// search runs a _search on the index. A response in which some shards
// failed is an error: its results would be silently incomplete.
func (x *Index) search(ctx context.Context, body obj, res *searchResponse) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req := opensearchapi.SearchReq{Indices: []string{x.index}, Body: bytes.NewReader(data)}
	if err := x.do(ctx, "search", http.MethodPost, req, res); err != nil {
		return err
	}
	if res.Shards.Failed > 0 {
		e := &Error{Op: "search", Status: http.StatusOK, Type: "shard_failure",
			Reason: fmt.Sprintf("%d of %d shards failed", res.Shards.Failed, res.Shards.Total)}
		if len(res.Shards.Failures) > 0 {
			r := res.Shards.Failures[0].Reason
			e.RootCause = truncate(r.Type + ": " + r.Reason)
		}
		return e
	}
	if res.TimedOut {
		return &Error{Op: "search", Status: http.StatusOK, Type: "timed_out", Reason: "the search timed out with partial results"}
	}
	return nil
}

// bulk sends actions in one _bulk request and turns failed items into a
// *BulkError.
func (x *Index) bulk(ctx context.Context, actions []bulkAction) error {
	if len(actions) == 0 {
		return nil
	}
	body, err := bulkBody(actions)
	if err != nil {
		return fmt.Errorf("opensearch bulk: %w", err)
	}
	req := opensearchapi.BulkReq{
		Index:  x.index,
		Body:   bytes.NewReader(body),
		Header: http.Header{"Content-Type": {"application/x-ndjson"}},
		Params: opensearchapi.BulkParams{Refresh: x.refresh},
	}
	var res struct {
		Errors bool `json:"errors"`
		Items  []map[string]struct {
			ID     string `json:"_id"`
			Status int    `json:"status"`
			Error  *struct {
				Type   string `json:"type"`
				Reason string `json:"reason"`
			} `json:"error"`
		} `json:"items"`
	}
	if err := x.do(ctx, "bulk", http.MethodPost, req, &res); err != nil {
		return err
	}
	if !res.Errors {
		return nil
	}
	be := &BulkError{Actions: len(actions)}
	for i, item := range res.Items {
		for op, r := range item {
			if r.Error == nil {
				continue
			}
			id := r.ID
			if id == "" && i < len(actions) {
				id = actions[i].id
			}
			be.Failed = append(be.Failed, BulkFailure{Action: op, ID: id, Status: r.Status, Type: r.Error.Type, Reason: truncate(r.Error.Reason)})
		}
	}
	if len(be.Failed) == 0 {
		be.Failed = append(be.Failed, BulkFailure{Action: "bulk", Type: "unknown", Reason: `"errors": true without a failed item`})
	}
	return be
}

// do sends req and decodes a successful response into out (when not nil).
// An error status becomes an *Error.
func (x *Index) do(ctx context.Context, op, method string, req osgo.Request, out any) error {
	res, err := osgo.Do[struct{}](ctx, x.client, method, req, nil)
	if err != nil {
		return fmt.Errorf("opensearch %s: %w", op, err)
	}
	var body []byte
	if res.Body != nil {
		body, err = io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil {
			return fmt.Errorf("opensearch %s: reading the response: %w", op, err)
		}
	}
	if res.StatusCode >= 300 {
		return parseError(op, res.StatusCode, body)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("opensearch %s: invalid response: %w", op, err)
	}
	return nil
}

// docID is a chunk's document id on a domain: the agent, the owner (for
// an owner's memory) and the key escaped, so that a "/" in any of them
// cannot make two entries collide (an agent-wide entry's id has three
// parts, an owner's four), and the sequence number; a digest when that
// would pass OpenSearch's limit. Agent-wide entries keep the ids they had
// before memories had owners.
func docID(agent, owner, key string, seq int) string {
	id := url.PathEscape(agent) + "/" + url.PathEscape(key) + "/" + strconv.Itoa(seq)
	digest := agent + "\x00" + key
	if owner != "" {
		id = url.PathEscape(agent) + "/" + url.PathEscape(owner) + "/" + url.PathEscape(key) + "/" + strconv.Itoa(seq)
		// JSON never holds a NUL byte, the agent-wide form always does.
		b, _ := json.Marshal([]string{agent, owner, key})
		digest = string(b)
	}
	if len(id) <= maxIDBytes {
		return id
	}
	sum := sha256.Sum256([]byte(digest))
	return "sha256:" + hex.EncodeToString(sum[:]) + "/" + strconv.Itoa(seq)
}

func norm(v []float32) float64 {
	var s float64
	for _, f := range v {
		s += float64(f) * float64(f)
	}
	return math.Sqrt(s)
}

// clip returns s cut to at most n runes, at a space when there is one in
// the last tenth.
func clip(s string, n int) string {
	count := 0
	for i := range s {
		if count == n {
			cut := s[:i]
			if sp := strings.LastIndexByte(cut, ' '); sp > len(cut)-len(cut)/10 {
				return cut[:sp]
			}
			return cut
		}
		count++
	}
	return s
}
