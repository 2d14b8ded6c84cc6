package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// stmt is a statement prepared on its pool when first used, so that Open
// parses none of them and a command parses only those it runs.
type stmt struct {
	pool  *sql.DB
	query string
	mu    sync.Mutex // held while preparing
	st    atomic.Pointer[sql.Stmt]
}

// define sets the pool and query of s, before its first use.
func (s *stmt) define(pool *sql.DB, query string) { s.pool, s.query = pool, query }

// prepared returns s prepared, preparing it if no use has yet.
func (s *stmt) prepared(ctx context.Context) (*sql.Stmt, error) {
	if st := s.st.Load(); st != nil {
		return st, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.st.Load(); st != nil {
		return st, nil
	}
	st, err := s.pool.PrepareContext(ctx, s.query)
	if err != nil {
		return nil, fmt.Errorf("prepare %q: %w", s.query, err)
	}
	s.st.Store(st)
	return st, nil
}

func (s *stmt) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	st, err := s.prepared(ctx)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (s *stmt) QueryContext(ctx context.Context, args ...any) (*sql.Rows, error) {
	st, err := s.prepared(ctx)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext runs s; when s cannot be prepared, the row carries the
// error of running its query unprepared.
func (s *stmt) QueryRowContext(ctx context.Context, args ...any) *sql.Row {
	st, err := s.prepared(ctx)
	if err != nil {
		return s.pool.QueryRowContext(ctx, s.query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// in returns s for use in tx, which begin prepared it for. One that begin
// did not list is prepared on tx's connection, for tx alone (the pool's
// only writer connection is tx's, so it cannot be prepared on the pool
// now). The queries are constants the storetest suite runs: one that
// fails to prepare is a bug, and panics.
func (s *stmt) in(ctx context.Context, tx *sql.Tx) *sql.Stmt {
	if st := s.st.Load(); st != nil {
		return tx.StmtContext(ctx, st)
	}
	st, err := tx.PrepareContext(ctx, s.query)
	if err != nil {
		panic(fmt.Sprintf("sqlite: prepare %q: %v", s.query, err))
	}
	return st
}

// close releases s if it was prepared.
func (s *stmt) close() error {
	if st := s.st.Swap(nil); st != nil {
		return st.Close()
	}
	return nil
}

// begin prepares the statements a transaction on pool uses, then begins
// it: a statement cannot be prepared on the pool while the transaction
// holds the connection (the writer's only one).
func begin(ctx context.Context, pool *sql.DB, uses ...*stmt) (*sql.Tx, error) {
	for _, s := range uses {
		if _, err := s.prepared(ctx); err != nil {
			return nil, err
		}
	}
	return pool.BeginTx(ctx, nil)
}

// closeAll releases the statements.
func closeAll(list []*stmt) error {
	var err error
	for _, s := range list {
		err = errors.Join(err, s.close())
	}
	return err
}
