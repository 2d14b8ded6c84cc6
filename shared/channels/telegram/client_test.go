package telegram_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/telegram"
)

// The token is part of every URL: a transport error must not carry it.
func TestClientErrorsHideTheToken(t *testing.T) {
	const token = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawX"
	srv := httptest.NewServer(http.NotFoundHandler())
	base := srv.URL
	srv.Close()
	_, err := telegram.NewClient(base, token).GetMe(context.Background())
	if err == nil {
		t.Fatal("GetMe on a closed server succeeded")
	}
	if msg := err.Error(); strings.Contains(msg, token) || !strings.Contains(msg, "/bot[REDACTED]/getMe") {
		t.Errorf("error = %q, want the token redacted from the URL", msg)
	}
}
