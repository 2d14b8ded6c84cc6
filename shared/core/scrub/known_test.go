package scrub

import "testing"

func TestKnown(t *testing.T) {
	tests := []struct {
		name, s, secret, want string
	}{
		{"provider key", "GET https://api.example.com/" + openaiKey + "/v1: connection refused",
			openaiKey, "GET https://api.example.com/[REDACTED]/v1: connection refused"},
		{"every occurrence", "sk-test-0123456789abcdef and sk-test-0123456789abcdef", "sk-test-0123456789abcdef",
			"[REDACTED] and [REDACTED]"},
		{"telegram token after bot", "Post https://api.telegram.org/bot" + telegramTok + "/getMe: EOF", telegramTok,
			"Post https://api.telegram.org/bot[REDACTED]/getMe: EOF"},
		{"long letters only", "key abcdefghijklmnopqrstuvwxyz rejected", "abcdefghijklmnopqrstuvwxyz",
			"key [REDACTED] rejected"},
		{"placeholder ollama", "model not found, try: ollama pull llama3", "ollama", "model not found, try: ollama pull llama3"},
		{"placeholder none", "none of the models matched", "none", "none of the models matched"},
		{"placeholder x", "max tokens exceeded", "x", "max tokens exceeded"},
		{"placeholder word", "anything goes", "anything", "anything goes"},
		{"placeholder with dashes", "sk-no-key-required is not a key", "sk-no-key-required", "sk-no-key-required is not a key"},
		{"placeholder EMPTY", "EMPTY response", "EMPTY", "EMPTY response"},
		{"digits only", "port 12345678", "12345678", "port 12345678"},
		{"empty secret", "text", "", "text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Known(tt.s, tt.secret); got != tt.want {
				t.Errorf("Known(%q, %q) = %q, want %q", tt.s, tt.secret, got, tt.want)
			}
		})
	}
}
