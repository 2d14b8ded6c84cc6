package skill

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lambdaclaw/lambdaclaw/shared/adapters/osroot"
)

// writeSkill writes dir/skills/<sub>/SKILL.md with the given name,
// description and extra front-matter lines.
func writeSkill(t *testing.T, dir, sub, name, description, extra string) string {
	t.Helper()
	content := fmt.Sprintf("---\nname: %s\ndescription: %s\n%s---\n# %s\n\nInstructions of %s from %s.\n", name, description, extra, name, name, filepath.Base(dir))
	return writeFile(t, filepath.Join(dir, Dir, sub, FileName), content)
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// entry is what the tests compare of a skill.
type entry struct {
	Name, Description string
	Source            Source
}

func entries(skills []Skill) []entry {
	var out []entry
	for _, s := range skills {
		out = append(out, entry{s.Name, s.Description, s.Source})
	}
	return out
}

// local is entries without the bundled skills.
func local(skills []Skill) []entry {
	var out []entry
	for _, e := range entries(skills) {
		if e.Source != Bundled {
			out = append(out, e)
		}
	}
	return out
}

func errStrings(errs []error) []string {
	var out []string
	for _, err := range errs {
		out = append(out, err.Error())
	}
	return out
}

func TestBundled(t *testing.T) {
	skills, warns := NewCatalog("").For(context.Background(), "", nil)
	if len(warns) > 0 {
		t.Fatalf("bundled skills have problems: %v", warns)
	}
	want := []entry{{"memory-notes", "", Bundled}, {"web-research", "", Bundled}}
	if diff := cmp.Diff(want, entries(skills), cmp.Transformer("nodesc", func(e entry) entry { e.Description = ""; return e })); diff != "" {
		t.Fatalf("bundled skills (-want +got):\n%s", diff)
	}
	for _, s := range skills {
		if s.Emoji == "" || len(s.Body) < 500 || s.Path != "bundled/"+s.Name+"/"+FileName {
			t.Errorf("bundled skill %s: emoji %q, %d bytes of body, path %q", s.Name, s.Emoji, len(s.Body), s.Path)
		}
		if reason := (Env{LookPath: noBins, Getenv: noEnv, GOOS: "plan9"}).Check(s.Requires); reason != "" {
			t.Errorf("bundled skill %s is not usable everywhere: %s", s.Name, reason)
		}
	}
}

func TestPrecedence(t *testing.T) {
	home := t.TempDir()
	alice := filepath.Join(home, "agents", "alice")
	bob := filepath.Join(home, "agents", "bob")
	// Same name at all three levels: the agent's wins.
	writeSkill(t, home, "memory-notes", "memory-notes", "global memory", "")
	writeSkill(t, alice, "memory-notes", "memory-notes", "alice memory", "")
	// Global beats bundled.
	writeSkill(t, home, "research", "web-research", "global research", "")
	// The directory name does not matter, the front-matter name does.
	writeSkill(t, home, "shared-dir", "shared", "global shared", "")
	writeSkill(t, alice, "mine", "shared", "alice shared", "")
	writeSkill(t, alice, "alice-only", "alice-only", "only alice", "")
	writeSkill(t, bob, "bob-only", "bob-only", "only bob", "")

	c := NewCatalog(home)
	tests := []struct {
		name     string
		agentDir string
		want     []entry
	}{
		{"alice", alice, []entry{
			{"alice-only", "only alice", Agent},
			{"memory-notes", "alice memory", Agent},
			{"shared", "alice shared", Agent},
			{"web-research", "global research", Global},
		}},
		{"bob", bob, []entry{
			{"bob-only", "only bob", Agent},
			{"memory-notes", "global memory", Global},
			{"shared", "global shared", Global},
			{"web-research", "global research", Global},
		}},
		{"no agent", "", []entry{
			{"memory-notes", "global memory", Global},
			{"shared", "global shared", Global},
			{"web-research", "global research", Global},
		}},
		{"agent without a workspace", filepath.Join(home, "agents", "nobody"), []entry{
			{"memory-notes", "global memory", Global},
			{"shared", "global shared", Global},
			{"web-research", "global research", Global},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warns := forDir(c, tt.agentDir)
			if len(warns) > 0 {
				t.Errorf("warnings: %v", warns)
			}
			if diff := cmp.Diff(tt.want, entries(got)); diff != "" {
				t.Errorf("For (-want +got):\n%s", diff)
			}
		})
	}

	got, _ := forDir(c, alice)
	if want := filepath.Join(alice, Dir, "mine", FileName); got[2].Path != want {
		t.Errorf("path of alice's shared skill = %q, want %q", got[2].Path, want)
	}
	if got[2].Body != "# shared\n\nInstructions of shared from alice." {
		t.Errorf("body of alice's shared skill = %q", got[2].Body)
	}
}

func TestBrokenSkills(t *testing.T) {
	home := t.TempDir()
	agentDir := filepath.Join(home, "agents", "a")
	writeSkill(t, home, "good", "good", "fine", "")
	writeFile(t, filepath.Join(home, Dir, "nofront", FileName), "# just markdown\n")
	writeFile(t, filepath.Join(home, Dir, "big", FileName), "---\nname: big\ndescription: d\n---\n"+strings.Repeat("x", MaxSize))
	writeSkill(t, home, "twin", "good", "second good", "")
	if err := os.Mkdir(filepath.Join(home, Dir, "dir-skill"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(home, Dir, "dir-skill", FileName), 0o755); err != nil {
		t.Fatal(err)
	}
	// Not skills, and not worth a warning.
	writeFile(t, filepath.Join(home, Dir, "README.md"), "skills go here")
	writeFile(t, filepath.Join(home, Dir, "empty", "notes.txt"), "no SKILL.md here")
	writeFile(t, filepath.Join(home, Dir, ".git", FileName), "not even parsed")
	writeSkill(t, agentDir, "bad-name", "Bad Name", "d", "")

	var reported []string
	c := NewCatalog(home)
	c.Warn = func(err error) { reported = append(reported, err.Error()) }
	got, warns := forDir(c, agentDir)
	if diff := cmp.Diff([]entry{{"good", "fine", Global}}, local(got)); diff != "" {
		t.Errorf("For (-want +got):\n%s", diff)
	}
	g := filepath.Join(home, Dir)
	want := []string{
		"skills: skipped " + filepath.Join(g, "big", FileName) + ": larger than 128 KiB",
		"skills: skipped " + filepath.Join(g, "dir-skill", FileName) + ": not a regular file",
		"skills: skipped " + filepath.Join(g, "nofront", FileName) + ": " + ErrNoFrontMatter.Error(),
		"skills: skipped " + filepath.Join(g, "twin", FileName) + `: skill "good" is already defined in ` + filepath.Join(g, "good", FileName),
		"skills: skipped " + filepath.Join(agentDir, Dir, "bad-name", FileName) + `: invalid skill name "Bad Name": use 1 to 64 lowercase letters, digits, '-' and '_', starting with a letter or digit`,
	}
	if diff := cmp.Diff(want, errStrings(warns)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, reported); diff != "" {
		t.Errorf("reported (-want +got):\n%s", diff)
	}

	// Nothing changed: the same warnings are returned, but not reported again.
	_, warns = forDir(c, agentDir)
	if len(warns) != len(want) || len(reported) != len(want) {
		t.Errorf("second call: %d warnings, %d reported; want %d and %d", len(warns), len(reported), len(want), len(want))
	}
}

func TestCatalogNotices(t *testing.T) {
	home := t.TempDir()
	agentDir := filepath.Join(home, "agents", "a")
	c := NewCatalog(home)
	check := func(step string, want []entry) {
		t.Helper()
		got, warns := forDir(c, agentDir)
		if diff := cmp.Diff(want, local(got)); diff != "" {
			t.Errorf("%s: For (-want +got):\n%s", step, diff)
		}
		if len(warns) > 0 {
			t.Errorf("%s: warnings %v", step, warns)
		}
	}
	check("nothing", nil)

	path := writeSkill(t, agentDir, "one", "one", "first", "")
	check("added", []entry{{"one", "first", Agent}})

	// Same size, new content: the modification time tells.
	writeSkill(t, agentDir, "one", "one", "FIRST", "")
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, future, future); err != nil {
		t.Fatal(err)
	}
	check("edited", []entry{{"one", "FIRST", Agent}})

	writeSkill(t, home, "two", "two", "global two", "")
	check("global added", []entry{{"one", "FIRST", Agent}, {"two", "global two", Global}})

	if err := os.RemoveAll(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	check("removed", []entry{{"two", "global two", Global}})

	if err := os.Rename(filepath.Join(home, Dir, "two"), filepath.Join(home, Dir, "three")); err != nil {
		t.Fatal(err)
	}
	writeSkill(t, home, "three", "three", "renamed", "")
	check("renamed", []entry{{"three", "renamed", Global}})
}

func TestSymlinks(t *testing.T) {
	home := t.TempDir()
	outside := t.TempDir()
	agentDir := filepath.Join(home, "agents", "a")
	writeSkill(t, outside, "linked", "linked", "from outside", "")
	for _, d := range []string{filepath.Join(agentDir, Dir), filepath.Join(home, Dir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The operator may link a skill into the global directory.
	if err := os.Symlink(filepath.Join(outside, Dir, "linked"), filepath.Join(home, Dir, "linked")); err != nil {
		t.Skipf("symlinks: %v", err)
	}
	// A link out of an agent's workspace is refused.
	if err := os.Symlink(filepath.Join(outside, Dir, "linked"), filepath.Join(agentDir, Dir, "escape")); err != nil {
		t.Fatal(err)
	}
	got, warns := forDir(NewCatalog(home), agentDir)
	if diff := cmp.Diff([]entry{{"linked", "from outside", Global}}, local(got)); diff != "" {
		t.Errorf("For (-want +got):\n%s", diff)
	}
	if len(warns) != 1 || !strings.Contains(warns[0].Error(), filepath.Join(agentDir, Dir, "escape", FileName)) {
		t.Errorf("warnings = %v, want one about the link out of the workspace", warns)
	}
}

func TestUnreadableSkillsDir(t *testing.T) {
	home := t.TempDir()
	// skills is a file: reading it as a directory fails.
	writeFile(t, filepath.Join(home, Dir), "not a directory")
	got, warns := NewCatalog(home).For(context.Background(), "", nil)
	if len(got) != 2 {
		t.Errorf("For returned %d skills, want the 2 bundled ones", len(got))
	}
	if len(warns) != 1 || errors.Is(warns[0], fs.ErrNotExist) {
		t.Errorf("warnings = %v, want one about the skills directory", warns)
	}
}

// forDir is c.For of the agent whose workspace is the directory dir, named
// after it; "" for none.
func forDir(c *Catalog, dir string) ([]Skill, []error) {
	if dir == "" {
		return c.For(context.Background(), "", nil)
	}
	return c.For(context.Background(), filepath.Base(dir), osroot.New(dir))
}

// With Refresh, a level's listing is trusted for that long; Stale makes
// the agent's own skills looked at again at once, and the global ones
// wait for the interval.
func TestCatalogRefresh(t *testing.T) {
	home := t.TempDir()
	agentDir := filepath.Join(home, "agents", "a")
	c := NewCatalog(home)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	c.Refresh, c.Now = time.Minute, func() time.Time { return now }
	check := func(step string, want []entry) {
		t.Helper()
		got, _ := forDir(c, agentDir)
		if diff := cmp.Diff(want, local(got)); diff != "" {
			t.Errorf("%s: For (-want +got):\n%s", step, diff)
		}
	}
	check("nothing", nil)
	writeSkill(t, agentDir, "own", "own", "the agent's", "")
	writeSkill(t, home, "global", "global", "everyone's", "")
	now = now.Add(59 * time.Second)
	check("within the interval", nil)
	c.Stale("a")
	check("the agent's tools ran", []entry{{"own", "the agent's", Agent}})
	now = now.Add(time.Second)
	check("interval over", []entry{{"global", "everyone's", Global}, {"own", "the agent's", Agent}})
}

// TestNewCatalogParsesNothing: a catalog, made at start-up, parses the
// bundled skills when it is first asked for them, not when it is made.
func TestNewCatalogParsesNothing(t *testing.T) {
	if n := testing.AllocsPerRun(1, func() { NewCatalogFS(nil, "") }); n > 5 {
		t.Errorf("NewCatalogFS made %v allocations; parsing the bundled skills makes hundreds", n)
	}
}
