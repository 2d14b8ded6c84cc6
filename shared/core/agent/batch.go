package agent

import (
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// BatchDeltas returns a Replier that passes r the streamed text of a run
// at most once per interval, joined, instead of once per token: for
// channels that pay per message (API Gateway WebSocket posts). Text still
// pending goes out when the interval ends, and before an approval or the
// result.
// clock is the time it batches by; nil is the wall clock.
func BatchDeltas(r Replier, interval time.Duration, clock Clock) Replier {
	if clock == nil {
		clock = wallClock{}
	}
	return &batcher{r: r, interval: interval, clock: clock, runs: map[string]*batch{}}
}

type batcher struct {
	r        Replier
	interval time.Duration
	clock    Clock
	mu       sync.Mutex
	runs     map[string]*batch
}

// batch is a run's text not yet passed on.
type batch struct {
	st   RunState
	text string
	stop func() bool // the pending flush's, nil when none is
	last time.Time
}

func (b *batcher) Delta(st RunState, text string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	p := b.runs[st.RunID]
	if p == nil {
		p = &batch{}
		b.runs[st.RunID] = p
	}
	p.st, p.text = st, p.text+text
	since := b.clock.Now().Sub(p.last)
	if since >= b.interval {
		b.flushLocked(st.RunID)
		return
	}
	if p.stop == nil {
		p.stop = b.clock.AfterFunc(b.interval-since, func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.flushLocked(st.RunID)
		})
	}
}

// flushLocked passes on the run's pending text. Holding mu keeps the
// order of a run's deltas.
func (b *batcher) flushLocked(runID string) {
	p := b.runs[runID]
	if p == nil {
		return
	}
	if p.stop != nil {
		p.stop()
		p.stop = nil
	}
	if p.text != "" {
		b.r.Delta(p.st, p.text)
		p.text = ""
		p.last = b.clock.Now()
	}
}

// FlushDeltas passes on the run's pending text at once: the model's reply
// ended, and the step that streamed it may be the process's last work
// for a while (a Lambda function is frozen between invocations).
func (b *batcher) FlushDeltas(st RunState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked(st.RunID)
}

// end passes on the run's pending text and forgets the run.
func (b *batcher) end(runID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.flushLocked(runID)
	delete(b.runs, runID)
}

func (b *batcher) Approval(st RunState, a store.Approval) {
	b.end(st.RunID)
	b.r.Approval(st, a)
}

func (b *batcher) Finish(st RunState, res Result) {
	b.end(st.RunID)
	b.r.Finish(st, res)
}
