package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/storetest"
)

func TestChannelConformance(t *testing.T) {
	storetest.RunChannel(t, func(t *testing.T) func(string) store.Channel {
		db, err := Open(filepath.Join(t.TempDir(), "ch.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db.Channel
	})
}

func TestCommitOutbox(t *testing.T) {
	storetest.RunCommitOutbox(t, func(t *testing.T) (store.Store, func(string) store.Channel) {
		db, err := Open(filepath.Join(t.TempDir(), "ch.db"))
		if err != nil {
			t.Fatal(err)
		}
		return db, db.Channel
	})
}

// TestTelegramStateMigrates opens a database of version 15, when the
// Telegram channel had tables of its own, and finds its state as channel
// "tg"'s.
func TestTelegramStateMigrates(t *testing.T) {
	ctx := t.Context()
	path := tempPath(t)
	writeOldSchema(t, path, 15,
		`INSERT INTO telegram_state (key, value) VALUES ('offset', '8')`,
		`INSERT INTO telegram_seen (update_id, seen_at) VALUES (5, 1000)`,
		`INSERT INTO telegram_users (user_id, code_hash, added_at) VALUES (42, 'h1', 1000)`,
		`INSERT INTO telegram_code_tries (chat_id, tries, lockouts, locked_until, version) VALUES (-100, 2, 0, 0, 3)`,
		`INSERT INTO telegram_outbox (id, chat_id, text, status, next_at, created_at) VALUES ('run-r1#0', 42, 'hello', 'pending', 1000, 1000)`,
		`INSERT INTO telegram_outbox (id, chat_id, text, status, next_at, created_at, message_id) VALUES ('run-r0#0', 42, 'old', 'sent', 900, 900, 77)`)
	tg := open(t, path).Channel("tg")
	if v, err := tg.State(ctx, "offset"); err != nil || v != "8" {
		t.Errorf("State(offset) = %q, %v; want 8", v, err)
	}
	if seen, err := tg.Seen(ctx, "5"); err != nil || !seen {
		t.Errorf("Seen(5) = %v, %v; want true", seen, err)
	}
	if ok, err := tg.AllowedUser(ctx, "42"); err != nil || !ok {
		t.Errorf("AllowedUser(42) = %v, %v; want true", ok, err)
	}
	if ok, err := tg.RedeemCode(ctx, "h1", "43", fromMillis(2000)); err != nil || ok {
		t.Errorf("the migrated code redeemed again = %v, %v; want false", ok, err)
	}
	tries, err := tg.CodeTries(ctx, "-100")
	if err != nil || tries != (store.CodeTries{Tries: 2, Version: 3}) {
		t.Errorf("CodeTries(-100) = %+v, %v", tries, err)
	}
	got, err := tg.UnsentOutbox(ctx, 10)
	want := []store.OutboxMessage{{ID: "run-r1#0", Channel: "tg", To: "42", Text: "hello", Status: store.OutboxPending,
		NextAt: fromMillis(1000), CreatedAt: fromMillis(1000)}}
	if d := cmp.Diff(want, got); err != nil || d != "" {
		t.Errorf("UnsentOutbox: %v (-want +got):\n%s", err, d)
	}
	if st, err := tg.OutboxStats(ctx); err != nil || st != (store.OutboxStats{Pending: 1, Sent: 1}) {
		t.Errorf("OutboxStats = %+v, %v", st, err)
	}
}
