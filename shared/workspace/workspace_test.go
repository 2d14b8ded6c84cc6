package workspace

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidName(t *testing.T) {
	cases := map[string]bool{
		"default":               true,
		"a":                     true,
		"7":                     true,
		"my-agent_2":            true,
		strings.Repeat("a", 64): true,
		"":                      false,
		strings.Repeat("a", 65): false,
		"-agent":                false,
		"_agent":                false,
		"Agent":                 false,
		"my agent":              false,
		"a/b":                   false,
		"..":                    false,
		".hidden":               false,
		"a.b":                   false,
		"é":                     false,
		"a\x00":                 false,
	}
	got := make(map[string]bool, len(cases))
	for name := range cases {
		got[name] = ValidName(name) == nil
	}
	if diff := cmp.Diff(cases, got); diff != "" {
		t.Errorf("ValidName mismatch (-want +got):\n%s", diff)
	}
}

func TestDir(t *testing.T) {
	if got, want := Dir("/home/x", "bot"), filepath.Join("/home/x", "agents", "bot"); got != want {
		t.Errorf("Dir = %q, want %q", got, want)
	}
}

// tree lists the files and directories under dir, with file contents.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			out[rel+"/"] = ""
			return nil
		}
		b, err := os.ReadFile(p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCreate(t *testing.T) {
	home := t.TempDir()
	dir, created, err := Create(home, "helper")
	if err != nil {
		t.Fatal(err)
	}
	if dir != Dir(home, "helper") || !created {
		t.Fatalf("Create = %q, %v; want %q, true", dir, created, Dir(home, "helper"))
	}
	want := map[string]string{"memory/": "", "skills/": ""}
	for _, f := range []string{"IDENTITY.md", "SOUL.md", "USER.md", "TOOLS.md", "AGENTS.md", "MEMORY.md"} {
		b, err := templates.ReadFile("templates/" + f)
		if err != nil {
			t.Fatal(err)
		}
		want[f] = strings.ReplaceAll(string(b), "{{name}}", "helper")
	}
	if diff := cmp.Diff(want, tree(t, dir)); diff != "" {
		t.Errorf("new workspace mismatch (-want +got):\n%s", diff)
	}
	if !strings.Contains(want["IDENTITY.md"], "- Name: helper\n") || !strings.Contains(want["SOUL.md"], "You are helper") {
		t.Errorf("templates do not carry the agent name:\n%s\n%s", want["IDENTITY.md"], want["SOUL.md"])
	}

	// A second Create keeps what is there and only fills gaps.
	if err := os.WriteFile(filepath.Join(dir, "SOUL.md"), []byte("custom soul"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "USER.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "skills")); err != nil {
		t.Fatal(err)
	}
	_, created, err = Create(home, "helper")
	if err != nil || created {
		t.Fatalf("second Create = created %v, %v; want false, nil", created, err)
	}
	want["SOUL.md"] = "custom soul"
	if diff := cmp.Diff(want, tree(t, dir)); diff != "" {
		t.Errorf("re-created workspace mismatch (-want +got):\n%s", diff)
	}

	for _, tc := range []struct{ home, name, wantErr string }{
		{home, "Bad Name", "invalid"},
		{home, "../escape", "invalid"},
		{"", "ok", "home directory is not set"},
	} {
		if _, _, err := Create(tc.home, tc.name); err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("Create(%q, %q) error = %v, want %q", tc.home, tc.name, err, tc.wantErr)
		}
	}
	if err := os.WriteFile(filepath.Join(home, "agents", "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Create(home, "file"); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Create over a file error = %v, want not a directory", err)
	}
}

func TestList(t *testing.T) {
	home := t.TempDir()
	got, err := List(home)
	if err != nil || len(got) != 0 {
		t.Fatalf("List(empty home) = %v, %v; want none", got, err)
	}
	for _, name := range []string{"zeta", "alpha", "mid-1"} {
		if _, _, err := Create(home, name); err != nil {
			t.Fatal(err)
		}
	}
	agents := filepath.Join(home, "agents")
	for _, d := range []string{"Not-Valid", ".hidden"} {
		if err := os.Mkdir(filepath.Join(agents, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(agents, "stray"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err = List(home)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"alpha", "mid-1", "zeta"}, got); diff != "" {
		t.Errorf("List mismatch (-want +got):\n%s", diff)
	}
}

func TestFilesAndTemplate(t *testing.T) {
	want := []string{"IDENTITY.md", "SOUL.md", "USER.md", "TOOLS.md", "AGENTS.md", "BOOTSTRAP.md", "MEMORY.md"}
	got := Files()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Files mismatch (-want +got):\n%s", diff)
	}
	got[0] = "changed"
	if Files()[0] != "IDENTITY.md" {
		t.Error("Files returns a slice callers can change")
	}
	if _, err := Template("BOOTSTRAP.md", "x"); err == nil {
		t.Error("Template(BOOTSTRAP.md) succeeded; its ritual has no default yet")
	}
	if _, err := Template("../workspace.go", "x"); err == nil {
		t.Error("Template read outside the templates")
	}
}
