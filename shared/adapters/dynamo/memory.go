package dynamo

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
)

// Memory entries. One item per entry (see the package doc):
//
//	pk MEM#<agent>, sk ENTRY#<key> (an agent-wide memory) or
//	sk OWNED#<n>#<owner>#<key> (an owner's, n the owner's length in
//	bytes): agent, owner (an owner's only), key, text, category, source,
//	created_at, updated_at (epoch ms), chunks (L of M: seq N, text S,
//	vec B — the vector as little-endian float32, absent without one)
//
// An entry is identified by agent, owner and key, all three in the item's
// key: the same key of two owners is two items, and agent-wide items keep
// the keys they had before memories had owners. The length prefix makes
// any owner and key decode unambiguously from the sort key alone, which
// is all a REMOVE stream record carries.
//
// The item is the source of truth; OpenSearch is an index derived from the
// table's stream by functions/indexer. An entry whose item would exceed
// DynamoDB's 400 KB is refused with ErrItemTooLarge: the memory tools
// accept at most 32 KiB of text (with 1024-dimension vectors, about 250 KB
// of item), so only an entry stored by other means can meet the limit.
const (
	pfxMemory      = "MEM#"
	pfxMemoryEntry = "ENTRY#"
	pfxMemoryOwned = "OWNED#"

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
	attrChunkVec    = "vec"
)

func memoryKey(agent, owner, key string) item {
	return item{attrPK: attrS(pfxMemory + agent), attrSK: attrS(memorySortKey(owner, key))}
}

// memorySortKey is the sort key of the memory of owner ("" for
// agent-wide) under key.
func memorySortKey(owner, key string) string {
	if owner == "" {
		return pfxMemoryEntry + key
	}
	return pfxMemoryOwned + strconv.Itoa(len(owner)) + "#" + owner + "#" + key
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

// MemoryIndex is the memory.Index of the AWS deployment: entries are items
// of the table (Put, Get and Delete are DynamoDB writes and strongly
// consistent reads) and search is delegated to Search, an index the
// indexer function keeps in step with the table's stream (the opensearch
// adapter). Search therefore lags writes by the stream's delay, usually
// well under a second and more while the indexer retries.
//
// There is no MemoryIndex without a search index: DynamoDB cannot rank by
// BM25 or vectors, and scanning an agent's partition would not scale, so
// without OpenSearch (search=none) the AWS deployment offers no memory.
type MemoryIndex struct {
	store  *Store
	search memory.Index
}

var _ memory.Index = (*MemoryIndex)(nil)

// NewMemoryIndex returns the memory index on s's table, searching through
// search.
func NewMemoryIndex(s *Store, search memory.Index) (*MemoryIndex, error) {
	if s == nil || search == nil {
		return nil, errors.New("dynamo: a memory index needs the store and a search index")
	}
	return &MemoryIndex{store: s, search: search}, nil
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
	_, err := m.store.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: m.store.table, Item: it})
	if err != nil {
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
	_, err := m.store.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: m.store.table, Key: memoryKey(agent, owner, key)})
	if err != nil {
		return fmt.Errorf("dynamo: memory delete: %w", err)
	}
	return nil
}

// Keyword implements memory.Index through the search index.
func (m *MemoryIndex) Keyword(ctx context.Context, agent, owner, query string, f memory.Filter, k int) ([]memory.Match, error) {
	return m.search.Keyword(ctx, agent, owner, query, f, k)
}

// Vector implements memory.Index through the search index.
func (m *MemoryIndex) Vector(ctx context.Context, agent, owner string, v []float32, f memory.Filter, k int) ([]memory.Match, error) {
	return m.search.Vector(ctx, agent, owner, v, f, k)
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
	l := make([]types.AttributeValue, len(chunks))
	for i, c := range chunks {
		m := item{attrChunkSeq: attrN(int64(c.Seq)), attrChunkText: attrS(c.Text)}
		if len(c.Vector) > 0 {
			m[attrChunkVec] = &types.AttributeValueMemberB{Value: encodeVector(c.Vector)}
		}
		l[i] = &types.AttributeValueMemberM{Value: m}
	}
	it[attrMemChunks] = &types.AttributeValueMemberL{Value: l}
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
	l, _ := it[attrMemChunks].(*types.AttributeValueMemberL)
	var chunks []memory.Chunk
	if l != nil {
		chunks = make([]memory.Chunk, 0, len(l.Value))
		for _, v := range l.Value {
			m, ok := v.(*types.AttributeValueMemberM)
			if !ok {
				return memory.Entry{}, nil, fmt.Errorf("dynamo: memory %s/%s: a chunk is not a map", e.Agent, e.Key)
			}
			vec, err := decodeVector(getB(m.Value, attrChunkVec))
			if err != nil {
				return memory.Entry{}, nil, fmt.Errorf("dynamo: memory %s/%s: %w", e.Agent, e.Key, err)
			}
			chunks = append(chunks, memory.Chunk{Seq: int(getN(m.Value, attrChunkSeq)), Text: getS(m.Value, attrChunkText), Vector: vec})
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

func fromStreamValue(v events.DynamoDBAttributeValue) types.AttributeValue {
	switch v.DataType() {
	case events.DataTypeString:
		return attrS(v.String())
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}
	case events.DataTypeBoolean:
		return attrBool(v.Boolean())
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}
	case events.DataTypeStringSet:
		return attrSS(v.StringSet())
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}
	case events.DataTypeList:
		l := v.List()
		out := make([]types.AttributeValue, 0, len(l))
		for _, e := range l {
			if a := fromStreamValue(e); a != nil {
				out = append(out, a)
			}
		}
		return &types.AttributeValueMemberL{Value: out}
	case events.DataTypeMap:
		return &types.AttributeValueMemberM{Value: fromStreamImage(v.Map())}
	}
	return nil
}
