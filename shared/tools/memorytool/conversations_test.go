package memorytool

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

func TestConversations(t *testing.T) {
	m := newMemory(t)
	c, err := NewConversations(m)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 4, 30, 8, 0, 0, 0, time.UTC)
	x := agent.Exchange{Agent: "a", SessionID: "sess1", Owner: "key:k1", RunID: "run1", Input: "Remind me: the plumber comes on Tuesday", Answer: "Noted, the plumber comes on Tuesday.", At: at}
	ctx := context.Background()
	for range 2 { // a retried finish step records again
		if err := c.Record(ctx, []agent.Exchange{x}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := m.Get(ctx, "a", "key:k1", "run:run1")
	if err != nil {
		t.Fatal(err)
	}
	want := memory.Entry{
		Agent: "a", Owner: "key:k1", Key: "run:run1", Category: memory.Conversation, Source: "session:sess1",
		Text:      "User: Remind me: the plumber comes on Tuesday\n\nAssistant: Noted, the plumber comes on Tuesday.",
		CreatedAt: at, UpdatedAt: at,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entry (-want +got):\n%s", diff)
	}
	res, err := m.Search(ctx, "a", "key:k1", "plumber", memory.SearchOptions{Filter: memory.Filter{Categories: []memory.Category{memory.Conversation}}})
	if err != nil || len(res.Hits) != 1 || res.Hits[0].Entry.Key != "run:run1" {
		t.Errorf("search = %+v, %v; want the exchange", res, err)
	}
	for _, other := range [][2]string{{"b", "key:k1"}, {"a", "tg:42"}, {"a", ""}} {
		if res, _ := m.Search(ctx, other[0], other[1], "plumber", memory.SearchOptions{}); len(res.Hits) != 0 {
			t.Errorf("agent %s, owner %q found the exchange: %+v", other[0], other[1], res.Hits)
		}
	}

	long := agent.Exchange{Agent: "a", SessionID: "s", Owner: "key:k1", RunID: "run2", Input: strings.Repeat("é", 5000), Answer: strings.Repeat("x", 20000), At: at}
	if err := c.Record(ctx, []agent.Exchange{long}); err != nil {
		t.Fatal(err)
	}
	e, err := m.Get(ctx, "a", "key:k1", "run:run2")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(e.Text); n > maxConversationInput+maxConversationAnswer+64 {
		t.Errorf("long exchange stored as %d bytes", n)
	}

	// An exchange without an owner is nobody's to share: not remembered.
	x.Owner, x.RunID = "", "run3"
	if err := c.Record(ctx, []agent.Exchange{x}); err != nil {
		t.Fatal(err)
	}
	if e, err := m.Get(ctx, "a", "", "run:run3"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("the exchange without an owner was stored: %+v, %v", e, err)
	}
}

// The test of issue 10: what one owner said is not found by another's
// memory_search; the agent's MEMORY.md is found by both.
func TestConversationsPrivateMemoryFileShared(t *testing.T) {
	w := newWorkspaceFixture(t)
	w.write(t, "MEMORY.md", "# Memory\n\nThe plumber's number is on the fridge.\n", may1)
	c, err := NewConversations(w.mem)
	if err != nil {
		t.Fatal(err)
	}
	x := agent.Exchange{Agent: "a", SessionID: "s1", Owner: "key:k1", RunID: "r1",
		Input: "My plumber comes on Tuesday, remember it", Answer: "Noted: the plumber comes on Tuesday.", At: may1}
	if err := c.Record(context.Background(), []agent.Exchange{x}); err != nil {
		t.Fatal(err)
	}
	for owner, want := range map[string][]string{
		"key:k1": {"file:MEMORY.md", "run:r1"},
		"tg:42":  {"file:MEMORY.md"},
		"":       {"file:MEMORY.md"},
	} {
		got := w.searchAs(t, owner, "plumber")
		slices.Sort(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("memory_search as %q (-want +got):\n%s", owner, diff)
		}
	}
	ts := tools(t, Config{Memory: w.mem, Files: w.files})
	out, err := ts["memory_get"].Call(context.Background(), tool.Env{Agent: "a", Owner: "tg:42"}, json.RawMessage(`{"key":"run:r1"}`))
	if err == nil || !strings.Contains(err.Error(), `there is no memory with key "run:r1"`) {
		t.Errorf("memory_get of another owner's conversation = %q, %v; want no such memory", out, err)
	}
}

// A batch of exchanges is stored at once, each for its owner; one without
// an owner is skipped.
func TestConversationsBatch(t *testing.T) {
	m := newMemory(t)
	c, err := NewConversations(m)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	xs := []agent.Exchange{
		{Agent: "a", SessionID: "s1", Owner: "key:k1", RunID: "r1", Input: "my dentist is Dr Oak", Answer: "Noted."},
		{Agent: "a", SessionID: "s2", Owner: "tg:42", RunID: "r2", Input: "my dentist is Dr Elm", Answer: "Noted."},
		{Agent: "a", SessionID: "s3", RunID: "r3", Input: "my dentist is Dr Ash", Answer: "Noted."},
	}
	if err := c.Record(ctx, xs); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ owner, key, want string }{
		{"key:k1", "run:r1", "Oak"}, {"tg:42", "run:r2", "Elm"},
	} {
		got, err := m.Get(ctx, "a", tt.owner, tt.key)
		if err != nil || !strings.Contains(got.Text, tt.want) {
			t.Errorf("Get(%s, %s) = %q, %v; want the exchange with %s", tt.owner, tt.key, got.Text, err, tt.want)
		}
	}
	if _, err := m.Get(ctx, "a", "", "run:r3"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("an exchange without an owner was stored: %v", err)
	}
}
