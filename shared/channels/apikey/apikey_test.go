package apikey

import (
	"strings"
	"testing"
)

func TestNew(t *testing.T) {
	key, hash, display, err := New()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(key, "lc_") {
		t.Errorf("key %q does not start with lc_", key)
	}
	if len(key) != len("lc_")+43 {
		t.Errorf("len(key) = %d, want %d", len(key), len("lc_")+43)
	}
	if !Plausible(key) {
		t.Errorf("Plausible(%q) = false for a new key", key)
	}
	if hash != Hash(key) {
		t.Errorf("hash = %q, want Hash(key) = %q", hash, Hash(key))
	}
	if len(hash) != 64 || strings.Trim(hash, "0123456789abcdef") != "" {
		t.Errorf("hash %q is not hex SHA-256", hash)
	}
	if !strings.HasPrefix(key, display) || display == key || !strings.HasPrefix(display, "lc_") {
		t.Errorf("display %q is not a short prefix of the key", display)
	}
}

func TestNewDistinct(t *testing.T) {
	seen := map[string]bool{}
	for range 200 {
		key, _, _, err := New()
		if err != nil {
			t.Fatal(err)
		}
		if seen[key] {
			t.Fatalf("New returned %q twice", key)
		}
		seen[key] = true
	}
}

func TestHash(t *testing.T) {
	// SHA-256 of "abc".
	const want = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if got := Hash("abc"); got != want {
		t.Errorf("Hash(abc) = %q, want %q", got, want)
	}
}

func TestPlausible(t *testing.T) {
	good := "lc_" + strings.Repeat("aZ9", 14) + "x" // 43 base62 characters
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"good", good, true},
		{"empty", "", false},
		{"prefix only", "lc_", false},
		{"one short", good[:len(good)-1], false},
		{"one long", good + "a", false},
		{"wrong prefix", "sk_" + good[3:], false},
		{"upper prefix", "LC_" + good[3:], false},
		{"no prefix, right length", "abc" + good[3:], false},
		{"underscore", good[:10] + "_" + good[11:], false},
		{"dash", good[:10] + "-" + good[11:], false},
		{"space", good[:10] + " " + good[11:], false},
		{"slash", good[:len(good)-1] + "/", false},
		{"non-ASCII", good[:len(good)-2] + "é", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Plausible(tt.in); got != tt.want {
				t.Errorf("Plausible(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}
