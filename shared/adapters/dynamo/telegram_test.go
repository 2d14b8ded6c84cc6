package dynamo

import (
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/storetest"
)

func TestTelegramStore(t *testing.T) {
	storetest.RunTelegram(t, func(t *testing.T) store.Telegram { return newStore(t).Telegram() })
}

func TestCommitOutbox(t *testing.T) {
	endpoint(t)
	storetest.RunCommitOutbox(t, func(t *testing.T) (store.Store, store.Telegram) {
		s := newStore(t)
		return s, s.Telegram()
	})
}
