package sqlite

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// TestFullDatabase fills a real database to its size limit (max_page_count
// on the writer, SQLite's SQLITE_FULL as on a full disk): the writes that
// do not fit are store.ErrStorageFull, change nothing, and succeed once
// there is room.
func TestFullDatabase(t *testing.T) {
	ctx := t.Context()
	db := open(t, tempPath(t))
	run, _, err := db.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s1", Agent: "main", Owner: "key:k"},
		Run: store.Run{ID: "r1", State: []byte(`{"step":"begin"}`)}, Input: []chat.Message{{Role: chat.User, Content: "hi"}}})
	if err != nil {
		t.Fatalf("EnqueueRun: %v", err)
	}
	var pages int64
	if err := db.w.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	// The writer pool has one connection, which keeps the limit.
	if _, err := db.w.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages+2)); err != nil {
		t.Fatal(err)
	}
	big := []chat.Message{{Role: chat.User, Content: strings.Repeat("x", 1<<20)}}
	wantFull := func(what string, err error) {
		t.Helper()
		var se *sqlite.Error
		switch {
		case !errors.Is(err, store.ErrStorageFull):
			t.Errorf("%s: error %v, want store.ErrStorageFull", what, err)
		case !errors.As(err, &se) || se.Code() != sqlite3.SQLITE_FULL:
			t.Errorf("%s: error %v, want SQLite's SQLITE_FULL kept", what, err)
		}
	}

	_, _, err = db.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s2", Agent: "main", Owner: "key:k"},
		Run: store.Run{ID: "r2", State: []byte(`{"step":"begin"}`)}, Input: big})
	wantFull("EnqueueRun", err)
	if _, err := db.GetRun(ctx, "r2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetRun of the run that did not fit: %v, want store.ErrNotFound", err)
	}
	if _, err := db.GetSession(ctx, "s2"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetSession of the session that did not fit: %v, want store.ErrNotFound", err)
	}

	run.Status, run.State = store.RunRunning, []byte(`{"step":"think"}`)
	err = db.CommitRun(ctx, store.Commit{Run: run, Messages: []store.Message{{SessionID: "s1", Key: store.RunPrefix(run.Seq) + "b", RunID: "r1", Message: big[0]}}})
	wantFull("CommitRun", err)
	if got, err := db.GetRun(ctx, "r1"); err != nil || got.Status != store.RunQueued || string(got.State) != `{"step":"begin"}` {
		t.Errorf("the run after a commit that did not fit: %+v, %v; want it queued at begin", got, err)
	}
	if msgs, err := db.Messages(ctx, "s1"); err != nil || len(msgs) != 1 {
		t.Errorf("history after a commit that did not fit: %d messages, %v; want the 1 input", len(msgs), err)
	}

	if _, err := db.w.ExecContext(ctx, "PRAGMA max_page_count = 1073741823"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s2", Agent: "main", Owner: "key:k"},
		Run: store.Run{ID: "r2", State: []byte(`{"step":"begin"}`)}, Input: big}); err != nil {
		t.Errorf("EnqueueRun with room again: %v", err)
	}
}
