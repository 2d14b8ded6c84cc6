package filestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
)

// ContentVersioner is an FS whose Versions follow from the content alone
// (S3's ETag of an object written whole is its MD5): Sync then compares a
// file of the same size by reading one side only.
type ContentVersioner interface {
	// ContentVersion is the Version a file holding data has.
	ContentVersion(data []byte) Version
}

// ChangeKind is what Sync did, or would do, to a file.
type ChangeKind string

// The kinds of Change.
const (
	Added   ChangeKind = "add"
	Updated ChangeKind = "update"
	Deleted ChangeKind = "delete"
	// Skipped is a source entry that is not a regular file or directory
	// (a symbolic link, a device): it is not copied.
	Skipped ChangeKind = "skip"
)

// Change is one file Sync copied, deleted or passed over.
type Change struct {
	Kind ChangeKind
	// Name is the file's name in both trees.
	Name string
	// Size is the source file's size; for Deleted the destination's.
	Size int64
	// Mode is a Skipped entry's type.
	Mode fs.FileMode
}

// SyncOptions bound and steer Sync.
type SyncOptions struct {
	// MaxFileBytes and MaxTotalBytes bound one source file and all of
	// them together; a source over either fails the sync before anything
	// changes. Both must be positive.
	MaxFileBytes, MaxTotalBytes int64
	// MaxEntries bounds the entries of one source directory (default
	// 10,000).
	MaxEntries int
	// DryRun only reports what Sync would change.
	DryRun bool
}

// defaultMaxEntries is SyncOptions.MaxEntries unset.
const defaultMaxEntries = 10_000

// Sync makes dst hold the regular files of src under the same names:
// it writes the files that are missing in dst or differ (by size, then by
// content), then deletes the files dst has and src does not. Entries of
// src that are neither regular files nor directories are passed over and
// reported as Skipped. A file is written only if dst's copy is still the
// one Sync compared (conditional writes: a file changed meanwhile fails
// the sync with ErrConflict). It returns the changes in the order made,
// those made before an error included.
func Sync(ctx context.Context, dst, src FS, opt SyncOptions) ([]Change, error) {
	if opt.MaxFileBytes <= 0 || opt.MaxTotalBytes <= 0 {
		return nil, errors.New("sync: the file and total limits must be positive")
	}
	if opt.MaxEntries <= 0 {
		opt.MaxEntries = defaultMaxEntries
	}
	var files []srcFile
	var skipped []Change
	if err := tree(ctx, src, ".", opt.MaxEntries, &files, &skipped); err != nil {
		return nil, err
	}
	var total int64
	for _, f := range files {
		if f.Size > opt.MaxFileBytes {
			return nil, &fs.PathError{Op: "sync", Path: f.name, Err: fmt.Errorf("the file is %d bytes, over the limit of %d", f.Size, opt.MaxFileBytes)}
		}
		total += f.Size
	}
	if total > opt.MaxTotalBytes {
		return nil, fmt.Errorf("sync: the files are %d bytes together, over the limit of %d", total, opt.MaxTotalBytes)
	}
	have := map[string]Entry{}
	if err := dst.Walk(ctx, ".", func(name string, e Entry) error {
		have[name] = e
		return nil
	}); err != nil {
		return nil, err
	}

	changes := skipped
	for _, f := range files {
		old, exists := have[f.name]
		delete(have, f.name)
		var data []byte
		if exists && old.Size == f.Size {
			same, read, err := equal(ctx, dst, src, f, old, opt.MaxFileBytes)
			if err != nil {
				return changes, err
			}
			if same {
				continue
			}
			data = read
		}
		c := Change{Kind: Added, Name: f.name, Size: f.Size}
		cond := Absent
		if exists {
			c.Kind, cond = Updated, old.Version
		}
		if !opt.DryRun {
			if data == nil {
				var err error
				if data, err = readAll(ctx, src, f.name, opt.MaxFileBytes); err != nil {
					return changes, err
				}
			}
			if _, err := dst.WriteFile(ctx, f.name, data, cond); err != nil {
				return changes, err
			}
			c.Size = int64(len(data))
		}
		changes = append(changes, c)
	}
	for _, name := range slices.Sorted(maps.Keys(have)) {
		if !opt.DryRun {
			if err := dst.Remove(ctx, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return changes, err
			}
		}
		changes = append(changes, Change{Kind: Deleted, Name: name, Size: have[name].Size})
	}
	return changes, nil
}

// srcFile is a regular file of the source.
type srcFile struct {
	name string
	Entry
}

// tree lists the regular files under dir of f, depth first in lexical
// order of their names, and the entries that are neither files nor
// directories.
func tree(ctx context.Context, f FS, dir string, maxEntries int, files *[]srcFile, skipped *[]Change) error {
	es, err := f.ReadDir(ctx, dir, maxEntries+1)
	if errors.Is(err, fs.ErrNotExist) && dir == "." {
		return nil
	}
	if err != nil {
		return err
	}
	if len(es) > maxEntries {
		return &fs.PathError{Op: "sync", Path: dir, Err: fmt.Errorf("over %d entries", maxEntries)}
	}
	for _, e := range es {
		name := path.Join(dir, e.Name)
		switch {
		case e.IsDir():
			if err := tree(ctx, f, name, maxEntries, files, skipped); err != nil {
				return err
			}
		case e.Mode.Type() == 0:
			*files = append(*files, srcFile{name, e})
		default:
			*skipped = append(*skipped, Change{Kind: Skipped, Name: name, Mode: e.Mode.Type()})
		}
	}
	return nil
}

// equal reports whether the file f of src and its copy old in dst, of the
// same size, hold the same bytes, and returns src's content when it read
// it.
func equal(ctx context.Context, dst, src FS, f srcFile, old Entry, limit int64) (bool, []byte, error) {
	if cv, ok := dst.(ContentVersioner); ok {
		data, err := readAll(ctx, src, f.name, limit)
		return err == nil && cv.ContentVersion(data) == old.Version, data, err
	}
	if cv, ok := src.(ContentVersioner); ok {
		data, err := readAll(ctx, dst, f.name, limit)
		return err == nil && cv.ContentVersion(data) == f.Version, nil, err
	}
	a, err := readAll(ctx, src, f.name, limit)
	if err != nil {
		return false, nil, err
	}
	b, err := readAll(ctx, dst, f.name, limit)
	return err == nil && bytes.Equal(a, b), a, err
}

// readAll reads the whole file name, failing when it is over limit.
func readAll(ctx context.Context, f FS, name string, limit int64) ([]byte, error) {
	data, _, err := f.ReadFile(ctx, name, limit+1)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &fs.PathError{Op: "sync", Path: name, Err: fmt.Errorf("the file is over the limit of %d bytes", limit)}
	}
	return data, nil
}
