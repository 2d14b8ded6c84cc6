package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheck(t *testing.T) {
	ctx := context.Background()

	t.Run("sound", func(t *testing.T) {
		path := tempPath(t)
		db, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		// The server keeps the file open while doctor checks it.
		h, err := Check(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(Health{Version: SchemaVersion(), Want: SchemaVersion()}, h); diff != "" {
			t.Errorf("Check (-want +got):\n%s", diff)
		}
	})

	t.Run("missing file is not created", func(t *testing.T) {
		path := tempPath(t)
		if _, err := Check(ctx, path); err == nil {
			t.Error("Check of a missing file succeeded")
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Check created the file: %v", err)
		}
	})

	t.Run("newer schema", func(t *testing.T) {
		path := tempPath(t)
		setVersion(t, path, SchemaVersion()+1)
		h, err := Check(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if h.Version != SchemaVersion()+1 || h.Want != SchemaVersion() {
			t.Errorf("Check = %+v, want version %d of %d", h, SchemaVersion()+1, SchemaVersion())
		}
	})

	t.Run("damaged", func(t *testing.T) {
		path := tempPath(t)
		raw, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path))
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			"CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)",
			"CREATE INDEX t_v ON t (v)",
			"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 2000) INSERT INTO t (v) SELECT 'value ' || i || ' with some padding to fill pages' FROM n",
		} {
			if _, err := raw.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		raw.Close()
		// Overwrite the middle of the file: pages of the table and its index.
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		junk := make([]byte, 8192)
		for i := range junk {
			junk[i] = byte(i*7 + 3)
		}
		if _, err := f.WriteAt(junk, st.Size()/2/4096*4096); err != nil {
			t.Fatal(err)
		}
		f.Close()
		h, err := Check(ctx, path)
		if err == nil && len(h.Problems) == 0 {
			t.Fatalf("Check of a damaged file = %+v, no problem found", h)
		}
		if len(h.Problems) > maxProblems {
			t.Errorf("Check reported %d problems, want at most %d", len(h.Problems), maxProblems)
		}
	})
}

// setVersion creates a database file at path with the schema version v.
func setVersion(t *testing.T, path string, v int) {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+filepath.ToSlash(path))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(fmt.Sprintf("PRAGMA user_version = %d", v)); err != nil {
		t.Fatal(err)
	}
}
