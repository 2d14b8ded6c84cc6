package telegram

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
)

// SecretHeader carries the webhook's secret_token on every webhook call.
const SecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// KeyWebhookSecret is the state key of the webhook secret's hash.
const KeyWebhookSecret = "webhook_secret_sha256"

// NewSecret returns a random webhook secret_token (64 characters from
// Telegram's allowed set) and the hash the channel stores under
// KeyWebhookSecret.
func NewSecret() (secret, hash string) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("crypto/rand: " + err.Error()) // never fails on supported platforms
	}
	secret = hex.EncodeToString(b[:])
	return secret, HashSecret(secret)
}

// HashSecret is the stored form of a webhook secret.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// secretStore holds the webhook secret's hash (store.Channel).
type secretStore interface {
	State(ctx context.Context, key string) (string, error)
}

// webhook is the endpoint Telegram posts updates to in webhook mode.
type webhook struct {
	store secretStore
	// handle processes an update; an error means it should be retried.
	handle func(context.Context, Update) error
	log    *slog.Logger
}

// ServeHTTP checks the secret header in constant time (401 when missing,
// 403 when wrong), hands the update to handle and answers 200 once the
// update is durably handed off; a failure answers 500 so that Telegram
// delivers the update again.
func (h webhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	got := r.Header.Get(SecretHeader)
	if got == "" {
		http.Error(w, "missing secret token", http.StatusUnauthorized)
		return
	}
	stored, err := h.store.State(r.Context(), KeyWebhookSecret)
	if err != nil {
		h.log.Error("read webhook secret", "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	want, err := hex.DecodeString(stored)
	gotSum := sha256.Sum256([]byte(got))
	if err != nil || len(want) != len(gotSum) || subtle.ConstantTimeCompare(gotSum[:], want) != 1 {
		http.Error(w, "bad secret token", http.StatusForbidden)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return
	}
	var u Update
	if err := json.Unmarshal(body, &u); err != nil {
		http.Error(w, "bad update", http.StatusBadRequest)
		return
	}
	if err := h.handle(r.Context(), u); err != nil {
		h.log.Error("handle update", "update_id", u.UpdateID, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte("{}\n"))
}
