// Package apikey makes and checks lambdaclaw API keys. A key is "lc_"
// followed by 43 random base62 characters (256 bits); only its SHA-256 is
// stored, so a leaked database reveals no usable key.
package apikey

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
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
