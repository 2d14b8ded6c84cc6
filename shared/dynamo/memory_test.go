package dynamo

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/memory"
)

// recordingSearch records the searches MemoryIndex delegates.
type recordingSearch struct {
	memory.Index
	calls []string
}

func (s *recordingSearch) Keyword(_ context.Context, agent, query string, _ memory.Filter, k int) ([]memory.Match, error) {
	s.calls = append(s.calls, "keyword "+agent+" "+query)
	return []memory.Match{{Score: 1}}, nil
}

func (s *recordingSearch) Vector(_ context.Context, agent string, v []float32, _ memory.Filter, k int) ([]memory.Match, error) {
	s.calls = append(s.calls, "vector "+agent)
	return nil, nil
}

func TestMemoryIndex(t *testing.T) {
	s := newStore(t)
	search := &recordingSearch{}
	idx, err := NewMemoryIndex(s, search)
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
	got, err := idx.Get(ctx, "ada", "notes/pets#1")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if d := cmp.Diff(e, got); d != "" {
		t.Errorf("Get (-want +got):\n%s", d)
	}
	it, err := s.getItem(ctx, memoryKey("ada", "notes/pets#1"))
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
	if _, err := idx.Get(ctx, "bob", "notes/pets#1"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Get of another agent: %v, want ErrNotFound", err)
	}
	// Put replaces.
	e.Text = "Ada's cat is Miso."
	if err := idx.Put(ctx, e, chunks[:1]); err != nil {
		t.Fatal(err)
	}
	if got, _ := idx.Get(ctx, "ada", "notes/pets#1"); got.Text != e.Text {
		t.Errorf("after a second Put, text %q", got.Text)
	}
	if err := idx.Delete(ctx, "ada", "notes/pets#1"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := idx.Delete(ctx, "ada", "notes/pets#1"); err != nil {
		t.Fatalf("Delete of a missing key: %v", err)
	}
	if _, err := idx.Get(ctx, "ada", "notes/pets#1"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
	if m, err := idx.Keyword(ctx, "ada", "cat", memory.Filter{}, 5); err != nil || len(m) != 1 {
		t.Errorf("Keyword: %v, %v", m, err)
	}
	if _, err := idx.Vector(ctx, "ada", []float32{1}, memory.Filter{}, 5); err != nil {
		t.Errorf("Vector: %v", err)
	}
	if d := cmp.Diff([]string{"keyword ada cat", "vector ada"}, search.calls); d != "" {
		t.Errorf("delegated searches (-want +got):\n%s", d)
	}
}

func TestMemoryIndexRefusesLargeEntries(t *testing.T) {
	s := newStore(t)
	idx, err := NewMemoryIndex(s, &recordingSearch{})
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("x", 300<<10)
	e := memory.Entry{Agent: "ada", Key: "big", Text: text, Category: memory.Custom}
	err = idx.Put(t.Context(), e, []memory.Chunk{{Text: text}})
	if !errors.Is(err, ErrItemTooLarge) {
		t.Fatalf("Put of a 600 KB item: %v, want ErrItemTooLarge", err)
	}
	if _, err := idx.Get(t.Context(), "ada", "big"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("refused entry was stored: %v", err)
	}
}

func TestMemoryWithMemoryService(t *testing.T) {
	// The memory service stores through the index and reads back.
	s := newStore(t)
	idx, _ := NewMemoryIndex(s, &recordingSearch{})
	m, err := memory.New(idx, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Store(t.Context(), memory.Entry{Agent: "ada", Key: "k", Text: "hello", Category: memory.Custom}); err != nil {
		t.Fatal(err)
	}
	if e, err := m.Get(t.Context(), "ada", "k"); err != nil || e.Text != "hello" || e.CreatedAt.IsZero() {
		t.Fatalf("Get: %+v, %v", e, err)
	}
}
