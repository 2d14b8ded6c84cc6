package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// PIIStore is a store that keeps sessions' personal data tokens.
type PIIStore interface {
	store.Store
	store.PIIVault
}

// RunPII is the conformance suite of store.PIIVault: tokens numbered per
// kind and session, one per value, stable across adds; concurrent adds
// never give a token two values; the bound; gone with the session.
func RunPII(t *testing.T, newStore func(t *testing.T) PIIStore) {
	s := newStore(t)
	ctx := t.Context()
	now := time.Now().UTC()
	for _, id := range []string{"pii-a", "pii-b"} {
		must(t, "CreateSession", s.CreateSession(ctx, store.Session{ID: id, Agent: "default", Owner: "key:k1", CreatedAt: now, UpdatedAt: now}))
	}
	if got, err := s.PIITokens(ctx, "pii-a"); err != nil || len(got) != 0 {
		t.Fatalf("PIITokens of a new session = %v, %v; want none", got, err)
	}
	email := func(v string) store.PIIToken { return store.PIIToken{Kind: "EMAIL", Value: v} }
	phone := func(v string) store.PIIToken { return store.PIIToken{Kind: "PHONE", Value: v} }
	got, err := s.AddPII(ctx, "pii-a", []store.PIIToken{email("ana@example.com"), phone("+44 20 7946 0958"), email(`o"brien@example.ie`), email("ana@example.com")})
	must(t, "AddPII", err)
	want := []store.PIIToken{
		{Token: "<EMAIL_1>", Kind: "EMAIL", Value: "ana@example.com"},
		{Token: "<PHONE_1>", Kind: "PHONE", Value: "+44 20 7946 0958"},
		{Token: "<EMAIL_2>", Kind: "EMAIL", Value: `o"brien@example.ie`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("AddPII (-want +got):\n%s", diff)
	}
	got, err = s.AddPII(ctx, "pii-a", []store.PIIToken{email(`o"brien@example.ie`), email("zoë@example.de")})
	must(t, "AddPII again", err)
	want = append(want, store.PIIToken{Token: "<EMAIL_3>", Kind: "EMAIL", Value: "zoë@example.de"})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("AddPII again (-want +got):\n%s", diff)
	}
	if got, err := s.PIITokens(ctx, "pii-a"); err != nil || !cmp.Equal(want, got) {
		t.Errorf("PIITokens = %v, %v; want %v", got, err, want)
	}
	// Another session numbers its own.
	got, err = s.AddPII(ctx, "pii-b", []store.PIIToken{email("zoë@example.de")})
	must(t, "AddPII other session", err)
	if diff := cmp.Diff([]store.PIIToken{{Token: "<EMAIL_1>", Kind: "EMAIL", Value: "zoë@example.de"}}, got); diff != "" {
		t.Errorf("the other session's tokens (-want +got):\n%s", diff)
	}

	// Concurrent adds: every value one token, no token two values.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			_, err := s.AddPII(ctx, "pii-b", []store.PIIToken{phone(fmt.Sprintf("+1 555 010 %04d", i)), phone("+1 555 0100 999")})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, "concurrent AddPII", err)
	}
	all, err := s.PIITokens(ctx, "pii-b")
	must(t, "PIITokens", err)
	tokens, values := map[string]string{}, map[string]string{}
	for _, tk := range all {
		if v, dup := tokens[tk.Token]; dup {
			t.Errorf("token %s has two values: %q and %q", tk.Token, v, tk.Value)
		}
		if tok, dup := values[tk.Value]; dup {
			t.Errorf("value %q has two tokens: %s and %s", tk.Value, tok, tk.Token)
		}
		tokens[tk.Token], values[tk.Value] = tk.Value, tk.Token
	}
	if len(all) != 1+8+1 {
		t.Errorf("%d tokens after the concurrent adds, want 10: %v", len(all), all)
	}

	// The bound: an add past it writes nothing.
	many := make([]store.PIIToken, store.MaxPIITokens-len(want))
	for i := range many {
		many[i] = email(fmt.Sprintf("user%04d@example.com", i))
	}
	_, err = s.AddPII(ctx, "pii-a", many)
	must(t, "AddPII up to the bound", err)
	if _, err := s.AddPII(ctx, "pii-a", []store.PIIToken{email("one-more@example.com")}); !errors.Is(err, store.ErrPIIFull) {
		t.Errorf("AddPII past the bound = %v, want ErrPIIFull", err)
	}
	if got, err := s.PIITokens(ctx, "pii-a"); err != nil || len(got) != store.MaxPIITokens {
		t.Errorf("PIITokens after the refused add: %d, %v; want %d", len(got), err, store.MaxPIITokens)
	}

	// Gone with the session.
	must(t, "DeleteSession", s.DeleteSession(ctx, "pii-a"))
	if got, err := s.PIITokens(ctx, "pii-a"); err != nil || len(got) != 0 {
		t.Errorf("PIITokens after DeleteSession = %d tokens, %v; want none", len(got), err)
	}
	if got, err := s.PIITokens(ctx, "pii-b"); err != nil || len(got) != 10 {
		t.Errorf("the other session's tokens after DeleteSession: %d, %v; want 10", len(got), err)
	}
}
