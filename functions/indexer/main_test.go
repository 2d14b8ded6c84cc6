package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/dynamo"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/opensearch"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	lcstore "github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

const testIndex = "mem-test"

// request is one request the fake OpenSearch received.
type request struct {
	method, path string
	body         []byte
}

func (r request) String() string { return r.method + " " + r.path }

// fakeOpenSearch answers the documented shapes of index creation, _search,
// _bulk and _delete_by_query with shared/adapters/opensearch's recorded responses.
// A _bulk request whose body contains failOn gets the partial-failure
// response (HTTP 200, "errors": true).
type fakeOpenSearch struct {
	t      *testing.T
	failOn string
	mu     sync.Mutex
	got    []request
}

func (f *fakeOpenSearch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.got = append(f.got, request{r.Method, r.URL.Path, body})
	f.mu.Unlock()
	resp := ""
	switch {
	case r.Method == http.MethodPut && r.URL.Path == "/"+testIndex:
		resp = "resp_create_index.json"
	case r.Method == http.MethodPost && r.URL.Path == "/"+testIndex+"/_search":
		resp = "resp_search_empty.json"
	case r.Method == http.MethodPost && r.URL.Path == "/"+testIndex+"/_bulk":
		resp = "resp_bulk_ok.json"
		if f.failOn != "" && bytes.Contains(body, []byte(f.failOn)) {
			resp = "resp_bulk_partial.json"
		}
	case r.Method == http.MethodPost && r.URL.Path == "/"+testIndex+"/_delete_by_query":
		resp = "resp_delete_by_query.json"
	default:
		f.t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
		http.Error(w, "unexpected", http.StatusBadRequest)
		return
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "shared", "adapters", "opensearch", "testdata", resp))
	if err != nil {
		f.t.Error(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(data)
}

func (f *fakeOpenSearch) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.got...)
}

// newIndexer returns an Indexer on a fake OpenSearch domain with 4-dimension
// vectors.
func newIndexer(t *testing.T, failOn string) (*Indexer, *fakeOpenSearch) {
	t.Helper()
	f := &fakeOpenSearch{t: t, failOn: failOn}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	x, err := opensearch.New(context.Background(), opensearch.Config{URL: srv.URL, Index: testIndex, Dims: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return &Indexer{Search: x, Ensure: x.EnsureIndex}, f
}

func sample(t *testing.T) events.DynamoDBEvent {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "events", "indexer", "stream.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// bulkDocs returns the documents indexed by a _bulk body, by id.
func bulkDocs(t *testing.T, body []byte) map[string]map[string]any {
	t.Helper()
	docs := map[string]map[string]any{}
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	for i := 0; i < len(lines); i++ {
		var action map[string]struct {
			ID string `json:"_id"`
		}
		if err := json.Unmarshal([]byte(lines[i]), &action); err != nil {
			t.Fatalf("bulk line %q: %v", lines[i], err)
		}
		if a, ok := action["index"]; ok {
			i++
			var doc map[string]any
			if err := json.Unmarshal([]byte(lines[i]), &doc); err != nil {
				t.Fatal(err)
			}
			docs[a.ID] = doc
		}
	}
	return docs
}

func TestHandleSample(t *testing.T) {
	h, f := newIndexer(t, "")
	resp, err := h.Handle(context.Background(), sample(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("failures %+v, want none", resp.BatchItemFailures)
	}
	reqs := f.requests()
	var got []string
	for _, r := range reqs {
		got = append(got, r.String())
	}
	want := []string{
		"PUT /" + testIndex,                                                // EnsureIndex, once
		"POST /" + testIndex + "/_search", "POST /" + testIndex + "/_bulk", // INSERT pets
		"POST /" + testIndex + "/_search", "POST /" + testIndex + "/_bulk", // MODIFY trip
		"POST /" + testIndex + "/_delete_by_query", // REMOVE old-note; the session item is ignored
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("requests (-want +got):\n%s", d)
	}
	pets := bulkDocs(t, reqs[2].body)["default/pets/0"]
	if pets == nil || pets["text"] != "Ada has a cat called Miso." || pets["category"] != "core" || pets["agent"] != "default" {
		t.Errorf("pets document: %v", pets)
	}
	if d := cmp.Diff([]any{0.6, 0.8, 0.0, 0.0}, pets["vector"], cmp.Comparer(func(a, b float64) bool { return float32(a) == float32(b) })); d != "" {
		t.Errorf("pets vector (-want +got):\n%s", d)
	}
	if _, owned := pets["owner"]; owned {
		t.Errorf("agent-wide pets document has an owner: %v", pets)
	}
	// trip and old-note are the memories of the owner tg:42.
	trip := bulkDocs(t, reqs[4].body)["default/tg:42/trip/0"]
	if trip == nil || trip["text"] != "Trip to Lisbon moved to July." || trip["owner"] != "tg:42" {
		t.Errorf("trip document (from the new image): %v", trip)
	}
	for _, s := range []string{`"old-note"`, `"default"`, `{"term":{"owner":"tg:42"}}`} {
		if !bytes.Contains(reqs[5].body, []byte(s)) {
			t.Errorf("delete_by_query body %s does not name tg:42's default/old-note (%s)", reqs[5].body, s)
		}
	}

	// A replayed batch is applied again, with the same result (Put
	// replaces); the index is not created twice.
	if resp, err := h.Handle(context.Background(), sample(t)); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("replay: %+v, %v", resp, err)
	}
	if n := len(f.requests()); n != len(want)+len(want)-1 {
		t.Errorf("replay made %d requests in all, want %d", n, 2*len(want)-1)
	}
}

func TestHandlePartialFailure(t *testing.T) {
	h, f := newIndexer(t, "moved to July") // the MODIFY's _bulk fails
	ev := sample(t)
	resp, err := h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	want := []events.DynamoDBBatchItemFailure{{ItemIdentifier: ev.Records[1].Change.SequenceNumber}}
	if d := cmp.Diff(want, resp.BatchItemFailures); d != "" {
		t.Errorf("failures (-want +got):\n%s", d)
	}
	// The records after it were still applied.
	if got := f.requests(); got[len(got)-1].path != "/"+testIndex+"/_delete_by_query" {
		t.Errorf("last request %s, want the REMOVE's _delete_by_query", got[len(got)-1])
	}
}

func TestHandleWithoutIndex(t *testing.T) {
	h, f := newIndexer(t, "")
	h.Ensure = func(context.Context) error { return io.ErrUnexpectedEOF }
	ev := sample(t)
	resp, err := h.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.BatchItemFailures) != 3 {
		t.Errorf("failures %+v, want the three memory records", resp.BatchItemFailures)
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests without an index", n)
	}
}

func TestHandleBadImage(t *testing.T) {
	h, _ := newIndexer(t, "")
	ev := sample(t)
	ev.Records = ev.Records[:1]
	ev.Records[0].Change.NewImage = nil // a KEYS_ONLY stream
	resp, _ := h.Handle(context.Background(), ev)
	if len(resp.BatchItemFailures) != 1 {
		t.Errorf("failures %+v, want the record without an image", resp.BatchItemFailures)
	}
}

// TestDynamoDBLocalStream writes memories through the DynamoDB memory
// index on DynamoDB Local, reads the table's stream with the DynamoDB
// Streams API and hands the records, as Lambda would, to the handler.
func TestDynamoDBLocalStream(t *testing.T) {
	table := cloudtest.NewTable(t)
	ctx, store := t.Context(), table.Store
	h, f := newIndexer(t, "")
	idx, err := dynamo.NewMemoryIndex(store, dynamo.MemoryConfig{Search: h.Search})
	if err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(1777593600000).UTC()
	pets := memory.Entry{Agent: "ada", Key: "pets", Text: "Ada has a cat called Miso.", Category: memory.Core, Source: "tool", CreatedAt: at, UpdatedAt: at}
	vec := []float32{0.6, 0.8, 0, 0}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(idx.Put(ctx, pets, []memory.Chunk{{Seq: 0, Text: pets.Text, Vector: vec}}))
	pets.Text = "Ada's cat is Miso."
	must(idx.Put(ctx, pets, []memory.Chunk{{Seq: 0, Text: pets.Text, Vector: vec}}))
	must(idx.Put(ctx, memory.Entry{Agent: "ada", Key: "milk", Text: "Buy milk.", Category: memory.Custom, CreatedAt: at, UpdatedAt: at}, []memory.Chunk{{Text: "Buy milk."}}))
	must(idx.Delete(ctx, "ada", "", "milk"))
	// An owner's memory under the same key as an agent-wide one, removed:
	// the REMOVE record carries only the keys, which name the owner.
	mine := pets
	mine.Owner, mine.Text = "key:k1", "My cat is Tofu."
	must(idx.Put(ctx, mine, []memory.Chunk{{Seq: 0, Text: mine.Text, Vector: vec}}))
	must(idx.Delete(ctx, "ada", "key:k1", "pets"))
	must(store.CreateSession(ctx, lcstore.Session{ID: "s-1", Agent: "ada"}))

	records := readStream(t, table)
	// Each write is a transaction with the head of its memory space and
	// a change item (pk MEM#ada too), which the handler must ignore.
	var names []string
	heads := 0
	for _, r := range records {
		sk := r.Change.Keys["sk"].String()
		switch {
		case strings.HasPrefix(sk, "ENTRY#") || strings.HasPrefix(sk, "OWNED#"):
			names = append(names, r.EventName+" "+r.Change.Keys["pk"].String()+" "+sk)
		case strings.HasPrefix(sk, "LOG#"):
			heads++
		}
	}
	want := []string{
		"INSERT MEM#ada ENTRY#pets", "MODIFY MEM#ada ENTRY#pets", "INSERT MEM#ada ENTRY#milk", "REMOVE MEM#ada ENTRY#milk",
		"INSERT MEM#ada OWNED#6#key:k1#pets", "REMOVE MEM#ada OWNED#6#key:k1#pets",
	}
	if !cmp.Equal(want, names) {
		t.Fatalf("stream records of memories %v, want %v", names, want)
	}
	if heads != 2*len(want) { // per write, a change item and a put of its space's head
		t.Errorf("%d stream records of heads and change items, want %d", heads, 2*len(want))
	}
	resp, err := h.Handle(ctx, events.DynamoDBEvent{Records: records})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle: %+v, %v", resp, err)
	}
	var got []string
	for _, r := range f.requests() {
		got = append(got, r.String())
	}
	// The handler's requests, after those of the Puts above (which went
	// to the index directly: none, as MemoryIndex writes to DynamoDB only).
	wantReqs := []string{"PUT /" + testIndex,
		"POST /" + testIndex + "/_search", "POST /" + testIndex + "/_bulk",
		"POST /" + testIndex + "/_search", "POST /" + testIndex + "/_bulk",
		"POST /" + testIndex + "/_search", "POST /" + testIndex + "/_bulk",
		"POST /" + testIndex + "/_delete_by_query",
		"POST /" + testIndex + "/_search", "POST /" + testIndex + "/_bulk",
		"POST /" + testIndex + "/_delete_by_query",
	}
	if d := cmp.Diff(wantReqs, got); d != "" {
		t.Fatalf("requests (-want +got):\n%s", d)
	}
	reqs := f.requests()
	if doc := bulkDocs(t, reqs[4].body)["ada/pets/0"]; doc == nil || doc["text"] != "Ada's cat is Miso." {
		t.Errorf("MODIFY indexed %v", doc)
	}
	if doc := bulkDocs(t, reqs[9].body)["ada/key:k1/pets/0"]; doc == nil || doc["text"] != mine.Text || doc["owner"] != "key:k1" {
		t.Errorf("the owner's INSERT indexed %v", doc)
	}
	if del := reqs[7].body; !bytes.Contains(del, []byte(`{"must_not":[{"exists":{"field":"owner"}}]}`)) || !bytes.Contains(del, []byte(`"milk"`)) {
		t.Errorf("the agent-wide REMOVE deleted by %s, want the agent-wide milk", del)
	}
	if del := reqs[10].body; !bytes.Contains(del, []byte(`{"term":{"owner":"key:k1"}}`)) || !bytes.Contains(del, []byte(`"pets"`)) {
		t.Errorf("the owner's REMOVE deleted by %s, want key:k1's pets", del)
	}
}

// readStream returns the records of the table's stream, converted to the
// Lambda event shape.
func readStream(t *testing.T, table *cloudtest.Table) []events.DynamoDBEventRecord {
	t.Helper()
	ctx := t.Context()
	desc, err := table.Client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table.Name)})
	if err != nil {
		t.Fatal(err)
	}
	arn := desc.Table.LatestStreamArn
	sc := dynamodb.NewStreams(dynamodb.Options{BaseEndpoint: aws.String(table.Endpoint), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	sd, err := sc.DescribeStream(ctx, &dynamodb.DescribeStreamInput{StreamArn: arn})
	if err != nil {
		t.Fatal(err)
	}
	var out []events.DynamoDBEventRecord
	for _, sh := range sd.StreamDescription.Shards {
		it, err := sc.GetShardIterator(ctx, &dynamodb.GetShardIteratorInput{StreamArn: arn, ShardId: sh.ShardId, ShardIteratorType: dynamodb.ShardIteratorTypeTrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		iter := it.ShardIterator
		for iter != nil {
			res, err := sc.GetRecords(ctx, &dynamodb.GetRecordsInput{ShardIterator: iter})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res.Records {
				out = append(out, events.DynamoDBEventRecord{
					EventID:        aws.ToString(r.EventID),
					EventName:      r.EventName,
					EventSource:    aws.ToString(r.EventSource),
					AWSRegion:      aws.ToString(r.AwsRegion),
					EventSourceArn: aws.ToString(arn),
					Change: events.DynamoDBStreamRecord{
						Keys:           toEvent(r.Dynamodb.Keys),
						NewImage:       toEvent(r.Dynamodb.NewImage),
						OldImage:       toEvent(r.Dynamodb.OldImage),
						SequenceNumber: aws.ToString(r.Dynamodb.SequenceNumber),
						StreamViewType: string(r.Dynamodb.StreamViewType),
					},
				})
			}
			if len(res.Records) == 0 {
				break // an open shard's iterator never ends
			}
			iter = res.NextShardIterator
		}
	}
	return out
}

func toEvent(img map[string]dynamodb.AttributeValue) map[string]events.DynamoDBAttributeValue {
	if img == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(img))
	for k, v := range img {
		out[k] = toEventValue(v)
	}
	return out
}

func toEventValue(v dynamodb.AttributeValue) events.DynamoDBAttributeValue {
	switch v := v.(type) {
	case *dynamodb.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value)
	case *dynamodb.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value)
	case *dynamodb.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value)
	case *dynamodb.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value)
	case *dynamodb.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value)
	case *dynamodb.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value)
	case *dynamodb.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value)
	case *dynamodb.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = toEventValue(e)
		}
		return events.NewListAttribute(l)
	case *dynamodb.AttributeValueMemberM:
		return events.NewMapAttribute(toEvent(v.Value))
	}
	return events.NewNullAttribute()
}
