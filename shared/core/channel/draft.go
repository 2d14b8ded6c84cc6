package channel

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// Drafter is a Platform that shows a streamed reply as a draft of its own
// (Telegram's sendMessageDraft) rather than as a message edited in place.
// Draft shows text as the draft of the run runID in to; an error that is
// ErrNoDraft says the conversation cannot have such drafts, and the
// engine falls back to an edited message (when the platform is an Editor
// and a Deleter). A native draft is left to expire when the reply is
// sent.
type Drafter interface {
	Draft(ctx context.Context, to, runID, text string) error
}

// ErrNoDraft is what a Drafter's Draft answers where it cannot show
// drafts (an old server, a group).
var ErrNoDraft = errors.New("channel: no drafts in this conversation")

// drafts shows the streamed replies of runs while they are written, at
// most once per interval: as the platform's own draft (Drafter), else as
// a message posted and then edited in place (Editor), which is deleted
// (Deleter) once the final reply is in the outbox.
type drafts struct {
	platform Platform
	interval time.Duration
	log      *slog.Logger

	mu     sync.Mutex
	active map[string]*draft
}

// newDrafts returns the drafts of p, or nil when p can show none.
func newDrafts(p Platform, interval time.Duration, log *slog.Logger) *drafts {
	_, native := p.(Drafter)
	if !native && !editable(p) {
		return nil
	}
	return &drafts{platform: p, interval: interval, log: log, active: map[string]*draft{}}
}

// editable reports whether p can show a draft as a message edited in
// place and deleted at the end.
func editable(p Platform) bool {
	_, e := p.(Editor)
	_, d := p.(Deleter)
	return e && d
}

// draft is the streamed reply of a run while it is written.
type draft struct {
	runID, to string
	stop      chan struct{}

	mu   sync.Mutex
	text strings.Builder
}

// write adds text to the draft of runID in to, starting its loop on the
// first text.
func (ds *drafts) write(runID, to, text string) {
	ds.mu.Lock()
	d := ds.active[runID]
	if d == nil {
		d = &draft{runID: runID, to: to, stop: make(chan struct{})}
		ds.active[runID] = d
		go ds.loop(d)
	}
	ds.mu.Unlock()
	d.mu.Lock()
	if d.text.Len() < 1<<20 {
		d.text.WriteString(text)
	}
	d.mu.Unlock()
}

// stop ends the draft of runID, if any; a draft message is deleted, as
// the final reply replaces it.
func (ds *drafts) stop(runID string) {
	ds.mu.Lock()
	d := ds.active[runID]
	delete(ds.active, runID)
	ds.mu.Unlock()
	if d != nil {
		close(d.stop)
	}
}

// runsTo returns the runs whose drafts are shown in to.
func (ds *drafts) runsTo(to string) []string {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	var runs []string
	for id, d := range ds.active {
		if d.to == to {
			runs = append(runs, id)
		}
	}
	return runs
}

// loop shows d's text each interval until d is stopped.
func (ds *drafts) loop(d *draft) {
	drafter, native := ds.platform.(Drafter)
	var msgID, shown string
	t := time.NewTicker(ds.interval)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			if msgID != "" {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := ds.platform.(Deleter).Delete(ctx, d.to, msgID); err != nil {
					ds.log.Debug("delete draft", "error", err)
				}
				cancel()
			}
			return
		case <-t.C:
		}
		d.mu.Lock()
		text := Cut(d.text.String(), ds.platform.MaxLen())
		d.mu.Unlock()
		if strings.TrimSpace(text) == "" || text == shown {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var err error
		switch {
		case native:
			if err = drafter.Draft(ctx, d.to, d.runID, text); errors.Is(err, ErrNoDraft) {
				native = false
				if !editable(ds.platform) {
					cancel()
					return
				}
				// Show it at once as a message instead.
				msgID, err = ds.platform.Send(ctx, Outgoing{To: d.to, Text: text})
			}
		case msgID == "":
			msgID, err = ds.platform.Send(ctx, Outgoing{To: d.to, Text: text})
		default:
			err = ds.platform.(Editor).Edit(ctx, d.to, msgID, text)
		}
		cancel()
		var pe *Error
		switch {
		case err == nil:
			shown = text
		case errors.As(err, &pe) && pe.RetryAfter > 0:
			sleepOrStop(d.stop, pe.RetryAfter)
		default:
			ds.log.Debug("draft update", "error", err)
		}
	}
}

func sleepOrStop(stop <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-stop:
	case <-t.C:
	}
}
