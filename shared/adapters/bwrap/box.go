//go:build linux

package bwrap

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// The descriptors the box (the sandbox's pid 1) gets from the server,
// after bwrap's seccomp program (3).
const (
	// fdIn carries a tar of what the sandbox starts with: workspace/...,
	// tmp/... and tools/....
	fdIn = 4
	// fdOut carries back, once the command and all it started are gone,
	// a tar of the box's status (statusName), then tmp/... and
	// workspace/... as the command left them.
	fdOut = 5
	// fdStop is closed or written to by the server to stop the command
	// (a limit passed): the box then kills it and still sends fdOut.
	fdStop = 6
)

// The box's directories: each a tmpfs of its own size, filled from fdIn.
var boxDirs = []string{"workspace", "tmp", "tools"}

// statusName is the first entry of fdOut's tar.
const statusName = ".status"

// boxStatus is what the box tells of its disks.
type boxStatus struct {
	// Full names the directories whose tmpfs was (nearly) full when the
	// command ended: a write failed with ENOSPC, or would have.
	Full []string `json:"full,omitempty"`
}

// fullBelow is the free space under which a tmpfs counts as full.
const fullBelow = 64 << 10

// box is the sandbox's first process, pid 1 of its pid namespace (bwrap
// --as-pid-1): it fills /workspace, /tmp and /tools from fdIn, runs the
// command as Init (whose limits it does not share), reaps what the
// command leaves, kills everything when the command ends or the server
// asks, and sends the directories back on fdOut. It exits with the
// command's status (128+n for a signal n).
func box(initArgs []string, stderr io.Writer) error {
	// Not dumpable: the command's processes, of the same uid, cannot
	// reach its descriptors through /proc/1/fd.
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox-init: %w", err)
	}
	for _, fd := range []int{fdIn, fdOut, fdStop} {
		syscall.CloseOnExec(fd)
	}
	// The command may signal its pid 1: it goes on.
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM)
	in, out, stop := os.NewFile(fdIn, "in"), os.NewFile(fdOut, "out"), os.NewFile(fdStop, "stop")
	err := unpack(in)
	in.Close()
	if err != nil {
		return fmt.Errorf("sandbox-init: filling the sandbox: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("sandbox-init: %w", err)
	}
	child, err := os.StartProcess(self, append([]string{helperPath, InitCommand}, initArgs...), &os.ProcAttr{
		Dir: "/workspace", Env: os.Environ(), Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
	})
	if err != nil {
		return fmt.Errorf("sandbox-init: starting the command: %w", err)
	}
	go func() {
		var b [1]byte
		stop.Read(b[:]) // a byte or the end: stop
		unix.Kill(-1, unix.SIGKILL)
	}()
	code := reap(child.Pid)
	st := boxStatus{}
	for _, d := range []string{"tmp", "workspace"} {
		var sf unix.Statfs_t
		if unix.Statfs("/"+d, &sf) == nil && int64(sf.Bavail)*sf.Bsize < fullBelow {
			st.Full = append(st.Full, d)
		}
	}
	if err := pack(out, st); err != nil {
		fmt.Fprintf(stderr, "sandbox-init: sending the sandbox back: %v\n", err)
	}
	out.Close()
	os.Exit(code)
	return nil
}

// reap waits for every process of the sandbox: the command's shell, pid,
// whose status it returns, and whatever was left to pid 1, which it kills
// once the shell ended.
func reap(pid int) int {
	code := -1
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil { // ECHILD: none left
			return code
		}
		if got == pid {
			code = ws.ExitStatus()
			if ws.Signaled() {
				code = 128 + int(ws.Signal())
			}
			unix.Kill(-1, unix.SIGKILL)
		}
	}
}

// unpack extracts r's tar into the box's directories: directories and
// regular files only.
func unpack(r io.Reader) error {
	roots := map[string]*os.Root{}
	for _, d := range boxDirs {
		root, err := os.OpenRoot("/" + d)
		if err != nil {
			return err
		}
		defer root.Close()
		roots[d] = root
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		top, name, _ := strings.Cut(strings.TrimSuffix(h.Name, "/"), "/")
		root := roots[top]
		if root == nil || !fs.ValidPath(name) || name == "." {
			return fmt.Errorf("unexpected entry %q", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
				return err
			}
			f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, fs.FileMode(h.Mode)&0o755|0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected entry %q", h.Name)
		}
	}
}

// pack writes st, then /tmp's directories and regular files and
// /workspace's files, as a tar to w. What is in /workspace but no regular
// file or directory (a link, a pipe) is named by an entry of its kind,
// without content, so that the server can tell it was refused.
func pack(w io.Writer, st boxStatus) error {
	tw := tar.NewWriter(w)
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: statusName, Typeflag: tar.TypeReg, Size: int64(len(data)), Mode: 0o600}); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	for _, d := range []string{"tmp", "workspace"} {
		err := filepath.WalkDir("/"+d, func(p string, e fs.DirEntry, err error) error {
			if err != nil || p == "/"+d {
				return nil // vanished or unreadable: left out
			}
			name := d + p[len("/"+d):]
			switch {
			case e.IsDir():
				return tw.WriteHeader(&tar.Header{Name: name + "/", Typeflag: tar.TypeDir, Mode: 0o755})
			case e.Type().IsRegular():
				return packFile(tw, p, name)
			case d == "workspace":
				return tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeSymlink, Mode: 0o644})
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return tw.Close()
}

// packFile writes the regular file p as name.
func packFile(tw *tar.Writer, p, name string) error {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil // vanished
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Size: fi.Size(), Mode: int64(fi.Mode().Perm())}); err != nil {
		return err
	}
	_, err = io.CopyN(tw, f, fi.Size())
	return err
}
