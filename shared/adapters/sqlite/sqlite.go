// Package sqlite is the embedded store.Store adapter: sessions, history,
// run queues, approvals, API keys and stored responses in one SQLite file,
// through modernc.org/sqlite (pure Go, no cgo). The same file holds agent
// memories: DB.MemoryIndex is the embedded memory.Index.
//
// A DB holds two connection pools on the file. Every write goes through a
// pool of exactly one connection, so writers in this process queue in Go
// instead of spinning on SQLite's lock; reads use a pool of read-only
// connections that run beside the writer thanks to WAL. Transactions begin
// IMMEDIATE and connections wait up to five seconds for a lock, so another
// process writing the same file (the CLI creating a key while the server
// runs) is safe.
package sqlite

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	_ "embed" // the schema's image
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// busyTimeout is how long a connection waits for another one's lock.
const busyTimeout = 5 * time.Second

// DB is a store.Store backed by one SQLite file. It is safe for concurrent
// use.
type DB struct {
	path    string
	created bool    // Open made the database from image
	w       *sql.DB // exactly one connection; every write
	r       *sql.DB // read-only connections
	st      statements
	mem     *MemoryIndex
	hist    histories
}

var _ store.Store = (*DB)(nil)

// Open opens the database at path, creating it (mode 0600, parent
// directories 0700) when missing, and brings its schema up to date.
func Open(path string) (*DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("sqlite: open %q: create directory: %w", abs, err)
	}
	created := false
	if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
		if created, err = create(abs); err != nil {
			return nil, fmt.Errorf("sqlite: open %q: %w", abs, err)
		}
	}
	// SQLite would create the file with 0644; create it first so history
	// and key hashes are readable only by the owner. The -wal and -shm
	// files SQLite creates later copy the main file's mode.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", abs, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", abs, err)
	}

	db := &DB{path: abs}
	pragmas := []string{
		fmt.Sprintf("busy_timeout(%d)", busyTimeout.Milliseconds()),
		"foreign_keys(ON)",
		"synchronous(NORMAL)",
	}
	db.w, err = openDB(dsn(abs, append(pragmas, "journal_mode(WAL)"), url.Values{"_txlock": {"immediate"}}))
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %q: %w", abs, err)
	}
	db.w.SetMaxOpenConns(1)
	db.w.SetMaxIdleConns(1)
	db.w.SetConnMaxLifetime(0)
	db.w.SetConnMaxIdleTime(0)

	// A database just made from image is at the latest migration: its
	// connections open when first used, each parsing the schema.
	if !created {
		if err := migrate(context.Background(), db.w); err != nil {
			db.w.Close()
			return nil, fmt.Errorf("sqlite: open %q: %w", abs, err)
		}
	}

	db.r, err = openDB(dsn(abs, append(pragmas, "query_only(1)"), nil))
	if err != nil {
		db.w.Close()
		return nil, fmt.Errorf("sqlite: open %q: %w", abs, err)
	}
	readers := max(4, runtime.GOMAXPROCS(0))
	db.r.SetMaxOpenConns(readers)
	db.r.SetMaxIdleConns(readers)

	db.st.define(db.w, db.r)
	db.mem = newMemoryIndex(db)
	return db, nil
}

// image is a new database at the latest migration, in WAL mode, gzipped:
// what schema makes, which `go generate` writes (TestSchemaImage holds
// the two equal). A new database is a copy of it, which takes a fraction
// of the time that running schema does (SQLite parses and builds each of
// its tables, indexes and triggers).
//
//go:generate go test -run ^TestSchemaImage$ -update .
//go:embed schema.db.gz
var image []byte

// create makes a new database at abs: image is written under a temporary
// name, synced and linked into place whole. A crash leaves no database or
// a complete one. It reports whether the database at abs is the one it
// made: a database another process linked first wins, and where the file
// system has no links, Open creates the database in place from schema
// instead.
func create(abs string) (bool, error) {
	prefix := "." + filepath.Base(abs) + ".new-"
	removeStale(filepath.Join(filepath.Dir(abs), prefix+"*"))
	tmp, err := os.CreateTemp(filepath.Dir(abs), prefix+"*") // mode 0600
	if err != nil {
		return false, fmt.Errorf("create: %w", err)
	}
	name := tmp.Name()
	defer os.Remove(name)
	err = writeImage(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("create: %w", err)
	}
	if err := os.Link(name, abs); err != nil {
		// Another process's database is there (fs.ErrExist), or the file
		// system has no links: Open goes on with the file in place.
		return false, nil
	}
	if err := syncPath(filepath.Dir(abs)); err != nil {
		return false, fmt.Errorf("create: %w", err)
	}
	return true, nil
}

// writeImage writes image, uncompressed, to f and syncs it.
func writeImage(f *os.File) error {
	zr, err := gzip.NewReader(bytes.NewReader(image))
	if err != nil {
		return fmt.Errorf("schema image: %w", err)
	}
	if _, err := io.Copy(f, zr); err != nil {
		return err
	}
	return f.Sync()
}

// staleAfter is the age after which a database left half built by a
// crash is removed; one being built by another process is younger.
const staleAfter = 10 * time.Minute

// removeStale removes the files matching pattern that are older than
// staleAfter: what a crash during create left behind.
func removeStale(pattern string) {
	names, _ := filepath.Glob(pattern)
	for _, name := range names {
		if fi, err := os.Stat(name); err == nil && time.Since(fi.ModTime()) > staleAfter {
			os.Remove(name)
		}
	}
}

// syncPath syncs the file or directory at name to disk.
func syncPath(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// dsn builds a modernc.org/sqlite data source name for the file at abs.
// The path is a URI so that characters such as '?' or '#' in it survive.
func dsn(abs string, pragmas []string, extra url.Values) string {
	q := url.Values{}
	for k, v := range extra {
		q[k] = v
	}
	q["_pragma"] = pragmas
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

// Path returns the absolute path of the database file.
func (db *DB) Path() string { return db.path }

// Close releases the prepared statements and connections.
func (db *DB) Close() error {
	err := db.st.close()
	if db.mem != nil {
		err = errors.Join(err, db.mem.close())
	}
	if db.r != nil {
		err = errors.Join(err, db.r.Close())
	}
	if db.w != nil {
		err = errors.Join(err, db.w.Close())
	}
	if err != nil {
		return fmt.Errorf("sqlite: close %q: %w", db.path, err)
	}
	return nil
}

// isForeignKeyError reports whether err is a foreign key violation.
func isForeignKeyError(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

// changed runs a write and reports whether it changed a row.
func changed(ctx context.Context, st *stmt, args ...any) (bool, error) {
	res, err := st.ExecContext(ctx, args...)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// changeOne runs a write that must change a row; when it changes none the
// error wraps none (store.ErrNotFound or store.ErrExists).
func changeOne(ctx context.Context, st *stmt, none error, args ...any) error {
	ok, err := changed(ctx, st, args...)
	if err == nil && !ok {
		err = none
	}
	return err
}

// toMillis is how times are stored: Unix milliseconds.
func toMillis(t time.Time) int64 { return t.UnixMilli() }

// fromMillis turns a stored time back into a UTC time.
func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// orNow returns t, or now when t is the zero time.
func orNow(t, now time.Time) time.Time {
	if t.IsZero() {
		return now
	}
	return t
}

// normalize rounds t down to the stored precision, in UTC.
func normalize(t time.Time) time.Time { return fromMillis(toMillis(t)) }
