package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/store"
)

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanRun reads the runColumns of one row.
func scanRun(sc scanner) (store.Run, error) {
	var r store.Run
	var status string
	var created, updated int64
	if err := sc.Scan(&r.ID, &r.SessionID, &r.Seq, &status, &r.State, &created, &updated); err != nil {
		return store.Run{}, err
	}
	r.Status = store.RunStatus(status)
	r.CreatedAt, r.UpdatedAt = fromMillis(created), fromMillis(updated)
	return r, nil
}

// EnqueueRun stores r as queued with the session's next Seq and returns
// it. If a run with r.ID exists it returns that run and an error wrapping
// store.ErrExists; if the session does not exist the error wraps
// store.ErrNotFound. A zero CreatedAt is set to now; UpdatedAt starts equal
// to CreatedAt.
func (db *DB) EnqueueRun(ctx context.Context, r store.Run) (store.Run, error) {
	now := time.Now()
	r.Status = store.RunQueued
	r.CreatedAt = normalize(orNow(r.CreatedAt, now))
	r.UpdatedAt = r.CreatedAt

	// BEGIN IMMEDIATE: the seq is read and bumped under the write lock.
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return store.Run{}, fmt.Errorf("sqlite: enqueue run %q: begin: %w", r.ID, err)
	}
	defer tx.Rollback()

	existing, err := scanRun(tx.StmtContext(ctx, db.st.runForEnqueue).QueryRowContext(ctx, r.ID))
	switch {
	case err == nil:
		return existing, fmt.Errorf("sqlite: enqueue run %q: %w", r.ID, store.ErrExists)
	case !errors.Is(err, sql.ErrNoRows):
		return store.Run{}, fmt.Errorf("sqlite: enqueue run %q: %w", r.ID, err)
	}

	err = tx.StmtContext(ctx, db.st.takeSeq).QueryRowContext(ctx, toMillis(now), r.SessionID).Scan(&r.Seq)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Run{}, fmt.Errorf("sqlite: enqueue run %q: session %q: %w", r.ID, r.SessionID, store.ErrNotFound)
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("sqlite: enqueue run %q: next seq: %w", r.ID, err)
	}
	_, err = tx.StmtContext(ctx, db.st.insertRun).ExecContext(ctx,
		r.ID, r.SessionID, r.Seq, string(r.Status), r.State, toMillis(r.CreatedAt), toMillis(r.UpdatedAt))
	if err != nil {
		return store.Run{}, fmt.Errorf("sqlite: enqueue run %q: %w", r.ID, err)
	}
	if err := tx.Commit(); err != nil {
		return store.Run{}, fmt.Errorf("sqlite: enqueue run %q: commit: %w", r.ID, err)
	}
	return r, nil
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

// UpdateRun saves r's Status and State and sets the run's and its
// session's UpdatedAt to now. It is store.ErrNotFound for an unknown run.
func (db *DB) UpdateRun(ctx context.Context, r store.Run) error {
	switch r.Status {
	case store.RunQueued, store.RunRunning, store.RunDone, store.RunFailed:
	default:
		return fmt.Errorf("sqlite: update run %q: unknown status %q", r.ID, r.Status)
	}
	res, err := db.st.updateRun.ExecContext(ctx, string(r.Status), r.State, toMillis(time.Now()), r.ID)
	if err != nil {
		return fmt.Errorf("sqlite: update run %q: %w", r.ID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlite: update run %q: %w", r.ID, err)
	}
	if n == 0 {
		return fmt.Errorf("sqlite: update run %q: %w", r.ID, store.ErrNotFound)
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
