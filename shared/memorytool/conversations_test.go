package memorytool

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/memory"
)

func TestConversations(t *testing.T) {
	m := newMemory(t)
	c, err := NewConversations(m)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 4, 30, 8, 0, 0, 0, time.UTC)
	x := agent.Exchange{Agent: "a", SessionID: "sess1", RunID: "run1", Input: "Remind me: the plumber comes on Tuesday", Answer: "Noted, the plumber comes on Tuesday.", At: at}
	ctx := context.Background()
	for range 2 { // a retried finish step records again
		if err := c.Record(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	got, err := m.Get(ctx, "a", "run:run1")
	if err != nil {
		t.Fatal(err)
	}
	want := memory.Entry{
		Agent: "a", Key: "run:run1", Category: memory.Conversation, Source: "session:sess1",
		Text:      "User: Remind me: the plumber comes on Tuesday\n\nAssistant: Noted, the plumber comes on Tuesday.",
		CreatedAt: at, UpdatedAt: at,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("entry (-want +got):\n%s", diff)
	}
	res, err := m.Search(ctx, "a", "plumber", memory.SearchOptions{Filter: memory.Filter{Categories: []memory.Category{memory.Conversation}}})
	if err != nil || len(res.Hits) != 1 || res.Hits[0].Entry.Key != "run:run1" {
		t.Errorf("search = %+v, %v; want the exchange", res, err)
	}
	if res, _ := m.Search(ctx, "b", "plumber", memory.SearchOptions{}); len(res.Hits) != 0 {
		t.Errorf("another agent found the exchange: %+v", res.Hits)
	}

	long := agent.Exchange{Agent: "a", SessionID: "s", RunID: "run2", Input: strings.Repeat("é", 5000), Answer: strings.Repeat("x", 20000), At: at}
	if err := c.Record(ctx, long); err != nil {
		t.Fatal(err)
	}
	e, err := m.Get(ctx, "a", "run:run2")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(e.Text); n > maxConversationInput+maxConversationAnswer+64 {
		t.Errorf("long exchange stored as %d bytes", n)
	}
}
