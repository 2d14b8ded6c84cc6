package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/storetest"
)

func TestTelegramConformance(t *testing.T) {
	storetest.RunTelegram(t, func(t *testing.T) store.Telegram {
		db, err := Open(filepath.Join(t.TempDir(), "tg.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db.Telegram()
	})
}

func TestCommitOutbox(t *testing.T) {
	storetest.RunCommitOutbox(t, func(t *testing.T) (store.Store, store.Telegram) {
		db, err := Open(filepath.Join(t.TempDir(), "tg.db"))
		if err != nil {
			t.Fatal(err)
		}
		return db, db.Telegram()
	})
}
