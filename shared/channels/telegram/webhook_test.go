package telegram

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// secretState holds the webhook secret's hash, or fails with err.
type secretState struct {
	hash string
	err  error
}

func (s secretState) State(_ context.Context, key string) (string, error) {
	if key != KeyWebhookSecret {
		return "", errors.New("unexpected key " + key)
	}
	return s.hash, s.err
}

func TestWebhook(t *testing.T) {
	secret, hash := NewSecret()
	const update = `{"update_id":7}`
	stored := secretState{hash: hash}
	tests := []struct {
		name     string
		method   string
		secret   string
		store    secretState
		body     string
		handle   error
		wantCode int
		// wantHandled lists the update ids handed to handle.
		wantHandled []int64
	}{
		{name: "handled", secret: secret, store: stored, body: update, wantCode: 200, wantHandled: []int64{7}},
		{name: "not a POST", method: http.MethodGet, secret: secret, store: stored, wantCode: 405},
		{name: "no secret", store: stored, body: update, wantCode: 401},
		{name: "wrong secret", secret: secret + "x", store: stored, body: update, wantCode: 403},
		{name: "no secret stored", secret: secret, body: update, wantCode: 403},
		{name: "store failure", secret: secret, store: secretState{err: errors.New("disk on fire")}, body: update, wantCode: 500},
		{name: "not an update", secret: secret, store: stored, body: `{"update_id":`, wantCode: 400},
		{name: "too large", secret: secret, store: stored, body: `{"x":"` + strings.Repeat("a", 1<<20) + `"}`, wantCode: 413},
		{name: "handle failure is retried by Telegram", secret: secret, store: stored, body: update, handle: errors.New("busy"), wantCode: 500, wantHandled: []int64{7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var handled []int64
			h := webhook{store: tt.store, log: slog.New(slog.DiscardHandler), handle: func(_ context.Context, u Update) error {
				handled = append(handled, u.UpdateID)
				return tt.handle
			}}
			method := tt.method
			if method == "" {
				method = http.MethodPost
			}
			req := httptest.NewRequest(method, "/telegram/webhook", strings.NewReader(tt.body))
			if tt.secret != "" {
				req.Header.Set(SecretHeader, tt.secret)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.wantCode {
				t.Errorf("status = %d, want %d (%s)", rec.Code, tt.wantCode, rec.Body)
			}
			if d := cmp.Diff(tt.wantHandled, handled); d != "" {
				t.Errorf("handled (-want +got):\n%s", d)
			}
		})
	}
}
