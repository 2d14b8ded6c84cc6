package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/toolparse"
)

// recordTimeout bounds one call of Loop.Recorder.
const recordTimeout = 30 * time.Second

// maxRecordedInputs bounds how many input messages of a run are read for
// its Exchange.
const maxRecordedInputs = 32

// RecordJob is the kind of the jobs that carry exchanges to the Recorder.
const RecordJob = "record"

// Exchange is one successful run of a durable session: what the user said
// and what the agent answered.
type Exchange struct {
	Agent     string `json:"agent"`
	SessionID string `json:"session_id"`
	// Owner is the principal the session belongs to; empty for agent-wide
	// work.
	Owner string `json:"owner,omitempty"`
	RunID string `json:"run_id"`
	// Input is the text of the run's user messages, one per line.
	Input string `json:"input"`
	// Answer is the agent's final answer, tool-call markup removed.
	Answer string `json:"answer"`
	// At is when the run started.
	At time.Time `json:"at"`
}

// Recorder is told of the exchanges worth remembering: the successful runs
// of durable sessions, once their answer has been sent. The loop does not
// know what it does with them (the local server stores them as
// conversation memories). Record must be idempotent: an exchange whose
// recording was interrupted is told again.
//
// The finish step does not call it: it queues the exchange as a job in the
// same commit that ends the run, and RecordQueued, run off the request
// path by the driver, tells the Recorder, many exchanges at a time when
// runs finish faster than they are recorded. A crash loses no exchange.
type Recorder interface {
	Record(ctx context.Context, xs []Exchange) error
}

// queuedExchange is the payload of a record job: a reference to the
// run's messages in the session's history, which the Recorder's exchange
// is read back from when it is told (RecordQueued), so that the job, written
// in the commit that ends the run, does not carry the exchange's text a
// second time. Input and Answer are carried only when the answer is not a
// message of the history (a run that ended with its client's tool calls),
// and are read as they are from jobs queued by earlier versions.
type queuedExchange struct {
	Exchange
	// Seq is the run's sequence number in its session and AnswerKey the
	// history key of its final answer.
	Seq       int64  `json:"seq,omitempty"`
	AnswerKey string `json:"answer_key,omitempty"`
}

// recordJob returns the job that carries a finished run's exchange to the
// Recorder, and false when there is nothing to remember.
func (l *Loop) recordJob(st RunState, ephemeral bool, res Result, run []store.Message) (store.Job, bool, error) {
	if l.Recorder == nil || ephemeral || st.Failed() || strings.TrimSpace(res.Content) == "" {
		return store.Job{}, false, nil
	}
	if recordedInput(st.Seq, run) == "" {
		return store.Job{}, false, nil
	}
	q := queuedExchange{Exchange: Exchange{Agent: st.Agent, SessionID: st.SessionID, Owner: st.Owner, RunID: st.RunID, At: st.StartedAt}, Seq: st.Seq}
	if len(st.ClientCalls) > 0 {
		q.Input, q.Answer = recordedInput(st.Seq, run), res.Content
	} else {
		q.AnswerKey = assistantKey(st.Seq, st.Iteration)
	}
	payload, err := json.Marshal(q)
	if err != nil {
		return store.Job{}, false, err
	}
	return store.Job{Kind: RecordJob, ID: st.RunID, Payload: payload, CreatedAt: l.now().UTC()}, true, nil
}

// recordedInput is the text of the user messages of the run with sequence
// number seq among run, one per line, at most maxRecordedInputs of them.
func recordedInput(seq int64, run []store.Message) string {
	var inputs []string
	prefix := store.RunPrefix(seq) + "a"
	for _, m := range run {
		if strings.HasPrefix(m.Key, prefix) && m.Role == chat.User && strings.TrimSpace(m.Content) != "" && len(inputs) < maxRecordedInputs {
			inputs = append(inputs, m.Content)
		}
	}
	return strings.Join(inputs, "\n")
}

// exchange reads back the exchange a record job refers to, and false when
// it is gone: the session was reset or deleted since the run finished.
func (l *Loop) exchange(ctx context.Context, q queuedExchange) (Exchange, bool, error) {
	if q.AnswerKey == "" {
		return q.Exchange, true, nil
	}
	run, err := l.Store.RunMessages(ctx, q.SessionID, q.Seq)
	if errors.Is(err, store.ErrNotFound) {
		return Exchange{}, false, nil
	}
	if err != nil {
		return Exchange{}, false, fmt.Errorf("read exchange of run %s: %w", q.RunID, err)
	}
	m, ok := find(run, q.AnswerKey)
	x := q.Exchange
	x.Input, x.Answer = recordedInput(q.Seq, run), toolparse.StripCalls(m.Content)
	if !ok || m.RunID != q.RunID || x.Input == "" || strings.TrimSpace(x.Answer) == "" {
		return Exchange{}, false, nil
	}
	return x, true, nil
}

// RecordQueued tells the Recorder of the exchanges queued by finished runs,
// oldest first and a batch at a time, until none is left or ctx ends, and
// returns how many it told. A batch the Recorder fails on is logged and
// dropped, so that a bad exchange cannot block the others forever; a queue
// the store cannot read is an error.
func (l *Loop) RecordQueued(ctx context.Context) (int, error) {
	if l.Recorder == nil {
		return 0, nil
	}
	n := 0
	for ctx.Err() == nil {
		jobs, err := l.Store.Jobs(ctx, RecordJob, recordBatch)
		if err != nil {
			return n, fmt.Errorf("record queued exchanges: %w", err)
		}
		if len(jobs) == 0 {
			return n, nil
		}
		ids := make([]string, len(jobs))
		xs := make([]Exchange, 0, len(jobs))
		for i, j := range jobs {
			ids[i] = j.ID
			var q queuedExchange
			if err := json.Unmarshal(j.Payload, &q); err != nil {
				l.logRecord(RunState{RunID: j.ID}, fmt.Errorf("decode exchange: %w", err))
				continue
			}
			x, ok, err := l.exchange(ctx, q)
			if err != nil {
				return n, fmt.Errorf("record queued exchanges: %w", err)
			}
			if ok {
				xs = append(xs, x)
			}
		}
		if len(xs) == 0 {
			// Nothing left to tell: the sessions were reset meanwhile.
			if err := l.Store.DeleteJobs(ctx, RecordJob, ids...); err != nil {
				return n, fmt.Errorf("record queued exchanges: %w", err)
			}
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, recordTimeout)
		err = l.Recorder.Record(rctx, xs)
		cancel()
		if ctx.Err() != nil {
			return n, nil // shutting down: the jobs stay queued
		}
		if err != nil {
			l.logRecord(RunState{RunID: ids[0]}, fmt.Errorf("%d exchanges: %w", len(xs), err))
		} else {
			n += len(xs)
		}
		if err := l.Store.DeleteJobs(ctx, RecordJob, ids...); err != nil {
			return n, fmt.Errorf("record queued exchanges: %w", err)
		}
	}
	return n, nil
}

// recordBatch is the most exchanges told to the Recorder at once.
const recordBatch = 32

func (l *Loop) logRecord(st RunState, err error) {
	if l.Log != nil {
		l.Log.Warn("recording the exchange failed", "session_id", st.SessionID, "run_id", st.RunID, "error", scrub.Scrub(err.Error()))
	}
}
