package dynamo

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/awsapi/dynamodb"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory/memorytest"
)

// recordingSearch records the searches MemoryIndex delegates.
type recordingSearch struct {
	memory.Index
	calls []string
}

func (s *recordingSearch) Keyword(_ context.Context, agent, owner, query string, _ memory.Filter, k int) ([]memory.Match, error) {
	s.calls = append(s.calls, "keyword "+agent+" "+owner+" "+query)
	return []memory.Match{{Score: 1}}, nil
}

func (s *recordingSearch) Vector(_ context.Context, agent, owner string, v []float32, _ memory.Filter, k int) ([]memory.Match, error) {
	s.calls = append(s.calls, "vector "+agent+" "+owner)
	return nil, nil
}

func TestMemoryIndex(t *testing.T) {
	s := newStore(t)
	search := &recordingSearch{}
	idx, err := NewMemoryIndex(s, MemoryConfig{Search: search})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	at := time.UnixMilli(1777593600123).UTC()
	e := memory.Entry{Agent: "ada", Key: "notes/pets#1", Text: "Ada has a cat called Miso.", Category: memory.Core, Source: "tool", CreatedAt: at, UpdatedAt: at.Add(time.Minute)}
	chunks := []memory.Chunk{{Seq: 0, Text: "Ada has a cat", Vector: []float32{0.6, 0.8, 0, -1.5}}, {Seq: 1, Text: "called Miso."}}
	if err := idx.Put(ctx, e, chunks); err != nil {
		t.Fatalf("Put: %v", err)
	}
	got, err := idx.Get(ctx, "ada", "", "notes/pets#1")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if d := cmp.Diff(e, got); d != "" {
		t.Errorf("Get (-want +got):\n%s", d)
	}
	it, err := s.getItem(ctx, memoryKey("ada", "", "notes/pets#1"))
	if err != nil {
		t.Fatal(err)
	}
	_, gotChunks, err := memoryFromItem(it)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(chunks, gotChunks); d != "" {
		t.Errorf("stored chunks (-want +got):\n%s", d)
	}
	if _, err := idx.Get(ctx, "bob", "", "notes/pets#1"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Get of another agent: %v, want ErrNotFound", err)
	}
	// Put replaces.
	e.Text = "Ada's cat is Miso."
	if err := idx.Put(ctx, e, chunks[:1]); err != nil {
		t.Fatal(err)
	}
	if got, _ := idx.Get(ctx, "ada", "", "notes/pets#1"); got.Text != e.Text {
		t.Errorf("after a second Put, text %q", got.Text)
	}
	if err := idx.Delete(ctx, "ada", "", "notes/pets#1"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := idx.Delete(ctx, "ada", "", "notes/pets#1"); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}
	if _, err := idx.Get(ctx, "ada", "", "notes/pets#1"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
	if m, err := idx.Keyword(ctx, "ada", "tg:42", "cat", memory.Filter{}, 5); err != nil || len(m) != 1 {
		t.Errorf("Keyword: %v, %v", m, err)
	}
	if _, err := idx.Vector(ctx, "ada", "tg:42", []float32{1}, memory.Filter{}, 5); err != nil {
		t.Errorf("Vector: %v", err)
	}
	if d := cmp.Diff([]string{"keyword ada tg:42 cat", "vector ada tg:42"}, search.calls); d != "" {
		t.Errorf("delegated searches (-want +got):\n%s", d)
	}
}

func TestMemoryIndexRefusesLargeEntries(t *testing.T) {
	s := newStore(t)
	idx, err := NewMemoryIndex(s, MemoryConfig{Search: &recordingSearch{}})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("x", 450<<10)
	e := memory.Entry{Agent: "ada", Key: "big", Text: text, Category: memory.Custom}
	err = idx.Put(t.Context(), e, []memory.Chunk{{Text: text}})
	if !errors.Is(err, ErrItemTooLarge) {
		t.Fatalf("Put of a 450 KB item: %v, want ErrItemTooLarge", err)
	}
	if _, err := idx.Get(t.Context(), "ada", "", "big"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("refused entry was stored: %v", err)
	}
}

func TestMemoryWithMemoryService(t *testing.T) {
	// The memory service stores through the index and reads back.
	s := newStore(t)
	idx, _ := NewMemoryIndex(s, MemoryConfig{Search: &recordingSearch{}})
	m, err := memory.New(idx, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Store(t.Context(), memory.Entry{Agent: "ada", Key: "k", Text: "hello", Category: memory.Custom}); err != nil {
		t.Fatal(err)
	}
	if e, err := m.Get(t.Context(), "ada", "", "k"); err != nil || e.Text != "hello" || e.CreatedAt.IsZero() {
		t.Fatalf("Get: %+v, %v", e, err)
	}
}

// streamFed is the memory index of the AWS deployment as the conformance
// suite sees it: entries in DynamoDB Local, searched through the
// reference index of memorytest, which every write feeds as
// functions/indexer feeds OpenSearch: with what the stream record
// DynamoDB sends for it carries (the item as the new image of a put, only
// the keys of a removal), decoded as MemoryStreamChange decodes it.
type streamFed struct {
	*MemoryIndex
	search *memorytest.MapIndex
}

func newStreamFed(t *testing.T) *streamFed {
	t.Helper()
	search := memorytest.NewMapIndex()
	idx, err := NewMemoryIndex(newStore(t), MemoryConfig{Search: search})
	if err != nil {
		t.Fatal(err)
	}
	return &streamFed{MemoryIndex: idx, search: search}
}

func (s *streamFed) Put(ctx context.Context, e memory.Entry, chunks []memory.Chunk) error {
	if err := s.MemoryIndex.Put(ctx, e, chunks); err != nil {
		return err
	}
	key := memoryKey(e.Agent, e.Owner, e.Key)
	it, err := s.store.getItem(ctx, key)
	if err != nil {
		return err
	}
	return s.apply(ctx, "MODIFY", key, it)
}

func (s *streamFed) Delete(ctx context.Context, agent, owner, key string) error {
	if err := s.MemoryIndex.Delete(ctx, agent, owner, key); err != nil {
		return err
	}
	return s.apply(ctx, "REMOVE", memoryKey(agent, owner, key), nil)
}

// apply does what functions/indexer does with a stream record.
func (s *streamFed) apply(ctx context.Context, event string, keys, newImage item) error {
	c, ok, err := memoryChange("test", event, keys, newImage)
	switch {
	case err != nil:
		return err
	case !ok:
		return errors.New("a memory's stream record was not recognised")
	case c.Remove:
		return s.search.Delete(ctx, c.Agent, c.Owner, c.Key)
	}
	return s.search.Put(ctx, c.Entry, c.Chunks)
}

// TestMemoryConformance runs the memory conformance suite on the DynamoDB
// items searched in process (the default), and on the items and their
// stream records (with OpenSearch).
func TestMemoryConformance(t *testing.T) {
	endpoint(t)
	t.Run("InProcess", func(t *testing.T) {
		memorytest.Run(t, func(t *testing.T) memory.Index { return newMemoryIndex(t, newStore(t), 0) })
	})
	t.Run("StreamFed", func(t *testing.T) {
		memorytest.Run(t, func(t *testing.T) memory.Index { return newStreamFed(t) })
	})
}

// newMemoryIndex returns the in-process memory index on s's table, with a
// cache of budget bytes (0 for the default).
func newMemoryIndex(t *testing.T, s *Store, budget int64) *MemoryIndex {
	t.Helper()
	idx, err := NewMemoryIndex(s, MemoryConfig{CacheBytes: budget})
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func TestMemorySortKey(t *testing.T) {
	for _, tc := range []struct{ owner, key, sk string }{
		{"", "notes/pets#1", "ENTRY#notes/pets#1"},
		{"key:k1", "coffee", "OWNED#6#key:k1#coffee"},
		{"user:a#b", "x#y", "OWNED#8#user:a#b#x#y"},
		{"tg:-100", "OWNED#3#abc#d", "OWNED#7#tg:-100#OWNED#3#abc#d"},
		{"user:ü", "ENTRY#k", "OWNED#7#user:ü#ENTRY#k"},
	} {
		sk := memorySortKey(tc.owner, tc.key)
		if sk != tc.sk {
			t.Errorf("memorySortKey(%q, %q) = %q, want %q", tc.owner, tc.key, sk, tc.sk)
		}
		owner, key, ok := parseMemorySortKey(sk)
		if !ok || owner != tc.owner || key != tc.key {
			t.Errorf("parseMemorySortKey(%q) = %q, %q, %v; want %q, %q", sk, owner, key, ok, tc.owner, tc.key)
		}
	}
	for _, sk := range []string{"SESSION", "MSG#1", "OWNED#", "OWNED#x#a#b", "OWNED#0##k", "OWNED#9#short#k", "OWNED#06#key:k1#c", "OWNED#+6#key:k1#c", "OWNED#3#abcdk"} {
		if owner, key, ok := parseMemorySortKey(sk); ok {
			t.Errorf("parseMemorySortKey(%q) = %q, %q; want not a memory's", sk, owner, key)
		}
	}
}

// A stream record of an owner's memory names the owner, also for a
// removal, which carries only the item's keys.
func TestMemoryStreamChangeOwner(t *testing.T) {
	at := time.UnixMilli(1777593600123).UTC()
	e := memory.Entry{Agent: "ada", Owner: "tg:42", Key: "run:1", Text: "User: hi", Category: memory.Conversation, CreatedAt: at, UpdatedAt: at}
	chunks := []memory.Chunk{{Seq: 0, Text: "User: hi"}}
	keys, it := memoryKey(e.Agent, e.Owner, e.Key), memoryItem(e, chunks)
	c, ok, err := memoryChange("1", "INSERT", keys, it)
	if err != nil || !ok {
		t.Fatalf("INSERT: %v, %v", ok, err)
	}
	if d := cmp.Diff(MemoryChange{Agent: "ada", Owner: "tg:42", Key: "run:1", Entry: e, Chunks: chunks}, c); d != "" {
		t.Errorf("INSERT change (-want +got):\n%s", d)
	}
	c, ok, err = memoryChange("2", "REMOVE", keys, nil)
	if err != nil || !ok {
		t.Fatalf("REMOVE: %v, %v", ok, err)
	}
	if d := cmp.Diff(MemoryChange{Remove: true, Agent: "ada", Owner: "tg:42", Key: "run:1"}, c); d != "" {
		t.Errorf("REMOVE change (-want +got):\n%s", d)
	}
	// An image whose owner is not that of its key is refused.
	it[attrMemOwner] = attrS("tg:43")
	if _, _, err := memoryChange("3", "MODIFY", keys, it); err == nil {
		t.Error("an image whose owner attribute contradicts its key was accepted")
	}
}

// A chunk of the entry's text is stored as where it is in it, and reads
// back whole; another chunk keeps its text.
func TestMemoryItemChunkText(t *testing.T) {
	e := memory.Entry{Agent: "a", Key: "k", Text: " one two\n", Category: memory.Core, CreatedAt: time.UnixMilli(1).UTC(), UpdatedAt: time.UnixMilli(2).UTC()}
	for _, tc := range []struct {
		name   string
		chunks []memory.Chunk
		stored []bool // whether each chunk's item holds its text
	}{
		{"whole", []memory.Chunk{{Seq: 0, Text: "one two", Vector: []float32{1, 0.5}}}, []bool{false}},
		{"parts", []memory.Chunk{{Seq: 0, Text: "one"}, {Seq: 1, Text: "two"}}, []bool{false, false}},
		{"other", []memory.Chunk{{Seq: 0, Text: "three"}, {Seq: 1, Text: ""}}, []bool{true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := memoryItem(e, tc.chunks)
			l := it[attrMemChunks].(*dynamodb.AttributeValueMemberL).Value
			for i, v := range l {
				if _, ok := v.(*dynamodb.AttributeValueMemberM).Value[attrChunkText]; ok != tc.stored[i] {
					t.Errorf("chunk %d stores its text: %v, want %v", i, ok, tc.stored[i])
				}
			}
			gotE, gotC, err := memoryFromItem(it)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(e, gotE); diff != "" {
				t.Errorf("entry (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.chunks, gotC); diff != "" {
				t.Errorf("chunks (-want +got):\n%s", diff)
			}
		})
	}
}
