package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// openWorkspace opens the agent's workspace as an *os.Root. Its errors never
// name the host path of the workspace.
func openWorkspace(env tool.Env) (*os.Root, error) {
	if env.Workspace == "" {
		return nil, errors.New("this agent has no workspace, so file tools are unavailable")
	}
	root, err := os.OpenRoot(env.Workspace)
	if err == nil {
		return root, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("the agent workspace does not exist; ask the operator to create it")
	}
	if fi, serr := os.Stat(env.Workspace); serr == nil && !fi.IsDir() {
		return nil, errors.New("the agent workspace is not a directory; ask the operator to fix it")
	}
	if errors.Is(err, fs.ErrPermission) {
		return nil, errors.New("the agent workspace cannot be opened: permission denied; ask the operator to check it")
	}
	return nil, errors.New("the agent workspace cannot be opened; ask the operator to check it")
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
	return filepath.Clean(p), nil
}

// describe turns an error from an *os.Root operation on name into a message
// for the model. Root errors carry only the relative name they were given,
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
	case errors.Is(err, syscall.ELOOP):
		return fmt.Errorf("cannot %s %q: too many levels of symbolic links", action, name)
	case strings.Contains(inner.Error(), "escapes"):
		return fmt.Errorf("cannot %s %q: it leads outside the workspace (symbolic links may not leave it)", action, name)
	default:
		return fmt.Errorf("cannot %s %q: %v", action, name, inner)
	}
}
