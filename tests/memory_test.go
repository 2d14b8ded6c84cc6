package tests

// End-to-end test of agent memory (issue 4) through the real binary: the
// memory tools are offered to the model, what it stores is found later in
// another session, the workspace's MEMORY.md is indexed when it changes,
// past exchanges of stateful sessions become conversation memories and
// stateless ones do not. No embeddings are configured, so search reports
// bm25_fallback.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// memorySearchResult is memory_search's output.
type memorySearchResult struct {
	Method string `json:"method"`
	Hits   []struct {
		Key      string `json:"key"`
		Category string `json:"category"`
		Source   string `json:"source"`
		Snippet  string `json:"snippet"`
	} `json:"hits"`
}

// searchThroughModel has the fake model call memory_search with query in
// a new session of the first API key and returns what the tool answered.
func searchThroughModel(t *testing.T, g *gateway, fake *fakellm.Server, sessionKey, query string) memorySearchResult {
	t.Helper()
	return searchThroughModelAs(t, g, fake, g.firstKey(), sessionKey, query)
}

// searchThroughModelAs is searchThroughModel with the API key apiKey.
func searchThroughModelAs(t *testing.T, g *gateway, fake *fakellm.Server, apiKey, sessionKey, query string) memorySearchResult {
	t.Helper()
	args, _ := json.Marshal(map[string]any{"query": query, "limit": 10})
	fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{{Name: "memory_search", Arguments: string(args)}}}, fakellm.Reply{Content: "searched"})
	before := len(fake.Requests())
	ask(t, g.client(apiKey), "search your memory", session(sessionKey))
	reqs := fake.Requests()[before:]
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2", len(reqs))
	}
	msgs := reqs[1].Messages
	last := msgs[len(msgs)-1]
	if last.Role != "tool" {
		t.Fatalf("last message of the second request = %+v, want the memory_search result", last)
	}
	var res memorySearchResult
	if err := json.Unmarshal([]byte(last.Content), &res); err != nil {
		t.Fatalf("memory_search answered %q: %v", last.Content, err)
	}
	return res
}

func hitKeys(r memorySearchResult) []string {
	var keys []string
	for _, h := range r.Hits {
		keys = append(keys, h.Key)
	}
	return keys
}

func TestMemoryEndToEnd(t *testing.T) {
	fake := newFake(t)
	g := startGateway(t, fake, "")
	c := g.client(g.firstKey())

	// The model stores a memory in one session.
	fake.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{Name: "memory_store", Arguments: `{"key":"sister","text":"The user's sister Ada lives in Lisbon","category":"core"}`}}},
		fakellm.Reply{Content: "Noted: Ada lives in Lisbon."},
	)
	if got := ask(t, c, "Remember that my sister Ada lives in Lisbon", session("first")); got != "Noted: Ada lives in Lisbon." {
		t.Fatalf("reply = %q", got)
	}
	reqs := fake.Requests()
	for _, name := range []string{"memory_search", "memory_get", "memory_store", "memory_forget"} {
		if !slices.Contains(reqs[0].Tools, name) {
			t.Errorf("tool %s not offered; tools: %v", name, reqs[0].Tools)
		}
	}
	if last := reqs[1].Messages[len(reqs[1].Messages)-1]; last.Content != `stored memory "sister" (core)` {
		t.Errorf("memory_store answered %q", last.Content)
	}

	// A stateless request is not remembered.
	fake.Enqueue(fakellm.Reply{Content: "A xylophone has bars."})
	ask(t, c, "What is a xylophone?")

	// MEMORY.md edited while the server runs.
	g.writeWorkspaceFile("MEMORY.md", "# Memory\n\nThe user's favourite colour is teal. Ada visits in July.\n")

	// Another session finds the stored memory, the file and the first
	// session's exchange.
	res := searchThroughModel(t, g, fake, "second", "Ada")
	if res.Method != "bm25_fallback" {
		t.Errorf("method = %q, want bm25_fallback (no embeddings configured)", res.Method)
	}
	keys := hitKeys(res)
	var run string
	for _, k := range keys {
		if strings.HasPrefix(k, "run:") {
			run = k
		}
	}
	if !slices.Contains(keys, "sister") || !slices.Contains(keys, "file:MEMORY.md") || run == "" {
		t.Fatalf("search for Ada found %v; want sister, file:MEMORY.md and the first exchange (run:…)", keys)
	}
	for _, h := range res.Hits {
		if h.Key == run && (h.Category != "conversation" || !strings.HasPrefix(h.Source, "session:") ||
			!strings.Contains(h.Snippet, "User: Remember that my sister Ada lives in Lisbon") || !strings.Contains(h.Snippet, "Assistant: Noted")) {
			t.Errorf("conversation memory = %+v", h)
		}
		if h.Key == "file:MEMORY.md" && (h.Category != "core" || h.Source != "MEMORY.md") {
			t.Errorf("MEMORY.md memory = %+v", h)
		}
	}
	if res := searchThroughModel(t, g, fake, "third", "xylophone"); len(res.Hits) != 0 {
		t.Errorf("the stateless exchange was remembered: %v", hitKeys(res))
	}

	// After a restart, a daily log written and MEMORY.md deleted while the
	// server was down are found and forgotten.
	g.stop()
	g.writeWorkspaceFile("memory/2026-04-30.md", "- Ada called about the July visit.\n")
	if err := os.Remove(filepath.Join(g.workspace(), "MEMORY.md")); err != nil {
		t.Fatal(err)
	}
	g.start()
	keys = hitKeys(searchThroughModel(t, g, fake, "fourth", "July"))
	if !slices.Contains(keys, "file:memory/2026-04-30.md") || slices.Contains(keys, "file:MEMORY.md") {
		t.Errorf("after a restart, search for July found %v; want the daily log and not the deleted MEMORY.md", keys)
	}
}

// TestMemoryPrivateToKey is the memory part of issue 10: what one API
// key's sessions store and say is found by that key's later sessions and
// not by another key's memory_search; the agent's MEMORY.md is found by
// both.
func TestMemoryPrivateToKey(t *testing.T) {
	fake := newFake(t)
	g := startGateway(t, fake, "")
	first, other := g.firstKey(), g.createKey(t, "--name", "other")

	fake.Enqueue(
		fakellm.Reply{ToolCalls: []fakellm.ToolCall{{Name: "memory_store", Arguments: `{"key":"allergy","text":"The user is allergic to peanuts","category":"core"}`}}},
		fakellm.Reply{Content: "Noted: no peanuts."},
	)
	if got := ask(t, g.client(first), "Remember that I am allergic to peanuts", session("mine")); got != "Noted: no peanuts." {
		t.Fatalf("reply = %q", got)
	}
	g.writeWorkspaceFile("MEMORY.md", "# Memory\n\nNo peanuts in the office kitchen.\n")

	keys := hitKeys(searchThroughModelAs(t, g, fake, first, "mine-later", "peanuts"))
	if !slices.Contains(keys, "allergy") || !slices.Contains(keys, "file:MEMORY.md") || !slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, "run:") }) {
		t.Errorf("the first key's search for peanuts found %v; want allergy, its exchange (run:…) and file:MEMORY.md", keys)
	}
	keys = hitKeys(searchThroughModelAs(t, g, fake, other, "theirs", "peanuts"))
	if !slices.Equal(keys, []string{"file:MEMORY.md"}) {
		t.Errorf("another key's search for peanuts found %v; want only file:MEMORY.md", keys)
	}
}
