package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/ecs"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

// TestRunnerBinary plays the sandbox task with the runner binary itself,
// built here, started by the fake ECS with the overrides' environment
// against the fake S3, as Fargate would start it: commands run, the
// workspace goes in and back, the task closes after its idle time and
// exits 0, and StopTask's SIGTERM ends it with 0.
func TestRunnerBinary(t *testing.T) {
	bin := buildRunner(t)
	endpoint, bucket, ws := cloudtest.S3Workspace(t, "main")
	name, _ := bucket.Bucket()
	if _, err := ws.WriteFile(t.Context(), "in.txt", []byte("from the bucket\n"), filestore.Absent); err != nil {
		t.Fatal(err)
	}
	fake := cloudtest.NewECS(t)
	fake.Play(func(ctx context.Context, env map[string]string) int {
		return runTask(ctx, t, exec.CommandContext(ctx, bin), endpoint, filepath.Join(t.TempDir(), "workspace"), env)
	})
	b := backend(t, fake, bucket, name)
	exec1 := func(command string) sandbox.Result {
		t.Helper()
		res, err := b.Exec(t.Context(), sandbox.Request{Owner: "key:a", SessionID: "s1", Agent: "main", Command: command, Workspace: ws})
		if err != nil {
			t.Fatalf("Exec(%q): %v", command, err)
		}
		res.Duration = 0
		return res
	}
	if diff := cmp.Diff(sandbox.Result{Stdout: "from the bucket\n", ExitCode: 4}, exec1("cat in.txt; echo back > out.txt; exit 4")); diff != "" {
		t.Errorf("first command (-want +got):\n%s", diff)
	}
	data, _, err := ws.ReadFile(t.Context(), "out.txt", 100)
	if err != nil || string(data) != "back\n" {
		t.Errorf("out.txt in the bucket: %q, %v", data, err)
	}
	// The runner's environment (the task's) stays out of the command's.
	if got := exec1("env | cut -d= -f1 | sort | tr '\\n' ' '"); strings.Contains(got.Stdout, "AWS_") || strings.Contains(got.Stdout, "SANDBOX_") || strings.Contains(got.Stdout, "S3_") {
		t.Errorf("the command's environment: %s", got.Stdout)
	}
	first := fake.Tasks()[0]
	if status, code := fake.Wait(first, 30*time.Second); status != "STOPPED" || code != 0 {
		t.Errorf("idle runner: %s, exit code %d; want STOPPED, 0", status, code)
	}

	// A warm task stopped by ECS exits 0 on SIGTERM.
	exec1("true")
	second := fake.Tasks()[1]
	if err := fake.Client().StopTask(t.Context(), cloudtest.ECSCluster, second.ARN, "test"); err != nil {
		t.Fatal(err)
	}
	if status, code := fake.Wait(second, 30*time.Second); status != "STOPPED" || code != 0 {
		t.Errorf("stopped runner: %s, exit code %d; want STOPPED, 0", status, code)
	}
}

// TestRunnerAsInit runs the runner as in the task: PID 1 of its own PID
// namespace, as an unprivileged user. A command cannot read the runner's
// environment (/proc/1/environ, where ECS names the task's credentials
// endpoint), and what it left running, even outside its process group,
// is gone before the next command.
func TestRunnerAsInit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make a PID namespace and drop to nobody")
	}
	for _, tool := range []string{"unshare", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: %v", tool, err)
		}
	}
	bin := buildRunner(t)
	endpoint, bucket, ws := cloudtest.S3Workspace(t, "main")
	name, _ := bucket.Bucket()
	// Where nobody may make the workspace (t.TempDir's parent is root's
	// alone).
	dir, err := os.MkdirTemp("", "lambdaclaw-sandbox-init-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	fake := cloudtest.NewECS(t)
	fake.Play(func(ctx context.Context, env map[string]string) int {
		cmd := exec.CommandContext(ctx, "unshare", "--pid", "--fork", "--mount-proc", "--kill-child",
			"setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", bin)
		return runTask(ctx, t, cmd, endpoint, filepath.Join(dir, "workspace"), env)
	})
	b := backend(t, fake, bucket, name)
	run := func(command string) sandbox.Result {
		t.Helper()
		res, err := b.Exec(t.Context(), sandbox.Request{Owner: "key:a", SessionID: "s1", Command: command, Workspace: ws})
		if err != nil {
			t.Fatalf("Exec(%q): %v", command, err)
		}
		return res
	}
	got := run("setsid sleep 1000 > /dev/null 2>&1 < /dev/null & id -u; cat /proc/1/environ; echo \"environ: $?\"")
	if got.Stdout != "65534\nenviron: 1\n" || !strings.Contains(got.Stderr, "Permission denied") {
		t.Errorf("reading the runner's environment: %+v", got)
	}
	got = run("cat /proc/[0-9]*/comm | sort | tr '\\n' ' '")
	if strings.Contains(got.Stdout, "sleep") || !strings.Contains(got.Stdout, "sandbox") {
		t.Errorf("processes before the second command: %q, want the runner and no sleep", got.Stdout)
	}
}

// runTask runs cmd, the runner, as the task with the overrides' env, and
// returns its exit code; ctx's end (StopTask) sends it SIGTERM.
func runTask(ctx context.Context, t *testing.T, cmd *exec.Cmd, endpoint, dir string, env map[string]string) int {
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.Env = []string{"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_REGION=us-east-1",
		"S3_ENDPOINT=" + endpoint, "SANDBOX_DIR=" + dir}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	t.Logf("runner output:\n%s", out)
	if cmd.ProcessState == nil {
		t.Errorf("runner: %v", err)
		return -1
	}
	return cmd.ProcessState.ExitCode()
}

// backend is a Backend over the fake ECS and the bucket.
func backend(t *testing.T, fake *cloudtest.ECS, bucket filestore.FS, name string) *ecs.Backend {
	t.Helper()
	b, err := ecs.New(fake.Client(), ecs.Config{
		Cluster: cloudtest.ECSCluster, TaskDefinition: cloudtest.ECSTaskDefinition, Container: cloudtest.ECSContainer,
		Subnets: []string{"subnet-1"}, SecurityGroups: []string{"sg-1"},
		Bucket: bucket, BucketName: name, Idle: 500 * time.Millisecond,
		Poll: 10 * time.Millisecond, Describe: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// buildRunner builds the runner binary once, where any user may run it.
func buildRunner(t *testing.T) string {
	t.Helper()
	bin, err := built()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

var built = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "lambdaclaw-sandbox-runner-")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "sandbox")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, os.Chmod(dir, 0o755)
})

// binDir is where built put the binary, removed after the tests.
var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// TestRunnerRefusesBadEnvironment: without its environment the runner
// exits 1 at once.
func TestRunnerRefusesBadEnvironment(t *testing.T) {
	env := map[string]string{"SANDBOX_BUCKET": "b", "SANDBOX_CONTROL": "../etc", "SANDBOX_IDLE": "5m", "SANDBOX_DIR": t.TempDir()}
	if code := run(t.Context(), func(k string) string { return env[k] }); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if _, err := os.Stat(filepath.Join(env["SANDBOX_DIR"], "x")); !errors.Is(err, os.ErrNotExist) {
		t.Error("it wrote to its directory")
	}
}
