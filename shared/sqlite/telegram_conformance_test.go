package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/telegram"
	"github.com/lambdaclaw/lambdaclaw/shared/telegram/telegramtest"
)

func TestTelegramConformance(t *testing.T) {
	telegramtest.Run(t, func(t *testing.T) telegram.Store {
		db, err := Open(filepath.Join(t.TempDir(), "tg.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db.Telegram()
	})
}
