package apikey

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
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

// keyRecorder is a Creator that keeps what it is given, or fails.
type keyRecorder struct {
	keys []store.APIKey
	err  error
}

func (r *keyRecorder) CreateKey(_ context.Context, k store.APIKey) error {
	if r.err != nil {
		return r.err
	}
	r.keys = append(r.keys, k)
	return nil
}

func TestCreate(t *testing.T) {
	var r keyRecorder
	spec := store.APIKey{Name: "ci", Agents: []string{"writer"}, Autonomy: "full", RatePerMinute: 5, Admin: true,
		// Create sets these itself.
		ID: "key_mine", Hash: "h", Prefix: "p", CreatedAt: time.Unix(1, 0)}
	before := time.Now().UTC()
	secret, k, err := Create(t.Context(), &r, spec)
	if err != nil {
		t.Fatal(err)
	}
	if !Plausible(secret) {
		t.Fatalf("secret %q is no key", secret)
	}
	if len(r.keys) != 1 {
		t.Fatalf("%d keys stored, want 1", len(r.keys))
	}
	if diff := cmp.Diff(k, r.keys[0]); diff != "" {
		t.Errorf("returned and stored records differ (-returned +stored):\n%s", diff)
	}
	want := store.APIKey{ID: k.ID, Name: "ci", Hash: Hash(secret), Prefix: secret[:9], Agents: []string{"writer"},
		Autonomy: "full", RatePerMinute: 5, Admin: true, CreatedAt: k.CreatedAt}
	if diff := cmp.Diff(want, k); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	if !regexp.MustCompile(`^key_[0-9a-f]{12}$`).MatchString(k.ID) {
		t.Errorf("id %q, want key_ and 12 hex digits", k.ID)
	}
	if k.CreatedAt.Before(before) || k.CreatedAt.Location() != time.UTC {
		t.Errorf("created at %v, want now in UTC (after %v)", k.CreatedAt, before)
	}
	if strings.Contains(fmt.Sprintf("%+v", k), secret) {
		t.Error("the record holds the secret")
	}
	secret2, k2, err := Create(t.Context(), &r, spec)
	if err != nil || secret2 == secret || k2.ID == k.ID {
		t.Errorf("a second key: %v, same secret %v, same id %v", err, secret2 == secret, k2.ID == k.ID)
	}
}

func TestCreateStoreFails(t *testing.T) {
	r := keyRecorder{err: store.ErrExists}
	secret, _, err := Create(t.Context(), &r, store.APIKey{Autonomy: "supervised"})
	if !errors.Is(err, store.ErrExists) || !strings.HasPrefix(err.Error(), "store key: ") || secret != "" {
		t.Errorf("Create = %q, %v; want no key and the store's error, wrapped", secret, err)
	}
}
