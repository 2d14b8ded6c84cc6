package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// A process keeps the history it read and reads only what was appended
// while the session's history version stays the same; any other write of
// the session's messages, by this handle or by another process, makes it
// read the history again: writes before the last key, deletes, and the
// session deleted and created again with the same keys.
func TestHistoryKept(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "lambdaclaw.db")
	open := func() *DB {
		db, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	db, other := open(), open()
	enqueue := func(s *DB, id, text string) {
		t.Helper()
		if _, _, err := s.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s", Agent: "a"}, Run: store.Run{ID: id, State: []byte(`{}`)},
			Input: []chat.Message{{Role: chat.User, Content: text}}}); err != nil {
			t.Fatal(err)
		}
	}
	contents := func() []string {
		t.Helper()
		msgs, err := db.Messages(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range msgs {
			out = append(out, m.Key+" "+m.Content)
		}
		// What a caller does with what it got changes nothing kept.
		for i := range msgs {
			msgs[i].Content = "changed"
			msgs[i].ToolCalls = append(msgs[i].ToolCalls, chat.ToolCall{ID: "x"})
		}
		return out
	}
	check := func(step string, want ...string) {
		t.Helper()
		for range 2 {
			if diff := cmp.Diff(want, contents()); diff != "" {
				t.Errorf("%s: history (-want +got):\n%s", step, diff)
			}
		}
	}
	in1, in2 := store.InputKey(1, 0), store.InputKey(2, 0)
	check("no session")
	enqueue(db, "r1", "hi")
	check("enqueued", in1+" hi")
	if _, err := other.AppendMessage(ctx, store.Message{SessionID: "s", Key: in1 + "z", RunID: "r1", Message: chat.Message{Role: chat.Assistant, Content: "hello"}}); err != nil {
		t.Fatal(err)
	}
	check("appended by another process", in1+" hi", in1+"z hello")
	if _, err := other.AppendMessage(ctx, store.Message{SessionID: "s", Key: in1 + "m", RunID: "r1", Message: chat.Message{Role: chat.Tool, Content: "between"}}); err != nil {
		t.Fatal(err)
	}
	check("written before the last key", in1+" hi", in1+"m between", in1+"z hello")
	enqueue(other, "r2", "more")
	check("enqueued by another process", in1+" hi", in1+"m between", in1+"z hello", in2+" more")
	if err := other.DeleteMessages(ctx, "s", []string{in1 + "z"}); err != nil {
		t.Fatal(err)
	}
	check("deleted by another process", in1+" hi", in1+"m between", in2+" more")
	if err := other.DeleteSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	check("session deleted")
	enqueue(other, "r3", "new")
	check("the same keys in a new session", in1+" new")

	// What is kept is what the next read returns, with what was appended
	// since: a change that bypasses the version (its trigger dropped) is
	// not seen.
	if _, err := db.w.ExecContext(ctx, `DROP TRIGGER messages_updated`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.w.ExecContext(ctx, `UPDATE messages SET body = '{"role":"user","content":"bypassed"}'`); err != nil {
		t.Fatal(err)
	}
	enqueue(other, "r4", "appended")
	check("changed behind the version", in1+" new", in2+" appended")
}

// The histories kept stay within maxHistoryBytes, one too large for a
// quarter of it is not kept, and a deleted session's is forgotten.
func TestHistoriesBounded(t *testing.T) {
	var h histories
	msgs := func(n int) []store.Message {
		return []store.Message{{Key: "k", Message: chat.Message{Content: strings.Repeat("x", n)}}}
	}
	for i := range 40 {
		h.put(fmt.Sprint(i), 1, msgs(maxHistoryBytes/16))
		if h.bytes > maxHistoryBytes {
			t.Fatalf("%d histories: %d bytes kept, want at most %d", i+1, h.bytes, maxHistoryBytes)
		}
	}
	if _, ok := h.get("39"); !ok {
		t.Error("the history put last is not kept")
	}
	h.put("big", 1, msgs(maxHistoryBytes/4+1))
	if _, ok := h.get("big"); ok {
		t.Error("a history larger than a quarter of the bound is kept")
	}
	before := h.bytes
	h.drop("39")
	if _, ok := h.get("39"); ok || h.bytes >= before {
		t.Errorf("dropped history kept (%v) or its bytes not freed (%d, was %d)", ok, h.bytes, before)
	}
}
