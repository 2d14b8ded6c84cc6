package sqlite

import (
	"bytes"
	"compress/gzip"
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite schema.db.gz, the schema's image, from schema")

// TestSchemaImage holds image, what a new database is a copy of, equal to
// the database schema makes: the same schema, settings and rows. With
// -update (go generate) it writes image from schema first.
func TestSchemaImage(t *testing.T) {
	built := tempPath(t)
	fromSchema(t, built)
	if *update {
		raw, err := os.ReadFile(built)
		if err != nil {
			t.Fatal(err)
		}
		var gz bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		zw.Write(raw)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("schema.db.gz", gz.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		image = gz.Bytes()
	}
	copied := tempPath(t)
	want, got := describeAll(t, open(t, built)), describeAll(t, open(t, copied))
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("a new database differs from what schema makes (-schema +image); run go generate ./shared/adapters/sqlite:\n%s", d)
	}
}

// fromSchema makes a database at path from schema, in WAL mode.
func fromSchema(t *testing.T, path string) {
	t.Helper()
	w, err := openDB(dsn(path, []string{"synchronous(OFF)", "journal_mode(MEMORY)", "foreign_keys(ON)"}, url.Values{"_txlock": {"immediate"}}))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	w.SetMaxOpenConns(1)
	if err := migrate(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec("PRAGMA journal_mode = WAL"); err != nil {
		t.Fatal(err)
	}
}

// describeAll is describeSchema with the database's settings and the rows
// of each of its tables (SQLite's own and virtual tables' included).
func describeAll(t *testing.T, db *DB) []string {
	t.Helper()
	lines := describeSchema(t, db)
	var settings string
	if err := db.r.QueryRow(`SELECT 'page_size ' || (SELECT page_size FROM pragma_page_size) ||
		' auto_vacuum ' || (SELECT auto_vacuum FROM pragma_auto_vacuum) ||
		' encoding ' || (SELECT encoding FROM pragma_encoding) ||
		' application_id ' || (SELECT application_id FROM pragma_application_id) ||
		' journal_mode ' || (SELECT journal_mode FROM pragma_journal_mode)`).Scan(&settings); err != nil {
		t.Fatal(err)
	}
	lines = append(lines, settings)
	rows, err := db.r.Query(`SELECT name FROM pragma_table_list WHERE schema = 'main' AND type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, table := range tables {
		rows, err := db.r.Query(fmt.Sprintf("SELECT * FROM %q", table))
		if err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("%s: %v", table, err)
			}
			lines = append(lines, fmt.Sprintf("row %s %q", table, vals))
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
	}
	slices.Sort(lines)
	return lines
}

// TestOpenNewConnectsNothing: a new database, a copy of image, is at the
// latest migration; Open connects to it neither to migrate it nor to
// read, so that each connection's parse of the schema waits for its first
// use. An existing database is migrated, by the writer.
func TestOpenNewConnectsNothing(t *testing.T) {
	path := tempPath(t)
	db := open(t, path)
	if w, r := db.w.Stats().OpenConnections, db.r.Stats().OpenConnections; w+r != 0 {
		t.Errorf("Open of a new database opened %d writer and %d reader connections, want none", w, r)
	}
	if _, err := db.ListKeys(t.Context()); err != nil {
		t.Fatal(err)
	}
	again := open(t, path)
	if w := again.w.Stats().OpenConnections; w != 1 {
		t.Errorf("Open of an existing database opened %d writer connections, want the one that migrates", w)
	}
}
