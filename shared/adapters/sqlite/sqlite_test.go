package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/storetest"
)

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		db, err := Open(filepath.Join(t.TempDir(), "lambdaclaw.db"))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db
	})
}

func TestOwnerSessions(t *testing.T) {
	storetest.RunOwnerSessions(t, func(t *testing.T) storetest.OwnerStore {
		db, err := Open(filepath.Join(t.TempDir(), "lambdaclaw.db"))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return db
	})
}

// open opens a database in a temporary directory, closed when t ends.
func open(t testing.TB, path string) *DB {
	t.Helper()
	db, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

func tempPath(t testing.TB) string { return filepath.Join(t.TempDir(), "lambdaclaw.db") }

func TestOpenCreatesPrivateFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "home", "state with ?odd# chars%20")
	path := filepath.Join(dir, "lambdaclaw.db")
	db := open(t, path)
	if db.Path() != path {
		t.Errorf("Path() = %q, want %q", db.Path(), path)
	}
	if err := db.CreateSession(t.Context(), store.Session{ID: "s", Agent: "main"}); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	for p, want := range map[string]os.FileMode{
		filepath.Dir(dir): 0o700,
		dir:               0o700,
		path:              0o600,
		path + "-wal":     0o600,
	} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("Stat: %v", err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("mode of %s = %v, want %v", p, got, want)
		}
	}
}

// TestOpenCreatesOnce opens a new database from several handles at once,
// as processes starting together would: one database is created, whole,
// in WAL mode, and every handle uses it; no temporary file is left.
func TestOpenCreatesOnce(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	path := filepath.Join(dir, "lambdaclaw.db")
	const handles = 4
	dbs := make([]*DB, handles)
	errs := make([]error, handles)
	var wg sync.WaitGroup
	for i := range handles {
		wg.Go(func() { dbs[i], errs[i] = Open(path) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		t.Cleanup(func() { dbs[i].Close() })
	}
	for i, db := range dbs {
		if err := db.CreateSession(ctx, store.Session{ID: fmt.Sprint(i), Agent: "main"}); err != nil {
			t.Fatalf("CreateSession through handle %d: %v", i, err)
		}
	}
	for i := range handles {
		if _, err := dbs[0].GetSession(ctx, fmt.Sprint(i)); err != nil {
			t.Errorf("GetSession %d through handle 0: %v", i, err)
		}
	}
	names, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{path, path + "-shm", path + "-wal"}
	if d := cmp.Diff(want, names); d != "" {
		t.Errorf("files beside the database (-want +got):\n%s", d)
	}
	// The file format bytes of the header say WAL (2), for a reader
	// that opens the file before any writer.
	head := make([]byte, 20)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.ReadFull(f, head); err != nil {
		t.Fatal(err)
	}
	if head[18] != 2 || head[19] != 2 {
		t.Errorf("file format bytes = %d, %d; want 2, 2 (WAL)", head[18], head[19])
	}
}

func TestOpenErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(file, "db")); err == nil {
		t.Errorf("Open under a regular file succeeded, want an error")
	}

	notDB := filepath.Join(t.TempDir(), "garbage.db")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(notDB); err == nil {
		t.Errorf("Open of a non-database file succeeded, want an error")
	}
}

func TestReopenKeepsData(t *testing.T) {
	ctx := t.Context()
	path := tempPath(t)
	db, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	sess := store.Session{ID: "s", Agent: "main", CreatedAt: time.UnixMilli(1_700_000_000_123).UTC()}
	sess.UpdatedAt = sess.CreatedAt
	msg := store.Message{SessionID: "s", Key: "r000000000001#a000", RunID: "r1",
		Message: chat.Message{Role: chat.User, Content: "remember me 🧠"}, CreatedAt: sess.CreatedAt}
	key := store.APIKey{ID: "k", Name: "cli", Hash: strings.Repeat("ab", 32), Prefix: "lc_ab",
		Agents: []string{"main"}, Autonomy: "full", RatePerMinute: 10, CreatedAt: sess.CreatedAt}
	if err := db.CreateSession(ctx, sess); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	if _, err := db.AppendMessage(ctx, msg); err != nil {
		t.Fatalf("AppendMessage: %v", err)
	}
	run, _, err := db.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s", Agent: "main"}, Run: store.Run{ID: "r1", State: []byte("{}"), CreatedAt: sess.CreatedAt}})
	if err != nil {
		t.Fatalf("EnqueueRun: %v", err)
	}
	if _, _, err := db.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s", Agent: "main"}, Run: store.Run{ID: "r2", CreatedAt: sess.CreatedAt}}); err != nil {
		t.Fatalf("EnqueueRun: %v", err)
	}
	if err := db.CreateKey(ctx, key); err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	db = open(t, path)
	gotMsgs, err := db.Messages(ctx, "s")
	if err != nil {
		t.Fatalf("Messages: %v", err)
	}
	if d := cmp.Diff([]store.Message{msg}, gotMsgs); d != "" {
		t.Errorf("history after reopen (-want +got):\n%s", d)
	}
	gotRun, err := db.NextRun(ctx, "s")
	if err != nil {
		t.Fatalf("NextRun: %v", err)
	}
	if d := cmp.Diff(run, gotRun); d != "" {
		t.Errorf("next run after reopen (-want +got):\n%s", d)
	}
	gotKey, err := db.KeyByHash(ctx, key.Hash)
	if err != nil {
		t.Fatalf("KeyByHash: %v", err)
	}
	if d := cmp.Diff(key, gotKey); d != "" {
		t.Errorf("key after reopen (-want +got):\n%s", d)
	}
	r3, _, err := db.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s", Agent: "main"}, Run: store.Run{ID: "r3"}})
	if err != nil {
		t.Fatalf("EnqueueRun after reopen: %v", err)
	}
	if r3.Seq != 3 {
		t.Errorf("seq after reopen = %d, want 3", r3.Seq)
	}
}

func TestTwoHandlesWrite(t *testing.T) {
	ctx := t.Context()
	path := tempPath(t)
	a, b := open(t, path), open(t, path)
	if err := a.CreateSession(ctx, store.Session{ID: "s", Agent: "main"}); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}

	const perHandle = 20
	var wg sync.WaitGroup
	errs := make(chan error, 4*perHandle)
	for h, db := range []*DB{a, b} {
		wg.Go(func() {
			for i := range perHandle {
				id := fmt.Sprintf("h%d-%02d", h, i)
				if _, _, err := db.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s", Agent: "main"}, Run: store.Run{ID: id}}); err != nil {
					errs <- err
				}
				m := store.Message{SessionID: "s", Key: id, RunID: id, Message: chat.Message{Role: chat.User, Content: id}}
				if _, err := db.AppendMessage(ctx, m); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("write: %v", err)
	}

	for name, db := range map[string]*DB{"a": a, "b": b} {
		msgs, err := db.Messages(ctx, "s")
		if err != nil {
			t.Fatalf("%s: Messages: %v", name, err)
		}
		if len(msgs) != 2*perHandle {
			t.Errorf("%s sees %d messages, want %d", name, len(msgs), 2*perHandle)
		}
	}
	var seqs, want []int64
	for h := range 2 {
		for i := range perHandle {
			r, err := b.GetRun(ctx, fmt.Sprintf("h%d-%02d", h, i))
			if err != nil {
				t.Fatalf("GetRun: %v", err)
			}
			seqs = append(seqs, r.Seq)
			want = append(want, int64(len(want)+1))
		}
	}
	slices.Sort(seqs)
	if d := cmp.Diff(want, seqs); d != "" {
		t.Errorf("seqs from two handles (-want +got):\n%s", d)
	}

	// A key created through one handle is found through the other, as
	// when the CLI creates a key while the server runs.
	k := store.APIKey{ID: "k", Name: "n", Hash: "h", Prefix: "p", Autonomy: "full"}
	if err := b.CreateKey(ctx, k); err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	if _, err := a.KeyByHash(ctx, "h"); err != nil {
		t.Errorf("KeyByHash through the other handle: %v", err)
	}
}

func TestMigrateIdempotent(t *testing.T) {
	ctx := t.Context()
	path := tempPath(t)
	schema := func(db *DB) (int, []string) {
		t.Helper()
		var version int
		if err := db.r.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
			t.Fatalf("user_version: %v", err)
		}
		rows, err := db.r.QueryContext(ctx, "SELECT type || ' ' || name || ': ' || coalesce(sql, '') FROM sqlite_schema ORDER BY name")
		if err != nil {
			t.Fatalf("schema: %v", err)
		}
		defer rows.Close()
		var objs []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatalf("schema: %v", err)
			}
			objs = append(objs, s)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("schema: %v", err)
		}
		return version, objs
	}

	db := open(t, path)
	v1, s1 := schema(db)
	if v1 != len(migrations) {
		t.Errorf("user_version = %d, want %d", v1, len(migrations))
	}
	if len(s1) == 0 {
		t.Fatalf("no schema objects after Open")
	}
	if err := migrate(ctx, db.w); err != nil {
		t.Fatalf("migrate again: %v", err)
	}
	db2 := open(t, path)
	v2, s2 := schema(db2)
	if v2 != v1 {
		t.Errorf("user_version after second migrate = %d, want %d", v2, v1)
	}
	if d := cmp.Diff(s1, s2); d != "" {
		t.Errorf("schema changed by a second migrate (-first +second):\n%s", d)
	}
}

// TestMigrateFromV1 opens a database written by the first schema: its
// sessions get an empty allowlist and can take approvals.
func TestMigrateFromV1(t *testing.T) {
	ctx := t.Context()
	path := tempPath(t)
	writeOldSchema(t, path, 1, "INSERT INTO sessions (id, agent, created_at, updated_at) VALUES ('s', 'main', 1000, 2000)")

	db := open(t, path)
	want := store.Session{ID: "s", Agent: "main", CreatedAt: time.UnixMilli(1000).UTC(), UpdatedAt: time.UnixMilli(2000).UTC()}
	got, err := db.GetSession(ctx, "s")
	if err != nil {
		t.Fatalf("GetSession: %v", err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("session after migration (-want +got):\n%s", d)
	}
	if err := db.AllowTool(ctx, "s", "shell"); err != nil {
		t.Fatalf("AllowTool: %v", err)
	}
	if got, err = db.GetSession(ctx, "s"); err != nil || !slices.Equal(got.Allowlist, []string{"shell"}) {
		t.Errorf("GetSession after AllowTool = %v, %v; want allowlist [shell]", got.Allowlist, err)
	}
	if err := db.CreateApproval(ctx, store.Approval{ID: "a", SessionID: "s", RunID: "r"}); err != nil {
		t.Fatalf("CreateApproval: %v", err)
	}
	if a, err := db.PendingApproval(ctx, "s"); err != nil || a.ID != "a" {
		t.Errorf("PendingApproval = %+v, %v; want a", a, err)
	}
}

// TestMigrateFromV7 opens a database written by schema 7: its sessions
// take responses, which go with them.
func TestMigrateFromV7(t *testing.T) {
	ctx := t.Context()
	path := tempPath(t)
	writeOldSchema(t, path, 7, "INSERT INTO sessions (id, agent, owner, created_at, updated_at) VALUES ('s', 'main', 'key:k', 1000, 2000)")

	db := open(t, path)
	want := store.Response{ID: "resp", Owner: "key:k", Agent: "main", SessionID: "s", RunID: "r", Seq: 1,
		Request: []byte(`{"model":"main"}`), CreatedAt: time.UnixMilli(3000).UTC()}
	if err := db.CreateResponse(ctx, want); err != nil {
		t.Fatalf("CreateResponse: %v", err)
	}
	got, err := db.GetResponse(ctx, "resp")
	if err != nil {
		t.Fatalf("GetResponse: %v", err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("response after migration (-want +got):\n%s", d)
	}
	if err := db.DeleteSession(ctx, "s"); err != nil {
		t.Fatalf("DeleteSession: %v", err)
	}
	if _, err := db.GetResponse(ctx, "resp"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetResponse after DeleteSession: error %v, want ErrNotFound", err)
	}
}

// writeOldSchema writes at path a database of schema version, as a binary
// of that version would have left it, with the rows stmts insert.
func writeOldSchema(t *testing.T, path string, version int, stmts ...string) {
	t.Helper()
	old, err := sql.Open("sqlite", dsn(path, []string{"foreign_keys(ON)"}, nil))
	if err != nil {
		t.Fatalf("open v%d: %v", version, err)
	}
	all := append(slices.Clone(migrations[:version]), fmt.Sprintf("PRAGMA user_version = %d", version))
	for _, q := range append(all, stmts...) {
		if _, err := old.ExecContext(t.Context(), q); err != nil {
			old.Close()
			t.Fatalf("build v%d: %v", version, err)
		}
	}
	if err := old.Close(); err != nil {
		t.Fatalf("close v%d: %v", version, err)
	}
}

// TestResolveApprovalTwoHandles answers one approval through two handles
// on the file at once, as two processes would: exactly one answer wins.
func TestResolveApprovalTwoHandles(t *testing.T) {
	ctx := t.Context()
	path := tempPath(t)
	a, b := open(t, path), open(t, path)
	if err := a.CreateSession(ctx, store.Session{ID: "s", Agent: "main"}); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	const approvals = 20
	for i := range approvals {
		if err := a.CreateApproval(ctx, store.Approval{ID: fmt.Sprintf("a%02d", i), SessionID: "s", RunID: "r"}); err != nil {
			t.Fatalf("CreateApproval: %v", err)
		}
	}
	var wg sync.WaitGroup
	wins := make([][approvals]bool, 2)
	errs := make(chan error, 2*approvals)
	for h, db := range []*DB{a, b} {
		wg.Go(func() {
			for i := range approvals {
				_, err := db.ResolveApproval(ctx, fmt.Sprintf("a%02d", i), store.ApprovalApproved, fmt.Sprint(h), time.Time{})
				switch {
				case err == nil:
					wins[h][i] = true
				case !errors.Is(err, store.ErrConflict):
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("ResolveApproval: %v", err)
	}
	for i := range approvals {
		if wins[0][i] == wins[1][i] {
			t.Errorf("approval %d: handle a won %v, handle b won %v; want exactly one", i, wins[0][i], wins[1][i])
		}
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := tempPath(t)
	db, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, err := db.w.ExecContext(t.Context(), fmt.Sprintf("PRAGMA user_version = %d", len(migrations)+1)); err != nil {
		t.Fatalf("set user_version: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if db, err := Open(path); err == nil {
		db.Close()
		t.Fatalf("Open of a newer schema succeeded, want an error")
	} else if !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of a newer schema: %v, want an error saying it is newer", err)
	}
}

func TestUnknownSession(t *testing.T) {
	ctx := t.Context()
	db := open(t, tempPath(t))
	_, err := db.AppendMessage(ctx, store.Message{SessionID: "nope", Key: "k", Message: chat.Message{Role: chat.User}})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("AppendMessage on unknown session: %v, want ErrNotFound", err)
	}
	err = db.CreateApproval(ctx, store.Approval{ID: "a", SessionID: "nope", RunID: "r"})
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CreateApproval on unknown session: %v, want ErrNotFound", err)
	}
	if _, err := db.GetApproval(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetApproval after refused create: %v, want ErrNotFound", err)
	}
	if err := db.DeleteSession(ctx, "nope"); err != nil {
		t.Errorf("DeleteSession of unknown session: %v, want nil", err)
	}
	if _, err := db.GetRun(ctx, "r"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetRun after refused enqueue: %v, want ErrNotFound", err)
	}
}

// Queuing a run is activity on its session: its UpdatedAt moves, its
// CreatedAt stays. A commit with an unknown status is refused.
func TestEnqueueRunTouchesSession(t *testing.T) {
	ctx := t.Context()
	db := open(t, tempPath(t))
	old := time.UnixMilli(1_000_000_000_000).UTC()
	if err := db.CreateSession(ctx, store.Session{ID: "s", Agent: "main", CreatedAt: old, UpdatedAt: old}); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	r, _, err := db.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s", Agent: "main"}, Run: store.Run{ID: "r", CreatedAt: old}})
	if err != nil {
		t.Fatalf("EnqueueRun: %v", err)
	}
	sess, err := db.GetSession(ctx, "s")
	if err != nil {
		t.Fatalf("GetSession: %v", err)
	}
	if !sess.UpdatedAt.After(old) || !sess.CreatedAt.Equal(old) {
		t.Errorf("session times = created %v, updated %v; want created %v and updated after it", sess.CreatedAt, sess.UpdatedAt, old)
	}
	r.Status = "paused"
	if err := db.CommitRun(ctx, store.Commit{Run: r}); err == nil {
		t.Errorf("CommitRun with unknown status succeeded, want an error")
	}
}

func TestRevokeKeyKeepsFirstTime(t *testing.T) {
	ctx := t.Context()
	db := open(t, tempPath(t))
	k := store.APIKey{ID: "k", Name: "n", Hash: "h", Prefix: "p", Autonomy: "full", CreatedAt: time.UnixMilli(1000).UTC()}
	if err := db.CreateKey(ctx, k); err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	first, second := time.UnixMilli(5000).UTC(), time.UnixMilli(9000).UTC()
	for _, at := range []time.Time{first, second} {
		if err := db.RevokeKey(ctx, "k", at); err != nil {
			t.Fatalf("RevokeKey: %v", err)
		}
	}
	got, err := db.KeyByHash(ctx, "h")
	if err != nil {
		t.Fatalf("KeyByHash: %v", err)
	}
	if got.RevokedAt == nil || !got.RevokedAt.Equal(first) {
		t.Errorf("RevokedAt = %v, want %v", got.RevokedAt, first)
	}
}

func TestZeroTimesDefaultToNow(t *testing.T) {
	ctx := t.Context()
	db := open(t, tempPath(t))
	before := time.Now().Truncate(time.Millisecond)
	if err := db.CreateSession(ctx, store.Session{ID: "s", Agent: "main"}); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	r, _, err := db.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s", Agent: "main"}, Run: store.Run{ID: "r"}})
	if err != nil {
		t.Fatalf("EnqueueRun: %v", err)
	}
	if err := db.CreateResponse(ctx, store.Response{ID: "resp", SessionID: "s", RunID: "r", Seq: r.Seq}); err != nil {
		t.Fatalf("CreateResponse: %v", err)
	}
	sess, err := db.GetSession(ctx, "s")
	if err != nil {
		t.Fatalf("GetSession: %v", err)
	}
	resp, err := db.GetResponse(ctx, "resp")
	if err != nil {
		t.Fatalf("GetResponse: %v", err)
	}
	for name, tm := range map[string]time.Time{"session created": sess.CreatedAt, "run created": r.CreatedAt, "response created": resp.CreatedAt} {
		if tm.Before(before) {
			t.Errorf("%s = %v, want now (not before %v)", name, tm, before)
		}
	}
}

// TestQueryPlans guards the indexes the hot queries rely on.
func TestQueryPlans(t *testing.T) {
	db := open(t, tempPath(t))
	for _, tc := range []struct {
		query, want string
	}{
		{`SELECT ` + runColumns + ` FROM runs WHERE session_id = 'x' AND status IN ('queued', 'running') ORDER BY seq LIMIT 1`, "runs_unfinished"},
		{`SELECT DISTINCT session_id FROM runs WHERE status IN ('queued', 'running') ORDER BY session_id`, "runs_unfinished"},
		{`SELECT key, run_id, body, created_at FROM messages WHERE session_id = 'x' ORDER BY key`, "PRIMARY KEY"},
		{`SELECT ` + approvalColumns + ` FROM approvals WHERE session_id = 'x' AND status = 'pending' ORDER BY created_at, id LIMIT 1`, "approvals_session"},
		{`DELETE FROM approvals WHERE session_id = 'x'`, "approvals_session"},
		{`SELECT ` + responseColumns + ` FROM responses WHERE id = 'x'`, "sqlite_autoindex_responses_1"},
		{`DELETE FROM responses WHERE session_id = 'x'`, "responses_session"},
	} {
		rows, err := db.r.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+tc.query)
		if err != nil {
			t.Fatalf("explain: %v", err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatalf("explain: %v", err)
			}
			plan = append(plan, detail)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("explain: %v", err)
		}
		rows.Close()
		text := strings.Join(plan, "; ")
		if !strings.Contains(text, tc.want) || strings.Contains(text, "TEMP B-TREE") || slices.Contains(plan, "SCAN runs") || slices.Contains(plan, "SCAN approvals") ||
			slices.Contains(plan, "SCAN responses") {
			t.Errorf("plan of %q = %q, want it to use %s without sorting or a full table scan", tc.query, text, tc.want)
		}
	}
}

// benchSession opens a database with one session for a benchmark.
func benchSession(b *testing.B) (*DB, context.Context) {
	db := open(b, tempPath(b))
	ctx := context.Background()
	if err := db.CreateSession(ctx, store.Session{ID: "s", Agent: "main"}); err != nil {
		b.Fatalf("CreateSession: %v", err)
	}
	return db, ctx
}

// benchMessage is a typical history entry of about 300 bytes.
func benchMessage(i int) store.Message {
	return store.Message{SessionID: "s", Key: fmt.Sprintf("r%012d#a%03d", i/10, i%10), RunID: fmt.Sprintf("run-%d", i/10),
		Message: chat.Message{Role: chat.Assistant, Content: strings.Repeat("The quick brown fox jumps over the lazy dog. ", 6),
			ToolCalls: []chat.ToolCall{{ID: "call_1", Name: "read_file", Arguments: `{"path":"notes.md"}`}}}}
}

func BenchmarkAppendMessage(b *testing.B) {
	db, ctx := benchSession(b)
	i := 0
	for b.Loop() {
		if _, err := db.AppendMessage(ctx, benchMessage(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkMessages(b *testing.B) {
	db, ctx := benchSession(b)
	for i := range 50 {
		if _, err := db.AppendMessage(ctx, benchMessage(i)); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		msgs, err := db.Messages(ctx, "s")
		if err != nil {
			b.Fatal(err)
		}
		if len(msgs) != 50 {
			b.Fatalf("got %d messages, want 50", len(msgs))
		}
	}
}

func BenchmarkEnqueueRun(b *testing.B) {
	db, ctx := benchSession(b)
	state := []byte(`{"session":"s","step":"begin","iteration":0}`)
	i := 0
	for b.Loop() {
		if _, _, err := db.EnqueueRun(ctx, store.NewRun{Session: store.Session{ID: "s", Agent: "main"}, Run: store.Run{ID: fmt.Sprintf("run-%d", i), State: state}}); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func TestPragmas(t *testing.T) {
	db := open(t, tempPath(t))
	want := map[string]string{"journal_mode": "wal", "synchronous": "1", "foreign_keys": "1", "busy_timeout": "5000"}
	for pool, conn := range map[string]*sql.DB{"writer": db.w, "reader": db.r} {
		for name, value := range want {
			var got string
			if err := conn.QueryRowContext(t.Context(), "PRAGMA "+name).Scan(&got); err != nil {
				t.Fatalf("%s: PRAGMA %s: %v", pool, name, err)
			}
			if got != value {
				t.Errorf("%s: PRAGMA %s = %q, want %q", pool, name, got, value)
			}
		}
	}
	if _, err := db.r.ExecContext(t.Context(), "DELETE FROM sessions"); err == nil {
		t.Errorf("a write through the reader pool succeeded, want it refused")
	}
}

// TestSchemaIsMigrated holds a new database, created from schema, equal
// to one brought to the same version through every migration: the same
// tables with the same columns, keys, checks and options, the same indexes
// and triggers, and the same rows.
func TestSchemaIsMigrated(t *testing.T) {
	migrated := tempPath(t)
	writeOldSchema(t, migrated, len(migrations))
	if d := cmp.Diff(describeSchema(t, open(t, migrated)), describeSchema(t, open(t, tempPath(t)))); d != "" {
		t.Errorf("schema differs from the migrations' result (-migrated +schema):\n%s", d)
	}
}

// checkRE finds the CHECK constraints of a table, each on a line of its own.
var checkRE = regexp.MustCompile(`CHECK \(.*\)`)

// describeSchema lists what the database at db is, one line a fact, in an
// order that does not depend on the order of creation.
func describeSchema(t *testing.T, db *DB) []string {
	t.Helper()
	ctx := t.Context()
	var lines []string
	query := func(q string, args ...any) {
		rows, err := db.r.QueryContext(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			lines = append(lines, s)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	query(`SELECT 'version ' || user_version FROM pragma_user_version`)
	// The text of indexes, triggers and virtual tables; a table's own
	// text differs (ALTER TABLE splices columns into it) where its columns
	// below do not.
	query(`SELECT type || ' ' || name || ' on ' || tbl_name || ': ' ||
			CASE WHEN type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%' THEN '' ELSE coalesce(sql, 'auto') END
		FROM sqlite_schema`)
	query(`SELECT 'table ' || name || ' ' || type || ' ncol ' || ncol || ' without rowid ' || wr || ' strict ' || strict
		FROM pragma_table_list WHERE schema = 'main'`)
	query(`SELECT 'column ' || m.name || '.' || c.cid || ' ' || c.name || ' ' || c.type || ' notnull ' || c."notnull" ||
			' default ' || coalesce(c.dflt_value, 'null') || ' pk ' || c.pk || ' hidden ' || c.hidden
		FROM sqlite_schema m, pragma_table_xinfo(m.name) c WHERE m.type = 'table'`)
	query(`SELECT 'foreign key ' || m.name || ' ' || f."from" || ' -> ' || f."table" || '(' || coalesce(f."to", '') || ')'
		FROM sqlite_schema m, pragma_foreign_key_list(m.name) f WHERE m.type = 'table'`)
	query(`SELECT 'index ' || m.name || ' ' || i.name || ' unique ' || i."unique" || ' origin ' || i.origin || ' partial ' || i.partial
		FROM sqlite_schema m, pragma_index_list(m.name) i WHERE m.type = 'table'`)
	query(`SELECT 'index column ' || m.name || '.' || c.seqno || ' ' || coalesce(c.name, c.cid) || ' desc ' || c."desc" || ' ' || c.coll || ' key ' || c."key"
		FROM sqlite_schema m, pragma_index_xinfo(m.name) c WHERE m.type = 'index'`)
	// A CHECK lives only in a table's text.
	n := len(lines)
	query(`SELECT name || char(0) || sql FROM sqlite_schema WHERE type = 'table' AND sql LIKE '%CHECK%'`)
	for i, l := range lines[n:] {
		name, sql, _ := strings.Cut(l, "\x00")
		lines[n+i] = "checks " + name + ": " + strings.Join(checkRE.FindAllString(sql, -1), "; ")
	}
	query(`SELECT 'memory_state ' || id || ' ' || generation FROM memory_state`)
	slices.Sort(lines)
	return lines
}

// TestStatementsPreparedOnUse holds that Open parses no statement and a
// method prepares only those it runs, once.
func TestStatementsPreparedOnUse(t *testing.T) {
	db := open(t, tempPath(t))
	prepared := func() (names []string) {
		for _, s := range append(slices.Clone(db.st.all), db.mem.st.all...) {
			if s.st.Load() != nil {
				names = append(names, s.query)
			}
		}
		return names
	}
	if got := prepared(); len(got) != 0 {
		t.Errorf("prepared by Open: %q", got)
	}
	for range 2 {
		if _, err := db.GetSession(t.Context(), "missing"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("GetSession: %v, want ErrNotFound", err)
		}
	}
	if got, want := prepared(), []string{db.st.getSession.query}; !slices.Equal(got, want) {
		t.Errorf("prepared after GetSession: %q, want %q", got, want)
	}
}

// A database half built by a crashed process is removed by the next
// creation once it is old; one younger may be another process's build.
func TestOpenRemovesStaleBuilds(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lambdaclaw.db")
	stale := filepath.Join(dir, ".lambdaclaw.db.new-1")
	young := filepath.Join(dir, ".lambdaclaw.db.new-2")
	for _, name := range []string{stale, young} {
		if err := os.WriteFile(name, []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-staleAfter - time.Minute)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	names, err := filepath.Glob(filepath.Join(dir, ".lambdaclaw.db.new-*"))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{young}, names); d != "" {
		t.Errorf("half-built databases left (-want +got):\n%s", d)
	}
}

func TestPII(t *testing.T) {
	storetest.RunPII(t, func(t *testing.T) storetest.PIIStore {
		db, err := Open(filepath.Join(t.TempDir(), "lambdaclaw.db"))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestBudgets(t *testing.T) {
	storetest.RunBudgets(t, func(t *testing.T) store.Budgets {
		db, err := Open(filepath.Join(t.TempDir(), "lambdaclaw.db"))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	})
}
