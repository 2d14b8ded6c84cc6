package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// scanApproval reads the approvalColumns of one row.
func scanApproval(sc scanner) (store.Approval, error) {
	var a store.Approval
	var calls, tools, status string
	var created int64
	var resolved sql.NullInt64
	if err := sc.Scan(&a.ID, &a.SessionID, &a.RunID, &a.Kind, &calls, &tools, &a.Prompt, &status,
		&a.Decision, &a.Token, &created, &resolved); err != nil {
		return store.Approval{}, err
	}
	if err := json.Unmarshal([]byte(calls), &a.Calls); err != nil {
		return store.Approval{}, fmt.Errorf("decode calls: %w", err)
	}
	if err := json.Unmarshal([]byte(tools), &a.Tools); err != nil {
		return store.Approval{}, fmt.Errorf("decode tools: %w", err)
	}
	a.Status = store.ApprovalStatus(status)
	a.CreatedAt = fromMillis(created)
	if resolved.Valid {
		t := fromMillis(resolved.Int64)
		a.ResolvedAt = &t
	}
	return a, nil
}

// encodeArray stores a string list as a JSON array, "[]" when empty.
func encodeArray(list []string) (string, error) {
	if list == nil {
		list = []string{}
	}
	b, err := json.Marshal(list)
	return string(b), err
}

// CreateApproval stores a as pending, with no decision, unless its id
// exists; it returns store.ErrExists then. The session must exist; if it
// does not, the error wraps store.ErrNotFound. A zero CreatedAt is set to
// now.
func (db *DB) CreateApproval(ctx context.Context, a store.Approval) error {
	calls, err := encodeArray(a.Calls)
	if err != nil {
		return fmt.Errorf("sqlite: create approval %q: encode calls: %w", a.ID, err)
	}
	tools, err := encodeArray(a.Tools)
	if err != nil {
		return fmt.Errorf("sqlite: create approval %q: encode tools: %w", a.ID, err)
	}
	created := orNow(a.CreatedAt, time.Now())
	err = changeOne(ctx, &db.st.createApproval, store.ErrExists, a.ID, a.SessionID, a.RunID, a.Kind, calls, tools, a.Prompt,
		string(store.ApprovalPending), "", a.Token, toMillis(created), nil)
	if isForeignKeyError(err) {
		return fmt.Errorf("sqlite: create approval %q: session %q: %w", a.ID, a.SessionID, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("sqlite: create approval %q: %w", a.ID, err)
	}
	return nil
}

// GetApproval returns an approval by id, or store.ErrNotFound.
func (db *DB) GetApproval(ctx context.Context, id string) (store.Approval, error) {
	a, err := scanApproval(db.st.getAppr.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Approval{}, fmt.Errorf("sqlite: get approval %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Approval{}, fmt.Errorf("sqlite: get approval %q: %w", id, err)
	}
	return a, nil
}

// PendingApproval returns the session's pending approval, the oldest if
// there were several, or store.ErrNotFound when there is none.
func (db *DB) PendingApproval(ctx context.Context, sessionID string) (store.Approval, error) {
	a, err := scanApproval(db.st.pending.QueryRowContext(ctx, sessionID))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Approval{}, fmt.Errorf("sqlite: pending approval of %q: %w", sessionID, store.ErrNotFound)
	}
	if err != nil {
		return store.Approval{}, fmt.Errorf("sqlite: pending approval of %q: %w", sessionID, err)
	}
	return a, nil
}

// ResolveApproval records the answer to a pending approval at the given
// time (now if zero) and returns the approval as resolved. The update is
// conditional on the approval being pending, in an immediate transaction,
// so of concurrent answers the first wins: the others change nothing and
// get the approval as it is with store.ErrConflict. It is
// store.ErrNotFound for an unknown id.
func (db *DB) ResolveApproval(ctx context.Context, id string, status store.ApprovalStatus, decision string, at time.Time) (store.Approval, error) {
	if status != store.ApprovalApproved && status != store.ApprovalDenied {
		return store.Approval{}, fmt.Errorf("sqlite: resolve approval %q: status %q is not an answer", id, status)
	}
	tx, err := begin(ctx, db.w, &db.st.resolveAppr, &db.st.approvalForRes)
	if err != nil {
		return store.Approval{}, fmt.Errorf("sqlite: resolve approval %q: begin: %w", id, err)
	}
	defer tx.Rollback()

	a, err := scanApproval(db.st.resolveAppr.in(ctx, tx).QueryRowContext(ctx,
		string(status), decision, toMillis(orNow(at, time.Now())), id))
	if err == nil {
		if err := tx.Commit(); err != nil {
			return store.Approval{}, fmt.Errorf("sqlite: resolve approval %q: commit: %w", id, err)
		}
		return a, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return store.Approval{}, fmt.Errorf("sqlite: resolve approval %q: %w", id, err)
	}
	// Nothing pending by that id: tell a missing approval from an
	// answered one.
	a, err = scanApproval(db.st.approvalForRes.in(ctx, tx).QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Approval{}, fmt.Errorf("sqlite: resolve approval %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Approval{}, fmt.Errorf("sqlite: resolve approval %q: %w", id, err)
	}
	return a, fmt.Errorf("sqlite: resolve approval %q: already %s: %w", id, a.Status, store.ErrConflict)
}

// SetApprovalToken saves the task token that resumes the run. It is
// store.ErrNotFound for an unknown id.
func (db *DB) SetApprovalToken(ctx context.Context, id, token string) error {
	if err := changeOne(ctx, &db.st.setApprToken, store.ErrNotFound, token, id); err != nil {
		return fmt.Errorf("sqlite: set approval token %q: %w", id, err)
	}
	return nil
}
