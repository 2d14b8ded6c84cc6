//go:build linux

package bwrap

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
)

// page is the unit in which a tmpfs counts what its files take.
const page = 4 << 10

// slack is room a tmpfs gets beyond what its files need (their
// directories, a file grown since it was measured).
const slack = 1 << 20

// maxHeaders bounds what the tar headers of the files a sandbox sends
// back take.
const maxHeaders = 64 << 20

// pages is what n bytes of a file take in a tmpfs.
func pages(n int64) int64 { return (n + page - 1) / page * page }

// baseFile is a workspace file as the sandbox got it.
type baseFile struct {
	version filestore.Version
	size    int64
	sum     [sha256.Size]byte
	exec    bool
}

// fill is what a command's sandbox starts with, and the sizes of its
// directories' tmpfs.
type fill struct {
	ws filestore.FS
	// dir is the workspace's directory, dirs the directories in it: the
	// file port knows only files, and a command sees empty directories
	// too.
	dir  string
	dirs []string
	// execs are the workspace's executable files.
	execs map[string]bool
	// files are the workspace's regular files; used their sizes' sum.
	files []filestore.Entry
	names []string
	used  int64
	// base is filled in as the files are sent.
	base map[string]baseFile
	// tmp is the session's /tmp on the host; tmpFiles its files, by
	// name relative to it ("" for directories).
	tmp   string
	tools map[string][]byte
	// The tmpfs sizes, and the most the workspace may grow by.
	wsSize, tmpSize, toolsSize int64
	room                       int64
}

// plan measures what req's sandbox starts with: the workspace's files
// (their usage, against req.Quota) and the session's /tmp.
func plan(ctx context.Context, dir, tmp string, req sandbox.Request, tools map[string][]byte) (*fill, error) {
	ws := osroot.New(dir)
	f := &fill{ws: ws, dir: dir, tmp: tmp, tools: tools, base: map[string]baseFile{}, execs: map[string]bool{}}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		name := filepath.ToSlash(p[len(dir)+1:])
		switch {
		case e.IsDir():
			f.dirs = append(f.dirs, name)
		case e.Type().IsRegular():
			if fi, err := e.Info(); err == nil && fi.Mode().Perm()&0o100 != 0 {
				f.execs[name] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the workspace: %w", err)
	}
	var wsPages int64
	err = ws.Walk(ctx, ".", func(name string, e filestore.Entry) error {
		f.names = append(f.names, name)
		f.files = append(f.files, e)
		f.used += e.Size
		wsPages += pages(e.Size)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("the workspace: %w", err)
	}
	disk := req.Limits.Disk
	f.room = disk
	if req.Quota > 0 {
		f.room = min(disk, max(req.Quota-f.used, 0))
	}
	f.wsSize = wsPages + f.room + slack
	f.tmpSize = disk + slack
	var toolPages int64
	for _, data := range tools {
		toolPages += pages(int64(len(data)))
	}
	f.toolsSize = toolPages + slack
	return f, nil
}

// send writes the sandbox's starting files to w as a tar (box's unpack
// reads it), recording what it sent of the workspace in f.base.
func (f *fill) send(ctx context.Context, w io.Writer) error {
	tw := tar.NewWriter(w)
	for _, d := range f.dirs {
		if err := tw.WriteHeader(&tar.Header{Name: "workspace/" + d + "/", Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
			return err
		}
	}
	for _, name := range f.names {
		data, e, err := f.ws.ReadFile(ctx, name, f.wsSize)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, filestore.ErrNotFile) {
			continue // gone since it was listed
		}
		if err != nil {
			return fmt.Errorf("the workspace: %w", err)
		}
		f.base[name] = baseFile{version: e.Version, size: int64(len(data)), sum: sha256.Sum256(data), exec: f.execs[name]}
		mode := int64(0o644)
		if f.execs[name] {
			mode = 0o755
		}
		if err := writeEntryMode(tw, "workspace/"+name, data, mode); err != nil {
			return err
		}
	}
	// Another command of the session may be replacing /tmp: what
	// vanishes meanwhile is left out.
	err := filepath.WalkDir(f.tmp, func(p string, e fs.DirEntry, err error) error {
		if err != nil || p == f.tmp {
			return nil
		}
		rel := filepath.ToSlash(p[len(f.tmp)+1:])
		switch {
		case e.IsDir():
			return tw.WriteHeader(&tar.Header{Name: "tmp/" + rel + "/", Typeflag: tar.TypeDir, Mode: 0o755})
		case e.Type().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			return writeEntry(tw, "tmp/"+rel, data)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("the session's /tmp: %w", err)
	}
	for _, name := range slices.Sorted(maps.Keys(f.tools)) {
		if err := writeEntry(tw, "tools/"+name, f.tools[name]); err != nil {
			return err
		}
	}
	return tw.Close()
}

func writeEntry(tw *tar.Writer, name string, data []byte) error {
	return writeEntryMode(tw, name, data, 0o644)
}

func writeEntryMode(tw *tar.Writer, name string, data []byte, mode int64) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Size: int64(len(data)), Mode: mode}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// back is what the sandbox sent back and what became of it.
type back struct {
	// done says the box sent everything: the command ended and its
	// sandbox was synced back.
	done bool
	// full says a directory's tmpfs filled up, or the workspace grew by
	// more than it had room for (so something was not written back).
	full bool
	kept []string
}

// receive reads the box's tar from r: it makes the session's /tmp what
// the command left there and writes back to the workspace what the
// command changed, each file only if the workspace's is still the one
// sent and if it fits in the room left (the disk limit less /tmp, and the
// quota's room, measured again now). Links and other files that are not
// regular are not written back. It reads r to its end whatever happens.
func (f *fill) receive(ctx context.Context, r io.Reader, limits sandbox.Limits, quota int64) (back, error) {
	defer io.Copy(io.Discard, r)
	var out back
	// What the box may send is bounded by its disks, and by the tar's
	// headers: at most maxHeaders of them.
	tr := tar.NewReader(io.LimitReader(r, f.wsSize+f.tmpSize+maxHeaders))
	h, err := tr.Next()
	if errors.Is(err, io.EOF) {
		return out, nil // the box sent nothing: it did not finish
	}
	if err != nil {
		return out, err
	}
	var st boxStatus
	if h.Name != statusName {
		return out, fmt.Errorf("the sandbox sent %q first", h.Name)
	}
	if err := json.NewDecoder(io.LimitReader(tr, 1<<10)).Decode(&st); err != nil {
		return out, fmt.Errorf("the sandbox's status: %w", err)
	}
	out.full = len(st.Full) > 0
	next, err := os.MkdirTemp(filepath.Dir(f.tmp), "tmp-")
	if err != nil {
		return out, err
	}
	defer os.RemoveAll(next)
	tmp, err := os.OpenRoot(next)
	if err != nil {
		return out, err
	}
	defer tmp.Close()
	var tmpUsed int64
	room := f.room
	if quota > 0 {
		used, err := usage(ctx, f.ws)
		if err != nil {
			return out, err
		}
		room = min(room, max(quota-used, 0))
	}
	wsRoot, err := os.OpenRoot(f.dir)
	if err != nil {
		return out, err
	}
	defer wsRoot.Close()
	present := map[string]bool{}
	var grown int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, err
		}
		top, name, _ := strings.Cut(strings.TrimSuffix(h.Name, "/"), "/")
		if !fs.ValidPath(name) || name == "." {
			return out, fmt.Errorf("the sandbox sent %q", h.Name)
		}
		switch {
		case top == "tmp" && h.Typeflag == tar.TypeDir:
			if err := tmp.MkdirAll(name, 0o700); err != nil {
				return out, err
			}
		case top == "tmp" && h.Typeflag == tar.TypeReg:
			tmpUsed += h.Size
			if err := tmp.MkdirAll(path.Dir(name), 0o700); err != nil {
				return out, err
			}
			if err := copyInto(tmp, name, tr); err != nil {
				return out, err
			}
		case top == "workspace" && h.Typeflag == tar.TypeDir:
			present[name] = true
			if err := wsRoot.MkdirAll(name, 0o755); err != nil {
				out.kept = append(out.kept, name+"/")
			}
		case top == "workspace" && h.Typeflag == tar.TypeReg:
			present[name] = true
			b, had := f.base[name]
			if h.Size > max(limits.FileSize, b.size) {
				out.kept = append(out.kept, name) // no command wrote it
				continue
			}
			data, err := io.ReadAll(tr)
			if err != nil {
				return out, err
			}
			exec := h.Mode&0o100 != 0
			if had && b.size == int64(len(data)) && b.sum == sha256.Sum256(data) {
				if exec != b.exec {
					setExec(wsRoot, name, exec)
				}
				continue
			}
			growth := int64(len(data)) - b.size
			if growth > 0 && grown+growth > min(room, limits.Disk-tmpUsed) {
				out.full = true
				out.kept = append(out.kept, name)
				continue
			}
			cond := filestore.Absent
			if had {
				cond = b.version
			}
			if _, err := f.ws.WriteFile(ctx, name, data, cond); err != nil {
				if !errors.Is(err, filestore.ErrConflict) && !errors.Is(err, filestore.ErrNotFile) && !errors.Is(err, fs.ErrInvalid) {
					return out, fmt.Errorf("writing the workspace back: %w", err)
				}
				out.kept = append(out.kept, name)
				continue
			}
			if exec {
				setExec(wsRoot, name, true)
			}
			grown += growth
		case top == "workspace":
			// A link or another kind of file: refused, and what the
			// workspace held at its name stays.
			present[name] = true
			out.kept = append(out.kept, name)
		default:
			return out, fmt.Errorf("the sandbox sent %q", h.Name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(f.base)) {
		if present[name] {
			continue
		}
		e, err := f.ws.Stat(ctx, name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return out, err
		case e.Version != f.base[name].version:
			out.kept = append(out.kept, name)
		default:
			if err := f.ws.Remove(ctx, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return out, err
			}
		}
	}
	// Directories the command removed go if they are empty here too.
	for _, d := range slices.Backward(f.dirs) {
		if !present[d] {
			wsRoot.Remove(d)
		}
	}
	slices.Sort(out.kept)
	if err := swapDir(f.tmp, next); err != nil {
		return out, err
	}
	out.done = true
	return out, nil
}

// setExec makes name of root executable, or not; a failure leaves it.
func setExec(root *os.Root, name string, exec bool) {
	mode := os.FileMode(0o644)
	if exec {
		mode = 0o755
	}
	root.Chmod(name, mode)
}

// copyInto writes r to name of root.
func copyInto(root *os.Root, name string, r io.Reader) error {
	w, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, r)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	return err
}

// swapDir makes next the directory at dir, removing what dir held; of two
// commands of a session ending together, the last one's /tmp stays.
func swapDir(dir, next string) error {
	var err error
	for range 3 {
		var rnd [6]byte
		rand.Read(rnd[:])
		old := dir + ".old-" + hex.EncodeToString(rnd[:])
		if err = os.Rename(dir, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		err = os.Rename(next, dir)
		os.RemoveAll(old)
		if err == nil {
			return nil
		}
	}
	return fmt.Errorf("the session's /tmp: %w", err)
}

// usage is the sum of the sizes of ws's regular files.
func usage(ctx context.Context, ws filestore.FS) (int64, error) {
	var used int64
	err := ws.Walk(ctx, ".", func(_ string, e filestore.Entry) error {
		used += e.Size
		return nil
	})
	return used, err
}
