package telegram_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/telegram"
	"github.com/lambdaclaw/lambdaclaw/shared/core/nettest"
)

// The token is part of every URL: a transport error must not carry it.
func TestClientErrorsHideTheToken(t *testing.T) {
	const token = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawX"
	_, err := telegram.NewClient(nettest.RefusedURL(t), token).GetMe(context.Background())
	if err == nil {
		t.Fatal("GetMe on a refused connection succeeded")
	}
	if msg := err.Error(); strings.Contains(msg, token) || !strings.Contains(msg, "/bot[REDACTED]/getMe") {
		t.Errorf("error = %q, want the token redacted from the URL", msg)
	}
}
