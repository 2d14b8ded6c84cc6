// Package memorytest holds the conformance suites of package memory's
// ports. Run is the one every memory.Index adapter runs, so that the
// embedded engine (SQLite FTS5 and in-process vectors) and OpenSearch
// behave alike:
//
//	func TestMemoryIndex(t *testing.T) {
//		memorytest.Run(t, func(t *testing.T) memory.Index { return openEmpty(t) })
//	}
//
// The suite drives a memory.Memory over the index with Embedder, a
// deterministic fake whose vectors have Dims dimensions, and a fixed
// clock; it also calls the Index methods directly. It asks of an adapter
// only what package memory documents: writes are visible to the next read
// (an OpenSearch adapter refreshes), times are kept to the millisecond,
// BM25 and cosine rank the obviously better match first, identical texts
// get identical scores, and every method is scoped to one agent and owner
// (an owner sees its own memories and the agent-wide ones). Keyword
// search must find space-separated words whatever their script and must
// never fail on user text that looks like query syntax.
//
// MapIndex, an index in maps, is the reference the suite is checked
// against and the search engine of tests whose subject is elsewhere.
//
// RunEmbedder is the conformance suite of the other port of package
// memory, memory.Embedder, which the OpenAI-compatible and the Bedrock
// embedders run against fakes of their services (see EmbedHarness).
package memorytest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
)

// Now is the suite's clock.
var Now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// Run runs the conformance suite. Each subtest calls newIndex for a fresh,
// empty index; newIndex should fail t if it cannot build one and release
// the index with t.Cleanup.
func Run(t *testing.T, newIndex func(t *testing.T) memory.Index) {
	tests := []struct {
		name string
		fn   func(t *testing.T, idx memory.Index)
	}{
		{"StoreGetForget", testStoreGetForget},
		{"ReplaceOnRestore", testReplaceOnRestore},
		{"CategoryFilter", testCategoryFilter},
		{"AgentIsolation", testAgentIsolation},
		{"OwnerIsolation", testOwnerIsolation},
		{"OwnerGetForget", testOwnerGetForget},
		{"OwnerSameKey", testOwnerSameKey},
		{"AgentWideShared", testAgentWideShared},
		{"DecayOrdering", testDecayOrdering},
		{"KeywordOnlyFallback", testKeywordOnlyFallback},
		{"EmbeddingOutage", testEmbeddingOutage},
		{"Unicode", testUnicode},
		{"LongTextChunked", testLongTextChunked},
		{"SearchLimit", testSearchLimit},
		{"HostileQueries", testHostileQueries},
		{"ConcurrentStoreSearch", testConcurrentStoreSearch},
		{"IndexRoundTrip", testIndexRoundTrip},
		{"IndexKeyword", testIndexKeyword},
		{"IndexVector", testIndexVector},
		{"IndexReplaceChunks", testIndexReplaceChunks},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newIndex(t)) })
	}
}

// newMemory returns a Memory over idx with the suite's clock and, unless
// opts says otherwise, the fake embedder.
func newMemory(t *testing.T, idx memory.Index, opts ...func(*memory.Options)) *memory.Memory {
	t.Helper()
	o := memory.Options{Embedder: Embedder{}, Now: func() time.Time { return Now }}
	for _, f := range opts {
		f(&o)
	}
	m, err := memory.New(idx, o)
	if err != nil {
		t.Fatalf("memory.New: %v", err)
	}
	return m
}

// keywordOnly configures a Memory without an embedder.
func keywordOnly(o *memory.Options) { o.Embedder = nil }

func store(t *testing.T, m *memory.Memory, e memory.Entry) {
	t.Helper()
	if err := m.Store(t.Context(), e); err != nil {
		t.Fatalf("Store(%q): %v", e.Key, err)
	}
}

// search searches the agent-wide memories of agent.
func search(t *testing.T, m *memory.Memory, agent, query string, o memory.SearchOptions) memory.Results {
	t.Helper()
	return searchAs(t, m, agent, "", query, o)
}

// searchAs searches the memories of agent that owner may see.
func searchAs(t *testing.T, m *memory.Memory, agent, owner, query string, o memory.SearchOptions) memory.Results {
	t.Helper()
	res, err := m.Search(t.Context(), agent, owner, query, o)
	if err != nil {
		t.Fatalf("Search(%q, %q, %q): %v", agent, owner, query, err)
	}
	return res
}

// keys lists the entry keys of hits, in order.
func keys(hits []memory.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Entry.Key
	}
	return out
}

// matchKeys lists the entry keys of matches, sorted and without repeats.
func matchKeys(ms []memory.Match) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Entry.Key)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// sorted returns a sorted copy.
func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// put stores e with one chunk per text, each embedded by Embedder.
func put(t *testing.T, idx memory.Index, e memory.Entry, texts ...string) {
	t.Helper()
	if len(texts) == 0 {
		texts = []string{e.Text}
	}
	chunks := make([]memory.Chunk, len(texts))
	for i, s := range texts {
		chunks[i] = memory.Chunk{Seq: i, Text: s, Vector: memory.Normalized(Vector(s))}
	}
	if err := idx.Put(t.Context(), e, chunks); err != nil {
		t.Fatalf("Put(%q): %v", e.Key, err)
	}
}

// entry returns an entry of agent with the suite's clock for times.
func entry(agent, key, text string, c memory.Category) memory.Entry {
	return memory.Entry{Agent: agent, Key: key, Text: text, Category: c, CreatedAt: Now, UpdatedAt: Now}
}

func testStoreGetForget(t *testing.T, idx memory.Index) {
	ctx := t.Context()
	m := newMemory(t, idx)
	e := memory.Entry{
		Agent:    "main",
		Key:      "coffee",
		Text:     "The user drinks an oat milk flat white every morning.",
		Category: memory.Core,
		Source:   "tool",
	}
	store(t, m, e)
	store(t, m, memory.Entry{Agent: "main", Key: "tea", Text: "Green tea in the afternoon, no sugar.", Category: memory.Core})

	got, err := m.Get(ctx, "main", "", "coffee")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	want := e
	want.CreatedAt, want.UpdatedAt = Now, Now
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Get (-want +got):\n%s", diff)
	}

	res := search(t, m, "main", "flat white coffee", memory.SearchOptions{})
	if res.Method != memory.MethodHybrid {
		t.Errorf("Method = %q, want %q", res.Method, memory.MethodHybrid)
	}
	if len(res.Hits) == 0 || res.Hits[0].Entry.Key != "coffee" {
		t.Fatalf("hits = %q, want coffee first", keys(res.Hits))
	}
	h := res.Hits[0]
	if h.Snippet != e.Text || h.Score <= 0 || h.Score > 1 || h.KeywordScore <= 0 || h.VectorScore <= 0 {
		t.Errorf("hit = %+v, want the whole text as snippet and scores in (0, 1]", h)
	}

	if err := m.Forget(ctx, "main", "", "coffee"); err != nil {
		t.Fatalf("Forget: %v", err)
	}
	if _, err := m.Get(ctx, "main", "", "coffee"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Get after Forget: err = %v, want ErrNotFound", err)
	}
	res = search(t, m, "main", "flat white coffee", memory.SearchOptions{})
	if slices.Contains(keys(res.Hits), "coffee") {
		t.Errorf("search after Forget found %q", keys(res.Hits))
	}
	kw, err := idx.Keyword(ctx, "main", "", "flat white coffee", memory.Filter{}, 10)
	if err != nil || len(kw) != 0 {
		t.Errorf("Keyword after Forget = %v, %v; want nothing", matchKeys(kw), err)
	}
	vec, err := idx.Vector(ctx, "main", "", memory.Normalized(Vector(e.Text)), memory.Filter{}, 10)
	if err != nil || !slices.Equal(matchKeys(vec), []string{"tea"}) {
		t.Errorf("Vector after Forget = %v, %v; want only tea", matchKeys(vec), err)
	}
	if err := m.Forget(ctx, "main", "", "coffee"); err != nil {
		t.Errorf("Forget of a forgotten key: %v", err)
	}
	if _, err := m.Get(ctx, "main", "", "never"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Get of a missing key: err = %v, want ErrNotFound", err)
	}
}

func testReplaceOnRestore(t *testing.T, idx memory.Index) {
	ctx := t.Context()
	now := Now
	m := newMemory(t, idx, func(o *memory.Options) { o.Now = func() time.Time { return now } })
	var long strings.Builder
	for i := range 30 {
		fmt.Fprintf(&long, "Sentence %d says the vehicle is parked in the garage. ", i)
	}
	long.WriteString("The car is a red Volvo.")
	store(t, m, memory.Entry{Agent: "main", Key: "car", Text: long.String(), Category: memory.Custom})

	now = Now.Add(time.Hour)
	store(t, m, memory.Entry{Agent: "main", Key: "car", Text: "The car is a blue Tesla.", Category: memory.Daily})

	got, err := m.Get(ctx, "main", "", "car")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	want := memory.Entry{Agent: "main", Key: "car", Text: "The car is a blue Tesla.", Category: memory.Daily, CreatedAt: Now, UpdatedAt: now}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Get after re-store (-want +got):\n%s", diff)
	}
	for _, q := range []string{"Volvo", "garage"} {
		kw, err := idx.Keyword(ctx, "main", "", q, memory.Filter{}, 10)
		if err != nil || len(kw) != 0 {
			t.Errorf("Keyword(%q) after re-store = %v, %v; want nothing", q, matchKeys(kw), err)
		}
	}
	res := search(t, m, "main", "Tesla", memory.SearchOptions{})
	if got := keys(res.Hits); !slices.Equal(got, []string{"car"}) {
		t.Errorf("search Tesla = %q, want [car]", got)
	}
	vec, err := idx.Vector(ctx, "main", "", memory.Normalized(Vector("anything at all")), memory.Filter{}, 10)
	if err != nil || len(vec) != 1 {
		t.Errorf("Vector after re-store = %d matches, %v; want the one chunk of the new text", len(vec), err)
	}
}

func testCategoryFilter(t *testing.T, idx memory.Index) {
	ctx := t.Context()
	m := newMemory(t, idx)
	for _, c := range []memory.Category{memory.Core, memory.Daily, memory.Conversation, memory.Custom} {
		store(t, m, memory.Entry{Agent: "main", Key: string(c), Text: "Notes on project alpha: " + string(c), Category: c})
	}
	f := memory.Filter{Categories: []memory.Category{memory.Daily, memory.Custom}}
	res := search(t, m, "main", "project alpha", memory.SearchOptions{Filter: f})
	if diff := cmp.Diff([]string{"custom", "daily"}, sorted(keys(res.Hits))); diff != "" {
		t.Errorf("filtered search (-want +got):\n%s", diff)
	}
	res = search(t, m, "main", "project alpha", memory.SearchOptions{})
	if diff := cmp.Diff([]string{"conversation", "core", "custom", "daily"}, sorted(keys(res.Hits))); diff != "" {
		t.Errorf("unfiltered search (-want +got):\n%s", diff)
	}
	kw, err := idx.Keyword(ctx, "main", "", "project alpha", f, 10)
	if err != nil {
		t.Fatalf("Keyword: %v", err)
	}
	if diff := cmp.Diff([]string{"custom", "daily"}, matchKeys(kw)); diff != "" {
		t.Errorf("filtered Keyword (-want +got):\n%s", diff)
	}
	vec, err := idx.Vector(ctx, "main", "", memory.Normalized(Vector("project alpha")), memory.Filter{Categories: []memory.Category{memory.Core}}, 10)
	if err != nil {
		t.Fatalf("Vector: %v", err)
	}
	if diff := cmp.Diff([]string{"core"}, matchKeys(vec)); diff != "" {
		t.Errorf("filtered Vector (-want +got):\n%s", diff)
	}
}

func testAgentIsolation(t *testing.T, idx memory.Index) {
	ctx := t.Context()
	m := newMemory(t, idx)
	// "ann" is a prefix of "anna": scoping must compare whole names.
	agents := map[string]string{
		"alice": "The password hint is sunflower.",
		"bob":   "The password hint is tulip.",
		"ann":   "The password hint is daisy.",
		"anna":  "The password hint is orchid.",
	}
	for a, text := range agents {
		store(t, m, memory.Entry{Agent: a, Key: "secret", Text: text, Category: memory.Core})
	}
	store(t, m, memory.Entry{Agent: "bob", Key: "garden", Text: "Sunflower and daisy and orchid garden.", Category: memory.Daily})

	for a, text := range agents {
		got, err := m.Get(ctx, a, "", "secret")
		if err != nil || got.Text != text || got.Agent != a {
			t.Errorf("Get(%s, secret) = %q of %q, %v; want %q", a, got.Text, got.Agent, err, text)
		}
		if _, err := m.Get(ctx, a+"x", "", "secret"); !errors.Is(err, memory.ErrNotFound) {
			t.Errorf("Get(%sx, secret): err = %v, want ErrNotFound", a, err)
		}
		if a != "bob" {
			if _, err := m.Get(ctx, a, "", "garden"); !errors.Is(err, memory.ErrNotFound) {
				t.Errorf("Get(%s, garden): err = %v, want ErrNotFound", a, err)
			}
		}
		const q = "password hint sunflower tulip daisy orchid garden"
		res := search(t, m, a, q, memory.SearchOptions{})
		want := []string{"secret"}
		if a == "bob" {
			want = []string{"garden", "secret"}
		}
		if diff := cmp.Diff(want, sorted(keys(res.Hits))); diff != "" {
			t.Errorf("search as %s (-want +got):\n%s", a, diff)
		}
		for _, h := range res.Hits {
			if h.Entry.Agent != a {
				t.Errorf("search as %s found a memory of %s: %q", a, h.Entry.Agent, h.Entry.Text)
			}
		}
		kw, err := idx.Keyword(ctx, a, "", q, memory.Filter{}, 10)
		if err != nil {
			t.Fatalf("Keyword: %v", err)
		}
		vec, err := idx.Vector(ctx, a, "", memory.Normalized(Vector(q)), memory.Filter{}, 10)
		if err != nil {
			t.Fatalf("Vector: %v", err)
		}
		for _, mt := range append(kw, vec...) {
			if mt.Entry.Agent != a {
				t.Errorf("index search as %s found a memory of %s: %q", a, mt.Entry.Agent, mt.Entry.Text)
			}
		}
		if diff := cmp.Diff(want, matchKeys(vec)); diff != "" {
			t.Errorf("Vector as %s (-want +got):\n%s", a, diff)
		}
	}

	if err := m.Forget(ctx, "alice", "", "secret"); err != nil {
		t.Fatalf("Forget: %v", err)
	}
	if got, err := m.Get(ctx, "bob", "", "secret"); err != nil || got.Text != agents["bob"] {
		t.Errorf("bob's secret after alice forgot hers = %q, %v", got.Text, err)
	}
	if res := search(t, m, "unknown", "password", memory.SearchOptions{}); len(res.Hits) != 0 {
		t.Errorf("an agent without memories found %q", keys(res.Hits))
	}
}

// Owners of the owner cases. "key:a" is a prefix of "key:ab": scoping
// must compare whole owners.
const (
	ownerA  = "key:a"
	ownerB  = "key:b"
	ownerAB = "key:ab"
)

// ownedKeys lists "owner/key" of hits, sorted ("/key" for agent-wide).
func ownedKeys(hits []memory.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Entry.Owner + "/" + h.Entry.Key
	}
	return sorted(out)
}

// ownedMatchKeys lists "owner/key" of matches, sorted, without repeats.
func ownedMatchKeys(ms []memory.Match) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Entry.Owner+"/"+m.Entry.Key)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func testOwnerIsolation(t *testing.T, idx memory.Index) {
	ctx := t.Context()
	m := newMemory(t, idx)
	for _, e := range []memory.Entry{
		{Key: "file:MEMORY.md", Text: "The team standup is at nine. The locker room is on floor two.", Category: memory.Core, Source: "MEMORY.md"},
		{Owner: ownerA, Key: "run:1", Text: "User: my locker code is 4711.\n\nAssistant: Noted.", Category: memory.Conversation, Source: "session:a"},
		{Owner: ownerB, Key: "run:2", Text: "User: my locker code is 9042.\n\nAssistant: Noted.", Category: memory.Conversation, Source: "session:b"},
		{Owner: ownerAB, Key: "run:3", Text: "User: my locker code is 5555.\n\nAssistant: Noted.", Category: memory.Conversation, Source: "session:ab"},
		{Owner: ownerA, Key: "bike", Text: "The locker code of the bike shed is 1984.", Category: memory.Custom, Source: "tool"},
	} {
		e.Agent = "main"
		store(t, m, e)
	}
	// The same owner of another agent.
	store(t, m, memory.Entry{Agent: "other", Owner: ownerA, Key: "run:4", Text: "User: my locker code is 1234.", Category: memory.Conversation})

	const q = "locker code standup"
	vq := memory.Normalized(Vector(q))
	kwOnly := newMemory(t, idx, keywordOnly)
	for owner, want := range map[string][]string{
		"":      {"/file:MEMORY.md"},
		ownerA:  {"/file:MEMORY.md", ownerA + "/bike", ownerA + "/run:1"},
		ownerB:  {"/file:MEMORY.md", ownerB + "/run:2"},
		ownerAB: {"/file:MEMORY.md", ownerAB + "/run:3"},
		"tg:7":  {"/file:MEMORY.md"},
	} {
		for name, mem := range map[string]*memory.Memory{"hybrid": m, "keyword only": kwOnly} {
			res := searchAs(t, mem, "main", owner, q, memory.SearchOptions{})
			if diff := cmp.Diff(want, ownedKeys(res.Hits)); diff != "" {
				t.Errorf("%s search as %q (-want +got):\n%s", name, owner, diff)
			}
			for _, h := range res.Hits {
				if h.Entry.Agent != "main" || !h.Entry.Visible(owner) {
					t.Errorf("%s search as %q found %s/%s of %s: %q", name, owner, h.Entry.Owner, h.Entry.Key, h.Entry.Agent, h.Snippet)
				}
			}
		}
		kw, err := idx.Keyword(ctx, "main", owner, q, memory.Filter{}, 10)
		if diff := cmp.Diff(want, ownedMatchKeys(kw)); err != nil || diff != "" {
			t.Errorf("Keyword as %q (-want +got), %v:\n%s", owner, err, diff)
		}
		vec, err := idx.Vector(ctx, "main", owner, vq, memory.Filter{}, 10)
		if diff := cmp.Diff(want, ownedMatchKeys(vec)); err != nil || diff != "" {
			t.Errorf("Vector as %q (-want +got), %v:\n%s", owner, err, diff)
		}
		// Filters narrow what the owner sees, never widen it.
		conv := memory.Filter{Categories: []memory.Category{memory.Conversation}}
		wantConv := slices.DeleteFunc(slices.Clone(want), func(k string) bool { return !strings.Contains(k, "/run:") })
		kw, err = idx.Keyword(ctx, "main", owner, q, conv, 10)
		if diff := cmp.Diff(wantConv, ownedMatchKeys(kw), cmpopts.EquateEmpty()); err != nil || diff != "" {
			t.Errorf("Keyword as %q filtered to conversations (-want +got), %v:\n%s", owner, err, diff)
		}
		vec, err = idx.Vector(ctx, "main", owner, vq, conv, 10)
		if diff := cmp.Diff(wantConv, ownedMatchKeys(vec), cmpopts.EquateEmpty()); err != nil || diff != "" {
			t.Errorf("Vector as %q filtered to conversations (-want +got), %v:\n%s", owner, err, diff)
		}
	}
	// A small k is filled with what the owner may see, however many
	// nearer chunks other owners have.
	for i := range 12 {
		store(t, m, memory.Entry{Agent: "main", Owner: ownerB, Key: fmt.Sprintf("crowd-%02d", i), Text: "locker code standup locker code", Category: memory.Daily})
	}
	for _, tc := range []struct {
		name string
		got  func() ([]memory.Match, error)
	}{
		{"Keyword", func() ([]memory.Match, error) { return idx.Keyword(ctx, "main", ownerA, q, memory.Filter{}, 2) }},
		{"Vector", func() ([]memory.Match, error) { return idx.Vector(ctx, "main", ownerA, vq, memory.Filter{}, 2) }},
	} {
		ms, err := tc.got()
		if err != nil || len(ms) != 2 {
			t.Errorf("%s as %s, k=2, among another owner's better matches = %q, %v; want 2 of its own or agent-wide", tc.name, ownerA, ownedMatchKeys(ms), err)
		}
		for _, mt := range ms {
			if !mt.Entry.Visible(ownerA) {
				t.Errorf("%s as %s found %s/%s", tc.name, ownerA, mt.Entry.Owner, mt.Entry.Key)
			}
		}
	}
}

func testOwnerGetForget(t *testing.T, idx memory.Index) {
	ctx := t.Context()
	m := newMemory(t, idx)
	mine := memory.Entry{Agent: "main", Owner: ownerA, Key: "run:1", Text: "User: my doctor is Dr. Okafor.", Category: memory.Conversation, Source: "session:a"}
	shared := memory.Entry{Agent: "main", Key: "doctors", Text: "The clinic opens at eight.", Category: memory.Core}
	store(t, m, mine)
	store(t, m, shared)

	if got, err := m.Get(ctx, "main", ownerA, "run:1"); err != nil || got.Text != mine.Text || got.Owner != ownerA {
		t.Errorf("Get as the owner = %+v, %v; want the owner's memory", got, err)
	}
	for _, owner := range []string{ownerB, ownerAB, ""} {
		if got, err := m.Get(ctx, "main", owner, "run:1"); !errors.Is(err, memory.ErrNotFound) {
			t.Errorf("Get of %s's key as %q = %q, %v; want ErrNotFound", ownerA, owner, got.Text, err)
		}
		if got, err := idx.Get(ctx, "main", owner, "run:1"); !errors.Is(err, memory.ErrNotFound) {
			t.Errorf("index Get of %s's key as %q = %q, %v; want ErrNotFound", ownerA, owner, got.Text, err)
		}
		// An agent-wide key is everyone's to read.
		if got, err := m.Get(ctx, "main", owner, "doctors"); err != nil || got.Text != shared.Text || got.Owner != "" {
			t.Errorf("Get of an agent-wide key as %q = %+v, %v; want the agent-wide memory", owner, got, err)
		}
	}
	// The index's Get is exact: an owner has no entry under the agent-wide key.
	if _, err := idx.Get(ctx, "main", ownerA, "doctors"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("index Get of an agent-wide key as %s: err = %v, want ErrNotFound", ownerA, err)
	}

	// Forgetting another owner's key, as an owner or agent-wide, is
	// forgetting a missing key: nothing happens.
	for _, owner := range []string{ownerB, ownerAB, ""} {
		if err := m.Forget(ctx, "main", owner, "run:1"); err != nil {
			t.Errorf("Forget of %s's key as %q: %v", ownerA, owner, err)
		}
	}
	if got, err := m.Get(ctx, "main", ownerA, "run:1"); err != nil || got.Text != mine.Text {
		t.Errorf("the owner's memory after others forgot its key = %q, %v", got.Text, err)
	}
	if res := searchAs(t, m, "main", ownerA, "doctor Okafor", memory.SearchOptions{}); !slices.Contains(keys(res.Hits), "run:1") {
		t.Errorf("search as the owner after others forgot its key = %q, want run:1", keys(res.Hits))
	}
	// An owner cannot forget an agent-wide memory for everyone.
	if err := m.Forget(ctx, "main", ownerA, "doctors"); err != nil {
		t.Errorf("Forget of an agent-wide key as an owner: %v", err)
	}
	if _, err := m.Get(ctx, "main", "", "doctors"); err != nil {
		t.Errorf("the agent-wide memory after an owner forgot its key: %v", err)
	}

	if err := m.Forget(ctx, "main", ownerA, "run:1"); err != nil {
		t.Fatalf("Forget as the owner: %v", err)
	}
	if _, err := m.Get(ctx, "main", ownerA, "run:1"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Get after the owner forgot: err = %v, want ErrNotFound", err)
	}
	if res := searchAs(t, m, "main", ownerA, "doctor Okafor", memory.SearchOptions{}); slices.Contains(keys(res.Hits), "run:1") {
		t.Errorf("search after the owner forgot found %q", keys(res.Hits))
	}
	if err := m.Forget(ctx, "main", "", "doctors"); err != nil {
		t.Fatalf("agent-wide Forget: %v", err)
	}
	if _, err := m.Get(ctx, "main", ownerB, "doctors"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Get of a forgotten agent-wide key: err = %v, want ErrNotFound", err)
	}
}

func testOwnerSameKey(t *testing.T, idx memory.Index) {
	ctx := t.Context()
	now := Now
	m := newMemory(t, idx, func(o *memory.Options) { o.Now = func() time.Time { return now } })
	texts := map[string]string{
		"":     "The office coffee machine is on floor two.",
		ownerA: "Ann drinks an oat milk flat white coffee.",
		ownerB: "Ben drinks black espresso coffee.",
	}
	created := map[string]time.Time{}
	for i, owner := range []string{"", ownerA, ownerB} {
		now = Now.Add(time.Duration(i) * time.Hour)
		created[owner] = now
		store(t, m, memory.Entry{Agent: "main", Owner: owner, Key: "coffee", Text: texts[owner], Category: memory.Custom})
	}
	// Each owner's store made a memory of its own; none replaced another.
	check := func(when string) {
		t.Helper()
		for owner, text := range texts {
			got, err := idx.Get(ctx, "main", owner, "coffee")
			if err != nil || got.Text != text || got.Owner != owner || !got.CreatedAt.Equal(created[owner]) {
				t.Errorf("%s: Get(coffee) as %q = %q of %q created %v, %v; want %q created %v", when, owner, got.Text, got.Owner, got.CreatedAt, err, text, created[owner])
			}
		}
	}
	check("after three stores")

	now = Now.Add(5 * time.Hour)
	texts[ownerA] = "Ann switched to green tea."
	store(t, m, memory.Entry{Agent: "main", Owner: ownerA, Key: "coffee", Text: texts[ownerA], Category: memory.Custom})
	check("after the owner re-stored its key")
	if got, _ := m.Get(ctx, "main", ownerA, "coffee"); !got.UpdatedAt.Equal(now) {
		t.Errorf("re-stored memory updated %v, want %v", got.UpdatedAt, now)
	}

	const q = "coffee drinks tea espresso machine oat"
	for owner, want := range map[string][]string{
		"":     {"/coffee"},
		ownerA: {"/coffee", ownerA + "/coffee"},
		ownerB: {"/coffee", ownerB + "/coffee"},
	} {
		res := searchAs(t, m, "main", owner, q, memory.SearchOptions{})
		if diff := cmp.Diff(want, ownedKeys(res.Hits)); diff != "" {
			t.Errorf("search as %q (-want +got):\n%s", owner, diff)
		}
		for _, h := range res.Hits {
			if h.Entry.Text != texts[h.Entry.Owner] {
				t.Errorf("search as %q: hit %s/coffee has text %q, want %q", owner, h.Entry.Owner, h.Entry.Text, texts[h.Entry.Owner])
			}
		}
	}
	for owner, want := range map[string][]string{
		"":     {"/coffee"},
		ownerA: {"/coffee", ownerA + "/coffee"},
	} {
		kw, err := idx.Keyword(ctx, "main", owner, "coffee tea", memory.Filter{}, 10)
		if diff := cmp.Diff(want, ownedMatchKeys(kw)); err != nil || diff != "" {
			t.Errorf("Keyword as %q (-want +got), %v:\n%s", owner, err, diff)
		}
		vec, err := idx.Vector(ctx, "main", owner, memory.Normalized(Vector("coffee")), memory.Filter{}, 10)
		if diff := cmp.Diff(want, ownedMatchKeys(vec)); err != nil || diff != "" {
			t.Errorf("Vector as %q (-want +got), %v:\n%s", owner, err, diff)
		}
	}
	if kw, err := idx.Keyword(ctx, "main", ownerA, "oat", memory.Filter{}, 10); err != nil || len(kw) != 0 {
		t.Errorf("Keyword for the replaced text = %q, %v; want nothing", ownedMatchKeys(kw), err)
	}

	if err := idx.Delete(ctx, "main", ownerB, "coffee"); err != nil {
		t.Fatal(err)
	}
	delete(texts, ownerB)
	check("after one owner deleted its key")
	if _, err := idx.Get(ctx, "main", ownerB, "coffee"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Get of the deleted key: err = %v, want ErrNotFound", err)
	}
	res := searchAs(t, m, "main", ownerB, q, memory.SearchOptions{})
	if diff := cmp.Diff([]string{"/coffee"}, ownedKeys(res.Hits)); diff != "" {
		t.Errorf("search as the owner that deleted its key (-want +got):\n%s", diff)
	}
}

func testAgentWideShared(t *testing.T, idx memory.Index) {
	ctx := t.Context()
	m := newMemory(t, idx)
	wide := memory.Entry{Agent: "main", Key: "file:MEMORY.md", Text: "Deploys happen on Tuesdays after lunch.", Category: memory.Core, Source: "MEMORY.md"}
	store(t, m, wide)
	for _, owner := range []string{"", ownerA, "tg:-100123", "user:ann", "key:ü/#"} {
		res := searchAs(t, m, "main", owner, "when are deploys", memory.SearchOptions{})
		if diff := cmp.Diff([]string{"/file:MEMORY.md"}, ownedKeys(res.Hits)); diff != "" {
			t.Errorf("search as %q (-want +got):\n%s", owner, diff)
		}
		if got, err := m.Get(ctx, "main", owner, wide.Key); err != nil || got.Text != wide.Text || got.Owner != "" {
			t.Errorf("Get as %q = %+v, %v; want the agent-wide memory", owner, got, err)
		}
	}
	// Another agent's users do not see it.
	if res := searchAs(t, m, "other", ownerA, "when are deploys", memory.SearchOptions{}); len(res.Hits) != 0 {
		t.Errorf("another agent's user found %q", ownedKeys(res.Hits))
	}
}

func testDecayOrdering(t *testing.T, idx memory.Index) {
	m := newMemory(t, idx)
	const text = "The weekly standup moved to Thursday morning."
	old := Now.Add(-90 * 24 * time.Hour)
	for _, e := range []memory.Entry{
		{Key: "stale", Category: memory.Daily, CreatedAt: old, UpdatedAt: old},
		{Key: "fresh", Category: memory.Daily, CreatedAt: Now.Add(-24 * time.Hour), UpdatedAt: Now.Add(-24 * time.Hour)},
		{Key: "core", Category: memory.Core, CreatedAt: old, UpdatedAt: old},
		{Key: "workspace", Category: memory.Custom, Source: "MEMORY.md", CreatedAt: old, UpdatedAt: old},
	} {
		e.Agent, e.Text = "main", text
		store(t, m, e)
	}
	res := search(t, m, "main", "standup Thursday", memory.SearchOptions{})
	score := map[string]float64{}
	for _, h := range res.Hits {
		score[h.Entry.Key] = h.Score
	}
	if got := keys(res.Hits); len(got) != 4 || got[2] != "fresh" || got[3] != "stale" {
		t.Fatalf("order = %q, want core and workspace (no decay), then fresh, then stale", got)
	}
	// Equally relevant texts normalise to 1 on both sides.
	for k, want := range map[string]float64{"core": 1, "workspace": 1, "fresh": 0.9772, "stale": 0.125} {
		if d := score[k] - want; d < -0.01 || d > 0.01 {
			t.Errorf("score of %s = %.4f, want %.4f (half-life 30 days)", k, score[k], want)
		}
	}
}

func testKeywordOnlyFallback(t *testing.T, idx memory.Index) {
	m := newMemory(t, idx, keywordOnly)
	store(t, m, memory.Entry{Agent: "main", Key: "wifi", Text: "The office wifi password is on the fridge.", Category: memory.Core})
	store(t, m, memory.Entry{Agent: "main", Key: "cat", Text: "The cat is called Miso.", Category: memory.Core})
	res := search(t, m, "main", "wifi password", memory.SearchOptions{})
	if res.Method != memory.MethodBM25Fallback {
		t.Errorf("Method = %q, want %q", res.Method, memory.MethodBM25Fallback)
	}
	if got := keys(res.Hits); !slices.Equal(got, []string{"wifi"}) {
		t.Fatalf("hits = %q, want [wifi]", got)
	}
	if h := res.Hits[0]; h.VectorScore != 0 || h.KeywordScore != 1 || h.Score != 1 {
		t.Errorf("hit scores = %v keyword, %v vector, %v fused; want 1, 0, 1", h.KeywordScore, h.VectorScore, h.Score)
	}
	vec, err := idx.Vector(t.Context(), "main", "", memory.Normalized(Vector("wifi password")), memory.Filter{}, 10)
	if err != nil || len(vec) != 0 {
		t.Errorf("Vector over keyword-only entries = %v, %v; want nothing", matchKeys(vec), err)
	}

	// A memory with an embedder searches the same entries: the vector side
	// finds nothing, the keyword side still does.
	res = search(t, newMemory(t, idx), "main", "Miso", memory.SearchOptions{})
	if got := keys(res.Hits); res.Method != memory.MethodHybrid || !slices.Equal(got, []string{"cat"}) {
		t.Errorf("hybrid search over keyword-only entries = %q, %q; want hybrid, [cat]", res.Method, got)
	}
}

func testEmbeddingOutage(t *testing.T, idx memory.Index) {
	ctx := t.Context()
	down := newMemory(t, idx, func(o *memory.Options) { o.Embedder = failingEmbedder{} })
	e := memory.Entry{Agent: "main", Key: "dentist", Text: "Dentist appointment on the 12th at 9am.", Category: memory.Daily}
	err := down.Store(ctx, e)
	if !errors.Is(err, memory.ErrNotEmbedded) || !errors.Is(err, errEmbedder) {
		t.Errorf("Store while the embedder is down: err = %v, want ErrNotEmbedded wrapping the cause", err)
	}
	if got, err := down.Get(ctx, "main", "", "dentist"); err != nil || got.Text != e.Text {
		t.Fatalf("Get after a failed embedding = %q, %v; want the memory", got.Text, err)
	}
	res := search(t, down, "main", "dentist appointment", memory.SearchOptions{})
	if got := keys(res.Hits); res.Method != memory.MethodBM25Fallback || !slices.Equal(got, []string{"dentist"}) {
		t.Errorf("search while the embedder is down = %q, %q; want bm25_fallback, [dentist]", res.Method, got)
	}

	// Entries embedded earlier, a query the embedder cannot embed now.
	up := newMemory(t, idx)
	store(t, up, memory.Entry{Agent: "main", Key: "gym", Text: "Gym on Mondays and Wednesdays.", Category: memory.Daily})
	res = search(t, down, "main", "gym mondays", memory.SearchOptions{})
	if got := keys(res.Hits); res.Method != memory.MethodBM25Fallback || !slices.Equal(got, []string{"gym"}) {
		t.Errorf("search with the query embedding down = %q, %q; want bm25_fallback, [gym]", res.Method, got)
	}
}

func testUnicode(t *testing.T, idx memory.Index) {
	ctx := t.Context()
	m := newMemory(t, idx)
	texts := map[string]string{
		"fr":    "Le café crème à Paris était délicieux.",
		"de":    "Die Größe der Straße überrascht mich.",
		"ja":    "東京 タワー の 夜景 は きれい",
		"zh":    "我 喜欢 喝 绿茶",
		"emoji": "Birthday party 🎉 tonight with cake 🎂 and friends 👩‍👩‍👧",
		"mixed": "Ñandú naïve coöperate — “quoted” façade",
	}
	for k, text := range texts {
		store(t, m, memory.Entry{Agent: "main", Key: k, Text: text, Category: memory.Custom, Source: "memory/2026-05-01 ✓.md"})
	}
	store(t, m, memory.Entry{Agent: "main", Key: "clé 🔑 東京", Text: "A key that is not ASCII.", Category: memory.Custom})
	for k, text := range texts {
		got, err := m.Get(ctx, "main", "", k)
		if err != nil || got.Text != text || got.Source != "memory/2026-05-01 ✓.md" {
			t.Errorf("Get(%s) = %q from %q, %v; want %q", k, got.Text, got.Source, err, text)
		}
	}
	if got, err := m.Get(ctx, "main", "", "clé 🔑 東京"); err != nil || got.Key != "clé 🔑 東京" {
		t.Errorf("Get of a Unicode key = %q, %v", got.Key, err)
	}
	kwOnly := newMemory(t, idx, keywordOnly)
	for q, want := range map[string]string{
		"café":    "fr",
		"Straße":  "de",
		"東京":      "ja",
		"タワー":     "ja",
		"绿茶":      "zh",
		"party":   "emoji",
		"Ñandú":   "mixed",
		"FAÇADE":  "mixed",
		"tonight": "emoji",
	} {
		res := search(t, kwOnly, "main", q, memory.SearchOptions{})
		if len(res.Hits) == 0 || res.Hits[0].Entry.Key != want {
			t.Errorf("keyword search %q = %q, want %s first", q, keys(res.Hits), want)
			continue
		}
		if h := res.Hits[0]; h.Snippet != texts[want] {
			t.Errorf("snippet for %q = %q, want %q", q, h.Snippet, texts[want])
		}
	}
}

func testLongTextChunked(t *testing.T, idx memory.Index) {
	ctx := t.Context()
	m := newMemory(t, idx)
	subjects := []string{"The old harbor", "A harbor crane", "The harbor master", "Every harbor boat", "The quiet harbor"}
	verbs := []string{"watches", "carries", "remembers", "paints", "follows"}
	objects := []string{"grey gulls over the pier", "crates of salted fish", "the tide tables", "evening fog", "the ferry schedule"}
	var b strings.Builder
	for i := 0; b.Len() < 3000; i++ {
		fmt.Fprintf(&b, "%s %s %s. ", subjects[i%5], verbs[(i/5)%5], objects[(i/2)%5])
	}
	const needle = "The zebra orchestra rehearses quantum lullabies on Sundays."
	b.WriteString(needle + " ")
	for i := 0; b.Len() < 6500; i++ {
		fmt.Fprintf(&b, "%s %s %s. ", subjects[(i+2)%5], verbs[(i/3)%5], objects[i%5])
	}
	text := b.String()
	store(t, m, memory.Entry{Agent: "main", Key: "log", Text: text, Category: memory.Daily})
	store(t, m, memory.Entry{Agent: "main", Key: "other", Text: "Buy milk and bread.", Category: memory.Daily})

	got, err := m.Get(ctx, "main", "", "log")
	if err != nil || got.Text != text {
		t.Fatalf("Get of a long text: %d bytes, %v; want %d bytes", len(got.Text), err, len(text))
	}
	res := search(t, m, "main", "zebra orchestra quantum lullabies", memory.SearchOptions{})
	if len(res.Hits) == 0 || res.Hits[0].Entry.Key != "log" {
		t.Fatalf("search for the middle phrase = %q, want log first", keys(res.Hits))
	}
	snip := res.Hits[0].Snippet
	if !strings.Contains(snip, "zebra orchestra") || len([]rune(snip)) > memory.DefaultChunkSize || len(snip) >= len(text) {
		t.Errorf("snippet = %q (%d chars), want the chunk with the phrase, at most %d chars", snip, len([]rune(snip)), memory.DefaultChunkSize)
	}
	if got := keys(res.Hits); slices.Index(got[1:], "log") >= 0 {
		t.Errorf("hits = %q, want one hit per entry", got)
	}

	kw, err := idx.Keyword(ctx, "main", "", "harbor", memory.Filter{}, 20)
	if err != nil {
		t.Fatalf("Keyword: %v", err)
	}
	seqs := map[int]bool{}
	for _, mt := range kw {
		if mt.Entry.Key != "log" || mt.Entry.Text != got.Text {
			t.Errorf("Keyword match of %q, want chunks of log with the whole entry", mt.Entry.Key)
		}
		seqs[mt.Chunk.Seq] = true
	}
	if len(seqs) < 8 || len(seqs) != len(kw) {
		t.Errorf("Keyword(harbor) found %d matches in %d chunks, want one per chunk of a text of about ten", len(kw), len(seqs))
	}
}

func testSearchLimit(t *testing.T, idx memory.Index) {
	m := newMemory(t, idx)
	for i := range 15 {
		store(t, m, memory.Entry{Agent: "main", Key: fmt.Sprintf("note-%02d", i), Text: fmt.Sprintf("Reminder number %d about the invoice.", i), Category: memory.Daily})
	}
	if res := search(t, m, "main", "invoice reminder", memory.SearchOptions{Limit: 5}); len(res.Hits) != 5 {
		t.Errorf("Limit 5: %d hits", len(res.Hits))
	}
	if res := search(t, m, "main", "invoice reminder", memory.SearchOptions{}); len(res.Hits) != memory.DefaultLimit {
		t.Errorf("default limit: %d hits, want %d", len(res.Hits), memory.DefaultLimit)
	}
	res := search(t, m, "main", "invoice reminder number 7", memory.SearchOptions{})
	if len(res.Hits) == 0 || res.Hits[0].Entry.Key != "note-07" {
		t.Errorf("hits = %q, want note-07 first", keys(res.Hits))
	}
	for i := 1; i < len(res.Hits); i++ {
		if res.Hits[i].Score > res.Hits[i-1].Score {
			t.Errorf("hits not in score order: %v then %v", res.Hits[i-1].Score, res.Hits[i].Score)
		}
	}
}

func testHostileQueries(t *testing.T, idx memory.Index) {
	ctx := t.Context()
	m := newMemory(t, idx)
	store(t, m, memory.Entry{Agent: "main", Key: "syntax", Text: `Notes about "quotes", stars * and NEAR(things) OR not.`, Category: memory.Custom})
	for _, q := range []string{
		`"`, `""`, `"unterminated`, `AND OR NOT`, `NOT`, `*`, `**`, `near*`, `NEAR(`, `NEAR(a b, 2)`, `NEAR`,
		`(`, `)`, `())(`, `a:b`, `body: x`, `text:quotes`, `{body scope}: x`, `^quotes`, `-quotes`, `+quotes`,
		`'`, `\`, `\"`, `%`, `_`, `;`, `--`, `/* */`, `quotes AND`, `OR quotes`, `"quotes" NOT "stars"`,
		`quotes~2`, `q?otes`, `[quotes]`, `\u0000`, "tab\tand\nnewline", `\\\\\\"`, `{"query": {"match_all": {}}}`,
	} {
		if _, err := idx.Keyword(ctx, "main", "", q, memory.Filter{}, 10); err != nil {
			t.Errorf("Keyword(%q): %v", q, err)
		}
		res, err := m.Search(ctx, "main", "", q, memory.SearchOptions{})
		if err != nil {
			t.Errorf("Search(%q): %v", q, err)
			continue
		}
		if res.Method != memory.MethodHybrid {
			t.Errorf("Search(%q): method %q, want hybrid (the keyword side must not fail)", q, res.Method)
		}
	}
	for _, q := range []string{`"quotes"`, `NEAR(things)`, `stars*`, `notes: about`} {
		kw, err := idx.Keyword(ctx, "main", "", q, memory.Filter{}, 10)
		if err != nil || len(kw) != 1 {
			t.Errorf("Keyword(%q) = %d matches, %v; want the entry, its words taken literally", q, len(kw), err)
		}
	}
}

func testConcurrentStoreSearch(t *testing.T, idx memory.Index) {
	ctx := t.Context()
	m := newMemory(t, idx)
	const writers, each = 4, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each*2)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				e := memory.Entry{Agent: "main", Key: fmt.Sprintf("w%d-%d", w, i), Text: fmt.Sprintf("Parallel note %d from writer %d about kites.", i, w), Category: memory.Daily}
				if err := m.Store(ctx, e); err != nil {
					errs <- err
				}
				if _, err := m.Search(ctx, "main", "", "kites parallel", memory.SearchOptions{}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	res := search(t, m, "main", "kites", memory.SearchOptions{Limit: memory.MaxLimit})
	if len(res.Hits) != writers*each {
		t.Errorf("after concurrent stores search found %d, want %d", len(res.Hits), writers*each)
	}
	vec, err := idx.Vector(ctx, "main", "", memory.Normalized(Vector("kites")), memory.Filter{}, 100)
	if err != nil || len(vec) != writers*each {
		t.Errorf("Vector after concurrent stores = %d, %v; want %d", len(vec), err, writers*each)
	}
}

func testIndexRoundTrip(t *testing.T, idx memory.Index) {
	ctx := t.Context()
	e := memory.Entry{
		Agent:     "main",
		Key:       "k",
		Text:      "Round trip of every field.",
		Category:  memory.Conversation,
		Source:    "session:abc",
		CreatedAt: time.Date(2025, 1, 2, 3, 4, 5, 6_000_000, time.UTC),
		UpdatedAt: time.Date(2026, 2, 3, 4, 5, 6, 7_000_000, time.UTC),
	}
	put(t, idx, e)
	got, err := idx.Get(ctx, "main", "", "k")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if diff := cmp.Diff(e, got); diff != "" {
		t.Errorf("Get (-want +got):\n%s", diff)
	}
	// An owner's entry under the same key, with an owner that needs
	// escaping in most key schemes.
	owned := e
	owned.Owner, owned.Text = "user:ann/#1 ü", "Round trip of an owned entry."
	put(t, idx, owned)
	if got, err := idx.Get(ctx, "main", owned.Owner, "k"); err != nil || !cmp.Equal(owned, got) {
		t.Errorf("Get of the owned entry = %+v, %v; want %+v", got, err, owned)
	}
	if got, err := idx.Get(ctx, "main", "", "k"); err != nil || !cmp.Equal(e, got) {
		t.Errorf("Get of the agent-wide entry after an owner's Put = %+v, %v; want %+v", got, err, e)
	}
	kw, err := idx.Keyword(ctx, "main", owned.Owner, "round trip", memory.Filter{}, 10)
	if err != nil || len(kw) != 2 {
		t.Fatalf("Keyword as the owner = %d matches, %v; want the owned and the agent-wide entry", len(kw), err)
	}
	for _, mt := range kw {
		want := e
		if mt.Entry.Owner != "" {
			want = owned
		}
		if diff := cmp.Diff(want, mt.Entry); diff != "" {
			t.Errorf("Keyword match entry (-want +got):\n%s", diff)
		}
	}
	if err := idx.Delete(ctx, "main", owned.Owner, "k"); err != nil {
		t.Fatalf("Delete of the owned entry: %v", err)
	}
	if _, err := idx.Get(ctx, "main", owned.Owner, "k"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Get of the deleted owned entry: err = %v, want ErrNotFound", err)
	}
	if _, err := idx.Get(ctx, "other", "", "k"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Get as another agent: err = %v, want ErrNotFound", err)
	}
	if err := idx.Delete(ctx, "other", "", "k"); err != nil {
		t.Errorf("Delete as another agent: %v", err)
	}
	if _, err := idx.Get(ctx, "main", "", "k"); err != nil {
		t.Errorf("Delete as another agent removed the entry: %v", err)
	}
	if err := idx.Delete(ctx, "main", "", "missing"); err != nil {
		t.Errorf("Delete of a missing key: %v", err)
	}
	if err := idx.Delete(ctx, "main", "", "k"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := idx.Get(ctx, "main", "", "k"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("Get after Delete: err = %v, want ErrNotFound", err)
	}
}

func testIndexKeyword(t *testing.T, idx memory.Index) {
	ctx := t.Context()
	for i := range 5 {
		put(t, idx, entry("a", fmt.Sprintf("a%d", i), fmt.Sprintf("Lighthouse keeper log %d.", i), memory.Daily))
	}
	for i := range 3 {
		put(t, idx, entry("b", fmt.Sprintf("b%d", i), fmt.Sprintf("Lighthouse keeper log %d.", i), memory.Daily))
	}
	put(t, idx, entry("a", "best", "Lighthouse lighthouse lighthouse.", memory.Core))
	put(t, idx, entry("a", "none", "Nothing relevant here.", memory.Core))

	kw, err := idx.Keyword(ctx, "a", "", "lighthouse", memory.Filter{}, 3)
	if err != nil {
		t.Fatalf("Keyword: %v", err)
	}
	if len(kw) != 3 {
		t.Fatalf("Keyword k=3: %d matches", len(kw))
	}
	if kw[0].Entry.Key != "best" {
		t.Errorf("first match %q, want best (most occurrences, shortest)", kw[0].Entry.Key)
	}
	for i, mt := range kw {
		if mt.Entry.Agent != "a" || mt.Score <= 0 {
			t.Errorf("match %d: agent %q score %v", i, mt.Entry.Agent, mt.Score)
		}
		if i > 0 && mt.Score > kw[i-1].Score {
			t.Errorf("matches not ordered by score: %v then %v", kw[i-1].Score, mt.Score)
		}
	}
	kw, err = idx.Keyword(ctx, "a", "", "lighthouse", memory.Filter{}, 100)
	if err != nil || len(kw) != 6 {
		t.Errorf("Keyword k=100 = %d matches, %v; want 6", len(kw), err)
	}
	kw, err = idx.Keyword(ctx, "b", "", "keeper", memory.Filter{}, 100)
	if diff := cmp.Diff([]string{"b0", "b1", "b2"}, matchKeys(kw)); err != nil || diff != "" {
		t.Errorf("Keyword as b (-want +got), %v:\n%s", err, diff)
	}
	// Any word may match: keyword search is a disjunction ranked by BM25.
	kw, err = idx.Keyword(ctx, "a", "", "relevant unrelatedword", memory.Filter{}, 10)
	if diff := cmp.Diff([]string{"none"}, matchKeys(kw)); err != nil || diff != "" {
		t.Errorf("Keyword with one matching word (-want +got), %v:\n%s", err, diff)
	}
	for _, q := range []string{"", "   ", "zzzunknown", "?!"} {
		if kw, err := idx.Keyword(ctx, "a", "", q, memory.Filter{}, 10); err != nil || len(kw) != 0 {
			t.Errorf("Keyword(%q) = %v, %v; want nothing", q, matchKeys(kw), err)
		}
	}
}

func testIndexVector(t *testing.T, idx memory.Index) {
	ctx := t.Context()
	texts := map[string]string{
		"sea":      "sailing boats on the open sea",
		"mountain": "hiking boots for the mountain trail",
		"kitchen":  "recipes for the kitchen oven",
		"garden":   "tomatoes growing in the garden",
	}
	for k, s := range texts {
		put(t, idx, entry("a", k, s, memory.Custom))
		put(t, idx, entry("b", k+"-b", s, memory.Custom))
	}
	put(t, idx, entry("a", "daily-sea", "the open sea at dawn", memory.Daily))
	noVec := entry("a", "novec", "sailing boats on the open sea", memory.Custom)
	if err := idx.Put(ctx, noVec, []memory.Chunk{{Seq: 0, Text: noVec.Text}}); err != nil {
		t.Fatalf("Put without vectors: %v", err)
	}

	q := memory.Normalized(Vector(texts["sea"]))
	vec, err := idx.Vector(ctx, "a", "", q, memory.Filter{}, 2)
	if err != nil {
		t.Fatalf("Vector: %v", err)
	}
	if len(vec) != 2 || vec[0].Entry.Key != "sea" || vec[1].Entry.Key != "daily-sea" {
		t.Fatalf("Vector k=2 = %q, want [sea daily-sea]", matchKeys(vec))
	}
	if s := vec[0].Score; s < 0.999 || s > 1.001 {
		t.Errorf("cosine of identical texts = %v, want 1", s)
	}
	if vec[1].Score > vec[0].Score || vec[0].Chunk.Text != texts["sea"] || vec[0].Entry.Text != texts["sea"] {
		t.Errorf("matches = %+v", vec)
	}
	vec, err = idx.Vector(ctx, "a", "", q, memory.Filter{}, 100)
	if diff := cmp.Diff([]string{"daily-sea", "garden", "kitchen", "mountain", "sea"}, matchKeys(vec)); err != nil || diff != "" {
		t.Errorf("Vector k=100 (-want +got), %v; chunks without vectors are not vector matches:\n%s", err, diff)
	}
	for _, mt := range vec {
		if mt.Entry.Agent != "a" {
			t.Errorf("Vector as a found %q of %q", mt.Entry.Key, mt.Entry.Agent)
		}
	}
	vec, err = idx.Vector(ctx, "a", "", q, memory.Filter{Categories: []memory.Category{memory.Daily}}, 10)
	if diff := cmp.Diff([]string{"daily-sea"}, matchKeys(vec)); err != nil || diff != "" {
		t.Errorf("Vector filtered to daily (-want +got), %v:\n%s", err, diff)
	}
	// Cosine, not dot product: the length of the query does not matter.
	long := slices.Clone(q)
	for i := range long {
		long[i] *= 7
	}
	vec, err = idx.Vector(ctx, "b", "", long, memory.Filter{}, 1)
	if err != nil || len(vec) != 1 || vec[0].Entry.Key != "sea-b" || vec[0].Score < 0.999 || vec[0].Score > 1.001 {
		t.Errorf("Vector with an unnormalised query = %+v, %v; want sea-b with cosine 1", vec, err)
	}
	if vec, err := idx.Vector(ctx, "nobody", "", q, memory.Filter{}, 10); err != nil || len(vec) != 0 {
		t.Errorf("Vector for an agent without memories = %v, %v", matchKeys(vec), err)
	}
}

func testIndexReplaceChunks(t *testing.T, idx memory.Index) {
	ctx := t.Context()
	e := entry("a", "doc", "first second third", memory.Custom)
	put(t, idx, e, "alpha chunk", "beta chunk", "gamma chunk")
	kw, err := idx.Keyword(ctx, "a", "", "chunk", memory.Filter{}, 10)
	if err != nil || len(kw) != 3 {
		t.Fatalf("Keyword over three chunks = %d, %v", len(kw), err)
	}
	got := make([]memory.Chunk, len(kw))
	for i, mt := range kw {
		got[i] = memory.Chunk{Seq: mt.Chunk.Seq, Text: mt.Chunk.Text}
	}
	want := []memory.Chunk{{Seq: 0, Text: "alpha chunk"}, {Seq: 1, Text: "beta chunk"}, {Seq: 2, Text: "gamma chunk"}}
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(func(a, b memory.Chunk) bool { return a.Seq < b.Seq })); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}

	e.Text = "delta"
	put(t, idx, e, "delta chunk")
	for q, n := range map[string]int{"alpha": 0, "gamma": 0, "delta": 1, "chunk": 1} {
		kw, err := idx.Keyword(ctx, "a", "", q, memory.Filter{}, 10)
		if err != nil || len(kw) != n {
			t.Errorf("Keyword(%q) after replacing the chunks = %d, %v; want %d", q, len(kw), err, n)
		}
	}
	vec, err := idx.Vector(ctx, "a", "", memory.Normalized(Vector("alpha chunk")), memory.Filter{}, 10)
	if err != nil || len(vec) != 1 || vec[0].Chunk.Text != "delta chunk" {
		t.Errorf("Vector after replacing the chunks = %+v, %v; want only the delta chunk", vec, err)
	}
	// Search results carry the entry as stored now.
	if len(vec) == 1 && vec[0].Entry.Text != "delta" {
		t.Errorf("Vector match entry text = %q, want delta", vec[0].Entry.Text)
	}
}
