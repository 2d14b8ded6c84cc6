package workspace

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/lambdaclaw/lambdaclaw/shared/files"
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
func writeAtomic(root *os.Root, name string, data []byte) error {
	perm := fs.FileMode(0o644)
	if fi, err := root.Stat(name); err == nil {
		if !fi.Mode().IsRegular() {
			return errNotRegular
		}
		perm = fi.Mode().Perm()
	}
	return files.WriteAtomic(root, name, data, perm)
}

// appendText appends text to the regular file name inside root, creating
// it with header first when it does not exist, and starting on a new line.
// The file may not grow beyond limit bytes. It returns the new size.
func appendText(root *os.Root, name, header, text string, limit int64) (int64, error) {
	if fi, err := root.Stat(name); err == nil && !fi.Mode().IsRegular() {
		return 0, errNotRegular
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
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
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
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
	if size+int64(len(text)) > limit {
		return 0, &tooLargeError{name: name, size: size + int64(len(text)), limit: limit}
	}
	if _, err := f.WriteString(text); err != nil {
		return 0, err
	}
	return size + int64(len(text)), nil
}

// tooLargeError is a write that would make a file larger than allowed.
type tooLargeError struct {
	name        string
	size, limit int64
}

func (e *tooLargeError) Error() string {
	return fmt.Sprintf("%s would grow to %d bytes, over the %d KiB limit", e.name, e.size, e.limit>>10)
}
