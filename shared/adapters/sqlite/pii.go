package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// PIITokens returns the session's personal data tokens in the order they
// were given.
func (db *DB) PIITokens(ctx context.Context, sessionID string) ([]store.PIIToken, error) {
	toks, err := piiTokens(ctx, db.r, sessionID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: pii tokens of %q: %w", sessionID, err)
	}
	return toks, nil
}

type querier interface {
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

func piiTokens(ctx context.Context, q querier, sessionID string) ([]store.PIIToken, error) {
	rows, err := q.QueryContext(ctx, `SELECT token, kind, value FROM pii_tokens WHERE session_id = ? ORDER BY n`, sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.PIIToken
	for rows.Next() {
		var t store.PIIToken
		if err := rows.Scan(&t.Token, &t.Kind, &t.Value); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// AddPII numbers the values the session has no token for in one
// transaction: SQLite's single writer serializes two adds.
func (db *DB) AddPII(ctx context.Context, sessionID string, values []store.PIIToken) ([]store.PIIToken, error) {
	tx, err := db.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sqlite: add pii tokens: begin: %w", err)
	}
	defer tx.Rollback()
	have, err := piiTokens(ctx, tx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: add pii tokens: %w", err)
	}
	add, err := store.AssignPII(have, values)
	if err != nil {
		return nil, fmt.Errorf("sqlite: add pii tokens: %w", err)
	}
	for i, t := range add {
		if _, err := tx.ExecContext(ctx, `INSERT INTO pii_tokens (session_id, n, token, kind, value) VALUES (?, ?, ?, ?, ?)`,
			sessionID, len(have)+i, t.Token, t.Kind, t.Value); err != nil {
			return nil, fmt.Errorf("sqlite: add pii tokens: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("sqlite: add pii tokens: commit: %w", err)
	}
	return append(have, add...), nil
}
