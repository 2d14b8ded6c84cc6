package memorytool

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory/memorytest"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// now is the tests' clock.
var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// newMemory returns a Memory over a fresh embedded index, with the fake
// embedder of memorytest unless emb says otherwise (nil for keyword-only).
func newMemory(t *testing.T, emb ...memory.Embedder) *memory.Memory {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	o := memory.Options{Embedder: memorytest.Embedder{}, Now: func() time.Time { return now }}
	if len(emb) > 0 {
		o.Embedder = emb[0]
	}
	m, err := memory.New(db.MemoryIndex(), o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// tools returns the four tools by name.
func tools(t *testing.T, c Config) map[string]tool.Tool {
	t.Helper()
	ts, err := Tools(c)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]tool.Tool{}
	for _, tl := range ts {
		byName[tl.Definition().Name] = tl
	}
	return byName
}

// step is one tool call and what it should give: want is the exact
// output, or for memory_search (with wantMethod set) the keys of the
// hits, in order; wantErr is a substring of the error.
type step struct {
	name       string
	tool       string
	agent      string // "a" when empty
	owner      string // the session's owner; empty for agent-wide work
	args       string
	want       string
	wantKeys   []string
	wantMethod string
	wantErr    string
}

func run(t *testing.T, ts map[string]tool.Tool, steps []step) {
	t.Helper()
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			agent := s.agent
			if agent == "" {
				agent = "a"
			}
			out, err := ts[s.tool].Call(context.Background(), tool.Env{Agent: agent, SessionID: "s", Owner: s.owner}, json.RawMessage(s.args))
			if s.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), s.wantErr) {
					t.Fatalf("error = %v, want one containing %q (output %q)", err, s.wantErr, out)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if s.wantMethod == "" {
				if diff := cmp.Diff(s.want, out); diff != "" {
					t.Errorf("output (-want +got):\n%s", diff)
				}
				return
			}
			var res searchOutput
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("search output %q is not JSON: %v", out, err)
			}
			keys := []string{}
			for _, h := range res.Hits {
				keys = append(keys, h.Key)
			}
			if diff := cmp.Diff(s.wantKeys, keys); diff != "" {
				t.Errorf("hits (-want +got):\n%s\noutput: %s", diff, out)
			}
			if res.Method != s.wantMethod {
				t.Errorf("method = %q, want %q", res.Method, s.wantMethod)
			}
		})
	}
}

func TestTools(t *testing.T) {
	ts := tools(t, Config{Memory: newMemory(t)})
	coffeeKey := KeyFor("The user drinks dark roast coffee every morning")
	run(t, ts, []step{
		{name: "store with key", tool: "memory_store", args: `{"key":"sister","text":"The user's sister Ada lives in Lisbon","category":"core"}`,
			want: `stored memory "sister" (core)`},
		{name: "store without key", tool: "memory_store", args: `{"text":"The user drinks dark roast coffee every morning"}`,
			want: `stored memory "` + coffeeKey + `" (custom)`},
		{name: "store again replaces", tool: "memory_store", args: `{"key":"sister","text":"The user's sister Ada moved to Porto in April","category":"core"}`,
			want: `updated memory "sister" (core): the new text replaced the old`},
		{name: "other agent stores", tool: "memory_store", agent: "b", args: `{"key":"secret","text":"Agent b's own note about coffee"}`,
			want: `stored memory "secret" (custom)`},
		{name: "get", tool: "memory_get", args: `{"key":"sister"}`,
			want: `{"key":"sister","category":"core","source":"tool","created":"2026-05-01T12:00:00Z","updated":"2026-05-01T12:00:00Z","text":"The user's sister Ada moved to Porto in April"}`},
		{name: "search", tool: "memory_search", args: `{"query":"Ada Porto","limit":1}`,
			wantKeys: []string{"sister"}, wantMethod: memory.MethodHybrid},
		// Without a minimum score every candidate of the vector search is
		// a hit, the least similar with score 0; never another agent's.
		{name: "search is scoped to the agent", tool: "memory_search", args: `{"query":"coffee","limit":10}`,
			wantKeys: []string{coffeeKey, "sister"}, wantMethod: memory.MethodHybrid},
		{name: "search by category", tool: "memory_search", args: `{"query":"coffee Ada","category":"core"}`,
			wantKeys: []string{"sister"}, wantMethod: memory.MethodHybrid},
		{name: "search finds nothing", tool: "memory_search", args: `{"query":"coffee","category":"daily"}`,
			wantKeys: []string{}, wantMethod: memory.MethodHybrid},
		{name: "get another agent's memory", tool: "memory_get", args: `{"key":"secret"}`,
			wantErr: `there is no memory with key "secret"; memory_search finds memories and their keys`},
		{name: "forget another agent's memory", tool: "memory_forget", args: `{"key":"secret"}`,
			want: `there is no memory with key "secret": nothing to forget`},
		{name: "forget", tool: "memory_forget", args: `{"key":"sister"}`, want: `forgot memory "sister"`},
		{name: "forgotten is gone", tool: "memory_get", args: `{"key":"sister"}`, wantErr: "there is no memory"},
		{name: "forgotten is not found", tool: "memory_search", args: `{"query":"Ada sister Porto"}`,
			wantKeys: []string{coffeeKey}, wantMethod: memory.MethodHybrid},
		{name: "the other agent keeps its memory", tool: "memory_get", agent: "b", args: `{"key":"secret"}`,
			want: `{"key":"secret","category":"custom","source":"tool","created":"2026-05-01T12:00:00Z","updated":"2026-05-01T12:00:00Z","text":"Agent b's own note about coffee"}`},
	})
}

// Memories stored in a session belong to its owner: another owner's
// session neither finds, reads, forgets nor overwrites them. Agent-wide
// memories, stored in work without an owner, are everyone's to find and
// read, and only such work forgets them.
func TestToolsOwners(t *testing.T) {
	ts := tools(t, Config{Memory: newMemory(t)})
	const ann, ben = "key:k1", "tg:42"
	annGet := `{"key":"coffee","category":"custom","source":"tool","created":"2026-05-01T12:00:00Z","updated":"2026-05-01T12:00:00Z","text":"Ann drinks oat milk flat whites"}`
	run(t, ts, []step{
		{name: "ann stores", tool: "memory_store", owner: ann, args: `{"key":"coffee","text":"Ann drinks oat milk flat whites"}`,
			want: `stored memory "coffee" (custom)`},
		{name: "ann stores another", tool: "memory_store", owner: ann, args: `{"key":"allergy","text":"Ann is allergic to peanuts","category":"core"}`,
			want: `stored memory "allergy" (core)`},
		{name: "ben stores under ann's key: a memory of his own", tool: "memory_store", owner: ben, args: `{"key":"coffee","text":"Ben drinks black espresso"}`,
			want: `stored memory "coffee" (custom)`},
		{name: "agent-wide work stores", tool: "memory_store", args: `{"key":"office","text":"The office kitchen has oat milk and peanuts on Fridays"}`,
			want: `stored memory "office" (custom)`},
		{name: "ann reads hers", tool: "memory_get", owner: ann, args: `{"key":"coffee"}`, want: annGet},
		{name: "ben reads his", tool: "memory_get", owner: ben, args: `{"key":"coffee"}`,
			want: `{"key":"coffee","category":"custom","source":"tool","created":"2026-05-01T12:00:00Z","updated":"2026-05-01T12:00:00Z","text":"Ben drinks black espresso"}`},
		{name: "ann finds hers and the agent's", tool: "memory_search", owner: ann, args: `{"query":"oat milk peanuts","limit":10}`,
			wantKeys: []string{"office", "coffee", "allergy"}, wantMethod: memory.MethodHybrid},
		{name: "ben finds only his and the agent's", tool: "memory_search", owner: ben, args: `{"query":"oat milk peanuts","limit":10}`,
			wantKeys: []string{"office", "coffee"}, wantMethod: memory.MethodHybrid},
		{name: "agent-wide work finds only the agent's", tool: "memory_search", args: `{"query":"oat milk peanuts","limit":10}`,
			wantKeys: []string{"office"}, wantMethod: memory.MethodHybrid},
		{name: "ben cannot read ann's", tool: "memory_get", owner: ben, args: `{"key":"allergy"}`,
			wantErr: `there is no memory with key "allergy"; memory_search finds memories and their keys`},
		{name: "nor can agent-wide work", tool: "memory_get", args: `{"key":"allergy"}`,
			wantErr: `there is no memory with key "allergy"; memory_search finds memories and their keys`},
		{name: "ben cannot forget ann's", tool: "memory_forget", owner: ben, args: `{"key":"allergy"}`,
			want: `there is no memory with key "allergy": nothing to forget`},
		{name: "ann's is still there", tool: "memory_get", owner: ann, args: `{"key":"coffee"}`, want: annGet},
		{name: "ben reads the agent's", tool: "memory_get", owner: ben, args: `{"key":"office"}`,
			want: `{"key":"office","category":"custom","source":"tool","created":"2026-05-01T12:00:00Z","updated":"2026-05-01T12:00:00Z","text":"The office kitchen has oat milk and peanuts on Fridays"}`},
		{name: "ben cannot forget the agent's", tool: "memory_forget", owner: ben, args: `{"key":"office"}`,
			wantErr: `memory "office" is shared by everyone who talks with this agent`},
		{name: "ann stores under the agent's key: a memory of her own", tool: "memory_store", owner: ann, args: `{"key":"office","text":"Ann works from the Porto office"}`,
			want: `stored memory "office" (custom)`},
		{name: "ann reads her office", tool: "memory_get", owner: ann, args: `{"key":"office"}`,
			want: `{"key":"office","category":"custom","source":"tool","created":"2026-05-01T12:00:00Z","updated":"2026-05-01T12:00:00Z","text":"Ann works from the Porto office"}`},
		{name: "ben still reads the agent's office", tool: "memory_get", owner: ben, args: `{"key":"office"}`,
			want: `{"key":"office","category":"custom","source":"tool","created":"2026-05-01T12:00:00Z","updated":"2026-05-01T12:00:00Z","text":"The office kitchen has oat milk and peanuts on Fridays"}`},
		{name: "ann forgets her office", tool: "memory_forget", owner: ann, args: `{"key":"office"}`, want: `forgot memory "office"`},
		{name: "then reads the agent's again", tool: "memory_get", owner: ann, args: `{"key":"office"}`,
			want: `{"key":"office","category":"custom","source":"tool","created":"2026-05-01T12:00:00Z","updated":"2026-05-01T12:00:00Z","text":"The office kitchen has oat milk and peanuts on Fridays"}`},
		{name: "agent-wide work forgets the agent's", tool: "memory_forget", args: `{"key":"office"}`, want: `forgot memory "office"`},
		{name: "gone for ben", tool: "memory_get", owner: ben, args: `{"key":"office"}`, wantErr: "there is no memory"},
	})
}

func TestToolArguments(t *testing.T) {
	ts := tools(t, Config{Memory: newMemory(t)})
	run(t, ts, []step{
		{name: "search without query", tool: "memory_search", args: `{}`, wantErr: `"query" is required`},
		{name: "search blank query", tool: "memory_search", args: `{"query":"  "}`, wantErr: `"query" is required`},
		{name: "search unknown argument", tool: "memory_search", args: `{"query":"x","top_k":3}`, wantErr: `unknown argument "top_k" (allowed: query, limit, category)`},
		{name: "search limit zero", tool: "memory_search", args: `{"query":"x","limit":0}`, wantErr: `"limit" must be between 1 and 20, got 0`},
		{name: "search limit too high", tool: "memory_search", args: `{"query":"x","limit":500}`, wantErr: `"limit" must be between 1 and 20`},
		{name: "search limit not a number", tool: "memory_search", args: `{"query":"x","limit":"5"}`, wantErr: `"limit" must be an integer`},
		{name: "search bad category", tool: "memory_search", args: `{"query":"x","category":"facts"}`, wantErr: `"category" must be "core", "daily", "conversation" or "custom", got "facts"`},
		{name: "get without key", tool: "memory_get", args: `{}`, wantErr: `"key" is required`},
		{name: "get empty key", tool: "memory_get", args: `{"key":""}`, wantErr: `"key" must not be empty`},
		{name: "get trailing data", tool: "memory_get", args: `{"key":"a"} {}`, wantErr: "found more data after it"},
		{name: "store without text", tool: "memory_store", args: `{"key":"k"}`, wantErr: `"text" is required`},
		{name: "store text too long", tool: "memory_store", args: `{"text":"` + strings.Repeat("x", MaxStoreText+1) + `"}`, wantErr: "over the 32 KiB limit"},
		{name: "store bad category", tool: "memory_store", args: `{"text":"t","category":"Core"}`, wantErr: `"category" must be`},
		{name: "store file key", tool: "memory_store", args: `{"key":"file:MEMORY.md","text":"t"}`, wantErr: `keys starting with "file:" are kept up to date automatically`},
		{name: "store run key", tool: "memory_store", args: `{"key":"run:1","text":"t"}`, wantErr: `keys starting with "run:"`},
		{name: "store key too long", tool: "memory_store", args: `{"key":"` + strings.Repeat("k", MaxKeyLen+1) + `","text":"t"}`, wantErr: "over the 200-byte limit"},
		{name: "store key with newline", tool: "memory_store", args: `{"key":"a\nb","text":"t"}`, wantErr: "control characters"},
		{name: "store NUL", tool: "memory_store", args: `{"text":"a\u0000b"}`, wantErr: "NUL"},
		{name: "forget file", tool: "memory_forget", args: `{"key":"file:MEMORY.md"}`, wantErr: "mirrors your workspace file MEMORY.md: edit the file instead"},
		{name: "no agent", tool: "memory_search", agent: " ", args: `{"query":"x"}`, wantErr: "names none"},
	})
}

func TestToolPolicies(t *testing.T) {
	ts := tools(t, Config{Memory: newMemory(t)})
	got := map[string]tool.Policy{}
	for name, tl := range ts {
		got[name] = tl.Policy()
		var schema map[string]any
		if err := json.Unmarshal(tl.Definition().Parameters, &schema); err != nil {
			t.Errorf("%s: parameters are not JSON: %v", name, err)
		}
	}
	want := map[string]tool.Policy{
		"memory_search": {Effect: tool.Read},
		"memory_get":    {Effect: tool.Read},
		"memory_store":  {Effect: tool.WriteOwn},
		"memory_forget": {Effect: tool.WriteOwn},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("policies (-want +got):\n%s", diff)
	}
}

// Without an embedding model, search is keyword-only and says so.
func TestSearchKeywordOnly(t *testing.T) {
	ts := tools(t, Config{Memory: newMemory(t, nil)})
	run(t, ts, []step{
		{name: "store", tool: "memory_store", args: `{"key":"k","text":"The printer on the third floor jams"}`, want: `stored memory "k" (custom)`},
		{name: "found by keyword", tool: "memory_search", args: `{"query":"printer"}`, wantKeys: []string{"k"}, wantMethod: memory.MethodBM25Fallback},
		{name: "no shared word", tool: "memory_search", args: `{"query":"zebra"}`,
			want: `{"method":"bm25_fallback","hits":[],"note":"no memory matches; only keyword search is available, so try other words for the same thing"}`},
	})
}

// downEmbedder is an embedding model that is always down.
type downEmbedder struct{}

func (downEmbedder) Model() string { return "down" }
func (downEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, errors.New("embedding service unavailable")
}

func TestStoreDuringEmbeddingOutage(t *testing.T) {
	ts := tools(t, Config{Memory: newMemory(t, downEmbedder{})})
	run(t, ts, []step{
		{name: "store", tool: "memory_store", args: `{"key":"k","text":"The printer jams"}`,
			want: `stored memory "k" (custom); the embedding service failed, so for now it is found by keyword search only`},
		{name: "search", tool: "memory_search", args: `{"query":"printer"}`, wantKeys: []string{"k"}, wantMethod: memory.MethodBM25Fallback},
	})
}

func TestSearchOutput(t *testing.T) {
	ts := tools(t, Config{Memory: newMemory(t)})
	run(t, ts, []step{
		{name: "store", tool: "memory_store", args: `{"key":"k","text":"Standup is at 9:30 <daily> & short","category":"core"}`, want: `stored memory "k" (core)`},
		{name: "search", tool: "memory_search", args: `{"query":"standup"}`,
			want: `{"method":"hybrid","hits":[{"key":"k","category":"core","source":"tool","score":1,"updated":"2026-05-01T12:00:00Z","snippet":"Standup is at 9:30 <daily> & short"}]}`},
	})
}

func TestKeyFor(t *testing.T) {
	tests := []struct{ text, prefix string }{
		{"The user drinks dark roast coffee every morning", "the-user-drinks-dark-roast-coffee-every-morning-"},
		{"Rendez-vous à 15h au café", "rendez-vous-à-15h-au-café-"},
		{"!!!", "memory-"},
		{strings.Repeat("é", 40), strings.Repeat("é", 24) + "-"},
		{"a " + strings.Repeat("long", 20), "a-"},
	}
	for _, tt := range tests {
		got := KeyFor(tt.text)
		if !strings.HasPrefix(got, tt.prefix) || len(got) != len(tt.prefix)+8 {
			t.Errorf("KeyFor(%q) = %q, want %q and 8 hex digits", tt.text, got, tt.prefix)
		}
		if KeyFor(tt.text) != got || len(got) > MaxKeyLen {
			t.Errorf("KeyFor(%q) is not stable or too long: %q", tt.text, got)
		}
	}
	if KeyFor("a b") == KeyFor("a-b") {
		t.Error("different texts with the same words share a key")
	}
}
