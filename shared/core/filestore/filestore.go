// Package filestore is the file port: a tree of files in which agents'
// workspaces live (bootstrap files, MEMORY.md, daily logs, skills, the
// files tools write). Locally it is a directory (adapters/osroot); on AWS a
// prefix of the stack's S3 bucket (adapters/s3). Both pass the suite in
// filestoretest.
package filestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"
)

// Errors the adapters return, wrapped in an *fs.PathError naming the file
// where there is one. Missing files match fs.ErrNotExist and names that are
// not valid fs.ErrInvalid, as in io/fs.
var (
	// ErrConflict is a conditional write whose condition did not hold: the
	// file changed, or exists, or is missing, since it was read.
	ErrConflict = errors.New("the file changed since it was read")
	// ErrNotFile is a read or write of a name that holds a directory or
	// something else that is not a regular file.
	ErrNotFile = errors.New("not a regular file")
)

// Version identifies one content of one file; it changes whenever the
// file is written again with other content. A Version is only compared for
// equality.
type Version string

// The conditions of WriteFile besides a Version read before.
const (
	// Any writes whatever the name holds now.
	Any Version = ""
	// Absent writes only where no file is yet.
	Absent Version = "absent"
)

// Entry describes a file or directory.
type Entry struct {
	// Name is the last element of the name, as in fs.DirEntry.
	Name string
	// Size is a file's length in bytes; 0 for a directory.
	Size int64
	// ModTime is when the file was last written.
	ModTime time.Time
	// Mode holds the type bits: 0 for a regular file, fs.ModeDir for a
	// directory; the local adapter also shows links and other kinds.
	Mode fs.FileMode
	// Version of a regular file's content; empty for anything else.
	Version Version
}

// IsDir reports whether e is a directory.
func (e Entry) IsDir() bool { return e.Mode.IsDir() }

// FS is a tree of files named by slash-separated paths relative to its
// root, as io/fs names them (fs.ValidPath; "." is the root). No name
// reaches outside the root: a name that is not valid fails with
// fs.ErrInvalid and changes nothing. Directories exist as the parents of
// files: writing a file creates them; an adapter may drop a directory
// once it holds nothing (S3 has no directories).
type FS interface {
	// Stat describes the file or directory name.
	Stat(ctx context.Context, name string) (Entry, error)
	// ReadFile returns at most limit bytes from the start of the regular
	// file name, with its Entry (whose Size is the whole file's).
	ReadFile(ctx context.Context, name string, limit int64) ([]byte, Entry, error)
	// ReadDir returns the first limit entries directly under the
	// directory dir, sorted by name. A missing directory other than the
	// root fails with fs.ErrNotExist.
	ReadDir(ctx context.Context, dir string, limit int) ([]Entry, error)
	// Walk calls fn for each regular file under dir, at any depth, in
	// lexical order of their names, which are relative to this FS's root.
	// A missing dir has no files. An error from fn stops the walk and is
	// returned.
	Walk(ctx context.Context, dir string, fn func(name string, e Entry) error) error
	// WriteFile replaces the file name with data, atomically: a reader
	// sees the old content or the new, never a part. It creates the
	// parent directories. The write happens only if the file's current
	// version is ifVersion (Any: whatever it is; Absent: no file yet),
	// else it fails with ErrConflict. It returns the new file's Entry.
	WriteFile(ctx context.Context, name string, data []byte, ifVersion Version) (Entry, error)
	// Remove deletes the regular file name.
	Remove(ctx context.Context, name string) error
	// RemoveAll deletes dir and everything under it; a missing dir is no
	// error. It refuses the root.
	RemoveAll(ctx context.Context, dir string) error
	// Sub returns the tree under dir, which need not exist yet: its names
	// are relative to dir and none reaches outside it.
	Sub(dir string) (FS, error)
}

// maxUpdateTries bounds how often Update retries a write that conflicted.
const maxUpdateTries = 8

// Update reads the regular file name (at most limit bytes; a longer file
// fails), passes its content to change (nil and false when there is no
// file yet), and writes what change returns only if the file did not
// change meanwhile, trying again from the read when it did. This makes
// read-modify-write safe between processes, such as two Lambda instances
// appending to one MEMORY.md. An error from change is returned as is and
// nothing is written.
func Update(ctx context.Context, f FS, name string, limit int64, change func(old []byte, exists bool) ([]byte, error)) (Entry, error) {
	for try := 0; ; try++ {
		old, e, err := f.ReadFile(ctx, name, limit+1)
		exists := err == nil
		switch {
		case errors.Is(err, fs.ErrNotExist):
			e.Version = Absent
		case err != nil:
			return Entry{}, err
		case int64(len(old)) > limit:
			return Entry{}, &fs.PathError{Op: "update", Path: name, Err: fmt.Errorf("the file is over %d bytes", limit)}
		}
		data, err := change(old, exists)
		if err != nil {
			return Entry{}, err
		}
		ne, err := f.WriteFile(ctx, name, data, e.Version)
		if !errors.Is(err, ErrConflict) || try+1 == maxUpdateTries {
			return ne, err
		}
	}
}
