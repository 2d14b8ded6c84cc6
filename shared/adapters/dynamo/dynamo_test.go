package dynamo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/google/go-cmp/cmp"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/storetest"
)

// endpoint returns DynamoDB Local's endpoint from DYNAMODB_ENDPOINT. The
// tests fail without it, unless LAMBDACLAW_SKIP_DYNAMODB=1 skips them.
func endpoint(t testing.TB) string {
	t.Helper()
	if ep := os.Getenv("DYNAMODB_ENDPOINT"); ep != "" {
		return ep
	}
	if os.Getenv("LAMBDACLAW_SKIP_DYNAMODB") == "1" {
		t.Skip("LAMBDACLAW_SKIP_DYNAMODB=1: DynamoDB Local tests skipped")
	}
	t.Fatal("DYNAMODB_ENDPOINT is not set: run these tests through `make test`, which starts DynamoDB Local " +
		"(tests/dynamodb-local.sh), or set LAMBDACLAW_SKIP_DYNAMODB=1 to skip them")
	return ""
}

// testClient returns a client of DynamoDB Local.
func testClient(t testing.TB) *dynamodb.Client {
	t.Helper()
	return dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(endpoint(t)),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
}

// newTable creates a table with a unique name, dropped when t ends.
func newTable(t testing.TB, client *dynamodb.Client) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	name := "lambdaclaw-test-" + hex.EncodeToString(b)
	if err := CreateTable(t.Context(), client, name); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() {
		// t.Context is done by now.
		if _, err := client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			t.Errorf("DeleteTable %s: %v", name, err)
		}
	})
	return name
}

// newStore returns a Store on a fresh table.
func newStore(t *testing.T) *Store {
	t.Helper()
	client := testClient(t)
	s, err := New(t.Context(), Config{Table: newTable(t, client), Client: client})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func TestStore(t *testing.T) {
	endpoint(t)
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t) })
}

func TestOwnerSessions(t *testing.T) {
	endpoint(t)
	storetest.RunOwnerSessions(t, func(t *testing.T) storetest.OwnerStore { return newStore(t) })
}

func TestTableSchema(t *testing.T) {
	client := testClient(t)
	name := newTable(t, client)
	out, err := client.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	tb := out.Table
	keys := func(ks []dynamodb.KeySchemaElement) string {
		var parts []string
		for _, k := range ks {
			parts = append(parts, aws.ToString(k.AttributeName)+":"+string(k.KeyType))
		}
		return strings.Join(parts, ",")
	}
	if got, want := keys(tb.KeySchema), "pk:HASH,sk:RANGE"; got != want {
		t.Errorf("key schema = %s, want %s", got, want)
	}
	if len(tb.GlobalSecondaryIndexes) != 1 {
		t.Fatalf("%d GSIs, want 1", len(tb.GlobalSecondaryIndexes))
	}
	g := tb.GlobalSecondaryIndexes[0]
	if aws.ToString(g.IndexName) != "gsi1" || keys(g.KeySchema) != "gsi1pk:HASH,gsi1sk:RANGE" || g.Projection.ProjectionType != dynamodb.ProjectionTypeAll {
		t.Errorf("GSI = %s %s %s, want gsi1 gsi1pk:HASH,gsi1sk:RANGE ALL", aws.ToString(g.IndexName), keys(g.KeySchema), g.Projection.ProjectionType)
	}
	if tb.StreamSpecification == nil || tb.StreamSpecification.StreamViewType != dynamodb.StreamViewTypeNewAndOldImages {
		t.Errorf("stream = %+v, want NEW_AND_OLD_IMAGES", tb.StreamSpecification)
	}
	ttl, err := client.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if d := ttl.TimeToLiveDescription; d == nil || aws.ToString(d.AttributeName) != "expires_at" {
		t.Errorf("TTL = %+v, want on expires_at", d)
	}
}

func TestNew(t *testing.T) {
	ep := endpoint(t)
	client := testClient(t)
	name := newTable(t, client)
	s, err := New(t.Context(), Config{Table: name, Endpoint: ep})
	if err != nil {
		t.Fatalf("New with an endpoint: %v", err)
	}
	if err := s.CreateSession(t.Context(), store.Session{ID: "s", Agent: "main"}); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	missing, err := New(t.Context(), Config{Table: name + "-missing", Client: client})
	if err != nil {
		t.Fatalf("New on a missing table: %v, want no request and no error", err)
	}
	if err := missing.Check(t.Context()); err == nil {
		t.Errorf("Check of a missing table: no error")
	}
	if _, err := New(t.Context(), Config{Client: client}); err == nil {
		t.Errorf("New with no table: no error")
	}
}

// clock is a settable time for the store.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func TestLaneRace(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	const owners = 12
	won := make(chan string, owners)
	var wg sync.WaitGroup
	for i := range owners {
		wg.Go(func() {
			owner := fmt.Sprintf("owner-%d", i)
			ok, err := s.AcquireLane(ctx, "s", owner, time.Minute)
			if err != nil {
				t.Errorf("AcquireLane %s: %v", owner, err)
			}
			if ok {
				won <- owner
			}
		})
	}
	wg.Wait()
	close(won)
	var winners []string
	for w := range won {
		winners = append(winners, w)
	}
	if len(winners) != 1 {
		t.Fatalf("winners = %v, want exactly one", winners)
	}
	winner, loser := winners[0], "owner-x"

	if ok, err := s.AcquireLane(ctx, "s", winner, time.Minute); !ok || err != nil {
		t.Errorf("AcquireLane by the holder = %v, %v; want true (renewed)", ok, err)
	}
	if ok, err := s.AcquireLane(ctx, "s", loser, time.Minute); ok || err != nil {
		t.Errorf("AcquireLane of a held lane = %v, %v; want false", ok, err)
	}
	for owner, want := range map[string]bool{winner: true, loser: false} {
		if held, err := s.HoldsLane(ctx, "s", owner); held != want || err != nil {
			t.Errorf("HoldsLane %s = %v, %v; want %v", owner, held, err, want)
		}
	}
	if ok, err := s.AcquireLane(ctx, "other", loser, time.Minute); !ok || err != nil {
		t.Errorf("AcquireLane of another session's lane = %v, %v; want true", ok, err)
	}
	if err := s.ReleaseLane(ctx, "s", loser); err != nil {
		t.Errorf("ReleaseLane by a non-owner: %v, want no error and no effect", err)
	}
	if ok, _ := s.AcquireLane(ctx, "s", loser, time.Minute); ok {
		t.Errorf("a non-owner's release freed the lane")
	}
	if err := s.ReleaseLane(ctx, "s", winner); err != nil {
		t.Errorf("ReleaseLane by the owner: %v", err)
	}
	if err := s.ReleaseLane(ctx, "s", winner); err != nil {
		t.Errorf("ReleaseLane of a free lane: %v", err)
	}
	if held, err := s.HoldsLane(ctx, "s", winner); held || err != nil {
		t.Errorf("HoldsLane of a free lane = %v, %v; want false", held, err)
	}
	if ok, err := s.AcquireLane(ctx, "s", loser, time.Minute); !ok || err != nil {
		t.Errorf("AcquireLane after release = %v, %v; want true", ok, err)
	}
	if _, err := s.AcquireLane(ctx, "s", "", time.Minute); err == nil {
		t.Errorf("AcquireLane with no owner: no error")
	}
}

func TestLaneExpiry(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	c := &clock{t: time.Now()}
	s.now = c.now

	if ok, err := s.AcquireLane(ctx, "s", "a", time.Minute); !ok || err != nil {
		t.Fatalf("AcquireLane a = %v, %v", ok, err)
	}
	c.add(59 * time.Second)
	if ok, err := s.AcquireLane(ctx, "s", "b", time.Minute); ok || err != nil {
		t.Fatalf("AcquireLane b before expiry = %v, %v; want false", ok, err)
	}
	c.add(2 * time.Second)
	if ok, err := s.AcquireLane(ctx, "s", "b", time.Minute); !ok || err != nil {
		t.Fatalf("AcquireLane b after expiry = %v, %v; want true", ok, err)
	}
	if ok, _ := s.AcquireLane(ctx, "s", "a", time.Minute); ok {
		t.Errorf("AcquireLane a after b took the expired lease = true, want false")
	}
	if err := s.ReleaseLane(ctx, "s", "a"); err != nil {
		t.Errorf("ReleaseLane by the expired owner: %v", err)
	}
	if ok, _ := s.AcquireLane(ctx, "s", "c", time.Minute); ok {
		t.Errorf("the expired owner's release freed b's lane")
	}
	if err := s.ReleaseLane(ctx, "s", "b"); err != nil {
		t.Errorf("ReleaseLane b: %v", err)
	}
	if ok, err := s.AcquireLane(ctx, "s", "c", time.Minute); !ok || err != nil {
		t.Errorf("AcquireLane c after b released = %v, %v; want true", ok, err)
	}
}

func TestOversized(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	if err := s.CreateSession(ctx, store.Session{ID: "s", Agent: "main"}); err != nil {
		t.Fatal(err)
	}
	// Just under the limit is stored...
	fits := store.Message{SessionID: "s", Key: "fits", Message: chat.Message{Role: chat.Tool, Content: strings.Repeat("x", 400*1024-400)}}
	if wrote, err := s.AppendMessage(ctx, fits); !wrote || err != nil {
		t.Fatalf("AppendMessage just under 400 KB = %v, %v", wrote, err)
	}
	got, err := s.GetMessage(ctx, "s", "fits")
	if err != nil || got.Content != fits.Content {
		t.Fatalf("GetMessage of a large message: %v (content equal: %v)", err, got.Content == fits.Content)
	}
	// ...over it is refused before any write, with a clear error.
	big := store.Message{SessionID: "s", Key: "big", Message: chat.Message{Role: chat.Tool, Content: strings.Repeat("x", 400*1024)}}
	wrote, err := s.AppendMessage(ctx, big)
	if !errors.Is(err, ErrItemTooLarge) || !errors.Is(err, store.ErrTooLarge) || wrote {
		t.Fatalf("AppendMessage over 400 KB = %v, %v; want ErrItemTooLarge, a store.ErrTooLarge", wrote, err)
	}
	if !strings.Contains(err.Error(), `message "s"/"big"`) {
		t.Errorf("error %q does not name the message", err)
	}
	if _, err := s.GetMessage(ctx, "s", "big"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetMessage of the refused message: %v, want ErrNotFound", err)
	}

	r, _, err := s.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s", Agent: "main"}, Run: store.Run{ID: "r", State: make([]byte, 401*1024)}})
	if !errors.Is(err, ErrItemTooLarge) {
		t.Errorf("EnqueueRun with a huge state: %v, want ErrItemTooLarge", err)
	}
	r, _, err = s.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s", Agent: "main"}, Run: store.Run{ID: "r", State: []byte(`{}`)}})
	if err != nil || r.Seq != 1 {
		t.Fatalf("EnqueueRun after a refused one = %+v, %v; want seq 1", r, err)
	}
	r.State = make([]byte, 401*1024)
	if err := s.CommitRun(ctx, store.Commit{Run: r}); !errors.Is(err, ErrItemTooLarge) {
		t.Errorf("CommitRun with a huge state: %v, want ErrItemTooLarge", err)
	}
	if err := s.CreateResponse(ctx, store.Response{ID: "resp", SessionID: "s", RunID: "r", Seq: 1, Request: make([]byte, 401*1024)}); !errors.Is(err, ErrItemTooLarge) {
		t.Errorf("CreateResponse with a huge request: %v, want ErrItemTooLarge", err)
	}
	if _, err := s.GetResponse(ctx, "resp"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetResponse of the refused response: %v, want ErrNotFound", err)
	}
}

// partition returns the sort keys of a session's partition.
func partition(t *testing.T, s *Store, sessionID string) []string {
	t.Helper()
	out, err := s.db.Query(t.Context(), &dynamodb.QueryInput{
		TableName:                 s.table,
		ConsistentRead:            aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: item{":pk": attrS(sessionPK(sessionID))},
	})
	if err != nil {
		t.Fatalf("query partition: %v", err)
	}
	var sks []string
	for _, it := range out.Items {
		sks = append(sks, getS(it, attrSK))
	}
	return sks
}

func TestDeleteManyItems(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	if err := s.CreateSession(ctx, store.Session{ID: "s", Agent: "main"}); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := range 60 {
		k := fmt.Sprintf("k%03d", i)
		keys = append(keys, k)
		if _, err := s.AppendMessage(ctx, store.Message{SessionID: "s", Key: k, Message: chat.Message{Role: chat.User, Content: k}}); err != nil {
			t.Fatal(err)
		}
	}
	// 40 keys in one call, some twice, some missing: two batches and a bit.
	del := append(append([]string{}, keys[:40]...), keys[:5]...)
	del = append(del, "missing")
	if err := s.DeleteMessages(ctx, "s", del); err != nil {
		t.Fatalf("DeleteMessages: %v", err)
	}
	msgs, err := s.Messages(ctx, "s")
	if err != nil || len(msgs) != 20 || msgs[0].Key != "k040" {
		t.Fatalf("Messages after DeleteMessages: %d messages, first %v, %v", len(msgs), msgs[0].Key, err)
	}
	for i := range 30 {
		r, _, err := s.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s", Agent: "main"}, Run: store.Run{ID: fmt.Sprintf("r%d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			r.Status = store.RunDone
			if err := s.CommitRun(ctx, store.Commit{Run: r}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 5 {
		a := store.Approval{ID: fmt.Sprintf("a%d", i), SessionID: "s", RunID: "r0", Calls: []string{"c"}, Tools: []string{"shell"}}
		if err := s.CreateApproval(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.AcquireLane(ctx, "s", "me", time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := len(partition(t, s, "s")); n != 20+30+15+5+5+1+1 {
		t.Errorf("partition holds %d items before delete, want 77", n)
	}

	if err := s.DeleteSession(ctx, "s"); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	if sks := partition(t, s, "s"); len(sks) != 0 {
		t.Errorf("partition after DeleteSession: %v", sks)
	}
	for i := range 30 {
		if _, err := s.GetRun(ctx, fmt.Sprintf("r%d", i)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetRun r%d after DeleteSession: %v", i, err)
		}
	}
	if _, err := s.GetApproval(ctx, "a0"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetApproval after DeleteSession: %v", err)
	}
	if ids, err := s.UnfinishedSessions(ctx); err != nil || len(ids) != 0 {
		t.Errorf("UnfinishedSessions after DeleteSession = %v, %v", ids, err)
	}
	if err := s.DeleteSession(ctx, "s"); err != nil {
		t.Errorf("DeleteSession again: %v", err)
	}
}

// TestExpiredSessionLeftovers plays DynamoDB's TTL removing a session item
// and checks that reusing the id starts afresh and that DeleteSession
// cleans up after it.
func TestExpiredSessionLeftovers(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	expire := func(id string) {
		t.Helper()
		if _, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: s.table, Key: key(sessionPK(id), skSession)}); err != nil {
			t.Fatal(err)
		}
	}
	fill := func(id string) {
		t.Helper()
		if err := s.CreateSession(ctx, store.Session{ID: id, Agent: "main", Allowlist: []string{"shell"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendMessage(ctx, store.Message{SessionID: id, Key: "k", Message: chat.Message{Role: chat.User, Content: "old"}}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: id, Agent: "main"}, Run: store.Run{ID: id + "-r1"}}); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateApproval(ctx, store.Approval{ID: id + "-a1", SessionID: id, RunID: id + "-r1"}); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateResponse(ctx, store.Response{ID: id + "-resp1", SessionID: id, RunID: id + "-r1", Seq: 1}); err != nil {
			t.Fatal(err)
		}
	}

	fill("s")
	expire("s")
	if _, err := s.GetSession(ctx, "s"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetSession of an expired session: %v", err)
	}
	if err := s.CreateSession(ctx, store.Session{ID: "s", Agent: "main"}); err != nil {
		t.Fatalf("CreateSession reusing an expired id: %v", err)
	}
	if sks := partition(t, s, "s"); !cmp.Equal(sks, []string{skSession}) {
		t.Errorf("partition of the new session = %v, want only SESSION", sks)
	}
	if _, err := s.GetRun(ctx, "s-r1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetRun of the expired session's run: %v", err)
	}
	if _, err := s.GetResponse(ctx, "s-resp1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetResponse of the expired session's response: %v", err)
	}
	r, _, err := s.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s", Agent: "main"}, Run: store.Run{ID: "s-r2"}})
	if err != nil || r.Seq != 1 {
		t.Errorf("EnqueueRun in the new session = seq %d, %v; want 1", r.Seq, err)
	}
	sess, err := s.GetSession(ctx, "s")
	if err != nil || len(sess.Allowlist) != 0 {
		t.Errorf("GetSession of the new session = %+v, %v", sess, err)
	}

	fill("t")
	expire("t")
	if err := s.DeleteSession(ctx, "t"); err != nil {
		t.Fatalf("DeleteSession of an expired session: %v", err)
	}
	if sks := partition(t, s, "t"); len(sks) != 0 {
		t.Errorf("partition after DeleteSession of an expired session: %v", sks)
	}
	if _, err := s.GetApproval(ctx, "t-a1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetApproval of the expired session's approval: %v", err)
	}
	if _, err := s.GetResponse(ctx, "t-resp1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetResponse of the expired session's response: %v", err)
	}
}

// expiries scans the table and returns every item's expires_at by
// "pk sk" (0 for an item without one).
func expiries(t *testing.T, s *Store) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	p := dynamodb.NewScanPaginator(s.db, &dynamodb.ScanInput{TableName: s.table, ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			out[getS(it, attrPK)+" "+getS(it, attrSK)] = getN(it, attrExpiresAt)
		}
	}
	return out
}

// fillSession writes one of everything a session has: a run with its
// input, a step's commit with messages, pending calls and a job, a message
// appended on its own, an approval, a response and the lane.
func fillSession(t *testing.T, s *Store, id string) {
	t.Helper()
	ctx := t.Context()
	r, _, err := s.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: id, Agent: "main", Allowlist: []string{"shell"}},
		Run: store.Run{ID: id + "-r1", State: []byte(`{}`)}, Input: []chat.Message{{Role: chat.User, Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	r.Status, r.State = store.RunRunning, []byte(`{"step":"act"}`)
	if err := s.CommitRun(ctx, store.Commit{Run: r,
		Messages: []store.Message{{SessionID: id, Key: store.RunPrefix(r.Seq) + "b", Message: chat.Message{Role: chat.Assistant, Content: "calling"}}},
		Calls:    []chat.ToolCall{{ID: "c1", Name: "shell"}},
		Jobs:     []store.Job{{Kind: "record", ID: id + "-j1", Payload: []byte("x")}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendMessage(ctx, store.Message{SessionID: id, Key: store.RunPrefix(r.Seq) + "c", Message: chat.Message{Role: chat.Tool, Content: "ok", ToolCallID: "c1"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateApproval(ctx, store.Approval{ID: id + "-a1", SessionID: id, RunID: r.ID}); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateResponse(ctx, store.Response{ID: id + "-resp1", SessionID: id, RunID: r.ID, Seq: r.Seq}); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.AcquireLane(ctx, id, r.ID, time.Hour); err != nil || !ok {
		t.Fatalf("AcquireLane = %v, %v", ok, err)
	}
}

// TestSessionExpiry checks that every item written for a session carries
// expires_at, that a use of the session a tenth of SessionTTL after the
// last move moves every item's expiry, and that a session reused after it
// expired, before DynamoDB removed it, starts afresh.
func TestSessionExpiry(t *testing.T) {
	const ttl = 10 * time.Hour
	s, c := newClockedStore(t, ttl)
	ctx := t.Context()
	start := c.now()
	fillSession(t, s, "s")

	// Every item carries expires_at: the session's TTL ahead, but the
	// lane (an hour past its lease) and the pending calls (8 days at
	// least, longer than an approval wait).
	want := start.Add(ttl).Unix()
	special := map[string]int64{
		"SESSION#s LANE": start.Add(2 * time.Hour).Unix(),
		"RUN#s-r1 CALLS": start.Add(pendingCallsTTL).Unix(),
	}
	got := expiries(t, s)
	for _, k := range []string{"SESSION#s SESSION", "SESSION#s QUEUE#00000000000000000001", "SESSION#s RUN#00000000000000000001",
		"RUN#s-r1 RUN", "RUN#s-r1 CALLS", "JOB#record J#s-j1", "APPROVAL#s-a1 APPROVAL", "RESPONSE#s-resp1 RESPONSE",
		"SESSION#s APPR#s-a1", "SESSION#s RESP#s-resp1", "SESSION#s LANE"} {
		if _, ok := got[k]; !ok {
			t.Errorf("no item %s: the test's list of items is stale", k)
		}
	}
	for k, exp := range got {
		w, ok := special[k]
		if !ok {
			w = want
		}
		if exp != w {
			t.Errorf("%s: expires_at %d, want %d", k, exp, w)
		}
	}
	msgs := 0
	for k := range got {
		if strings.HasPrefix(k, "SESSION#s MSG#") {
			msgs++
		}
	}
	if msgs != 3 {
		t.Errorf("%d messages, want 3", msgs)
	}

	// Within a tenth of the TTL, a use moves nothing but writes new items
	// with their own expiry.
	c.add(ttl / 20)
	if _, err := s.AppendMessage(ctx, store.Message{SessionID: "s", Key: "k2", Message: chat.Message{Role: chat.User, Content: "more"}}); err != nil {
		t.Fatal(err)
	}
	got = expiries(t, s)
	if got["SESSION#s SESSION"] != want || got["SESSION#s MSG#k2"] != c.now().Add(ttl).Unix() {
		t.Errorf("after a use within a tenth of the TTL: session expires %d (want %d), the new message %d (want %d)",
			got["SESSION#s SESSION"], want, got["SESSION#s MSG#k2"], c.now().Add(ttl).Unix())
	}

	// Later, the next use moves every item of the session.
	c.add(ttl / 5)
	r2, _, err := s.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s", Agent: "main"}, Run: store.Run{ID: "s-r2"}})
	if err != nil {
		t.Fatal(err)
	}
	want = c.now().Add(ttl).Unix()
	for k, exp := range expiries(t, s) {
		switch {
		case k == "SESSION#s LANE" || k == "JOB#record J#s-j1":
			// The lane follows its lease; a job is no part of the
			// session's partition and is consumed long before.
		case k == "RUN#s-r1 CALLS":
			if exp != special[k] {
				t.Errorf("%s: expires_at %d, want %d (never earlier than it was)", k, exp, special[k])
			}
		case exp != want:
			t.Errorf("after a use: %s expires_at %d, want %d", k, exp, want)
		}
	}

	// Past its expiry, before DynamoDB removed it, a new run starts the
	// session afresh; what a concurrent use wrote since the expiry stays.
	c.add(ttl + time.Minute)
	if err := s.CreateResponse(ctx, store.Response{ID: "s-resp2", SessionID: "s", RunID: "s-r3", Seq: 3}); err != nil {
		t.Fatal(err)
	}
	r3, _, err := s.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s", Agent: "main"}, Run: store.Run{ID: "s-r3"},
		Input: []chat.Message{{Role: chat.User, Content: "back again"}}})
	if err != nil {
		t.Fatal(err)
	}
	hist, err := s.Messages(ctx, "s")
	if err != nil || len(hist) != 1 || hist[0].Content != "back again" {
		t.Errorf("history of the session started afresh: %+v, %v; want only the new input", hist, err)
	}
	for _, id := range []string{"s-r1", r2.ID} {
		if _, err := s.GetRun(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetRun(%s) of the expired session: %v, want ErrNotFound", id, err)
		}
	}
	if _, err := s.GetApproval(ctx, "s-a1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetApproval of the expired session: %v, want ErrNotFound", err)
	}
	if _, err := s.GetResponse(ctx, "s-resp2"); err != nil {
		t.Errorf("GetResponse of what was written after the expiry: %v", err)
	}
	if next, err := s.NextRun(ctx, "s"); err != nil || next.ID != r3.ID {
		t.Errorf("NextRun = %s, %v; want the new run", next.ID, err)
	}
	sess, err := s.GetSession(ctx, "s")
	if err != nil || len(sess.Allowlist) != 0 {
		t.Errorf("session started afresh: %+v, %v; want no allowlist", sess, err)
	}
	if exp := expiries(t, s)["SESSION#s SESSION"]; exp != c.now().Add(ttl).Unix() {
		t.Errorf("expires_at of the session started afresh = %d, want %d", exp, c.now().Add(ttl).Unix())
	}

	if _, err := s.AppendMessage(ctx, store.Message{SessionID: "nope", Key: "k"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AppendMessage to an unknown session: %v, want ErrNotFound", err)
	}
	if sks := partition(t, s, "nope"); len(sks) != 0 {
		t.Errorf("AppendMessage to an unknown session wrote %v", sks)
	}
}

// TestSessionsThatNeverExpire: with a negative SessionTTL, no item of a
// session expires but the lane and the pending calls of a lost run.
func TestSessionsThatNeverExpire(t *testing.T) {
	client := testClient(t)
	s, err := New(t.Context(), Config{Table: newTable(t, client), Client: client, SessionTTL: -1})
	if err != nil {
		t.Fatal(err)
	}
	fillSession(t, s, "s")
	for k, exp := range expiries(t, s) {
		if (exp != 0) != (k == "SESSION#s LANE" || k == "RUN#s-r1 CALLS") {
			t.Errorf("%s: expires_at %d", k, exp)
		}
	}
}

// TestStaleMarkers plays a crash between a run's or an approval's update
// and the removal of its marker.
func TestStaleMarkers(t *testing.T) {
	s := newStore(t)
	ctx := t.Context()
	if err := s.CreateSession(ctx, store.Session{ID: "s", Agent: "main"}); err != nil {
		t.Fatal(err)
	}
	r1, _, _ := s.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s", Agent: "main"}, Run: store.Run{ID: "r1"}})
	r2, _, _ := s.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s", Agent: "main"}, Run: store.Run{ID: "r2"}})
	r1.Status = store.RunDone
	if err := s.CommitRun(ctx, store.Commit{Run: r1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: s.table, Item: queueMarker(r1)}); err != nil {
		t.Fatal(err)
	}
	got, err := s.NextRun(ctx, "s")
	if err != nil || got.ID != r2.ID {
		t.Errorf("NextRun past a stale marker = %s, %v; want r2", got.ID, err)
	}
	for _, sk := range partition(t, s, "s") {
		if sk == pfxQueue+seqKey(1) {
			t.Errorf("stale queue marker %s not dropped", sk)
		}
	}

	a := store.Approval{ID: "a1", SessionID: "s", RunID: "r2", CreatedAt: time.Now()}
	if err := s.CreateApproval(ctx, a); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResolveApproval(ctx, "a1", store.ApprovalApproved, "yes", time.Now()); err != nil {
		t.Fatal(err)
	}
	marker := key(sessionPK("s"), pendingSK(store.Approval{ID: "a1", CreatedAt: orNow(a.CreatedAt, time.Time{})}))
	marker["approval_id"] = attrS("a1")
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: s.table, Item: marker}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PendingApproval(ctx, "s"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("PendingApproval with only a stale marker: %v, want ErrNotFound", err)
	}
	for _, sk := range partition(t, s, "s") {
		if strings.HasPrefix(sk, pfxPending) {
			t.Errorf("stale pending marker %s not dropped", sk)
		}
	}
}

// TestCreated checks that a Store knows when its table was created, the
// same time for every Store on it.
func TestCreated(t *testing.T) {
	client := testClient(t)
	name := newTable(t, client)
	out, err := client.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	want := aws.ToTime(out.Table.CreationDateTime)
	if want.IsZero() {
		t.Fatal("DescribeTable gives no creation time")
	}
	for i := range 2 {
		s, err := New(t.Context(), Config{Table: name, Client: client})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		if got := s.Created(); !got.Equal(want) {
			t.Errorf("store %d: Created = %v, want %v", i, got, want)
		}
	}
}

func TestDrafts(t *testing.T) {
	storetest.RunDrafts(t, func(t *testing.T) store.Drafts { return newStore(t) })
}

// New asks DynamoDB nothing (a cold start makes no request it does not
// need); Check does, and says which table it could not read.
func TestNewAsksNothing(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "local")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "local")
	t.Setenv("AWS_REGION", "us-east-1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + ln.Addr().String()
	ln.Close() // nothing answers there
	s, err := New(t.Context(), Config{Table: "absent", Endpoint: endpoint})
	if err != nil {
		t.Fatalf("New = %v, want no error without a request", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := s.Check(ctx); err == nil || !strings.Contains(err.Error(), `dynamo: table "absent"`) {
		t.Errorf("Check = %v, want the table named", err)
	}
}

// newClockedStore is a store on a new table whose sessions live ttl, on
// the test's clock c.
func newClockedStore(t *testing.T, ttl time.Duration) (s *Store, c *clock) {
	t.Helper()
	client := testClient(t)
	s, err := New(t.Context(), Config{Table: newTable(t, client), Client: client, SessionTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	c = &clock{t: time.Unix(1_800_000_000, 0)}
	s.now = c.now
	return s, c
}

// TestChannelSessionIndex: the CHANNELIDX item that lists a channel
// identity's session (ChannelSessions) expires with the session, moves
// with it, is back when the session starts afresh after its expiry, and
// goes when it is deleted.
func TestChannelSessionIndex(t *testing.T) {
	const ttl = 10 * time.Hour
	s, c := newClockedStore(t, ttl)
	ctx := t.Context()
	run := func(id string) {
		t.Helper()
		n := store.NewRun{Session: store.Session{ID: "s", Agent: "main", Owner: "slack:T1:U1", Channel: "slack"}, Run: store.Run{ID: id}}
		if _, _, err := s.EnqueueRun(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	listed := func(what string) {
		t.Helper()
		list, err := s.ChannelSessions(ctx, "slack", 10)
		if err != nil || len(list) != 1 || list[0].ID != "s" || list[0].Owner != "slack:T1:U1" {
			t.Errorf("%s: ChannelSessions = %+v, %v; want the session", what, list, err)
		}
		got := expiries(t, s)
		if got["SESSION#s CHANNELIDX"] != got["SESSION#s SESSION"] {
			t.Errorf("%s: the index expires at %d, the session at %d", what, got["SESSION#s CHANNELIDX"], got["SESSION#s SESSION"])
		}
	}
	run("r1")
	listed("created")
	c.add(ttl / 5)
	run("r2")
	listed("used later")
	c.add(ttl + time.Minute)
	run("r3")
	listed("started afresh")
	if err := s.DeleteSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if list, err := s.ChannelSessions(ctx, "slack", 10); err != nil || len(list) != 0 {
		t.Errorf("after DeleteSession: %+v, %v", list, err)
	}
}

func TestPII(t *testing.T) {
	storetest.RunPII(t, func(t *testing.T) storetest.PIIStore { return newStore(t) })
}

func TestBudgets(t *testing.T) {
	storetest.RunBudgets(t, func(t *testing.T) store.Budgets { return newStore(t) })
}
