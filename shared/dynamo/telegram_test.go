package dynamo

import (
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/telegram"
	"github.com/lambdaclaw/lambdaclaw/shared/telegram/telegramtest"
)

func TestTelegramStore(t *testing.T) {
	telegramtest.Run(t, func(t *testing.T) telegram.Store { return newStore(t).Telegram() })
}
