package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// readCapped reads the regular file name of ws, at most limit bytes, as
// valid UTF-8. It reports whether the file was longer than limit. A
// missing file gives an error matching fs.ErrNotExist.
func readCapped(ctx context.Context, ws filestore.FS, name string, limit int64) (string, bool, error) {
	b, _, err := ws.ReadFile(ctx, name, limit+1)
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

// writeWhole replaces the file name of ws with data, keeping within wr's
// limits; shown names the file for the model.
func writeWhole(ctx context.Context, ws filestore.FS, wr *Write, name, shown string, data []byte) error {
	var old int64
	switch e, err := ws.Stat(ctx, name); {
	case err == nil && e.Mode.Type() != 0:
		return &fs.PathError{Op: "write", Path: name, Err: filestore.ErrNotFile}
	case err == nil:
		old = e.Size
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	size := int64(len(data))
	if err := wr.Fit(shown, size, size-old); err != nil {
		return err
	}
	if _, err := ws.WriteFile(ctx, name, data, filestore.Any); err != nil {
		wr.Unknown()
		return err
	}
	wr.Grew(size - old)
	return nil
}

// appendText appends text to the regular file name of ws, creating it
// with header first when it does not exist, and starting on a new line.
// The file may not grow beyond MaxMemoryWrite bytes, and the write keeps
// within wr's limits; a write over a limit is refused before anything is
// written. It is a filestore.Update: appends racing from two processes
// (two Lambda instances) both land. It returns the new size.
func appendText(ctx context.Context, ws filestore.FS, wr *Write, name, shown, header, text string) (int64, error) {
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	var grow int64
	e, err := filestore.Update(ctx, ws, name, MaxMemoryWrite, func(old []byte, exists bool) ([]byte, error) {
		add := text
		switch {
		case len(old) == 0:
			add = header + text
		case old[len(old)-1] != '\n':
			add = "\n" + text
		}
		if err := fits(wr, name, shown, int64(len(old)), add); err != nil {
			return nil, err
		}
		grow = int64(len(add))
		return append(old, add...), nil
	})
	if err != nil {
		return 0, err
	}
	wr.Grew(grow)
	return e.Size, nil
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

// Open returns the agent's workspace for a tool, checking that it exists.
// Its errors are worded for the model and never name where the workspace
// lives; without says what the agent cannot do when it has none.
func Open(ctx context.Context, env tool.Env, without string) (filestore.FS, error) {
	if env.Workspace == nil {
		return nil, errors.New("this agent has no workspace, so " + without)
	}
	e, err := env.Workspace.Stat(ctx, ".")
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errors.New("the agent workspace does not exist; ask the operator to create it")
	case errors.Is(err, fs.ErrPermission):
		return nil, errors.New("the agent workspace cannot be opened: permission denied; ask the operator to check it")
	case err != nil:
		return nil, errors.New("the agent workspace cannot be opened; ask the operator to check it")
	case !e.IsDir():
		return nil, errors.New("the agent workspace is not a directory; ask the operator to fix it")
	}
	return env.Workspace, nil
}
