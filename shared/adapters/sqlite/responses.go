package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// CreateResponse stores r unless its id exists; it returns store.ErrExists
// then. The session must exist; if it does not, the error wraps
// store.ErrNotFound. A zero CreatedAt is set to now.
func (db *DB) CreateResponse(ctx context.Context, r store.Response) error {
	created := orNow(r.CreatedAt, time.Now())
	err := changeOne(ctx, &db.st.createResponse, store.ErrExists, r.ID, r.Owner, r.Agent, r.SessionID, r.RunID, r.Seq,
		r.PreviousID, r.Request, toMillis(created))
	if isForeignKeyError(err) {
		return fmt.Errorf("sqlite: create response %q: session %q: %w", r.ID, r.SessionID, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("sqlite: create response %q: %w", r.ID, err)
	}
	return nil
}

// GetResponse returns a response by id, or store.ErrNotFound.
func (db *DB) GetResponse(ctx context.Context, id string) (store.Response, error) {
	var r store.Response
	var created int64
	err := db.st.getResponse.QueryRowContext(ctx, id).Scan(&r.ID, &r.Owner, &r.Agent, &r.SessionID, &r.RunID, &r.Seq,
		&r.PreviousID, &r.Request, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Response{}, fmt.Errorf("sqlite: get response %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Response{}, fmt.Errorf("sqlite: get response %q: %w", id, err)
	}
	r.CreatedAt = fromMillis(created)
	return r, nil
}

// DeleteResponse deletes a response by id; it is store.ErrNotFound when
// there is none.
func (db *DB) DeleteResponse(ctx context.Context, id string) error {
	if err := changeOne(ctx, &db.st.deleteResponse, store.ErrNotFound, id); err != nil {
		return fmt.Errorf("sqlite: delete response %q: %w", id, err)
	}
	return nil
}
