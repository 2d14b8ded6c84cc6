// Package workspace manages agent workspaces (seed 004, "Agent
// Workspaces"): agents/<name>/ of a home file store (filestore.FS: the
// data directory locally, the stack's bucket on AWS) holding the bootstrap
// files IDENTITY.md, SOUL.md, USER.md, TOOLS.md, AGENTS.md, BOOTSTRAP.md and
// MEMORY.md, daily logs in memory/YYYY-MM-DD.md and skills in skills/.
//
// It creates workspaces from default templates, assembles the files into
// the system messages sent before every model call, and provides the
// workspace_memory tool with which an agent keeps its own memory.
package workspace

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
)

// Names inside a workspace.
const (
	MemoryFile    = "MEMORY.md"
	BootstrapFile = "BOOTSTRAP.md"
	// DailyDir holds the daily logs, memory/YYYY-MM-DD.md.
	DailyDir = "memory"
	// SkillsDir holds one directory per skill.
	SkillsDir = "skills"
)

// promptOrder is the seed's system prompt order: MEMORY last, closest to
// the conversation.
var promptOrder = []string{"IDENTITY.md", "SOUL.md", "USER.md", "TOOLS.md", "AGENTS.md", BootstrapFile, MemoryFile}

// Files returns the bootstrap file names in system prompt order.
func Files() []string { return append([]string(nil), promptOrder...) }

//go:embed templates/*.md
var templates embed.FS

// templated are the files Create writes into every workspace, new or
// existing. BOOTSTRAP.md is not among them: Create writes it only into a
// new workspace, since the agent deletes it when its first-run ritual is
// done and it must not come back.
var templated = []string{"IDENTITY.md", "SOUL.md", "USER.md", "TOOLS.md", "AGENTS.md", MemoryFile}

// ValidName reports whether name can name an agent: 1 to 64 lowercase
// letters, digits, '-' or '_', starting with a letter or digit.
func ValidName(name string) error {
	if name == "" {
		return errors.New("agent name is empty")
	}
	if len(name) > 64 {
		return fmt.Errorf("agent name %q is longer than 64 characters", name)
	}
	for i, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '-' || c == '_') && i > 0:
		default:
			return fmt.Errorf("agent name %q is invalid: use lowercase letters, digits, '-' and '_', starting with a letter or digit", name)
		}
	}
	return nil
}

// Dir returns the workspace directory of agent name under the home
// directory home. It does not validate name; callers check it with
// ValidName first.
func Dir(home, name string) string { return filepath.Join(home, AgentsDir, name) }

// AgentsDir holds the workspaces in a home: agents/<name>/.
const AgentsDir = "agents"

// Path returns the name of agent name's workspace in a home file store.
func Path(name string) string { return AgentsDir + "/" + name }

// Of returns the workspace of agent name in the home file store home.
func Of(home filestore.FS, name string) (filestore.FS, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	return home.Sub(Path(name))
}

// Create makes the workspace of agent name in home with the default
// templates (and, where the store has directories, empty memory/ and
// skills/ directories), and reports whether the workspace was new. A new workspace also gets BOOTSTRAP.md, the first-run
// discovery ritual, which the agent deletes when it is done
// (workspace_memory, action complete_bootstrap). Create never overwrites a
// file, even when another process creates it at the same time: on an
// existing workspace it only adds the templates and directories that are
// missing, never BOOTSTRAP.md.
func Create(ctx context.Context, home filestore.FS, name string) (created bool, err error) {
	if home == nil {
		return false, errors.New("workspace: home directory is not set")
	}
	ws, err := Of(home, name)
	if err != nil {
		return false, err
	}
	e, err := home.Stat(ctx, Path(name))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		// A link the operator made to a workspace elsewhere.
		e, err = ws.Stat(ctx, ".")
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		created = true
	case err != nil:
		return false, fmt.Errorf("workspace: %w", err)
	case !e.IsDir():
		return false, fmt.Errorf("workspace: %s exists and is not a directory", Path(name))
	}
	if mk, ok := ws.(dirMaker); ok {
		for _, sub := range []string{DailyDir, SkillsDir} {
			if err := mk.Mkdir(ctx, sub); err != nil {
				return false, fmt.Errorf("workspace: create %s: %w", sub, err)
			}
		}
	}
	var toWrite []string
	if created {
		toWrite = append([]string{BootstrapFile}, templated...)
	} else {
		// Write only what is missing: a store may charge even for a
		// refused write.
		es, err := ws.ReadDir(ctx, ".", maxAgents)
		if err != nil {
			return false, fmt.Errorf("workspace: %w", err)
		}
		toWrite = slices.DeleteFunc(slices.Clone(templated), func(f string) bool {
			return slices.ContainsFunc(es, func(e filestore.Entry) bool { return e.Name == f })
		})
	}
	// The files are written at once: each write waits for its own sync
	// (or, in an object store, its own request), which then overlap.
	errs := make([]error, len(toWrite))
	var writing sync.WaitGroup
	for i, file := range toWrite {
		content, err := Template(file, name)
		if err != nil {
			return false, fmt.Errorf("workspace: %w", err)
		}
		writing.Go(func() {
			_, err := ws.WriteFile(ctx, file, []byte(content), filestore.Absent)
			if err != nil && !errors.Is(err, filestore.ErrConflict) && !errors.Is(err, filestore.ErrNotFile) {
				errs[i] = fmt.Errorf("workspace: write %s: %w", file, err)
			}
		})
	}
	writing.Wait()
	if err := errors.Join(errs...); err != nil {
		return false, err
	}
	return created, nil
}

// dirMaker is a file store with directories of their own (the local
// disk), in which a new workspace gets its empty directories.
type dirMaker interface {
	Mkdir(ctx context.Context, dir string) error
}

// Delete removes the workspace of agent name from home with everything in
// it. A workspace that is a symbolic link loses the link, not the directory
// it points to. A missing workspace gives an error matching fs.ErrNotExist.
func Delete(ctx context.Context, home filestore.FS, name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if home == nil {
		return errors.New("workspace: home directory is not set")
	}
	e, err := lookup(ctx, home, name)
	if err != nil {
		return err
	}
	if e.Mode.IsRegular() {
		return fmt.Errorf("workspace: %s is a file, not an agent workspace", Path(name))
	}
	if err := home.RemoveAll(ctx, Path(name)); err != nil {
		return fmt.Errorf("workspace: delete %s: %w", Path(name), err)
	}
	return nil
}

// lookup returns the entry of agent name's workspace in the listing of
// home's agents, a symbolic link as a link.
func lookup(ctx context.Context, home filestore.FS, name string) (filestore.Entry, error) {
	es, err := home.ReadDir(ctx, AgentsDir, maxAgents)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return filestore.Entry{}, fmt.Errorf("workspace: %w", err)
	}
	for _, e := range es {
		if e.Name == name {
			return e, nil
		}
	}
	return filestore.Entry{}, fmt.Errorf("workspace: agent %q does not exist: %w", name, fs.ErrNotExist)
}

// maxAgents bounds the workspaces of a home.
const maxAgents = 10000

// Template returns the default content of a bootstrap file for agent name,
// or an error if there is no template for file.
func Template(file, name string) (string, error) {
	b, err := templates.ReadFile("templates/" + file)
	if err != nil {
		return "", fmt.Errorf("no template for %q", file)
	}
	return strings.ReplaceAll(string(b), "{{name}}", name), nil
}

// List returns the sorted names of the workspaces in home: directories
// (or links to them) under agents/ with valid agent names. A missing home
// has none.
func List(ctx context.Context, home filestore.FS) ([]string, error) {
	entries, err := home.ReadDir(ctx, AgentsDir, maxAgents)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("workspace: list agents: %w", err)
	}
	var names []string
	for _, e := range entries {
		if ValidName(e.Name) != nil {
			continue
		}
		if e.Mode&fs.ModeSymlink != 0 {
			// A link the operator made to a workspace elsewhere: a
			// directory when its workspace opens as one.
			ws, err := home.Sub(Path(e.Name))
			if err != nil {
				continue
			}
			if d, err := ws.Stat(ctx, "."); err != nil || !d.IsDir() {
				continue
			}
		} else if !e.IsDir() {
			continue
		}
		names = append(names, e.Name)
	}
	return names, nil
}
