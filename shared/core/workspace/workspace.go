// Package workspace manages agent workspaces (seed 004, "Agent
// Workspaces"): the directory <home>/agents/<name>/ holding the bootstrap
// files IDENTITY.md, SOUL.md, USER.md, TOOLS.md, AGENTS.md, BOOTSTRAP.md and
// MEMORY.md, daily logs in memory/YYYY-MM-DD.md and skills in skills/.
//
// It creates workspaces from default templates, assembles the files into
// the system messages sent before every model call, and provides the
// workspace_memory tool with which an agent keeps its own memory.
package workspace

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

// Dir returns the workspace directory of agent name under home. It does not
// validate name; callers check it with ValidName first.
func Dir(home, name string) string { return filepath.Join(home, "agents", name) }

// Create makes the workspace of agent name under home with the default
// templates, empty memory/ and skills/ directories, and reports whether the
// workspace directory was new. A new workspace also gets BOOTSTRAP.md, the
// first-run discovery ritual, which the agent deletes when it is done
// (workspace_memory, action complete_bootstrap). Create never overwrites a
// file: on an existing workspace it only adds the templates and directories
// that are missing, never BOOTSTRAP.md.
func Create(home, name string) (dir string, created bool, err error) {
	if err := ValidName(name); err != nil {
		return "", false, err
	}
	if home == "" {
		return "", false, errors.New("workspace: home directory is not set")
	}
	dir = Dir(home, name)
	switch fi, err := os.Stat(dir); {
	case errors.Is(err, fs.ErrNotExist):
		created = true
	case err != nil:
		return "", false, fmt.Errorf("workspace: %w", err)
	case !fi.IsDir():
		return "", false, fmt.Errorf("workspace: %s exists and is not a directory", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", false, fmt.Errorf("workspace: create %s: %w", dir, err)
	}
	for _, sub := range []string{DailyDir, SkillsDir} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", false, fmt.Errorf("workspace: create %s: %w", sub, err)
		}
	}
	toWrite := templated
	if created {
		toWrite = append([]string{BootstrapFile}, templated...)
	}
	for _, file := range toWrite {
		if err := writeTemplate(dir, file, name); err != nil {
			return "", false, fmt.Errorf("workspace: %w", err)
		}
	}
	return dir, created, nil
}

// Delete removes the workspace of agent name under home with everything in
// it. A workspace that is a symbolic link loses the link, not the directory
// it points to. A missing workspace gives an error matching fs.ErrNotExist.
func Delete(home, name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if home == "" {
		return errors.New("workspace: home directory is not set")
	}
	dir := Dir(home, name)
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("workspace: agent %q does not exist: %w", name, fs.ErrNotExist)
	}
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if fi.Mode().IsRegular() {
		return fmt.Errorf("workspace: %s is a file, not an agent workspace", dir)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("workspace: delete %s: %w", dir, err)
	}
	return nil
}

// Template returns the default content of a bootstrap file for agent name,
// or an error if there is no template for file.
func Template(file, name string) (string, error) {
	b, err := templates.ReadFile("templates/" + file)
	if err != nil {
		return "", fmt.Errorf("no template for %q", file)
	}
	return strings.ReplaceAll(string(b), "{{name}}", name), nil
}

// writeTemplate writes file's template unless the file exists.
func writeTemplate(dir, file, name string) error {
	content, err := Template(file, name)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, file)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", file, err)
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

// List returns the sorted names of the workspaces under home: directories
// of home/agents with valid agent names. A missing home has none.
func List(home string) ([]string, error) {
	agents := filepath.Join(home, "agents")
	entries, err := os.ReadDir(agents)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("workspace: list agents: %w", err)
	}
	var names []string
	for _, e := range entries {
		if ValidName(e.Name()) != nil {
			continue
		}
		fi, err := os.Stat(filepath.Join(agents, e.Name()))
		if err != nil || !fi.IsDir() {
			continue
		}
		names = append(names, e.Name())
	}
	return names, nil
}
