package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"
)

// errNotRegular refuses directories, pipes and devices where a text file
// belongs.
var errNotRegular = errors.New("not a regular file")

// readCapped reads the regular file name inside root, at most limit bytes,
// as valid UTF-8. It reports whether the file was longer than limit. A
// missing file gives an error matching fs.ErrNotExist.
func readCapped(root *os.Root, name string, limit int64) (string, bool, error) {
	fi, err := root.Stat(name)
	if err != nil {
		return "", false, err
	}
	if !fi.Mode().IsRegular() {
		return "", false, errNotRegular
	}
	// O_NONBLOCK keeps a file swapped for a FIFO from blocking the open.
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return "", false, err
	}
	if !fi.Mode().IsRegular() {
		return "", false, errNotRegular
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", false, err
	}
	truncated := int64(len(b)) > limit
	if truncated {
		b = trimPartialRune(b[:limit])
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), truncated, nil
}

// trimPartialRune drops an incomplete UTF-8 sequence cut off at the end.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

// writeAtomic replaces name inside root with data through a temporary file
// in the same directory and a rename, so readers never see half a write.
// The write keeps within wr's limits; shown names the file for the model.
func writeAtomic(root *os.Root, wr *Write, name, shown string, data []byte) error {
	perm := fs.FileMode(0o644)
	var old int64
	if fi, err := root.Stat(name); err == nil {
		if !fi.Mode().IsRegular() {
			return errNotRegular
		}
		perm, old = fi.Mode().Perm(), fi.Size()
	}
	size := int64(len(data))
	if err := wr.Fit(shown, size, size-old); err != nil {
		return err
	}
	if err := WriteAtomic(root, name, data, perm); err != nil {
		wr.Unknown()
		return err
	}
	wr.Grew(size - old)
	return nil
}

// appendText appends text to the regular file name inside root, creating
// it and its directory with header first when it does not exist, and
// starting on a new line. The file may not grow beyond MaxMemoryWrite
// bytes, and the write keeps within wr's limits; a write over a limit is
// refused before anything is created or written. It returns the new size.
func appendText(root *os.Root, wr *Write, name, shown, header, text string) (int64, error) {
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if fi, err := root.Stat(name); err == nil && !fi.Mode().IsRegular() {
		return 0, errNotRegular
	} else if errors.Is(err, fs.ErrNotExist) {
		// A new file: check before creating it.
		if err := fits(wr, name, shown, 0, header+text); err != nil {
			return 0, err
		}
		if dir := filepath.Dir(name); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return 0, err
			}
		}
	} else if err != nil {
		return 0, err
	}
	f, err := root.OpenFile(name, os.O_RDWR|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if !fi.Mode().IsRegular() {
		return 0, errNotRegular
	}
	size := fi.Size()
	if size == 0 {
		text = header + text
	} else {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, size-1); err != nil {
			return 0, err
		}
		if last[0] != '\n' {
			text = "\n" + text
		}
	}
	if err := fits(wr, name, shown, size, text); err != nil {
		return 0, err
	}
	if _, err := f.WriteString(text); err != nil {
		if terr := f.Truncate(size); terr != nil {
			wr.Unknown()
		}
		return 0, err
	}
	wr.Grew(int64(len(text)))
	return size + int64(len(text)), nil
}

// fits checks that appending text to a file of size bytes keeps within
// MaxMemoryWrite and wr's limits.
func fits(wr *Write, name, shown string, size int64, text string) error {
	grow := int64(len(text))
	if size+grow > MaxMemoryWrite {
		return &tooLargeError{name: name, size: size + grow, limit: MaxMemoryWrite}
	}
	return wr.Fit(shown, size+grow, grow)
}

// tooLargeError is a write that would make a file larger than allowed.
type tooLargeError struct {
	name        string
	size, limit int64
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("%s would grow to %d bytes, over the %d KiB limit", e.name, e.size, e.limit>>10)
}
