package agent

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/store"
)

// recordTimeout bounds one call of Loop.Recorder: the session's next run
// waits for it.
const recordTimeout = 30 * time.Second

// maxRecordedInputs bounds how many input messages of a run are read for
// its Exchange.
const maxRecordedInputs = 32

// Exchange is one successful run of a durable session: what the user said
// and what the agent answered.
type Exchange struct {
	Agent     string
	SessionID string
	RunID     string
	// Owner is the principal the session belongs to; empty for agent-wide work.
	Owner string
	// Input is the text of the run's user messages, one per line.
	Input string
	// Answer is the agent's final answer, tool-call markup removed.
	Answer string
	// At is when the run started.
	At time.Time
}

// Recorder is told of the exchanges worth remembering: the successful runs
// of durable sessions, once their answer has been sent. The loop does not
// know what it does with them (the local server stores them as
// conversation memories). Record must be idempotent: a finish step retried
// after a crash tells it again.
type Recorder interface {
	Record(ctx context.Context, x Exchange) error
}

// record tells the Recorder about a finished run. Its failures are logged,
// never the run's: the answer has been given.
func (l *Loop) record(ctx context.Context, st RunState, sess store.Session, res Result) {
	if l.Recorder == nil || sess.ID == "" || sess.Ephemeral || strings.HasPrefix(st.SessionID, EphemeralPrefix) ||
		st.Failed() || strings.TrimSpace(res.Content) == "" {
		return
	}
	var inputs []string
	for i := range maxRecordedInputs {
		m, err := l.Store.GetMessage(ctx, st.SessionID, inputKey(st.Seq, i))
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			l.logRecord(st, err)
			return
		}
		if m.Role == chat.User && strings.TrimSpace(m.Content) != "" {
			inputs = append(inputs, m.Content)
		}
	}
	if len(inputs) == 0 {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	x := Exchange{
		Agent: st.Agent, SessionID: st.SessionID, RunID: st.RunID,
		Input: strings.Join(inputs, "\n"), Answer: res.Content, At: st.StartedAt,
	}
	if err := l.Recorder.Record(rctx, x); err != nil {
		l.logRecord(st, err)
	}
}

func (l *Loop) logRecord(st RunState, err error) {
	if l.Log != nil {
		l.Log.Warn("recording the exchange failed", "session_id", st.SessionID, "run_id", st.RunID, "error", scrub.Scrub(err.Error()))
	}
}
