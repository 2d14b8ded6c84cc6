// Package apikey makes and checks lambdaclaw API keys. A key is "lc_"
// followed by 43 random base62 characters (256 bits); only its SHA-256 is
// stored, so a leaked database reveals no usable key. Create is the one
// way keys are made, in the local database and in the deployed table
// alike.
package apikey

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

const (
	prefix   = "lc_"
	alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	length   = 43
)

// New returns a fresh key with its hash and display prefix.
func New() (key, hash, display string, err error) {
	var b strings.Builder
	b.WriteString(prefix)
	buf := make([]byte, 64)
	for b.Len() < len(prefix)+length {
		if _, err := rand.Read(buf); err != nil {
			return "", "", "", fmt.Errorf("generate key: %w", err)
		}
		for _, c := range buf {
			// 248 is the largest multiple of 62 below 256: no modulo bias.
			if c < 248 && b.Len() < len(prefix)+length {
				b.WriteByte(alphabet[c%62])
			}
		}
	}
	key = b.String()
	return key, Hash(key), key[:len(prefix)+6], nil
}

// Hash returns the hex SHA-256 of key, the form keys are stored and looked
// up in.
func Hash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// Plausible reports whether s has the shape of a key, to reject garbage
// before touching the store.
func Plausible(s string) bool {
	if len(s) != len(prefix)+length || !strings.HasPrefix(s, prefix) {
		return false
	}
	for i := len(prefix); i < len(s); i++ {
		if !strings.ContainsRune(alphabet, rune(s[i])) {
			return false
		}
	}
	return true
}

// Creator stores new keys: store.Keys of any adapter.
type Creator interface {
	CreateKey(ctx context.Context, k store.APIKey) error
}

// Create makes a key with the name, agents, autonomy, rate limit, admin
// right, token budgets and denied tools of spec, stores its record in keys and returns the secret with the record.
// The secret is never stored: the record holds its hash and display
// prefix, a fresh id and the creation time (now, in UTC).
func Create(ctx context.Context, keys Creator, spec store.APIKey) (string, store.APIKey, error) {
	key, hash, display, err := New()
	if err != nil {
		return "", store.APIKey{}, err
	}
	k := store.APIKey{
		ID: "key_" + agent.NewID()[:12], Name: spec.Name, Hash: hash, Prefix: display, Agents: spec.Agents,
		Autonomy: spec.Autonomy, RatePerMinute: spec.RatePerMinute, Admin: spec.Admin, CreatedAt: time.Now().UTC(),
		DailyTokens: spec.DailyTokens, MonthlyTokens: spec.MonthlyTokens, DenyTools: spec.DenyTools,
	}
	if err := keys.CreateKey(ctx, k); err != nil {
		return "", store.APIKey{}, fmt.Errorf("store key: %w", err)
	}
	return key, k, nil
}
