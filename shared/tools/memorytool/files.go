package memorytool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/memory"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
)

// dateLayout names the daily logs: memory/2006-01-02.md.
const dateLayout = "2006-01-02"

// Files keeps the memory files of agent workspaces in memory, so that
// memory_search finds them: MEMORY.md as a core memory (source
// "MEMORY.md", key "file:MEMORY.md") and each daily log
// memory/YYYY-MM-DD.md as a daily memory (source "memory/<file>", key
// "file:memory/<file>"). A file's memory is updated when the file
// changes and forgotten when it is deleted or emptied; its UpdatedAt is
// the file's modification time, so old daily logs fade in search. File
// memories are agent-wide (no owner): every user of the agent finds them.
//
// Sync compares a cheap fingerprint of each file (size and modification
// time) with the one it last indexed, and reads and re-stores only the
// files whose fingerprint changed, and then only if their text did. With
// a state directory, the indexed file names and fingerprints are saved
// there, so that files deleted while the server was down are forgotten at
// its next start. Files is safe for concurrent use.
type Files struct {
	mem      *memory.Memory
	stateDir string

	mu     sync.Mutex
	agents map[string]*agentFiles
}

// agentFiles is what Files last indexed for one agent.
type agentFiles struct {
	mu sync.Mutex
	// synced is set once a first Sync has checked the index itself.
	synced  bool
	indexed map[string]fingerprint // by file name, slash-separated
}

// fingerprint tells whether a file may have changed.
type fingerprint struct {
	Size    int64 `json:"size"`
	ModTime int64 `json:"mtime_ns"`
}

// stateFile is what Files saves per agent in its state directory.
type stateFile struct {
	Files map[string]fingerprint `json:"files"`
}

// SyncReport says what a Sync changed.
type SyncReport struct {
	// Stored counts files whose memory was written, Forgotten those whose
	// memory was removed.
	Stored, Forgotten int
}

// NewFiles returns a Files storing into m. stateDir, when not empty, is
// the directory where it keeps what it indexed (created when needed).
func NewFiles(m *memory.Memory, stateDir string) (*Files, error) {
	if m == nil {
		return nil, errors.New("memorytool: nil memory")
	}
	return &Files{mem: m, stateDir: stateDir, agents: map[string]*agentFiles{}}, nil
}

// Sync brings the memories of agent's workspace files, in ws, up to date.
// The first Sync of an agent reads every file and compares it with its
// memory, so nothing is re-embedded that did not change; later ones only
// look at the files whose fingerprint changed. A workspace that does not
// exist has no files. Failures to index one file do not stop the others;
// they are returned joined, and that file is tried again next time.
func (f *Files) Sync(ctx context.Context, agent string, ws filestore.FS) (SyncReport, error) {
	var rep SyncReport
	if err := workspace.ValidName(agent); err != nil {
		return rep, fmt.Errorf("memory files: %w", err)
	}
	f.mu.Lock()
	af := f.agents[agent]
	if af == nil {
		af = &agentFiles{indexed: map[string]fingerprint{}}
		f.agents[agent] = af
	}
	f.mu.Unlock()
	af.mu.Lock()
	defer af.mu.Unlock()

	var errs []error
	if !af.synced {
		saved, err := f.loadState(agent)
		if err != nil {
			errs = append(errs, err)
		}
		// Fingerprints are not trusted yet: every file is compared with
		// its memory. Names matter, for files deleted since.
		for name, fp := range saved.Files {
			af.indexed[name] = fp
		}
	}
	current, err := scanFiles(ctx, ws)
	if err != nil {
		return rep, fmt.Errorf("memory files of %s: %w", agent, errors.Join(append(errs, err)...))
	}
	changed := false
	for name, fp := range current {
		if old, ok := af.indexed[name]; ok && old == fp && af.synced {
			continue
		}
		stored, forgotten, err := f.indexFile(ctx, agent, ws, name, fp)
		if stored {
			rep.Stored++
		}
		if forgotten {
			rep.Forgotten++
		}
		if err != nil && !errors.Is(err, memory.ErrNotEmbedded) {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			delete(af.indexed, name)
			changed = true
			continue
		}
		if err != nil {
			// Stored keyword-only; embedding again waits for the next change.
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
		af.indexed[name] = fp
		changed = true
	}
	for name := range af.indexed {
		if _, ok := current[name]; ok {
			continue
		}
		if err := f.mem.Forget(ctx, agent, "", FileKeyPrefix+name); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		delete(af.indexed, name)
		rep.Forgotten++
		changed = true
	}
	af.synced = true
	if changed {
		if err := f.saveState(agent, af.indexed); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return rep, fmt.Errorf("memory files of %s: %w", agent, errors.Join(errs...))
	}
	return rep, nil
}

// indexFile brings the memory of one file up to date with its text. It
// reports whether it stored or forgot the memory.
func (f *Files) indexFile(ctx context.Context, agent string, ws filestore.FS, name string, fp fingerprint) (stored, forgotten bool, err error) {
	key := FileKeyPrefix + name
	text, err := readText(ctx, ws, name)
	if err != nil {
		return false, false, err
	}
	old, err := f.mem.Get(ctx, agent, "", key)
	found := err == nil
	if err != nil && !errors.Is(err, memory.ErrNotFound) {
		return false, false, err
	}
	if strings.TrimSpace(text) == "" {
		if !found {
			return false, false, nil
		}
		return false, true, f.mem.Forget(ctx, agent, "", key)
	}
	e := memory.Entry{Agent: agent, Key: key, Text: text, Category: memory.Daily, Source: name, UpdatedAt: time.Unix(0, fp.ModTime)}
	if name == workspace.MemoryFile {
		e.Category = memory.Core
	}
	if found && old.Text == e.Text && old.Category == e.Category && old.Source == e.Source {
		return false, false, nil
	}
	switch {
	case found:
		e.CreatedAt = old.CreatedAt
	case e.Category == memory.Daily:
		// A daily log was begun on its day.
		day, _ := time.Parse(dateLayout, strings.TrimSuffix(path.Base(name), ".md"))
		e.CreatedAt = day
	}
	if e.CreatedAt.IsZero() || e.CreatedAt.After(e.UpdatedAt) {
		e.CreatedAt = e.UpdatedAt
	}
	if err := f.mem.Store(ctx, e); err != nil {
		return errors.Is(err, memory.ErrNotEmbedded), false, err
	}
	return true, false, nil
}

// maxDailyLogs bounds the daily logs Sync indexes.
const maxDailyLogs = 100000

// scanFiles returns the fingerprints of the memory files in the workspace
// ws (none when it is nil or does not exist). Only regular files count;
// symbolic links are followed inside the workspace, never out of it.
func scanFiles(ctx context.Context, ws filestore.FS) (map[string]fingerprint, error) {
	files := map[string]fingerprint{}
	if ws == nil {
		return files, nil
	}
	add := func(name string, e filestore.Entry) {
		if e.Mode.IsRegular() {
			files[name] = fingerprint{Size: e.Size, ModTime: e.ModTime.UnixNano()}
		}
	}
	if e, err := ws.Stat(ctx, workspace.MemoryFile); err == nil {
		add(workspace.MemoryFile, e)
	} else if !errors.Is(err, fs.ErrNotExist) && !isEscape(err) {
		return nil, err
	}
	entries, err := ws.ReadDir(ctx, workspace.DailyDir, maxDailyLogs)
	if errors.Is(err, fs.ErrNotExist) || isEscape(err) {
		return files, nil
	}
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		date, ok := strings.CutSuffix(e.Name, ".md")
		if !ok || !validDate(date) {
			continue
		}
		name := workspace.DailyDir + "/" + e.Name
		if e.Mode&fs.ModeSymlink != 0 {
			if e, err = ws.Stat(ctx, name); err != nil {
				continue
			}
		}
		add(name, e)
	}
	return files, nil
}

// isEscape reports whether err is a local workspace refusing a path that
// leads out of it: such a file is not the agent's and is not indexed.
func isEscape(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes")
}

// readText reads a memory file as valid UTF-8, at most memory.MaxTextBytes
// of it.
func readText(ctx context.Context, ws filestore.FS, name string) (string, error) {
	b, _, err := ws.ReadFile(ctx, name, memory.MaxTextBytes)
	if err != nil {
		return "", err
	}
	text := string(b)
	if len(b) == memory.MaxTextBytes {
		text = truncateUTF8(text, memory.MaxTextBytes-3)
	}
	return strings.ToValidUTF8(strings.ReplaceAll(text, "\x00", ""), "\uFFFD"), nil
}

// validDate reports whether s is a calendar day written YYYY-MM-DD.
func validDate(s string) bool {
	t, err := time.Parse(dateLayout, s)
	return err == nil && t.Format(dateLayout) == s
}

// statePath is where the state of agent is saved, or "" without a state
// directory.
func (f *Files) statePath(agent string) string {
	if f.stateDir == "" {
		return ""
	}
	return filepath.Join(f.stateDir, agent+".json")
}

// loadState reads the saved state of agent; none is an empty state.
func (f *Files) loadState(agent string) (stateFile, error) {
	var st stateFile
	p := f.statePath(agent)
	if p == "" {
		return st, nil
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read state: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return stateFile{}, fmt.Errorf("state %s is damaged, ignored: %w", p, err)
	}
	return st, nil
}

// saveState writes the state of agent atomically.
func (f *Files) saveState(agent string, indexed map[string]fingerprint) error {
	p := f.statePath(agent)
	if p == "" {
		return nil
	}
	b, err := json.Marshal(stateFile{Files: indexed})
	if err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	if err := os.MkdirAll(f.stateDir, 0o700); err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	tmp, err := os.CreateTemp(f.stateDir, agent+".*.tmp")
	if err != nil {
		return fmt.Errorf("save state: %w", err)
	}
	_, err = tmp.Write(b)
	err = errors.Join(err, tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("save state: %w", err)
	}
	return nil
}
