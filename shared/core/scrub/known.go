package scrub

import "strings"

// Known returns s with every occurrence of secret, a credential whose value
// is configured (a provider's API key, a bot token), replaced by Redacted.
//
// A configured value that cannot be a secret is left alone: local model
// servers take any key, and people configure "ollama", "none", "x",
// "not-needed" or "EMPTY". Replacing such a value everywhere would mangle
// ordinary words in error messages ("[REDACTED] pull llama3"). A secret here
// is at least 8 bytes long and mixes letters with digits, or is at least 24
// bytes long. Such a value is unique enough to be replaced wherever it
// occurs, also inside a longer word: a Telegram token follows "bot" in its
// URLs.
func Known(s, secret string) string {
	if !knownSecret(secret) {
		return s
	}
	return strings.ReplaceAll(s, secret, Redacted)
}

// knownSecret reports whether a configured value is long and random-looking
// enough to be a secret.
func knownSecret(v string) bool {
	if len(v) >= 24 {
		return true
	}
	lower, upper, digit := classes(v)
	return len(v) >= 8 && digit && (lower || upper)
}
