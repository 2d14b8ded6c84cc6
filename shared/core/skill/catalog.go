package skill

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
)

// bundled holds the skills shipped with lambdaclaw, bundled/<dir>/SKILL.md.
//
//go:embed bundled/*/SKILL.md
var bundled embed.FS

// bundledLevel is the bundled skills, parsed on first use: a catalog is
// made at start-up, and read when an agent's prompt is first assembled.
var bundledLevel = sync.OnceValue(func() level { return parseLevel(bundled, "bundled", Bundled, "bundled", nil) })

// Dir is the directory, inside home and inside an agent's workspace, that
// holds one directory per skill.
const Dir = "skills"

// Catalog finds the skills visible to each agent. It remembers what it
// parsed and reads a level again only when a skill directory or SKILL.md
// in it changed (name, size or modification time), so For is cheap enough
// to call before every model request. A Catalog is safe for concurrent
// use.
type Catalog struct {
	home  fs.FS
	where string

	// Warn, when set, is called once for each problem a scan finds (a
	// broken SKILL.md, an unreadable directory) when the scan happens, that
	// is after a change, not on every call of For. Set it before first use.
	Warn func(error)
	// Refresh is how long a level's listing is trusted before its
	// directory is looked at again; zero (the local server) looks on
	// every call, so edits show at once. On AWS, where every listing is a
	// paid request, it is the interval the prompt is reused for; Stale
	// makes an agent's own skills looked at again at once. Set it before
	// first use.
	Refresh time.Duration
	// Now returns the time Refresh is measured with; nil means time.Now.
	// Set it before first use.
	Now func() time.Time

	mu     sync.Mutex
	levels map[string]level
}

// level is the parsed content of one skills directory.
type level struct {
	stamp string
	// at is when the stamp was last taken.
	at     time.Time
	skills []Skill
	warns  []error
}

// NewCatalog returns the catalog of the bundled skills, the global skills
// in the directory <home>/skills, whose links are followed (they are the
// operator's), and, through For, each agent's own. An empty home has no
// global skills.
func NewCatalog(home string) *Catalog {
	if home == "" {
		return NewCatalogFS(nil, "")
	}
	return NewCatalogFS(os.DirFS(home), home)
}

// NewCatalogFS returns the catalog of the bundled skills, the global skills
// in home's skills/ directory (none when home is nil) and, through For,
// each agent's own. where names home in the warnings (a directory, a
// bucket).
func NewCatalogFS(home fs.FS, where string) *Catalog {
	return &Catalog{home: home, where: where, levels: map[string]level{}}
}

// For returns the skills visible to the agent name whose workspace is ws,
// sorted by name: bundled, global and the agent's own (skills/ in ws), a
// higher level replacing a lower one's skill of the same name. A nil ws
// gives the bundled and global skills. The errors describe the SKILL.md
// files that were skipped; they are not fatal. The skills share their
// slices and maps with the catalog's cache: do not modify them.
func (c *Catalog) For(ctx context.Context, name string, ws filestore.FS) ([]Skill, []error) {
	levels := []level{bundledLevel()}
	if c.home != nil {
		levels = append(levels, c.scan(c.home, "global", filepath.Join(c.where, Dir), Global))
	}
	if ws != nil {
		shown := filepath.Join(c.where, "agents", name, Dir)
		levels = append(levels, c.scan(filestore.IOFS(ctx, ws, MaxSize+1), "agent/"+name, shown, Agent))
	}
	byName := map[string]Skill{}
	var warns []error
	for _, l := range levels {
		for _, s := range l.skills {
			byName[s.Name] = s
		}
		warns = append(warns, l.warns...)
	}
	out := make([]Skill, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, warns
}

// Stale makes the next For look at the agent name's own skills directory
// again, whatever Refresh says: the agent's tools may just have changed it.
func (c *Catalog) Stale(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.levels["agent/"+name]; ok {
		l.at = time.Time{}
		c.levels["agent/"+name] = l
	}
}

// scan returns the skills in fsys's skills directory, parsed again only
// when their fingerprint changed; key names the level in the cache, shown
// in messages.
func (c *Catalog) scan(fsys fs.FS, key, shown string, src Source) level {
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	at := now()
	if c.Refresh > 0 {
		c.mu.Lock()
		l, ok := c.levels[key]
		c.mu.Unlock()
		if ok && !l.at.IsZero() && at.Sub(l.at) < c.Refresh {
			return l
		}
	}
	stamp, err := fingerprint(fsys)
	if errors.Is(err, fs.ErrNotExist) {
		// No directory: trusted as long as a listing is.
		c.mu.Lock()
		c.levels[key] = level{stamp: "absent", at: at}
		c.mu.Unlock()
		return level{}
	}
	if err != nil {
		return c.report(level{warns: []error{fmt.Errorf("skills: read %s: %w", shown, bare(err))}})
	}
	c.mu.Lock()
	l, ok := c.levels[key]
	c.mu.Unlock()
	if ok && l.stamp == stamp {
		l.at = at
		c.mu.Lock()
		c.levels[key] = l
		c.mu.Unlock()
		return l
	}
	l = c.report(parseLevel(fsys, Dir, src, shown, filepath.Join))
	l.stamp, l.at = stamp, at
	c.mu.Lock()
	c.levels[key] = l
	c.mu.Unlock()
	return l
}

// report hands a fresh scan's warnings to Warn.
func (c *Catalog) report(l level) level {
	if c.Warn != nil {
		for _, err := range l.warns {
			c.Warn(err)
		}
	}
	return l
}

// candidates lists the directories of base in fsys that may hold a skill,
// sorted; hidden ones are left out.
func candidates(fsys fs.FS, base string) ([]string, error) {
	entries, err := fs.ReadDir(fsys, base)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || e.Type().IsRegular() {
			continue
		}
		dirs = append(dirs, e.Name())
	}
	return dirs, nil
}

// fingerprint describes the state of every SKILL.md in fsys's skills
// directory.
func fingerprint(fsys fs.FS) (string, error) {
	dirs, err := candidates(fsys, Dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, d := range dirs {
		fi, err := fs.Stat(fsys, path.Join(Dir, d, FileName))
		switch {
		case err == nil:
			fmt.Fprintf(&b, "%s|%d|%d|%d\n", d, fi.Size(), fi.ModTime().UnixNano(), fi.Mode())
		case absent(err):
		default:
			fmt.Fprintf(&b, "%s|error\n", d)
		}
	}
	return b.String(), nil
}

// absent reports whether err says a path does not exist, or goes through
// something that is not a directory.
func absent(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// bare drops the operation and relative path of a *fs.PathError: messages
// name the file themselves.
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// parseLevel parses every base/<dir>/SKILL.md in fsys. shown is how base is
// named in paths and messages; join builds those paths (path.Join when nil).
// Of two skills with the same name, the first directory in sorted order
// wins and the other is reported.
func parseLevel(fsys fs.FS, base string, src Source, shown string, join func(...string) string) level {
	if join == nil {
		join = path.Join
	}
	var l level
	dirs, err := candidates(fsys, base)
	if err != nil {
		if !absent(err) {
			l.warns = append(l.warns, fmt.Errorf("skills: read %s: %w", shown, bare(err)))
		}
		return l
	}
	seen := map[string]string{}
	for _, d := range dirs {
		shownPath := join(shown, d, FileName)
		data, err := readCapped(fsys, path.Join(base, d, FileName))
		if absent(err) {
			continue
		}
		if err != nil {
			l.warns = append(l.warns, fmt.Errorf("skills: skipped %s: %w", shownPath, bare(err)))
			continue
		}
		s, err := Parse(data)
		if err != nil {
			l.warns = append(l.warns, fmt.Errorf("skills: skipped %s: %w", shownPath, err))
			continue
		}
		if first, dup := seen[s.Name]; dup {
			l.warns = append(l.warns, fmt.Errorf("skills: skipped %s: skill %q is already defined in %s", shownPath, s.Name, first))
			continue
		}
		seen[s.Name] = shownPath
		s.Source, s.Path = src, shownPath
		l.skills = append(l.skills, s)
	}
	return l
}

// readCapped reads the regular file name of at most MaxSize bytes.
func readCapped(fsys fs.FS, name string) ([]byte, error) {
	fi, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if fi.Size() > MaxSize {
		return nil, fmt.Errorf("larger than %d KiB", MaxSize>>10)
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxSize {
		return nil, fmt.Errorf("larger than %d KiB", MaxSize>>10)
	}
	return data, nil
}
