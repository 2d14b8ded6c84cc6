package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
)

// maxProblems bounds the problems Check reports of a damaged database.
const maxProblems = 10

// Health is what Check found of a database file.
type Health struct {
	// Version is the file's schema version; Want the version this build's
	// migrations bring it to (Open migrates an older file).
	Version, Want int
	// Problems are SQLite's integrity_check findings, at most ten; none
	// for a sound file.
	Problems []string
}

// SchemaVersion is the schema version this build's migrations reach.
func SchemaVersion() int { return len(migrations) }

// Check opens the database at path read-only, without creating or
// migrating it, and runs SQLite's integrity check. A server may be using
// the file meanwhile.
func Check(ctx context.Context, path string) (Health, error) {
	h := Health{Want: len(migrations)}
	abs, err := filepath.Abs(path)
	if err != nil {
		return h, fmt.Errorf("sqlite: check %q: %w", path, err)
	}
	db, err := sql.Open("sqlite", dsn(abs, []string{fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()), "query_only(1)"}, url.Values{"mode": {"ro"}}))
	if err != nil {
		return h, fmt.Errorf("sqlite: check %q: %w", abs, err)
	}
	defer db.Close()
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&h.Version); err != nil {
		return h, fmt.Errorf("sqlite: check %q: read schema version: %w", abs, err)
	}
	rows, err := db.QueryContext(ctx, fmt.Sprintf("PRAGMA integrity_check(%d)", maxProblems))
	if err != nil {
		return h, fmt.Errorf("sqlite: check %q: integrity check: %w", abs, err)
	}
	defer rows.Close()
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return h, fmt.Errorf("sqlite: check %q: integrity check: %w", abs, err)
		}
		if line != "ok" {
			h.Problems = append(h.Problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return h, fmt.Errorf("sqlite: check %q: integrity check: %w", abs, err)
	}
	return h, nil
}
