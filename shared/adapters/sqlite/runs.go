package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanRun reads the runColumns of one row.
func scanRun(sc scanner) (store.Run, error) {
	var r store.Run
	var status string
	var created, updated int64
	if err := sc.Scan(&r.ID, &r.SessionID, &r.Seq, &status, &r.State, &r.Options, &created, &updated); err != nil {
		return store.Run{}, err
	}
	r.Status = store.RunStatus(status)
	r.CreatedAt, r.UpdatedAt = fromMillis(created), fromMillis(updated)
	return r, nil
}

// EnqueueRun creates n.Session unless it exists, stores n.Run as queued
// with the session's next Seq, and writes n.Input, in one transaction. If
// a run with the id exists it returns that run and an error wrapping
// store.ErrExists; if the session belongs to another owner the error wraps
// store.ErrForbidden. A zero CreatedAt is set to now; UpdatedAt starts
// equal to CreatedAt.
func (db *DB) EnqueueRun(ctx context.Context, n store.NewRun) (store.Run, bool, error) {
	now := time.Now()
	r := n.Run
	r.SessionID = n.Session.ID
	r.Status = store.RunQueued
	r.CreatedAt = normalize(orNow(r.CreatedAt, now))
	r.UpdatedAt = r.CreatedAt
	fail := func(err error) (store.Run, bool, error) {
		return store.Run{}, false, fmt.Errorf("sqlite: enqueue run %q: %w", r.ID, err)
	}
	allow, err := encodeList(n.Session.Allowlist)
	if err != nil {
		return fail(err)
	}
	bodies := make([]string, len(n.Input))
	for i, m := range n.Input {
		b, err := json.Marshal(m)
		if err != nil {
			return fail(fmt.Errorf("encode input %d: %w", i, err))
		}
		bodies[i] = string(b)
	}

	// BEGIN IMMEDIATE: the seq is read and bumped under the write lock.
	// The common case, a run for an existing session of its owner, is an
	// update and an insert; the rest is found from what they change.
	tx, err := begin(ctx, db.w, &db.st.takeSeq, &db.st.newSession, &db.st.insertRun, &db.st.appendMessage, &db.st.runForEnqueue)
	if err != nil {
		return fail(fmt.Errorf("begin: %w", err))
	}
	defer tx.Rollback()

	sess := n.Session
	created := false
	err = db.st.takeSeq.in(ctx, tx).QueryRowContext(ctx, toMillis(now), r.SessionID, sess.Owner).Scan(&r.Seq)
	if errors.Is(err, sql.ErrNoRows) {
		// A new session, or another owner's.
		res, err := db.st.newSession.in(ctx, tx).ExecContext(ctx, sess.ID, sess.Agent, sess.Owner, sess.Channel, sess.Ephemeral, allow,
			toMillis(orNow(sess.CreatedAt, now)), toMillis(orNow(sess.UpdatedAt, now)))
		if err != nil {
			return fail(fmt.Errorf("create session: %w", err))
		}
		if n, err := res.RowsAffected(); err != nil {
			return fail(err)
		} else if n == 0 {
			if existing, err := db.runOf(ctx, tx, r.ID); err == nil {
				return existing, false, fmt.Errorf("sqlite: enqueue run %q: %w", r.ID, store.ErrExists)
			}
			return fail(fmt.Errorf("session %q: %w", sess.ID, store.ErrForbidden))
		}
		created, r.Seq = true, 1
	} else if err != nil {
		return fail(fmt.Errorf("next seq: %w", err))
	}
	res, err := db.st.insertRun.in(ctx, tx).ExecContext(ctx,
		r.ID, r.SessionID, r.Seq, string(r.Status), r.State, r.Options, toMillis(r.CreatedAt), toMillis(r.UpdatedAt))
	if err != nil {
		return fail(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fail(err)
	} else if n == 0 {
		// The id is taken: nothing of this enqueue is kept.
		existing, err := db.runOf(ctx, tx, r.ID)
		if err != nil {
			return fail(err)
		}
		return existing, false, fmt.Errorf("sqlite: enqueue run %q: %w", r.ID, store.ErrExists)
	}
	appendStmt := db.st.appendMessage.in(ctx, tx)
	for i, b := range bodies {
		if _, err := appendStmt.ExecContext(ctx, r.SessionID, store.InputKey(r.Seq, i), r.ID, b, toMillis(r.CreatedAt)); err != nil {
			return fail(fmt.Errorf("write input %d: %w", i, err))
		}
	}
	if err := tx.Commit(); err != nil {
		return fail(fmt.Errorf("commit: %w", err))
	}
	return r, created, nil
}

// runOf reads a run within tx.
func (db *DB) runOf(ctx context.Context, tx *sql.Tx, id string) (store.Run, error) {
	return scanRun(db.st.runForEnqueue.in(ctx, tx).QueryRowContext(ctx, id))
}

// GetRun returns a run by id, or store.ErrNotFound.
func (db *DB) GetRun(ctx context.Context, id string) (store.Run, error) {
	r, err := scanRun(db.st.getRun.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Run{}, fmt.Errorf("sqlite: get run %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("sqlite: get run %q: %w", id, err)
	}
	return r, nil
}

// CommitRun applies a step's writes in one transaction: the run's Status
// and State, the messages
// put-if-absent, the pending calls and the jobs. It is store.ErrNotFound
// for an unknown run, store.ErrRunFinished for a run done or failed, and
// store.ErrLeaseLost for any Commit.Lease (no run is leased here), and
// then writes nothing.
func (db *DB) CommitRun(ctx context.Context, c store.Commit) error {
	r := c.Run
	fail := func(err error) error { return fmt.Errorf("sqlite: commit run %q: %w", r.ID, err) }
	switch r.Status {
	case store.RunQueued, store.RunRunning, store.RunDone, store.RunFailed:
	default:
		return fail(fmt.Errorf("unknown status %q", r.Status))
	}
	bodies := make([]string, len(c.Messages))
	for i, m := range c.Messages {
		if m.SessionID != r.SessionID {
			return fail(fmt.Errorf("message %q is for session %q, not the run's %q", m.Key, m.SessionID, r.SessionID))
		}
		b, err := json.Marshal(m.Message)
		if err != nil {
			return fail(fmt.Errorf("encode message %q: %w", m.Key, err))
		}
		bodies[i] = string(b)
	}
	var calls sql.NullString
	if c.Calls != nil {
		b, err := json.Marshal(c.Calls)
		if err != nil {
			return fail(fmt.Errorf("encode calls: %w", err))
		}
		calls = sql.NullString{String: string(b), Valid: true}
	}
	now := time.Now()
	tx, err := begin(ctx, db.w, &db.st.updateRun, &db.st.getStarted, &db.st.setCalls, &db.st.appendMessage, &db.st.putJob)
	if err != nil {
		return fail(fmt.Errorf("begin: %w", err))
	}
	defer tx.Rollback()
	res, err := db.st.updateRun.in(ctx, tx).ExecContext(ctx, string(r.Status), r.State, toMillis(now), r.ID)
	if err != nil {
		return fail(err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fail(err)
	} else if n == 0 {
		return fail(db.missingRun(ctx, tx, r.ID))
	}
	if c.Lease != 0 {
		// The local driver leases no run (one process steps it): no lease
		// holds one, and the rollback undoes the update.
		return fail(store.ErrLeaseLost)
	}
	if c.Calls != nil || c.ClearCalls {
		if _, err := db.st.setCalls.in(ctx, tx).ExecContext(ctx, calls, r.ID); err != nil {
			return fail(fmt.Errorf("pending calls: %w", err))
		}
	}
	for i, m := range c.Messages {
		created := orNow(m.CreatedAt, now)
		if _, err := db.st.appendMessage.in(ctx, tx).ExecContext(ctx, m.SessionID, m.Key, m.RunID, bodies[i], toMillis(created)); err != nil {
			return fail(fmt.Errorf("message %q: %w", m.Key, err))
		}
	}
	for _, j := range c.Jobs {
		if _, err := db.st.putJob.in(ctx, tx).ExecContext(ctx, j.Kind, j.ID, j.Payload, toMillis(orNow(j.CreatedAt, now))); err != nil {
			return fail(fmt.Errorf("job %s/%s: %w", j.Kind, j.ID, err))
		}
	}
	if err := addOutbox(ctx, tx, c.Outbox, now); err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(fmt.Errorf("commit: %w", err))
	}
	return nil
}

// missingRun tells why the update of run id in tx changed no row: the run
// is finished (store.ErrRunFinished) or unknown (store.ErrNotFound).
func (db *DB) missingRun(ctx context.Context, tx *sql.Tx, id string) error {
	var raw sql.NullString
	var status string
	err := db.st.getStarted.in(ctx, tx).QueryRowContext(ctx, id).Scan(&raw, &status)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return store.ErrNotFound
	case err != nil:
		return err
	case store.RunStatus(status).Finished():
		return store.ErrRunFinished
	}
	return fmt.Errorf("run %q changed no row", id)
}

// PendingCalls returns the run's pending tool calls; none when there are
// none, and store.ErrNotFound for an unknown run.
func (db *DB) PendingCalls(ctx context.Context, runID string) ([]chat.ToolCall, error) {
	var raw sql.NullString
	err := db.st.getCalls.QueryRowContext(ctx, runID).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlite: pending calls of run %q: %w", runID, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: pending calls of run %q: %w", runID, err)
	}
	if !raw.Valid {
		return nil, nil
	}
	var calls []chat.ToolCall
	if err := json.Unmarshal([]byte(raw.String), &calls); err != nil {
		return nil, fmt.Errorf("sqlite: pending calls of run %q: decode: %w", runID, err)
	}
	return calls, nil
}

// StartCall records that the run's pending call callID started, in one
// immediate transaction: store.ErrExists if it had, store.ErrNotFound for
// an unknown run.
func (db *DB) StartCall(ctx context.Context, runID, callID string) error {
	fail := func(err error) error { return fmt.Errorf("sqlite: start call %q of run %q: %w", callID, runID, err) }
	tx, err := begin(ctx, db.w, &db.st.getStarted, &db.st.startCall)
	if err != nil {
		return fail(fmt.Errorf("begin: %w", err))
	}
	defer tx.Rollback()
	var raw sql.NullString
	var status string
	err = db.st.getStarted.in(ctx, tx).QueryRowContext(ctx, runID).Scan(&raw, &status)
	if errors.Is(err, sql.ErrNoRows) {
		return fail(store.ErrNotFound)
	}
	if err != nil {
		return fail(err)
	}
	if store.RunStatus(status).Finished() {
		return fail(store.ErrRunFinished)
	}
	if raw.Valid {
		var started []string
		if err := json.Unmarshal([]byte(raw.String), &started); err != nil {
			return fail(fmt.Errorf("decode: %w", err))
		}
		if slices.Contains(started, callID) {
			return fail(store.ErrExists)
		}
	}
	if _, err := db.st.startCall.in(ctx, tx).ExecContext(ctx, callID, runID); err != nil {
		return fail(err)
	}
	if err := tx.Commit(); err != nil {
		return fail(fmt.Errorf("commit: %w", err))
	}
	return nil
}

// Jobs returns up to limit queued jobs of kind, oldest first.
func (db *DB) Jobs(ctx context.Context, kind string, limit int) ([]store.Job, error) {
	rows, err := db.st.jobs.QueryContext(ctx, kind, limit)
	if err != nil {
		return nil, fmt.Errorf("sqlite: jobs %q: %w", kind, err)
	}
	defer rows.Close()
	var out []store.Job
	for rows.Next() {
		var j store.Job
		var created int64
		if err := rows.Scan(&j.Kind, &j.ID, &j.Payload, &created); err != nil {
			return nil, fmt.Errorf("sqlite: jobs %q: %w", kind, err)
		}
		j.CreatedAt = fromMillis(created)
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: jobs %q: %w", kind, err)
	}
	return out, nil
}

// DeleteJobs removes jobs in one statement; missing ones are not an
// error.
func (db *DB) DeleteJobs(ctx context.Context, kind string, ids ...string) error {
	list, err := json.Marshal(ids)
	if err != nil {
		return fmt.Errorf("sqlite: delete jobs %s: %w", kind, err)
	}
	if _, err := db.st.deleteJobs.ExecContext(ctx, kind, string(list)); err != nil {
		return fmt.Errorf("sqlite: delete jobs %s: %w", kind, err)
	}
	return nil
}

// NextRun returns the unfinished run with the lowest Seq in a session, or
// store.ErrNotFound when there is none.
func (db *DB) NextRun(ctx context.Context, sessionID string) (store.Run, error) {
	r, err := scanRun(db.st.nextRun.QueryRowContext(ctx, sessionID))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Run{}, fmt.Errorf("sqlite: next run of %q: %w", sessionID, store.ErrNotFound)
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("sqlite: next run of %q: %w", sessionID, err)
	}
	return r, nil
}

// UnfinishedSessions lists, in id order, the sessions that have queued or
// running runs.
func (db *DB) UnfinishedSessions(ctx context.Context) ([]string, error) {
	rows, err := db.st.unfinished.QueryContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: unfinished sessions: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("sqlite: unfinished sessions: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: unfinished sessions: %w", err)
	}
	return ids, nil
}
