package agent

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// maxDraftPiece bounds one stored piece of streamed text, well within a
// DynamoDB item.
const maxDraftPiece = 32 << 10

// DraftWriter is a Replier that stores the text durable runs stream as
// numbered pieces (store.Drafts), at most one piece per Every and one at
// the end of each model reply, so that another process can stream them to
// the client: on AWS the step function thinks, the api function answers.
// Stateless runs are skipped: the process that runs them streams them.
// Approvals and results are not its business (the api function reads them
// from the run).
type DraftWriter struct {
	Store store.Drafts
	Every time.Duration
	Log   *slog.Logger
	// Clock is the time Every is measured by; nil is the wall clock.
	Clock Clock

	mu   sync.Mutex
	runs map[string]*draft
}

// draft is what a run streamed and has not stored yet.
type draft struct {
	next    int
	pending strings.Builder
	stored  time.Time
}

// Delta implements Replier.
func (w *DraftWriter) Delta(st RunState, text string) {
	if strings.HasPrefix(st.SessionID, EphemeralPrefix) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.runs == nil {
		w.runs = map[string]*draft{}
	}
	d := w.runs[st.RunID]
	if d == nil {
		// Another process may have streamed the run's earlier model
		// replies: go on after its pieces.
		stored, err := w.Store.Drafts(context.Background(), st.RunID, 0)
		if err != nil && w.Log != nil {
			w.Log.Warn("read drafts", "run_id", st.RunID, "error", err)
		}
		d = &draft{next: len(stored)}
		w.runs[st.RunID] = d
	}
	d.pending.WriteString(text)
	if w.clock().Sub(d.stored) >= w.Every || d.pending.Len() >= maxDraftPiece {
		w.storeLocked(st, d)
	}
}

func (w *DraftWriter) clock() time.Time {
	if w.Clock != nil {
		return w.Clock.Now()
	}
	return time.Now()
}

// storeLocked stores the pending text as the next piece, in pieces of at
// most maxDraftPiece bytes cut at rune boundaries. A piece that cannot be
// stored stays pending, to be stored with the next.
func (w *DraftWriter) storeLocked(st RunState, d *draft) {
	for d.pending.Len() > 0 {
		text := d.pending.String()
		piece := cutUTF8(text, maxDraftPiece)
		if err := w.Store.AppendDraft(context.Background(), st.RunID, d.next, piece); err != nil {
			if w.Log != nil {
				w.Log.Warn("store draft", "run_id", st.RunID, "piece", d.next, "error", err)
			}
			return
		}
		d.next++
		d.pending.Reset()
		d.pending.WriteString(text[len(piece):])
	}
	d.stored = w.clock()
}

// FlushDeltas stores what the run streamed since its last piece: its model
// reply ended.
func (w *DraftWriter) FlushDeltas(st RunState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d := w.runs[st.RunID]; d != nil {
		w.storeLocked(st, d)
	}
}

func (w *DraftWriter) end(st RunState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if d := w.runs[st.RunID]; d != nil {
		w.storeLocked(st, d)
		delete(w.runs, st.RunID)
	}
}

// Approval implements Replier.
func (w *DraftWriter) Approval(st RunState, _ store.Approval) { w.end(st) }

// Finish implements Replier.
func (w *DraftWriter) Finish(st RunState, _ Result) { w.end(st) }
