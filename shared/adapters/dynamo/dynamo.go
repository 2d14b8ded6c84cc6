// Package dynamo is the store.Store of the AWS deployment: every record in
// one DynamoDB table, single-table style. It passes the same conformance
// suite (storetest) as the embedded sqlite store, run against DynamoDB
// Local, and adds the session lane lease the Step Functions driver needs.
// Its MemoryIndex is the deployment's memory.Index (memory.go), searched
// in the function's process (memsearch.go) or through OpenSearch; it
// passes memorytest as the embedded one does.
//
// # Table
//
// The table has a partition key pk (S), a sort key sk (S), one global
// secondary index gsi1 on gsi1pk (S) and gsi1sk (S) projecting ALL, TTL on
// expires_at (epoch seconds) and on-demand capacity. CreateTable makes it
// so; the CDK stack must make the same.
//
// # Items
//
//	pk                  sk                    what                          other attributes
//	SESSION#<sid>       SESSION               the session                   agent, owner, ephemeral, allowlist (SS), next_seq, expires_at; gsi1pk OWNER#<owner>, gsi1sk <created ms:015>#<sid> (not for ephemeral sessions)
//	SESSION#<sid>       MSG#<key>             a history message             run_id, role, content, tool_calls (JSON), …, expires_at
//	SESSION#<sid>       RUN#<seq:020>         index of a run                run_id, expires_at
//	SESSION#<sid>       QUEUE#<seq:020>       marker of an unfinished run   run_id, expires_at; gsi1pk UNFINISHED#<0-7>, gsi1sk <sid>#<seq:020>
//	SESSION#<sid>       APPR#<id>             index of an approval          approval_id, expires_at
//	SESSION#<sid>       PENDING#<ms:015>#<id> marker of a pending approval  approval_id, expires_at
//	SESSION#<sid>       RESP#<id>             index of a response           response_id, expires_at
//	SESSION#<sid>       LANE                  the session lane lease        owner, lease_until (ms), expires_at
//	SESSION#<sid>       CHANNELIDX            index of a channel identity's session: id, agent, owner, channel, created_at, expires_at; gsi1pk CHSESSIONS#<channel>, gsi1sk <created ms:015>#<sid>
//	RUN#<id>            RUN                   a run                         session_id, seq, status, state (B), expires_at; inline: holder, lease_until (ms), lease (drivers.go)
//	RUN#<id>            CALLS                 its pending tool calls        calls (JSON, raw arguments), started (SS, StartCall), expires_at
//	RUN#<id>            DRAFT#<n:06>          piece n of its streamed text  text, expires_at (a day)
//	JOB#<kind>          J#<id>                a queued job                  payload (B), created_at, expires_at
//	APPROVAL#<id>       APPROVAL              an approval                   session_id, run_id, calls, tools, status, token, …, expires_at
//	RESPONSE#<id>       RESPONSE              a Responses API response      owner, agent, session_id, run_id, seq, previous_id, request (B), expires_at
//	KEY#<hash>          KEY                   an API key                    id, name, …; gsi1pk KEYS, gsi1sk <created ms:015>#<id>
//	KEYID#<id>          KEYID                 claim of a key id             hash
//	CONN#<id>           CONN                  a WebSocket connection        key_hash, joined (SS of WSUSER# partitions, connections.go), expires_at
//	WSUSER#<owner>#<sid> CONN#<id>            a connection of a user        conn, expires_at: the index check-ins to ws:<user> read
//	TG…#<id>            TG…                   the Telegram channel's state  see telegram.go (seen updates, outbox, users, codes)
//	MEM#<agent>         ENTRY#<key>           an agent-wide memory          agent, key, text, category, source, created_at, updated_at, chunks (L of M: seq, text, vec B)
//	MEM#<agent>         OWNED#…#<key>         an owner's memory (memory.go) owner, and the same as above
//	MEM#<agent>         LOG#…#HEAD            head of a memory space        ver, its last version (memory.go)
//	MEM#<agent>         LOG#…#<ver:020>       change ver of a memory space  keys, expires_at (a day on)
//	CRON#<owner>        JOB#<id>              a scheduled check-in's job    def (B), paused, next_at, created_at, updated_at (schedule.go)
//	CRON#<owner>        RUN#<id>#<ms:015>     the run of one of its firings status, lease_until, reply, tokens, …, expires_at
//	CRONID#<id>         CRONID                the claim of a job id         owner
//	BUDGET#<scope>      <window>              a token budget's counter      spent (ADD, conditional: budgets.go), notified, expires_at (the window's end)
//
// Times are epoch milliseconds (N), read back in UTC.
//
// Everything about one session that must be read consistently lives in its
// partition, so the history, the next run (the first QUEUE# marker) and the
// pending approval (the first PENDING# marker) are strongly consistent
// Queries with no filter. Runs, approvals and responses have their own
// items because the port addresses them by id alone; their ids are unique
// table-wide by conditional put, and their index items in the session's
// partition (RUN#, APPR#, RESP#) let DeleteSession find them. The QUEUE#
// markers are in gsi1 besides keys and sessions: a sparse index of
// unfinished runs, spread over eight partitions, that UnfinishedSessions
// reads (eventually consistent, as the recovery after a restart can be).
// ListKeys reads gsi1 too, and SessionsOf lists an owner's sessions there
// (the web console), ChannelSessions a messaging channel's.
//
// A marker is removed after its run finishes or its approval is answered;
// a crash between the two writes leaves a stale marker, which NextRun and
// PendingApproval delete when they meet it.
//
// # Expiry
//
// Every item written for a session — the SESSION item, its partition,
// and its RUN, CALLS, APPROVAL, RESPONSE and JOB items — carries
// expires_at (epoch seconds), SessionTTL after it was written, so that
// DynamoDB's TTL removes a session left idle, history and all. The
// SESSION item's expires_at is the session's expiry: no item of the
// session expires before it. A use of the session (EnqueueRun,
// AppendMessage) more than a tenth of SessionTTL after the expiry last
// moved moves it again: every item's expires_at, then the SESSION
// item's, becomes SessionTTL from now (one UpdateItem per item, a tenth
// of SessionTTL apart at most). So a session lives from nine tenths of
// SessionTTL to SessionTTL after its last use, and its items go
// together. DynamoDB removes expired items within days, not at once: a
// new run in a session that has expired but is still there starts it
// afresh (the items that expired and the allowlist are deleted first), as
// CreateSession does for the leftovers of a session whose SESSION item is
// gone.
// DeleteSession removes a session at once, with or without its SESSION
// item. The LANE item expires an hour after its lease; pending calls live
// at least 8 days, longer than a run waits for an approval.
//
// Memories never expire, nor do the heads of memory spaces: a head that
// went away would restart its space's versions under the copies that
// processes keep for search (memsearch.go). Only the change items of
// memory spaces carry expires_at.
//
// # Limits
//
// An item holds at most 400 KB: a message, run state, approval, response
// or key over it is refused with an error wrapping ErrItemTooLarge before
// any write. Batches and transactions hold at most 25 items; DeleteSession
// and DeleteMessages split their work accordingly.
package dynamo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// DefaultSessionTTL is how long an idle session lives when Config.SessionTTL
// is zero.
const DefaultSessionTTL = 90 * 24 * time.Hour

// ErrItemTooLarge is wrapped by the error for a record that does not fit in
// one DynamoDB item (400 KB); it wraps store.ErrTooLarge.
var ErrItemTooLarge = fmt.Errorf("item over DynamoDB's 400 KB limit: %w", store.ErrTooLarge)

// Config says which table to use and how to reach it.
type Config struct {
	// Table is the table name (env TABLE_NAME in the Lambda functions).
	Table string
	// Endpoint overrides the DynamoDB endpoint, for DynamoDB Local. With an
	// endpoint and no AWS_ACCESS_KEY_ID in the environment, dummy
	// credentials are used: DynamoDB Local accepts any.
	Endpoint string
	// Region is the AWS region; empty means the environment's
	// (AWS_REGION, AWS_DEFAULT_REGION), or us-east-1 with an Endpoint.
	Region string
	// SessionTTL is how long a session's items live after its last
	// activity before DynamoDB's TTL removes them (see Expiry in the
	// package doc). Zero means DefaultSessionTTL; negative means sessions
	// never expire.
	SessionTTL time.Duration
	// Client, when set, is used as is and Endpoint and Region are ignored.
	Client *dynamodb.Client
}

// ConfigFromEnv reads the configuration of the Lambda functions: TABLE_NAME,
// DYNAMODB_ENDPOINT (optional), AWS_REGION (optional) and SESSION_TTL (a Go
// duration, optional).
func ConfigFromEnv() (Config, error) {
	cfg := Config{
		Table:    os.Getenv("TABLE_NAME"),
		Endpoint: os.Getenv("DYNAMODB_ENDPOINT"),
		Region:   os.Getenv("AWS_REGION"),
	}
	if v := os.Getenv("SESSION_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return Config{}, fmt.Errorf("dynamo: SESSION_TTL: %w", err)
		}
		cfg.SessionTTL = d
	}
	if cfg.Table == "" {
		return Config{}, errors.New("dynamo: TABLE_NAME is not set")
	}
	return cfg, nil
}

// Store is a store.Store on one DynamoDB table. It is safe for concurrent
// use, also by many processes at once.
type Store struct {
	db    *dynamodb.Client
	table *string
	ttl   time.Duration
	now   func() time.Time
	// created is when the table was created, once DescribeTable said.
	createdMu sync.Mutex
	created   time.Time
}

var _ store.Store = (*Store)(nil)

// New returns a Store on cfg.Table. It neither creates the table nor
// calls DynamoDB: a function's cold start makes no request it does not
// need.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Table == "" {
		return nil, errors.New("dynamo: no table name")
	}
	client := cfg.Client
	if client == nil {
		var err error
		client, err = NewClient(cfg.Endpoint, cfg.Region)
		if err != nil {
			return nil, err
		}
	}
	ttl := cfg.SessionTTL
	if ttl == 0 {
		ttl = DefaultSessionTTL
	}
	return &Store{db: client, table: aws.String(cfg.Table), ttl: ttl, now: time.Now}, nil
}

// Check asks DynamoDB for the table (DescribeTable): an error says that
// it does not exist or cannot be read. It also learns Created.
func (s *Store) Check(ctx context.Context) error {
	s.createdMu.Lock()
	defer s.createdMu.Unlock()
	return s.describe(ctx)
}

// describe reads the table's creation time; createdMu is held.
func (s *Store) describe(ctx context.Context) error {
	out, err := s.db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: s.table})
	if err != nil {
		return fmt.Errorf("dynamo: table %q: %w", *s.table, err)
	}
	if out.Table != nil && out.Table.CreationDateTime != nil {
		s.created = *out.Table.CreationDateTime
	}
	return nil
}

// Created returns when the table was created, asking DynamoDB the first
// time (within 5 s); the zero time when it did not say, and then it asks
// again next time.
func (s *Store) Created() time.Time {
	s.createdMu.Lock()
	defer s.createdMu.Unlock()
	if s.created.IsZero() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.describe(ctx) // the zero time says it failed
	}
	return s.created
}

// NewClient returns a DynamoDB client with the environment's AWS
// configuration (awsapi.EnvConfig: a Lambda function's credentials and
// Region), pointed at endpoint when it is not empty (DynamoDB Local,
// which takes any credentials: "local" when none are set).
func NewClient(endpoint, region string) (*dynamodb.Client, error) {
	awsCfg, err := awsapi.EnvConfig(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("dynamo: %w", err)
	}
	if region != "" {
		awsCfg.Region = region
	}
	if endpoint != "" {
		if awsCfg.Region == "" {
			awsCfg.Region = "us-east-1"
		}
		if awsCfg.Credentials == nil {
			awsCfg.Credentials = credentials.NewStaticCredentialsProvider("local", "local", "")
		}
	}
	return dynamodb.NewFromConfig(awsCfg, endpoint), nil
}

// Close implements store.Store. The client holds nothing to release.
func (s *Store) Close() error { return nil }

// CreateTable creates the table lambdaclaw uses, with the schema the CDK
// stack declares (see the package doc), and waits until it is active:
// pk/sk strings, the gsi1 index projecting ALL, on-demand billing, a
// NEW_AND_OLD_IMAGES stream and TTL on expires_at.
func CreateTable(ctx context.Context, client *dynamodb.Client, name string) error {
	str := dynamodb.ScalarAttributeTypeS
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: dynamodb.BillingModePayPerRequest,
		AttributeDefinitions: []dynamodb.AttributeDefinition{
			{AttributeName: aws.String(attrPK), AttributeType: str},
			{AttributeName: aws.String(attrSK), AttributeType: str},
			{AttributeName: aws.String(attrGSI1PK), AttributeType: str},
			{AttributeName: aws.String(attrGSI1SK), AttributeType: str},
		},
		KeySchema: []dynamodb.KeySchemaElement{
			{AttributeName: aws.String(attrPK), KeyType: dynamodb.KeyTypeHash},
			{AttributeName: aws.String(attrSK), KeyType: dynamodb.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []dynamodb.GlobalSecondaryIndex{{
			IndexName: aws.String(indexGSI1),
			KeySchema: []dynamodb.KeySchemaElement{
				{AttributeName: aws.String(attrGSI1PK), KeyType: dynamodb.KeyTypeHash},
				{AttributeName: aws.String(attrGSI1SK), KeyType: dynamodb.KeyTypeRange},
			},
			Projection: &dynamodb.Projection{ProjectionType: dynamodb.ProjectionTypeAll},
		}},
		StreamSpecification: &dynamodb.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: dynamodb.StreamViewTypeNewAndOldImages,
		},
	})
	if err != nil {
		return fmt.Errorf("dynamo: create table %q: %w", name, err)
	}
	if err := waitActive(ctx, client, name); err != nil {
		return err
	}
	_, err = client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName: aws.String(name),
		TimeToLiveSpecification: &dynamodb.TimeToLiveSpecification{
			AttributeName: aws.String(attrExpiresAt),
			Enabled:       aws.Bool(true),
		},
	})
	if err != nil {
		return fmt.Errorf("dynamo: enable TTL on %q: %w", name, err)
	}
	return nil
}

// waitActive polls until the table and its index are ACTIVE. The SDK's
// waiter sleeps 20 s between polls, far too long for DynamoDB Local.
func waitActive(ctx context.Context, client *dynamodb.Client, name string) error {
	delay := 50 * time.Millisecond
	deadline := time.Now().Add(5 * time.Minute)
	for {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("dynamo: wait for table %q: %w", name, err)
		}
		active := out.Table.TableStatus == dynamodb.TableStatusActive
		for _, g := range out.Table.GlobalSecondaryIndexes {
			active = active && g.IndexStatus == dynamodb.IndexStatusActive
		}
		if active {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dynamo: table %q is still %s", name, out.Table.TableStatus)
		}
		if err := sleep(ctx, delay); err != nil {
			return fmt.Errorf("dynamo: wait for table %q: %w", name, err)
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Attribute and index names.
const (
	attrPK        = "pk"
	attrSK        = "sk"
	attrGSI1PK    = "gsi1pk"
	attrGSI1SK    = "gsi1sk"
	attrExpiresAt = "expires_at"
	indexGSI1     = "gsi1"
)

// Key prefixes and fixed sort keys; see the package doc.
const (
	pfxSession  = "SESSION#"
	pfxMsg      = "MSG#"
	pfxRunIndex = "RUN#"
	pfxQueue    = "QUEUE#"
	pfxApprIdx  = "APPR#"
	pfxPending  = "PENDING#"
	pfxRespIdx  = "RESP#"
	pfxRun      = "RUN#"
	pfxApproval = "APPROVAL#"
	pfxResponse = "RESPONSE#"
	pfxKey      = "KEY#"
	pfxKeyID    = "KEYID#"
	pfxJob      = "JOB#"
	pfxJobID    = "J#"
	// pfxOwner is the gsi1 partition of an owner's sessions.
	pfxOwner = "OWNER#"
	// pfxChannelSessions is the gsi1 partition of the sessions of a
	// messaging channel's identities, indexed by their CHANNELIDX item.
	pfxChannelSessions = "CHSESSIONS#"

	skSession  = "SESSION"
	skChIdx    = "CHANNELIDX"
	skLane     = "LANE"
	skRun      = "RUN"
	skCalls    = "CALLS"
	skApproval = "APPROVAL"
	skResponse = "RESPONSE"
	skKey      = "KEY"
	skKeyID    = "KEYID"

	gsiKeys = "KEYS"
	// gsiUnfinished prefixes the partitions of unfinished-run markers in
	// gsi1, spread over unfinishedShards so no one index partition is hot.
	gsiUnfinished    = "UNFINISHED#"
	unfinishedShards = 8
)

// item is one DynamoDB item.
type item = map[string]dynamodb.AttributeValue

// key returns the primary key of an item.
func key(pk, sk string) item { return item{attrPK: attrS(pk), attrSK: attrS(sk)} }

func sessionPK(id string) string { return pfxSession + id }

// seqKey formats a run's seq so that strings sort like numbers.
func seqKey(seq int64) string { return fmt.Sprintf("%020d", seq) }

// msKey formats a time so that strings sort like times.
func msKey(t time.Time) string { return fmt.Sprintf("%015d", t.UnixMilli()) }

// shard returns the gsi1 partition of a session's unfinished-run markers.
func shard(sessionID string) string {
	var h uint32 = 2166136261 // FNV-1a
	for i := 0; i < len(sessionID); i++ {
		h ^= uint32(sessionID[i])
		h *= 16777619
	}
	return gsiUnfinished + strconv.Itoa(int(h%unfinishedShards))
}

func attrS(v string) dynamodb.AttributeValue { return &dynamodb.AttributeValueMemberS{Value: v} }

func attrN(v int64) dynamodb.AttributeValue {
	return &dynamodb.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

func attrBool(v bool) dynamodb.AttributeValue { return &dynamodb.AttributeValueMemberBOOL{Value: v} }

// attrSS stores a string set; v must not be empty.
func attrSS(v []string) dynamodb.AttributeValue { return &dynamodb.AttributeValueMemberSS{Value: v} }

func attrTime(t time.Time) dynamodb.AttributeValue { return attrN(t.UnixMilli()) }

// attrList stores an ordered string list.
func attrList(v []string) dynamodb.AttributeValue {
	l := make([]dynamodb.AttributeValue, len(v))
	for i, s := range v {
		l[i] = attrS(s)
	}
	return &dynamodb.AttributeValueMemberL{Value: l}
}

func getS(it item, name string) string {
	if v, ok := it[name].(*dynamodb.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getN(it item, name string) int64 {
	if v, ok := it[name].(*dynamodb.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

func getB(it item, name string) []byte {
	if v, ok := it[name].(*dynamodb.AttributeValueMemberB); ok {
		return v.Value
	}
	return nil
}

func getBool(it item, name string) bool {
	v, ok := it[name].(*dynamodb.AttributeValueMemberBOOL)
	return ok && v.Value
}

func getTime(it item, name string) time.Time { return time.UnixMilli(getN(it, name)).UTC() }

// getTimePtr returns nil when the attribute is absent.
func getTimePtr(it item, name string) *time.Time {
	if _, ok := it[name]; !ok {
		return nil
	}
	t := getTime(it, name)
	return &t
}

// getList reads a string list stored as L, or a string set (SS).
func getList(it item, name string) []string {
	switch v := it[name].(type) {
	case *dynamodb.AttributeValueMemberL:
		out := make([]string, 0, len(v.Value))
		for _, e := range v.Value {
			if s, ok := e.(*dynamodb.AttributeValueMemberS); ok {
				out = append(out, s.Value)
			}
		}
		return out
	case *dynamodb.AttributeValueMemberSS:
		return v.Value
	}
	return nil
}

// orNow returns t, or now when t is zero, at the stored precision in UTC.
func orNow(t, now time.Time) time.Time {
	if t.IsZero() {
		t = now
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}

// maxItemBytes is DynamoDB's item size limit.
const maxItemBytes = 400 * 1024

// checkSize refuses an item DynamoDB would reject, with an error that says
// what and by how much.
func checkSize(what string, it item) error {
	if n := itemSize(it); n > maxItemBytes {
		return fmt.Errorf("dynamo: %s is %d bytes: %w", what, n, ErrItemTooLarge)
	}
	return nil
}

// itemSize estimates an item's size the way DynamoDB counts it: names plus
// values, numbers at their widest.
func itemSize(it item) int {
	n := 0
	for name, v := range it {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v dynamodb.AttributeValue) int {
	switch v := v.(type) {
	case *dynamodb.AttributeValueMemberS:
		return len(v.Value)
	case *dynamodb.AttributeValueMemberN:
		return 21
	case *dynamodb.AttributeValueMemberB:
		return len(v.Value)
	case *dynamodb.AttributeValueMemberBOOL, *dynamodb.AttributeValueMemberNULL:
		return 1
	case *dynamodb.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *dynamodb.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *dynamodb.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// condFailed reports whether err is a failed condition of a single-item
// write, and returns the item as it was when DynamoDB sent it back.
func condFailed(err error) (item, bool) {
	var e *dynamodb.ConditionalCheckFailedException
	if errors.As(err, &e) {
		return e.Item, true
	}
	return nil, false
}

// canceledAt reports which items of a canceled transaction failed their
// condition; ok is false when err is not a cancellation.
func canceledAt(err error) (failed []bool, ok bool) {
	var e *dynamodb.TransactionCanceledException
	if !errors.As(err, &e) {
		return nil, false
	}
	failed = make([]bool, len(e.CancellationReasons))
	for i, r := range e.CancellationReasons {
		failed[i] = aws.ToString(r.Code) == "ConditionalCheckFailed"
	}
	return failed, true
}

// transact runs a write transaction, retrying when it lost to another
// transaction on the same items (reason TransactionConflict). A failed
// condition comes back as the TransactionCanceledException for canceledAt.
func (s *Store) transact(ctx context.Context, items []dynamodb.TransactWriteItem) error {
	var err error
	for attempt := range 8 {
		_, err = s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		var e *dynamodb.TransactionCanceledException
		if !errors.As(err, &e) {
			return err
		}
		conflict := false
		for _, r := range e.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "TransactionConflict":
				conflict = true
			case "", "None":
			default:
				return err
			}
		}
		if !conflict {
			return err
		}
		if err := sleep(ctx, backoff(attempt)); err != nil {
			return err
		}
	}
	return err
}

// backoff is the jittered wait before retry attempt+1.
func backoff(attempt int) time.Duration {
	d := 10 * time.Millisecond << min(attempt, 6)
	return d/2 + rand.N(d/2+1)
}

// put is a TransactWriteItem that puts it, under cond when not empty.
func (s *Store) put(it item, cond string) dynamodb.TransactWriteItem {
	p := &dynamodb.Put{TableName: s.table, Item: it}
	if cond != "" {
		p.ConditionExpression = aws.String(cond)
	}
	return dynamodb.TransactWriteItem{Put: p}
}

// getItem reads one item with a strongly consistent read; it returns nil
// when there is none.
func (s *Store) getItem(ctx context.Context, k item) (item, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: s.table, Key: k, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// queryPrefix returns, strongly consistent and in sort key order, the items
// of partition pk whose sort key starts with prefix. limit > 0 stops after
// that many items.
func (s *Store) queryPrefix(ctx context.Context, pk, prefix string, limit int) ([]item, error) {
	in := &dynamodb.QueryInput{
		TableName:              s.table,
		ConsistentRead:         aws.Bool(true),
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :pfx)"),
		ExpressionAttributeValues: item{
			":pk":  attrS(pk),
			":pfx": attrS(prefix),
		},
	}
	if limit > 0 {
		in.Limit = aws.Int32(int32(limit))
	}
	var all []item
	p := dynamodb.NewQueryPaginator(s.db, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		all = append(all, out.Items...)
		if limit > 0 && len(all) >= limit {
			return all[:limit], nil
		}
	}
	return all, nil
}

// deleteKeys deletes items by key with BatchWriteItem, 25 at a time, in
// the given order of batches, retrying unprocessed items. Duplicate keys
// are dropped (a batch may not name one twice).
func (s *Store) deleteKeys(ctx context.Context, keys []item) error {
	seen := map[[2]string]bool{}
	var reqs []dynamodb.WriteRequest
	for _, k := range keys {
		id := [2]string{getS(k, attrPK), getS(k, attrSK)}
		if seen[id] {
			continue
		}
		seen[id] = true
		reqs = append(reqs, dynamodb.WriteRequest{DeleteRequest: &dynamodb.DeleteRequest{Key: key(id[0], id[1])}})
	}
	for len(reqs) > 0 {
		n := min(len(reqs), 25)
		batch := reqs[:n]
		reqs = reqs[n:]
		for attempt := 0; len(batch) > 0; attempt++ {
			out, err := s.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
				RequestItems: map[string][]dynamodb.WriteRequest{*s.table: batch},
			})
			if err != nil {
				return err
			}
			batch = out.UnprocessedItems[*s.table]
			if len(batch) > 0 {
				if attempt >= 10 {
					return fmt.Errorf("%d deletes still unprocessed after %d attempts", len(batch), attempt+1)
				}
				if err := sleep(ctx, backoff(attempt)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// expiresAt is the expires_at of a session active at now; zero when
// sessions do not expire.
func (s *Store) expiresAt(now time.Time) int64 {
	if s.ttl < 0 {
		return 0
	}
	return now.Add(s.ttl).Unix()
}

// stamp sets the expiry of it, an item written for a session at now
// (see Expiry in the package doc), and returns it.
func (s *Store) stamp(it item, now time.Time) item {
	if exp := s.expiresAt(now); exp != 0 {
		it[attrExpiresAt] = attrN(exp)
	}
	return it
}
