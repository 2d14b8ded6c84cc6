package storetest

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// RunDrafts is the conformance suite of store.Drafts.
func RunDrafts(t *testing.T, newStore func(t *testing.T) store.Drafts) {
	s := newStore(t)
	ctx := t.Context()
	for n, text := range []string{"Hel", "lo ", "wörld 🙂"} {
		must(t, "AppendDraft", s.AppendDraft(ctx, "r1", n, text))
	}
	must(t, "AppendDraft other run", s.AppendDraft(ctx, "r2", 0, "other"))
	// A piece stored again keeps its first text.
	must(t, "AppendDraft again", s.AppendDraft(ctx, "r1", 1, "LO "))
	// A piece after a missing one is not read until the gap is filled.
	must(t, "AppendDraft after a gap", s.AppendDraft(ctx, "r1", 4, "later"))
	for _, tt := range []struct {
		run  string
		from int
		want []string
	}{
		{"r1", 0, []string{"Hel", "lo ", "wörld 🙂"}},
		{"r1", 2, []string{"wörld 🙂"}},
		{"r1", 3, nil},
		{"r1", 9, nil},
		{"r2", 0, []string{"other"}},
		{"none", 0, nil},
	} {
		got, err := s.Drafts(ctx, tt.run, tt.from)
		must(t, "Drafts", err)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Drafts(%s, %d) (-want +got):\n%s", tt.run, tt.from, diff)
		}
	}
	must(t, "AppendDraft filling the gap", s.AppendDraft(ctx, "r1", 3, "and "))
	got, err := s.Drafts(ctx, "r1", 3)
	must(t, "Drafts", err)
	if diff := cmp.Diff([]string{"and ", "later"}, got); diff != "" {
		t.Errorf("after the gap is filled (-want +got):\n%s", diff)
	}
}
