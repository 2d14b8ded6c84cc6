package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store/memstore"
)

func TestDraftWriter(t *testing.T) {
	db := memstore.New()
	clock := NewManualClock(time.Unix(1000, 0))
	w := &DraftWriter{Store: db, Every: 250 * time.Millisecond, Clock: clock}
	st := RunState{RunID: "r1", SessionID: "s1"}
	w.Delta(st, "He") // the first piece goes at once
	w.Delta(st, "llo")
	clock.Advance(100 * time.Millisecond)
	w.Delta(st, " wor")
	clock.Advance(200 * time.Millisecond)
	w.Delta(st, "ld") // 300 ms after the last piece
	w.Delta(st, "!")
	w.FlushDeltas(st) // the model's reply ended
	w.Delta(RunState{RunID: "e1", SessionID: EphemeralPrefix + "e1"}, "stateless")
	got, _ := db.Drafts(t.Context(), "r1", 0)
	if diff := cmp.Diff([]string{"He", "llo world", "!"}, got); diff != "" {
		t.Errorf("pieces (-want +got):\n%s", diff)
	}
	if got, _ := db.Drafts(t.Context(), "e1", 0); got != nil {
		t.Errorf("a stateless run's drafts were stored: %q", got)
	}

	// Another process (a later step on another Lambda instance) goes on
	// after the pieces stored.
	other := &DraftWriter{Store: db, Every: time.Hour}
	other.Delta(st, "Next reply")
	other.Finish(st, Result{})
	got, _ = db.Drafts(t.Context(), "r1", 3)
	if diff := cmp.Diff([]string{"Next reply"}, got); diff != "" {
		t.Errorf("pieces of the other process (-want +got):\n%s", diff)
	}

	// A long text is stored in pieces that fit an item.
	big := strings.Repeat("é", maxDraftPiece)
	other.Delta(RunState{RunID: "r2", SessionID: "s2"}, big)
	other.Approval(RunState{RunID: "r2", SessionID: "s2"}, store.Approval{})
	got, _ = db.Drafts(t.Context(), "r2", 0)
	if len(got) != 2 || strings.Join(got, "") != big || len(got[0]) > maxDraftPiece {
		t.Errorf("big text stored in %d pieces of %d bytes", len(got), len(got[0]))
	}
}
