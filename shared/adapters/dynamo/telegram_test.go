package dynamo

import (
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/storetest"
)

func TestTelegramStore(t *testing.T) {
	storetest.RunTelegram(t, func(t *testing.T) store.Telegram { return newStore(t).Telegram() })
}
