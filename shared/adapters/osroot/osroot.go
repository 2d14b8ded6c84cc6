// Package osroot is the local adapter of the file port (filestore.FS): a
// directory of the disk, read and written through an *os.Root so that no
// name, and no symbolic link met inside it, reaches outside the directory.
package osroot

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
)

// maxLinks bounds how many symbolic links WriteFile follows to the file
// it replaces.
const maxLinks = 16

// readBatch is how many directory entries are read at a time.
const readBatch = 256

// FS is a directory as a filestore.FS. Each operation opens the directory
// anew, so a directory deleted and made again while the FS is in use is
// seen as it is now. Writes create the directory when it is missing.
//
// Symbolic links inside the directory are followed while they stay inside
// it (as a whole file is replaced through the link it is named by); a link
// leading out is an error. The directory itself is named by its path, so
// the operator may make it a link, and Sub opens its sub-directory by
// path too: links between the FS's root and a sub-tree are the operator's
// and are followed.
//
// Conditional writes (filestore.Version) hold within a process: writes of
// one file go one at a time. A Version is the file's inode, size and
// modification time, so a file replaced by a write (a new inode) has a new
// Version even when its size and time did not change.
type FS struct {
	dir string
}

var _ filestore.FS = (*FS)(nil)

// New returns the directory dir as an FS. dir need not exist yet.
func New(dir string) *FS {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &FS{dir: dir}
}

// Dir returns the directory of the disk the FS is.
func (f *FS) Dir() string { return f.dir }

// locks serialize the writes of one file within the process: a write
// holds the stripe its file's path hashes to.
var (
	locks    [64]sync.Mutex
	lockSeed = maphash.MakeSeed()
)

func lockFile(key string) func() {
	m := &locks[maphash.String(lockSeed, key)%uint64(len(locks))]
	m.Lock()
	return m.Unlock
}

// check refuses a name that is not valid in the port.
func check(op, name string) error {
	if !fs.ValidPath(name) {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return nil
}

// open opens the FS's directory; create makes it first when missing. Its
// errors name the file of the operation, never the host path.
func (f *FS) open(op, name string, create bool) (*os.Root, error) {
	r, err := os.OpenRoot(f.dir)
	if create && errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(f.dir, 0o755); err == nil {
			r, err = os.OpenRoot(f.dir)
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: name, Err: bare(err)}
	}
	return r, nil
}

// bare is the cause of an *fs.PathError or *os.LinkError, which name a
// path.
func bare(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		return pe.Err
	case errors.As(err, &le):
		return le.Err
	}
	return err
}

// fail wraps err, from an operation on name, in an *fs.PathError naming
// name as the caller gave it.
func fail(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: name, Err: bare(err)}
}

// outside is err, the failure to follow name in r, as errEscapes when name
// is a link that cannot be followed inside the directory (it leads out of
// it).
func outside(r *os.Root, name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if fi, lerr := r.Lstat(name); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return errEscapes
	}
	return err
}

// entry describes fi, found at name.
func entry(name string, fi fs.FileInfo) filestore.Entry {
	e := filestore.Entry{Name: path.Base(name), ModTime: fi.ModTime(), Mode: fi.Mode().Type()}
	if fi.Mode().IsRegular() {
		e.Size = fi.Size()
		e.Version = filestore.Version(fmt.Sprintf("%x-%x-%x", inode(fi), fi.Size(), fi.ModTime().UnixNano()))
	}
	return e
}

// Stat implements filestore.FS.
func (f *FS) Stat(ctx context.Context, name string) (filestore.Entry, error) {
	if err := check("stat", name); err != nil {
		return filestore.Entry{}, err
	}
	if name == "." {
		fi, err := os.Stat(f.dir)
		if err != nil {
			return filestore.Entry{}, fail("stat", name, err)
		}
		return entry(name, fi), nil
	}
	r, err := f.open("stat", name, false)
	if err != nil {
		return filestore.Entry{}, err
	}
	defer r.Close()
	fi, err := r.Stat(name)
	if err != nil {
		return filestore.Entry{}, fail("stat", name, err)
	}
	return entry(name, fi), nil
}

// ReadFile implements filestore.FS. It opens a file without blocking, so
// a named pipe put in a file's place is refused, not waited on.
func (f *FS) ReadFile(ctx context.Context, name string, limit int64) ([]byte, filestore.Entry, error) {
	if err := check("read", name); err != nil {
		return nil, filestore.Entry{}, err
	}
	r, err := f.open("read", name, false)
	if err != nil {
		return nil, filestore.Entry{}, err
	}
	defer r.Close()
	fi, err := r.Stat(name)
	if err != nil {
		return nil, filestore.Entry{}, fail("read", name, outside(r, name, err))
	}
	if !fi.Mode().IsRegular() {
		return nil, entry(name, fi), fail("read", name, filestore.ErrNotFile)
	}
	file, err := r.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, filestore.Entry{}, fail("read", name, err)
	}
	defer file.Close()
	if fi, err = file.Stat(); err != nil {
		return nil, filestore.Entry{}, fail("read", name, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, entry(name, fi), fail("read", name, filestore.ErrNotFile)
	}
	data, err := io.ReadAll(io.LimitReader(file, max(limit, 0)))
	if err != nil {
		return nil, filestore.Entry{}, fail("read", name, err)
	}
	return data, entry(name, fi), nil
}

// ReadDir implements filestore.FS. Entries show what they are, links and
// other kinds included, without following links; a directory larger than
// limit is read in batches, keeping no more than about twice limit
// entries.
func (f *FS) ReadDir(ctx context.Context, dir string, limit int) ([]filestore.Entry, error) {
	if err := check("readdir", dir); err != nil {
		return nil, err
	}
	r, err := f.open("readdir", dir, false)
	if err != nil {
		if dir == "." && errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	defer r.Close()
	des, err := readDir(r, dir, limit)
	if err != nil {
		return nil, fail("readdir", dir, err)
	}
	out := make([]filestore.Entry, 0, len(des))
	for _, d := range des {
		fi, err := d.Info()
		if err != nil {
			continue // vanished
		}
		out = append(out, entry(d.Name(), fi))
	}
	return out, nil
}

// readDir returns the first limit entries of dir inside r, sorted by name.
func readDir(r *os.Root, dir string, limit int) ([]fs.DirEntry, error) {
	if limit <= 0 {
		return nil, nil
	}
	d, err := r.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	fi, err := d.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, syscall.ENOTDIR
	}
	byName := func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) }
	var kept []fs.DirEntry
	for {
		batch, err := d.ReadDir(readBatch)
		kept = append(kept, batch...)
		if len(kept) > 2*limit {
			slices.SortFunc(kept, byName)
			kept = slices.Clip(kept[:limit])
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(kept, byName)
	return kept[:min(limit, len(kept))], nil
}

// Walk implements filestore.FS. It does not follow symbolic links, and
// leaves out what vanishes or cannot be read during the walk.
func (f *FS) Walk(ctx context.Context, dir string, fn func(name string, e filestore.Entry) error) error {
	if err := check("walk", dir); err != nil {
		return err
	}
	r, err := f.open("walk", dir, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer r.Close()
	fi, err := r.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || (err == nil && !fi.IsDir()) {
		return nil
	}
	if err != nil {
		return fail("walk", dir, err)
	}
	return walk(ctx, r, dir, fn)
}

// walk calls fn for the regular files under dir, in lexical order of
// their whole names: a directory's entries are ordered as if each
// directory's name ended in "/".
func walk(ctx context.Context, r *os.Root, dir string, fn func(string, filestore.Entry) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d, err := r.Open(dir)
	if err != nil {
		return nil // vanished or unreadable
	}
	des, err := d.ReadDir(-1)
	d.Close()
	if err != nil && len(des) == 0 {
		return nil
	}
	key := func(e fs.DirEntry) string {
		if e.IsDir() {
			return e.Name() + "/"
		}
		return e.Name()
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(key(a), key(b)) })
	for _, e := range des {
		name := e.Name()
		if dir != "." {
			name = dir + "/" + name
		}
		switch {
		case e.IsDir():
			if err := walk(ctx, r, name, fn); err != nil {
				return err
			}
		case e.Type().IsRegular():
			fi, err := e.Info()
			if err != nil {
				continue
			}
			if err := fn(name, entry(name, fi)); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteFile implements filestore.FS. A name that is a symbolic link
// inside the FS replaces the file the link leads to, keeping the link; a
// replaced file keeps its permissions. The data goes to a temporary file
// in the same directory, synced and renamed over the name.
func (f *FS) WriteFile(ctx context.Context, name string, data []byte, ifVersion filestore.Version) (filestore.Entry, error) {
	if err := check("write", name); err != nil {
		return filestore.Entry{}, err
	}
	if name == "." {
		return filestore.Entry{}, fail("write", name, filestore.ErrNotFile)
	}
	r, err := f.open("write", name, true)
	if err != nil {
		return filestore.Entry{}, err
	}
	defer r.Close()
	target, err := resolveLinks(r, name)
	if err != nil {
		return filestore.Entry{}, fail("write", name, err)
	}
	defer lockFile(filepath.Join(f.dir, target))()

	perm := fs.FileMode(0o644)
	current := filestore.Absent
	switch fi, err := r.Stat(target); {
	case err == nil && !fi.Mode().IsRegular():
		return filestore.Entry{}, fail("write", name, filestore.ErrNotFile)
	case err == nil:
		perm, current = fi.Mode().Perm(), entry(target, fi).Version
	case !errors.Is(err, fs.ErrNotExist):
		return filestore.Entry{}, fail("write", name, err)
	}
	if ifVersion != filestore.Any && ifVersion != current {
		return filestore.Entry{}, fail("write", name, filestore.ErrConflict)
	}
	if dir := path.Dir(target); dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return filestore.Entry{}, fail("write", name, err)
		}
	}
	if err := writeAtomic(r, target, data, perm); err != nil {
		return filestore.Entry{}, fail("write", name, err)
	}
	fi, err := r.Stat(target)
	if err != nil {
		return filestore.Entry{}, fail("write", name, err)
	}
	e := entry(target, fi)
	e.Name = path.Base(name)
	return e, nil
}

// resolveLinks follows the symbolic links at the last element of name
// while they stay inside r, and returns the name they lead to.
func resolveLinks(r *os.Root, name string) (string, error) {
	for range maxLinks {
		fi, err := r.Lstat(name)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return name, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return name, nil
		}
		target, err := r.Readlink(name)
		if err != nil {
			return "", err
		}
		next := path.Join(path.Dir(name), filepath.ToSlash(target))
		if filepath.IsAbs(target) || !filepath.IsLocal(next) {
			return "", errEscapes
		}
		name = next
	}
	return "", syscall.ELOOP
}

// errEscapes is a link leading out of the FS; its text is os.Root's. It
// matches filestore.ErrNotFile: to the FS, such a link is no regular file.
var errEscapes error = escapeError{}

type escapeError struct{}

func (escapeError) Error() string        { return "path escapes from parent" }
func (escapeError) Is(target error) bool { return target == filestore.ErrNotFile }

// writeAtomic replaces name inside r with data through a temporary file
// in the same directory, synced, and a rename.
func writeAtomic(r *os.Root, name string, data []byte, perm fs.FileMode) error {
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return fmt.Errorf("make a temporary name: %w", err)
	}
	tmp := path.Join(path.Dir(name), "."+path.Base(name)+".tmp-"+hex.EncodeToString(rnd[:]))
	file, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	_, err = file.Write(data)
	if err == nil {
		err = file.Sync()
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.Rename(tmp, name)
	}
	if err != nil {
		_ = r.Remove(tmp)
	}
	return err
}

// Remove implements filestore.FS. A symbolic link is removed itself,
// never what it leads to; a directory is refused.
func (f *FS) Remove(ctx context.Context, name string) error {
	if err := check("remove", name); err != nil {
		return err
	}
	r, err := f.open("remove", name, false)
	if err != nil {
		return err
	}
	defer r.Close()
	defer lockFile(filepath.Join(f.dir, name))()
	fi, err := r.Lstat(name)
	if err != nil {
		return fail("remove", name, err)
	}
	if fi.IsDir() {
		return fail("remove", name, filestore.ErrNotFile)
	}
	if err := r.Remove(name); err != nil {
		return fail("remove", name, err)
	}
	return nil
}

// RemoveAll implements filestore.FS. A symbolic link is removed itself,
// never what it leads to.
func (f *FS) RemoveAll(ctx context.Context, dir string) error {
	if err := check("removeall", dir); err != nil {
		return err
	}
	if dir == "." {
		return fail("removeall", dir, errors.New("the root cannot be removed"))
	}
	r, err := f.open("removeall", dir, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer r.Close()
	if err := r.RemoveAll(dir); err != nil {
		return fail("removeall", dir, err)
	}
	return nil
}

// Sub implements filestore.FS.
func (f *FS) Sub(dir string) (filestore.FS, error) {
	if err := check("sub", dir); err != nil {
		return nil, err
	}
	if dir == "." {
		return f, nil
	}
	return &FS{dir: filepath.Join(f.dir, filepath.FromSlash(dir))}, nil
}

// Mkdir makes the directory dir and its parents, for the empty
// directories a workspace starts with (S3 has none: the port does not
// need them).
func (f *FS) Mkdir(ctx context.Context, dir string) error {
	if err := check("mkdir", dir); err != nil {
		return err
	}
	r, err := f.open("mkdir", dir, true)
	if err != nil {
		return err
	}
	defer r.Close()
	if dir == "." {
		return nil
	}
	if err := r.MkdirAll(dir, 0o755); err != nil {
		return fail("mkdir", dir, err)
	}
	return nil
}
