package files

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
)

// openWorkspace returns the agent's workspace. Its errors never name
// where the workspace lives.
func openWorkspace(ctx context.Context, env tool.Env) (filestore.FS, error) {
	return workspace.Open(ctx, env, "file tools are unavailable")
}

// checkPath validates a model-supplied path before it touches the disk and
// returns it cleaned. The *os.Root is the real confinement; these checks
// give clear messages for the obvious cases.
func checkPath(p string) (string, error) {
	switch {
	case p == "":
		return "", errors.New(`"path" is required: a path relative to the workspace, like "notes/plan.md"`)
	case strings.ContainsRune(p, 0):
		return "", errors.New(`"path" contains a NUL byte; use a plain relative path`)
	case filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || filepath.VolumeName(p) != "":
		return "", fmt.Errorf("%q is an absolute path; use a path relative to the workspace", p)
	case !filepath.IsLocal(p):
		return "", fmt.Errorf("%q leads outside the workspace; paths must stay inside it", p)
	}
	return path.Clean(filepath.ToSlash(p)), nil
}

// describe turns an error from the file store about name into a message
// for the model. The store's errors carry only the name they were given,
// so no host path leaks.
func describe(action, name string, err error) error {
	var inner error = err
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		inner = pe.Err
	case errors.As(err, &le):
		inner = le.Err
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("cannot %s %q: no such file or directory", action, name)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("cannot %s %q: permission denied", action, name)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("cannot %s %q: a parent of it is not a directory", action, name)
	case errors.Is(err, syscall.EISDIR):
		return fmt.Errorf("cannot %s %q: it is a directory", action, name)
	case strings.Contains(inner.Error(), "escapes"):
		return fmt.Errorf("cannot %s %q: it leads outside the workspace (symbolic links may not leave it)", action, name)
	case errors.Is(err, filestore.ErrNotFile):
		return fmt.Errorf("cannot %s %q: it is not a regular file", action, name)
	case errors.Is(err, filestore.ErrConflict):
		return fmt.Errorf("cannot %s %q: it kept changing while this write was made; try again", action, name)
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("cannot %s %q: too many levels of symbolic links", action, name)
	default:
		return fmt.Errorf("cannot %s %q: %v", action, name, inner)
	}
}
