package wsproto

import "testing"

func TestKeyFromProtocols(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		key    string
		ok     bool
	}{
		{"one header", []string{"lambdaclaw, lambdaclaw.key.lc_abc"}, "lc_abc", true},
		{"two headers", []string{"lambdaclaw.key.lc_abc", "lambdaclaw"}, "lc_abc", true},
		{"no spaces", []string{"lambdaclaw.key.lc_abc,lambdaclaw"}, "lc_abc", true},
		{"key without the protocol", []string{"lambdaclaw.key.lc_abc"}, "", false},
		{"protocol without a key", []string{"lambdaclaw"}, "", false},
		{"empty key", []string{"lambdaclaw, lambdaclaw.key."}, "", false},
		{"other protocols", []string{"chat, superchat"}, "", false},
		{"none", nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, ok := KeyFromProtocols(tt.values)
			if ok != tt.ok || (ok && key != tt.key) {
				t.Errorf("KeyFromProtocols(%q) = %q, %v; want %q, %v", tt.values, key, ok, tt.key, tt.ok)
			}
		})
	}
}
