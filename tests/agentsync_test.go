package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	s3fs "github.com/lambdaclaw/lambdaclaw/shared/adapters/s3"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

// TestAgentPushPull copies an agent's workspace to a deployed stack and
// back with the real binary: the bucket comes from the stack's outputs (a
// fake CloudFormation), the files go to an S3-compatible server over
// HTTP (S3_ENDPOINT), under agents/NAME/.
func TestAgentPushPull(t *testing.T) {
	cloudtest.SetCredentials(t)
	cfn := cloudtest.NewCloudFormation(t)
	endpoint, bucket := cloudtest.S3(t)
	cfn.Put("test", cloudtest.Stack{Outputs: map[string]string{"WorkspaceBucket": bucket, "TableName": "t", "Agents": "default"}})
	remote, err := s3fs.New(cloudtest.S3Client(t, endpoint), bucket, "agents/main")
	if err != nil {
		t.Fatal(err)
	}
	run := func(home string, args ...string) (stdout, stderr string, code int) {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), "LAMBDACLAW_HOME="+home, "CLOUDFORMATION_ENDPOINT="+cfn.URL, "S3_ENDPOINT="+endpoint)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.Run()
		return out.String(), errb.String(), cmd.ProcessState.ExitCode()
	}
	ok := func(home string, args ...string) (string, string) {
		t.Helper()
		out, errs, code := run(home, args...)
		if code != 0 {
			t.Fatalf("lambdaclaw %s: exit %d\n%s", strings.Join(args, " "), code, errs)
		}
		return out, errs
	}

	home := t.TempDir()
	dir := filepath.Join(home, "agents", "main")
	files := map[string]string{"AGENTS.md": "# Agents\n", "MEMORY.md": "likes tea\n", "memory/2025-01-02.md": "- met\n"}
	for name, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "passwd.md")); err != nil {
		t.Fatal(err)
	}

	out, errs := ok(home, "agent", "push", "main", "--stack", "test", "--dry-run")
	want := "+ AGENTS.md (9 bytes)\n+ MEMORY.md (10 bytes)\n+ memory/2025-01-02.md (6 bytes)\n"
	if out != want || !strings.Contains(errs, "skipped passwd.md: a symbolic link") || !strings.Contains(errs, "would change 3 added") {
		t.Errorf("push --dry-run printed %q, stderr %q; want %q", out, errs, want)
	}
	if got := s3Files(t, remote); len(got) != 0 {
		t.Fatalf("the dry run wrote %v", got)
	}
	if out, _ = ok(home, "agent", "push", "main", "--stack", "test"); out != want {
		t.Errorf("push printed %q, want %q", out, want)
	}
	if diff := cmp.Diff(files, s3Files(t, remote)); diff != "" {
		t.Errorf("the bucket after the push (-want +got):\n%s", diff)
	}

	// Changed locally: one file rewritten, one deleted.
	if err := os.WriteFile(filepath.Join(dir, "MEMORY.md"), []byte("likes coffee now\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "memory/2025-01-02.md")); err != nil {
		t.Fatal(err)
	}
	if out, _ = ok(home, "agent", "push", "main", "--stack", "test"); out != "~ MEMORY.md (17 bytes)\n- memory/2025-01-02.md\n" {
		t.Errorf("the second push printed %q", out)
	}

	// Pulled into another home, whose stale file goes.
	other := t.TempDir()
	stale := filepath.Join(other, "agents", "main", "old.md")
	if err := os.MkdirAll(filepath.Dir(stale), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _ = ok(other, "agent", "pull", "main", "--stack", "test"); out != "+ AGENTS.md (9 bytes)\n+ MEMORY.md (17 bytes)\n- old.md\n" {
		t.Errorf("pull printed %q", out)
	}
	for name, data := range map[string]string{"AGENTS.md": "# Agents\n", "MEMORY.md": "likes coffee now\n"} {
		if got, err := os.ReadFile(filepath.Join(other, "agents", "main", name)); err != nil || string(got) != data {
			t.Errorf("pulled %s = %q, %v", name, got, err)
		}
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale file is still there: %v", err)
	}

	// Bad input: a clear error, exit 1, nothing printed or changed.
	cfn.Put("old", cloudtest.Stack{Outputs: map[string]string{"TableName": "t", "Agents": "default"}})
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "push", "ghost", "--stack", "test"}, `lambdaclaw: no agent "ghost"`},
		{[]string{"agent", "pull", "ghost", "--stack", "test"}, `holds no workspace of agent "ghost"`},
		{[]string{"agent", "push", "main"}, "name it with --stack"},
		{[]string{"agent", "push", "../main", "--stack", "test"}, "lambdaclaw: "},
		{[]string{"agent", "push", "main", "--stack", "old"}, `has no output WorkspaceBucket`},
	} {
		out, errs, code := run(home, tc.args...)
		if code != 1 || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("lambdaclaw %s: exit %d, stdout %q, stderr %q; want 1 and %q", strings.Join(tc.args, " "), code, out, errs, tc.want)
		}
	}
	if diff := cmp.Diff(map[string]string{"AGENTS.md": "# Agents\n", "MEMORY.md": "likes coffee now\n"}, s3Files(t, remote)); diff != "" {
		t.Errorf("bad input changed the bucket (-want +got):\n%s", diff)
	}
}

// s3Files maps the files of f to their contents.
func s3Files(t *testing.T, f filestore.FS) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	if err := f.Walk(ctx, ".", func(name string, _ filestore.Entry) error {
		data, _, err := f.ReadFile(ctx, name, 1<<20)
		out[name] = string(data)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
