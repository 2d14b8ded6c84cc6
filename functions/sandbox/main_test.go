package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsecs "github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/ecs"
	s3fs "github.com/lambdaclaw/lambdaclaw/shared/adapters/s3"
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
	bin := filepath.Join(t.TempDir(), "sandbox")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	endpoint, name := cloudtest.S3(t)
	bucket, err := s3fs.New(cloudtest.S3Client(endpoint), name, "")
	if err != nil {
		t.Fatal(err)
	}
	ws, err := bucket.Sub("agents/main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ws.WriteFile(t.Context(), "in.txt", []byte("from the bucket\n"), filestore.Absent); err != nil {
		t.Fatal(err)
	}
	fake := cloudtest.NewECS(t)
	fake.Play(func(ctx context.Context, env map[string]string) int {
		cmd := exec.CommandContext(ctx, bin)
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		cmd.Env = []string{"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_REGION=us-east-1",
			"S3_ENDPOINT=" + endpoint, "SANDBOX_DIR=" + filepath.Join(t.TempDir(), "workspace")}
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
	})
	b, err := ecs.New(fake.Client(), ecs.Config{
		Cluster: cloudtest.ECSCluster, TaskDefinition: cloudtest.ECSTaskDefinition, Container: cloudtest.ECSContainer,
		Subnets: []string{"subnet-1"}, SecurityGroups: []string{"sg-1"},
		Bucket: bucket, BucketName: name, Idle: 500 * time.Millisecond,
		Poll: 10 * time.Millisecond, Describe: 50 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
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
	if _, err := fake.Client().StopTask(t.Context(), stopInput(second.ARN)); err != nil {
		t.Fatal(err)
	}
	if status, code := fake.Wait(second, 30*time.Second); status != "STOPPED" || code != 0 {
		t.Errorf("stopped runner: %s, exit code %d; want STOPPED, 0", status, code)
	}
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

func stopInput(arn string) *awsecs.StopTaskInput {
	return &awsecs.StopTaskInput{Cluster: aws.String(cloudtest.ECSCluster), Task: aws.String(arn), Reason: aws.String("test")}
}
