package dynamo

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
)

// Memory items, in the partition of their agent (see the package doc):
//
//	pk MEM#<agent>, sk ENTRY#<key> (an agent-wide memory) or
//	sk OWNED#<n>#<owner>#<key> (an owner's, n the owner's length in
//	bytes): agent, owner (an owner's only), key, text, category, source,
//	created_at, updated_at (epoch ms), chunks (L of M: seq N; text S,
//	or, for a chunk of the entry's text as the chunker makes them, at N
//	and len N, its byte offset and length there; vec B — the vector as little-endian float32, absent
//	without one)
//
//	pk MEM#<agent>, sk LOG#<n>#<owner>#HEAD: the head of a memory space
//	(the memories of one agent and one owner, n = 0 and owner empty for
//	the agent-wide ones): ver (N), the number of the space's last change
//
//	pk MEM#<agent>, sk LOG#<n>#<owner>#<ver:020>: change ver of the space:
//	keys (L of S), the keys it put or deleted; expires_at (a day on)
//
// An entry is identified by agent, owner and key, all three in the item's
// key: the same key of two owners is two items, and agent-wide items keep
// the keys they had before memories had owners. The length prefix makes
// any owner and key decode unambiguously from the sort key alone, which
// is all a REMOVE stream record carries.
//
// Every write of an entry is one transaction with its space's head
// (conditional on the version read) and a change item: a space's
// versions count its writes, in order, without gaps, and a reader that
// knows version v learns what changed since from the change items after
// v (see memsearch.go). Entries written before heads existed count as
// version 0.
//
// The entry items are the source of truth. Search runs over them in the
// function's process (memsearch.go), or, with OpenSearch, in an index
// derived from the table's stream by functions/indexer, which ignores the
// heads and change items. An entry whose item would exceed DynamoDB's 400
// KB is refused with ErrItemTooLarge: the memory tools accept at most 32
// KiB of text (with 1024-dimension vectors, about 250 KB of item), so
// only an entry stored by other means can meet the limit.
const (
	pfxMemory      = "MEM#"
	pfxMemoryEntry = "ENTRY#"
	pfxMemoryOwned = "OWNED#"
	pfxMemoryLog   = "LOG#"
	skMemoryHead   = "HEAD"

	attrMemAgent    = "agent"
	attrMemOwner    = "owner"
	attrMemKey      = "key"
	attrMemText     = "text"
	attrMemCategory = "category"
	attrMemSource   = "source"
	attrMemCreated  = "created_at"
	attrMemUpdated  = "updated_at"
	attrMemChunks   = "chunks"
	attrChunkSeq    = "seq"
	attrChunkText   = "text"
	attrChunkAt     = "at"
	attrChunkLen    = "len"
	attrChunkVec    = "vec"
	attrMemVersion  = "ver"
	attrMemKeys     = "keys"

	// memoryLogTTL is how long a change item is kept: a cached space
	// confirmed current more recently than half of it finds every change
	// since in the table.
	memoryLogTTL = 24 * time.Hour
	// maxWriteAttempts bounds how often a write retries after another
	// writer of its space took the version it read.
	maxWriteAttempts = 32
)

func memoryKey(agent, owner, key string) item {
	return item{attrPK: attrS(pfxMemory + agent), attrSK: attrS(memorySortKey(owner, key))}
}

// memorySortKey is the sort key of the memory of owner ("" for
// agent-wide) under key.
func memorySortKey(owner, key string) string { return memoryEntryPrefix(owner) + key }

// memoryEntryPrefix is the sort key prefix of the memories of owner (""
// for the agent-wide ones).
func memoryEntryPrefix(owner string) string {
	if owner == "" {
		return pfxMemoryEntry
	}
	return pfxMemoryOwned + strconv.Itoa(len(owner)) + "#" + owner + "#"
}

// memoryLogPrefix is the sort key prefix of the head and change items of
// owner's space: LOG#<n>#<owner>#.
func memoryLogPrefix(owner string) string {
	return pfxMemoryLog + strconv.Itoa(len(owner)) + "#" + owner + "#"
}

// memoryHeadKey is the key of the head of the space of agent and owner.
func memoryHeadKey(agent, owner string) item {
	return key(pfxMemory+agent, memoryLogPrefix(owner)+skMemoryHead)
}

// memoryLogSortKey is the sort key of change ver of owner's space. The
// digits sort before HEAD, so one Query reads the changes after a version
// and the head.
func memoryLogSortKey(owner string, ver int64) string {
	return memoryLogPrefix(owner) + seqKey(ver)
}

// parseMemorySortKey returns the owner and key of a memory's sort key; ok
// is false for a sort key that is not a memory's.
func parseMemorySortKey(sk string) (owner, key string, ok bool) {
	if key, ok := strings.CutPrefix(sk, pfxMemoryEntry); ok {
		return "", key, true
	}
	rest, ok := strings.CutPrefix(sk, pfxMemoryOwned)
	if !ok {
		return "", "", false
	}
	n, rest, ok := strings.Cut(rest, "#")
	size, err := strconv.Atoi(n)
	if !ok || err != nil || size <= 0 || size >= len(rest) || rest[size] != '#' || strconv.Itoa(size) != n {
		return "", "", false
	}
	return rest[:size], rest[size+1:], true
}

// DefaultMemoryCacheBytes is the default bound of the in-process copy of
// searched memory spaces.
const DefaultMemoryCacheBytes = 128 << 20

// MemoryConfig configures a MemoryIndex.
type MemoryConfig struct {
	// Search, when set, answers Keyword and Vector: an index that
	// functions/indexer keeps in step with the table's stream
	// (OpenSearch). Nil searches the table's items in this process.
	Search memory.Index
	// CacheBytes bounds the copy of memory spaces kept in this process
	// for search (without Search); a space larger than it cannot be
	// searched. Zero means DefaultMemoryCacheBytes.
	CacheBytes int64
}

// MemoryIndex is the memory.Index of the AWS deployment: entries are items
// of the table (Put, Get and Delete are DynamoDB writes and strongly
// consistent reads).
//
// Without a search index (the default), Keyword and Vector search the
// items themselves: the memory spaces a search may see (the agent-wide
// one and the owner's) are read into this process once, kept up to date
// from their change items, and searched there, BM25 over the chunks'
// words and cosine over their vectors (memsearch.go). A search sees every
// write that completed before it began, in any process.
//
// With a search index (MemoryConfig.Search), Keyword and Vector are
// delegated to it; it lags writes by the stream's delay, usually well
// under a second and more while the indexer retries.
type MemoryIndex struct {
	store  *Store
	search memory.Index
	spaces *spaceCache
}

var _ memory.Index = (*MemoryIndex)(nil)

// NewMemoryIndex returns the memory index on s's table.
func NewMemoryIndex(s *Store, cfg MemoryConfig) (*MemoryIndex, error) {
	if s == nil {
		return nil, errors.New("dynamo: a memory index needs the store")
	}
	if cfg.CacheBytes < 0 {
		return nil, fmt.Errorf("dynamo: memory cache of %d bytes", cfg.CacheBytes)
	}
	m := &MemoryIndex{store: s, search: cfg.Search}
	if m.search == nil {
		m.spaces = newSpaceCache(s, cmp.Or(cfg.CacheBytes, DefaultMemoryCacheBytes))
	}
	return m, nil
}

// Put implements memory.Index: it writes the entry's item, replacing the
// one its agent, owner and key held.
func (m *MemoryIndex) Put(ctx context.Context, e memory.Entry, chunks []memory.Chunk) error {
	if e.Agent == "" || e.Key == "" {
		return errors.New("dynamo: memory put: agent and key are required")
	}
	it := memoryItem(e, chunks)
	if err := checkSize(fmt.Sprintf("memory %q of agent %q", e.Key, e.Agent), it); err != nil {
		return err
	}
	rec := &memory.Record{Entry: e, Chunks: chunks}
	if err := m.write(ctx, e.Agent, e.Owner, e.Key, dynamodb.TransactWriteItem{Put: &dynamodb.Put{TableName: m.store.table, Item: it}}, rec); err != nil {
		return fmt.Errorf("dynamo: memory put: %w", err)
	}
	return nil
}

// Get implements memory.Index with a strongly consistent read.
func (m *MemoryIndex) Get(ctx context.Context, agent, owner, key string) (memory.Entry, error) {
	it, err := m.store.getItem(ctx, memoryKey(agent, owner, key))
	if err != nil {
		return memory.Entry{}, fmt.Errorf("dynamo: memory get: %w", err)
	}
	if it == nil {
		return memory.Entry{}, memory.ErrNotFound
	}
	e, _, err := memoryFromItem(it)
	return e, err
}

// Delete implements memory.Index; a missing key is no error.
func (m *MemoryIndex) Delete(ctx context.Context, agent, owner, key string) error {
	del := dynamodb.TransactWriteItem{Delete: &dynamodb.Delete{TableName: m.store.table, Key: memoryKey(agent, owner, key)}}
	if err := m.write(ctx, agent, owner, key, del, nil); err != nil {
		return fmt.Errorf("dynamo: memory delete: %w", err)
	}
	return nil
}

// write commits w, a put (rec) or delete (rec nil) of the entry of agent,
// owner and entryKey, as the next version of its space: one transaction with
// the space's head, conditional on the version it read, and the change
// item. When another writer took that version first it reads the head
// again and retries.
func (m *MemoryIndex) write(ctx context.Context, agent, owner, entryKey string, w dynamodb.TransactWriteItem, rec *memory.Record) error {
	hk := memoryHeadKey(agent, owner)
	for attempt := 0; ; attempt++ {
		head, err := m.store.getItem(ctx, hk)
		if err != nil {
			return err
		}
		ver := getN(head, attrMemVersion)
		headPut := &dynamodb.Put{TableName: m.store.table, Item: item{attrPK: hk[attrPK], attrSK: hk[attrSK], attrMemVersion: attrN(ver + 1)}}
		if head == nil {
			headPut.ConditionExpression = aws.String("attribute_not_exists(pk)")
		} else {
			headPut.ConditionExpression = aws.String("ver = :v")
			headPut.ExpressionAttributeValues = item{":v": attrN(ver)}
		}
		change := key(pfxMemory+agent, memoryLogSortKey(owner, ver+1))
		change[attrMemKeys] = attrList([]string{entryKey})
		change[attrExpiresAt] = attrN(m.store.now().Add(memoryLogTTL).Unix())
		err = m.store.transact(ctx, []dynamodb.TransactWriteItem{{Put: headPut}, w, {Put: &dynamodb.Put{TableName: m.store.table, Item: change}}})
		if failed, ok := canceledAt(err); ok && len(failed) > 0 && failed[0] && attempt+1 < maxWriteAttempts {
			if err := sleep(ctx, backoff(min(attempt, 2))); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		if m.spaces != nil {
			m.spaces.written(spaceID{agent, owner}, ver, entryKey, rec)
		}
		return nil
	}
}

// Keyword implements memory.Index: BM25 over the chunks of the spaces
// owner may see, or through the search index.
func (m *MemoryIndex) Keyword(ctx context.Context, agent, owner, query string, f memory.Filter, k int) ([]memory.Match, error) {
	if m.search != nil {
		return m.search.Keyword(ctx, agent, owner, query, f, k)
	}
	return m.spaces.keyword(ctx, agent, owner, query, f, k)
}

// Vector implements memory.Index: cosine similarity over the chunks of
// the spaces owner may see, or through the search index.
func (m *MemoryIndex) Vector(ctx context.Context, agent, owner string, v []float32, f memory.Filter, k int) ([]memory.Match, error) {
	if m.search != nil {
		return m.search.Vector(ctx, agent, owner, v, f, k)
	}
	return m.spaces.vector(ctx, agent, owner, v, f, k)
}

func memoryItem(e memory.Entry, chunks []memory.Chunk) item {
	it := memoryKey(e.Agent, e.Owner, e.Key)
	it[attrMemAgent] = attrS(e.Agent)
	if e.Owner != "" {
		it[attrMemOwner] = attrS(e.Owner)
	}
	it[attrMemKey] = attrS(e.Key)
	it[attrMemText] = attrS(e.Text)
	it[attrMemCategory] = attrS(string(e.Category))
	if e.Source != "" {
		it[attrMemSource] = attrS(e.Source)
	}
	it[attrMemCreated] = attrTime(e.CreatedAt)
	it[attrMemUpdated] = attrTime(e.UpdatedAt)
	l := make([]dynamodb.AttributeValue, len(chunks))
	for i, c := range chunks {
		m := item{attrChunkSeq: attrN(int64(c.Seq))}
		if at := strings.Index(e.Text, c.Text); at >= 0 {
			// A chunk of the entry's text, as the chunker makes them,
			// is stored as where it is in it, not twice.
			m[attrChunkAt], m[attrChunkLen] = attrN(int64(at)), attrN(int64(len(c.Text)))
		} else {
			m[attrChunkText] = attrS(c.Text)
		}
		if len(c.Vector) > 0 {
			m[attrChunkVec] = &dynamodb.AttributeValueMemberB{Value: encodeVector(c.Vector)}
		}
		l[i] = &dynamodb.AttributeValueMemberM{Value: m}
	}
	it[attrMemChunks] = &dynamodb.AttributeValueMemberL{Value: l}
	return it
}

func memoryFromItem(it item) (memory.Entry, []memory.Chunk, error) {
	e := memory.Entry{
		Agent:     getS(it, attrMemAgent),
		Owner:     getS(it, attrMemOwner),
		Key:       getS(it, attrMemKey),
		Text:      getS(it, attrMemText),
		Category:  memory.Category(getS(it, attrMemCategory)),
		Source:    getS(it, attrMemSource),
		CreatedAt: getTime(it, attrMemCreated),
		UpdatedAt: getTime(it, attrMemUpdated),
	}
	if e.Agent == "" || e.Key == "" {
		return memory.Entry{}, nil, fmt.Errorf("dynamo: memory item %s/%s has no agent or key", getS(it, attrPK), getS(it, attrSK))
	}
	if owner, key, ok := parseMemorySortKey(getS(it, attrSK)); !ok || owner != e.Owner || key != e.Key {
		return memory.Entry{}, nil, fmt.Errorf("dynamo: memory item %s/%s: its owner and key are not those of its sort key", getS(it, attrPK), getS(it, attrSK))
	}
	l, _ := it[attrMemChunks].(*dynamodb.AttributeValueMemberL)
	var chunks []memory.Chunk
	if l != nil {
		chunks = make([]memory.Chunk, 0, len(l.Value))
		for _, v := range l.Value {
			m, ok := v.(*dynamodb.AttributeValueMemberM)
			if !ok {
				return memory.Entry{}, nil, fmt.Errorf("dynamo: memory %s/%s: a chunk is not a map", e.Agent, e.Key)
			}
			vec, err := decodeVector(getB(m.Value, attrChunkVec))
			if err != nil {
				return memory.Entry{}, nil, fmt.Errorf("dynamo: memory %s/%s: %w", e.Agent, e.Key, err)
			}
			text := getS(m.Value, attrChunkText)
			if _, ok := m.Value[attrChunkAt]; ok {
				at, n := getN(m.Value, attrChunkAt), getN(m.Value, attrChunkLen)
				if at < 0 || n < 0 || at+n > int64(len(e.Text)) {
					return memory.Entry{}, nil, fmt.Errorf("dynamo: memory %s/%s: a chunk at %d+%d is outside its text of %d bytes", e.Agent, e.Key, at, n, len(e.Text))
				}
				text = e.Text[at : at+n]
			}
			chunks = append(chunks, memory.Chunk{Seq: int(getN(m.Value, attrChunkSeq)), Text: text, Vector: vec})
		}
	}
	return e, chunks, nil
}

func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func decodeVector(b []byte) ([]float32, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("vector of %d bytes is not float32s", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}

// MemoryChange is what one stream record means for the search index: put
// the entry and its chunks, or (Remove) delete the entry of Agent, Owner
// and Key.
type MemoryChange struct {
	Remove bool
	Agent  string
	Owner  string
	Key    string
	Entry  memory.Entry
	Chunks []memory.Chunk
}

// MemoryStreamChange decodes a DynamoDB Streams record of the table. ok is
// false for a record that is not about a memory item (sessions, runs, …).
// INSERT and MODIFY need the new image (the stream view NEW_IMAGE or
// NEW_AND_OLD_IMAGES); REMOVE needs only the keys.
func MemoryStreamChange(r events.DynamoDBEventRecord) (c MemoryChange, ok bool, err error) {
	var img item
	if len(r.Change.NewImage) > 0 {
		img = fromStreamImage(r.Change.NewImage)
	}
	return memoryChange(r.EventID, r.EventName, fromStreamImage(r.Change.Keys), img)
}

// memoryChange is MemoryStreamChange on the record's event id and name,
// keys and new image (nil when it has none) as SDK attribute values.
func memoryChange(id, event string, keys, newImage item) (c MemoryChange, ok bool, err error) {
	pk, sk := getS(keys, attrPK), getS(keys, attrSK)
	agent, isMem := strings.CutPrefix(pk, pfxMemory)
	owner, k, isEntry := parseMemorySortKey(sk)
	if !isMem || !isEntry {
		return MemoryChange{}, false, nil
	}
	c = MemoryChange{Agent: agent, Owner: owner, Key: k}
	switch events.DynamoDBOperationType(event) {
	case events.DynamoDBOperationTypeRemove:
		c.Remove = true
		return c, true, nil
	case events.DynamoDBOperationTypeInsert, events.DynamoDBOperationTypeModify:
		if len(newImage) == 0 {
			return c, true, fmt.Errorf("dynamo: %s of memory %s/%s has no new image: the stream must show NEW_IMAGE or NEW_AND_OLD_IMAGES", event, agent, k)
		}
		c.Entry, c.Chunks, err = memoryFromItem(newImage)
		return c, true, err
	}
	return c, true, fmt.Errorf("dynamo: stream record %s: unknown event %q", id, event)
}

// fromStreamImage converts an image of a Lambda stream event into SDK
// attribute values.
func fromStreamImage(img map[string]events.DynamoDBAttributeValue) item {
	it := make(item, len(img))
	for name, v := range img {
		if a := fromStreamValue(v); a != nil {
			it[name] = a
		}
	}
	return it
}

func fromStreamValue(v events.DynamoDBAttributeValue) dynamodb.AttributeValue {
	switch v.DataType() {
	case events.DataTypeString:
		return attrS(v.String())
	case events.DataTypeNumber:
		return &dynamodb.AttributeValueMemberN{Value: v.Number()}
	case events.DataTypeBinary:
		return &dynamodb.AttributeValueMemberB{Value: v.Binary()}
	case events.DataTypeBoolean:
		return attrBool(v.Boolean())
	case events.DataTypeNull:
		return &dynamodb.AttributeValueMemberNULL{Value: true}
	case events.DataTypeStringSet:
		return attrSS(v.StringSet())
	case events.DataTypeNumberSet:
		return &dynamodb.AttributeValueMemberNS{Value: v.NumberSet()}
	case events.DataTypeBinarySet:
		return &dynamodb.AttributeValueMemberBS{Value: v.BinarySet()}
	case events.DataTypeList:
		l := v.List()
		out := make([]dynamodb.AttributeValue, 0, len(l))
		for _, e := range l {
			if a := fromStreamValue(e); a != nil {
				out = append(out, a)
			}
		}
		return &dynamodb.AttributeValueMemberL{Value: out}
	case events.DataTypeMap:
		return &dynamodb.AttributeValueMemberM{Value: fromStreamImage(v.Map())}
	}
	return nil
}
