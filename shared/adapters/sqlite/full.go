package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"syscall"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// A full disk fails a write with SQLITE_FULL ("database or disk is full",
// also the answer at the database's max_page_count), or, when SQLite
// cannot grow the WAL index, SQLITE_IOERR_SHMSIZE. Every connection is
// wrapped (fullConnector) so that such an error, from whichever statement
// or commit, is also store.ErrStorageFull, and the callers of every
// method tell a full disk from a fault without knowing SQLite.

// openDB opens a pool on the data source name dsn whose errors for a full
// disk are store.ErrStorageFull.
func openDB(dsn string) (*sql.DB, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(fullConnector{c}), nil
}

// fullError is an error of SQLite's for a full disk: it is both.
type fullError struct{ err error }

func (e fullError) Error() string   { return e.err.Error() }
func (e fullError) Unwrap() []error { return []error{e.err, store.ErrStorageFull} }

// isFull reports whether err says the disk or the database is full.
func isFull(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code()&0xff == sqlite3.SQLITE_FULL || se.Code() == sqlite3.SQLITE_IOERR_SHMSIZE
	}
	return errors.Is(err, syscall.ENOSPC)
}

// full marks err as store.ErrStorageFull when it says so.
func full(err error) error {
	if err == nil || errors.Is(err, store.ErrStorageFull) || !isFull(err) {
		return err
	}
	return fullError{err}
}

// fullConnector wraps the connections of a driver.Connector.
type fullConnector struct{ driver.Connector }

func (c fullConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, full(err)
	}
	return newFullConn(conn)
}

// innerConn is what database/sql uses of a modernc.org/sqlite connection.
type innerConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// fullConn is a connection whose errors for a full disk are
// store.ErrStorageFull.
type fullConn struct{ c innerConn }

func newFullConn(conn driver.Conn) (driver.Conn, error) {
	c, ok := conn.(innerConn)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("sqlite: the driver's connection %T lacks an interface database/sql uses", conn)
	}
	return fullConn{c}, nil
}

func (c fullConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c fullConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	s, err := c.c.PrepareContext(ctx, query)
	if err != nil {
		return nil, full(err)
	}
	inner, ok := s.(innerStmt)
	if !ok {
		s.Close()
		return nil, fmt.Errorf("sqlite: the driver's statement %T lacks an interface database/sql uses", s)
	}
	return fullStmt{inner}, nil
}

func (c fullConn) Close() error { return c.c.Close() }

func (c fullConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c fullConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	t, err := c.c.BeginTx(ctx, opts)
	if err != nil {
		return nil, full(err)
	}
	return fullTx{t}, nil
}

func (c fullConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	r, err := c.c.ExecContext(ctx, query, args)
	return r, full(err)
}

func (c fullConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	r, err := c.c.QueryContext(ctx, query, args)
	return r, full(err)
}

func (c fullConn) Ping(ctx context.Context) error         { return c.c.Ping(ctx) }
func (c fullConn) ResetSession(ctx context.Context) error { return c.c.ResetSession(ctx) }
func (c fullConn) IsValid() bool                          { return c.c.IsValid() }

// fullTx is a transaction whose commit's error for a full disk is
// store.ErrStorageFull.
type fullTx struct{ t driver.Tx }

func (t fullTx) Commit() error   { return full(t.t.Commit()) }
func (t fullTx) Rollback() error { return t.t.Rollback() }

// innerStmt is what database/sql uses of a modernc.org/sqlite statement.
type innerStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// fullStmt is a prepared statement whose errors for a full disk are
// store.ErrStorageFull.
type fullStmt struct{ s innerStmt }

func (s fullStmt) Close() error  { return s.s.Close() }
func (s fullStmt) NumInput() int { return s.s.NumInput() }

func (s fullStmt) Exec(args []driver.Value) (driver.Result, error) {
	r, err := s.s.Exec(args)
	return r, full(err)
}

func (s fullStmt) Query(args []driver.Value) (driver.Rows, error) {
	r, err := s.s.Query(args)
	return r, full(err)
}

func (s fullStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	r, err := s.s.ExecContext(ctx, args)
	return r, full(err)
}

func (s fullStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	r, err := s.s.QueryContext(ctx, args)
	return r, full(err)
}
