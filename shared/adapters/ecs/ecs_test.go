package ecs_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/ecs"
	s3fs "github.com/lambdaclaw/lambdaclaw/shared/adapters/s3"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

// rig is a backend over the fake ECS, whose tasks run the runner in this
// process against the fake S3.
type rig struct {
	backend   *ecs.Backend
	ecs       *cloudtest.ECS
	bucket    *s3fs.FS
	workspace filestore.FS
	// socket and tools are where the tasks' bridge listens and describes
	// the tools.
	socket, tools string
}

// newRig starts the fakes; tasks close after idle and look for commands
// every 5 ms.
func newRig(t testing.TB, idle time.Duration, adjust func(*ecs.Config)) *rig {
	return newRigPolling(t, idle, 5*time.Millisecond, adjust)
}

// newRigPolling is newRig whose tasks look for commands every poll.
func newRigPolling(t testing.TB, idle, poll time.Duration, adjust func(*ecs.Config)) *rig {
	t.Helper()
	endpoint, bucket, ws := cloudtest.S3Workspace(t, "main")
	name, _ := bucket.Bucket()
	fake := cloudtest.NewECS(t)
	shared := t.TempDir()
	socket, tools := filepath.Join(shared, "b.sock"), filepath.Join(shared, "tools")
	fake.Play(func(ctx context.Context, env map[string]string) int {
		te, err := ecs.ParseTaskEnv(func(k string) string { return env[k] })
		if err != nil {
			t.Errorf("task environment: %v", err)
			return 2
		}
		// A task has a bucket client of its own.
		root, err := s3fs.New(cloudtest.S3Client(t, endpoint), te.Bucket, "")
		if err != nil {
			t.Errorf("task bucket: %v", err)
			return 2
		}
		dir, err := os.MkdirTemp(t.TempDir(), "task")
		if err != nil {
			t.Errorf("task dir: %v", err)
			return 2
		}
		r := &ecs.Runner{Bucket: root, Control: te.Control, Dir: dir, Idle: te.Idle, Poll: poll, Socket: socket, ToolsDir: tools}
		if err := r.Serve(ctx); err != nil {
			return 1
		}
		return 0
	})
	cfg := ecs.Config{
		Cluster: cloudtest.ECSCluster, TaskDefinition: cloudtest.ECSTaskDefinition, Container: cloudtest.ECSContainer,
		Subnets: []string{"subnet-1"}, SecurityGroups: []string{"sg-1"},
		Bucket: bucket, BucketName: name, Idle: idle,
		Poll: 5 * time.Millisecond, Describe: 20 * time.Millisecond,
	}
	if adjust != nil {
		adjust(&cfg)
	}
	b, err := ecs.New(fake.Client(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{backend: b, ecs: fake, bucket: bucket, workspace: ws, socket: socket, tools: tools}
}

func (r *rig) exec(t *testing.T, owner, session, command string, limits sandbox.Limits) (sandbox.Result, error) {
	t.Helper()
	return r.backend.Exec(t.Context(), sandbox.Request{
		Owner: owner, Agent: "main", SessionID: session, Command: command,
		Limits: limits, Workspace: r.workspace,
	})
}

func (r *rig) write(t testing.TB, name, data string) {
	t.Helper()
	if _, err := r.workspace.WriteFile(t.Context(), name, []byte(data), filestore.Any); err != nil {
		t.Fatal(err)
	}
}

// files is the workspace in the bucket, name to content.
func (r *rig) files(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := r.workspace.Walk(t.Context(), ".", func(name string, _ filestore.Entry) error {
		data, _, err := r.workspace.ReadFile(t.Context(), name, 1<<20)
		out[name] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExec runs commands one after another in one session's warm task:
// output, exit codes, the workspace in and back, the cleared environment,
// and the limits cutting a command.
func TestExec(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "the-runner-secret")
	r := newRig(t, time.Minute, nil)
	r.write(t, "SOUL.md", "be kind\n")
	r.write(t, "old.txt", "old\n")
	small := sandbox.Limits{Output: 4096, WallTime: time.Second}
	tests := []struct {
		name    string
		command string
		limits  sandbox.Limits
		want    sandbox.Result
		files   map[string]string // the workspace after, if set
	}{
		{name: "output and exit code", command: "echo out; echo err >&2; exit 3",
			want: sandbox.Result{Stdout: "out\n", Stderr: "err\n", ExitCode: 3}},
		{name: "the workspace is the working directory", command: "cat SOUL.md; pwd",
			want: sandbox.Result{Stdout: "be kind\n" + "DIR\n"}},
		{name: "changes are written back", command: "echo hi > new.txt && mkdir -p d && echo x > d/y.txt && rm old.txt && echo more >> SOUL.md",
			files: map[string]string{"SOUL.md": "be kind\nmore\n", "new.txt": "hi\n", "d/y.txt": "x\n"}},
		{name: "a later command sees them", command: "cat d/y.txt new.txt; ls",
			want: sandbox.Result{Stdout: "x\nhi\nSOUL.md\nd\nnew.txt\n"}},
		{name: "the environment is cleared", command: "env | grep -c -e SANDBOX_ -e AWS_ -e the-runner-secret; echo $HOME",
			want: sandbox.Result{Stdout: "0\nDIR\n", ExitCode: 0}},
		{name: "wall time", command: "echo started; sleep 30", limits: small,
			want: sandbox.Result{Stdout: "started\n", ExitCode: 128 + int(syscall.SIGKILL), Cut: sandbox.WallTime}},
		{name: "output", command: "yes", limits: small,
			want: sandbox.Result{Stdout: strings.Repeat("y\n", 2048), ExitCode: 128 + int(syscall.SIGKILL), Cut: sandbox.Output}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.exec(t, "key:a", "s1", tt.command, tt.limits)
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			if got.Duration <= 0 {
				t.Errorf("Duration = %s, want > 0", got.Duration)
			}
			// The task's directory, printed last, differs by run: DIR.
			if strings.Contains(tt.want.Stdout, "DIR") {
				lines := strings.Split(got.Stdout, "\n")
				got.Stdout = strings.ReplaceAll(got.Stdout, lines[len(lines)-2], "DIR")
			}
			got.Duration = 0
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if tt.files != nil {
				if diff := cmp.Diff(tt.files, r.files(t)); diff != "" {
					t.Errorf("workspace (-want +got):\n%s", diff)
				}
			}
		})
	}
	if n := len(r.ecs.Tasks()); n != 1 {
		t.Errorf("%d tasks started, want the one warm task", n)
	}
}

// TestIdleStop: a task with no command for its idle time closes and exits
// 0; the session's next command starts a new task.
func TestIdleStop(t *testing.T) {
	r := newRig(t, 100*time.Millisecond, nil)
	if _, err := r.exec(t, "key:a", "s1", "echo one", sandbox.Limits{}); err != nil {
		t.Fatal(err)
	}
	first := r.ecs.Tasks()[0]
	if status, code := r.ecs.Wait(first, 10*time.Second); status != "STOPPED" || code != 0 {
		t.Fatalf("idle task: %s with exit code %d, want STOPPED with 0", status, code)
	}
	got, err := r.exec(t, "key:a", "s1", "echo two", sandbox.Limits{})
	if err != nil || got.Stdout != "two\n" {
		t.Fatalf("after idle: %+v, %v", got, err)
	}
	if n := len(r.ecs.Tasks()); n != 2 {
		t.Errorf("%d tasks, want 2: the closed task is not reused", n)
	}
}

// TestOwnership: a task serves one owner's session only.
func TestOwnership(t *testing.T) {
	r := newRig(t, time.Minute, nil)
	for i, c := range []struct{ owner, session string }{
		{"key:a", "s1"}, {"key:b", "s1"}, {"key:a", "s2"}, {"key:a", "s1"}, {"key:b", "s1"},
	} {
		if _, err := r.exec(t, c.owner, c.session, "echo $$ > /dev/null", sandbox.Limits{}); err != nil {
			t.Fatalf("exec %d: %v", i, err)
		}
	}
	tasks := r.ecs.Tasks()
	if len(tasks) != 3 {
		t.Fatalf("%d tasks, want 3: one per owner and session", len(tasks))
	}
	controls := map[string]bool{}
	for _, task := range tasks {
		controls[task.Env[ecs.EnvControl]] = true
	}
	if len(controls) != 3 {
		t.Errorf("tasks share control directories: %v", controls)
	}
}

// TestRunTaskFailures: capacity failures and throttling are ErrCapacity,
// and the next command, with capacity again, runs.
func TestRunTaskFailures(t *testing.T) {
	r := newRig(t, time.Minute, nil)
	r.ecs.FailRunTask("RESOURCE:CPU")
	_, err := r.exec(t, "key:a", "s1", "true", sandbox.Limits{})
	if !errors.Is(err, ecs.ErrCapacity) || !strings.Contains(err.Error(), "RESOURCE:CPU") {
		t.Errorf("capacity failure: %v, want ErrCapacity naming RESOURCE:CPU", err)
	}
	r.ecs.Throttle(1)
	_, err = r.exec(t, "key:a", "s1", "true", sandbox.Limits{})
	if !errors.Is(err, ecs.ErrCapacity) || !strings.Contains(err.Error(), "throttled") {
		t.Errorf("throttled: %v, want ErrCapacity saying throttled", err)
	}
	r.ecs.FailRunTask("ATTRIBUTE")
	_, err = r.exec(t, "key:a", "s1", "true", sandbox.Limits{})
	if err == nil || errors.Is(err, ecs.ErrCapacity) || !strings.Contains(err.Error(), "ATTRIBUTE") {
		t.Errorf("another failure: %v, want an error naming it, not ErrCapacity", err)
	}
	got, err := r.exec(t, "key:a", "s1", "echo ok", sandbox.Limits{})
	if err != nil || got.Stdout != "ok\n" {
		t.Errorf("with capacity again: %+v, %v", got, err)
	}
}

// TestStopped: a task that exits non-zero before the result is a
// StoppedError with its exit code; a warm task that died between commands
// is replaced, the command sent again.
func TestStopped(t *testing.T) {
	r := newRig(t, time.Minute, nil)
	if _, err := r.exec(t, "key:a", "s1", "echo warm", sandbox.Limits{}); err != nil {
		t.Fatal(err)
	}
	warm := r.ecs.Tasks()[0]
	if err := r.ecs.Client().StopTask(t.Context(), cloudtest.ECSCluster, warm.ARN, ""); err != nil {
		t.Fatal(err)
	}
	r.ecs.Wait(warm, 10*time.Second)
	got, err := r.exec(t, "key:a", "s1", "echo again", sandbox.Limits{})
	if err != nil || got.Stdout != "again\n" {
		t.Fatalf("after the warm task died: %+v, %v", got, err)
	}
	if n := len(r.ecs.Tasks()); n != 2 {
		t.Errorf("%d tasks, want 2", n)
	}

	r.ecs.Play(func(context.Context, map[string]string) int { return 137 })
	_, err = r.exec(t, "key:a", "s2", "echo never", sandbox.Limits{})
	var se *ecs.StoppedError
	if !errors.As(err, &se) || se.ExitCode == nil || *se.ExitCode != 137 || !strings.Contains(err.Error(), "exit code 137") {
		t.Fatalf("crashing task: %v, want a StoppedError with exit code 137", err)
	}
}

// TestNoResultInTime: a task that never answers is stopped at the
// deadline.
func TestNoResultInTime(t *testing.T) {
	r := newRig(t, time.Minute, func(c *ecs.Config) { c.Start, c.Sync = 50*time.Millisecond, 50*time.Millisecond })
	r.ecs.Play(func(ctx context.Context, _ map[string]string) int { <-ctx.Done(); return 143 })
	_, err := r.exec(t, "key:a", "s1", "true", sandbox.Limits{WallTime: time.Second})
	if err == nil || !strings.Contains(err.Error(), "no result within") {
		t.Fatalf("Exec = %v, want no result in time", err)
	}
	if status, _ := r.ecs.Wait(r.ecs.Tasks()[0], 10*time.Second); status != "STOPPED" {
		t.Errorf("task %s, want STOPPED", status)
	}
	// The session's next command goes to a new task at once.
	r.ecs.Play(func(context.Context, map[string]string) int { return 0 })
	r.exec(t, "key:a", "s1", "true", sandbox.Limits{WallTime: time.Second})
	tasks := r.ecs.Tasks()
	if len(tasks) != 2 {
		t.Fatalf("%d tasks, want a new one after the stopped one", len(tasks))
	}
	if _, err := r.bucket.Stat(t.Context(), tasks[0].Env[ecs.EnvControl]+"/req/0000000002.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a command was sent to the stopped task: %v", err)
	}
}

// TestWriteBackConflict: a file the command changed while the bucket's
// copy changed too keeps the bucket's, and the result says so.
func TestWriteBackConflict(t *testing.T) {
	r := newRig(t, time.Minute, nil)
	r.write(t, "notes.md", "first\n")
	fifo := filepath.Join(t.TempDir(), "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	type out struct {
		res sandbox.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := r.exec(t, "key:a", "s1", "read x < "+fifo+"; echo mine > notes.md; echo new > other.md", sandbox.Limits{})
		done <- out{res, err}
	}()
	// Opening the pipe waits for the command's read: the workspace is in.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	r.write(t, "notes.md", "theirs\n")
	w.WriteString("go\n")
	w.Close()
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	if !strings.Contains(o.res.Stderr, "not written back") || !strings.Contains(o.res.Stderr, "notes.md") {
		t.Errorf("stderr %q does not tell notes.md was kept", o.res.Stderr)
	}
	if diff := cmp.Diff(map[string]string{"notes.md": "theirs\n", "other.md": "new\n"}, r.files(t)); diff != "" {
		t.Errorf("workspace (-want +got):\n%s", diff)
	}
	got, err := r.exec(t, "key:a", "s1", "cat notes.md", sandbox.Limits{})
	if err != nil || got.Stdout != "theirs\n" {
		t.Errorf("next command sees %+v, %v; want the bucket's notes.md", got, err)
	}
}

// TestBadRequests: what the backend refuses before starting anything.
func TestBadRequests(t *testing.T) {
	r := newRig(t, time.Minute, nil)
	control, err := r.bucket.Sub("sandbox/x")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  sandbox.Request
	}{
		{"no owner", sandbox.Request{SessionID: "s", Command: "true", Workspace: r.workspace}},
		{"no command", sandbox.Request{Owner: "key:a", SessionID: "s", Workspace: r.workspace}},
		{"a workspace outside the bucket", sandbox.Request{Owner: "key:a", SessionID: "s", Command: "true", Workspace: filestoreOnly{r.workspace}}},
		{"the control objects as workspace", sandbox.Request{Owner: "key:a", SessionID: "s", Command: "true", Workspace: control}},
		{"the whole bucket", sandbox.Request{Owner: "key:a", SessionID: "s", Command: "true", Workspace: r.bucket}},
		{"bad limits", sandbox.Request{Owner: "key:a", SessionID: "s", Command: "true", Workspace: r.workspace, Limits: sandbox.Limits{Pids: 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := r.backend.Exec(t.Context(), tt.req); err == nil {
				t.Error("Exec accepted it")
			}
		})
	}
	if n := len(r.ecs.Tasks()); n != 0 {
		t.Errorf("%d tasks started", n)
	}
	if _, err := ecs.New(r.ecs.Client(), ecs.Config{Cluster: "c"}); !errors.Is(err, sandbox.ErrUnavailable) {
		t.Errorf("New without a task definition: %v, want ErrUnavailable", err)
	}
}

// filestoreOnly hides the adapter's Bucket method.
type filestoreOnly struct{ filestore.FS }

// TestFromEnv: the step function's environment (infra/sandbox.go) makes a
// working backend; without the sandbox it is unavailable.
func TestFromEnv(t *testing.T) {
	r := newRig(t, time.Minute, nil)
	env := map[string]string{
		ecs.EnvBackend: "fargate", ecs.EnvCluster: cloudtest.ECSCluster, ecs.EnvTaskDefinition: cloudtest.ECSTaskDefinition,
		ecs.EnvContainer: cloudtest.ECSContainer, ecs.EnvSubnets: "subnet-1, subnet-2", ecs.EnvSecurityGroups: "sg-1",
		ecs.EnvEndpoint: r.ecs.URL, ecs.EnvIdle: "1m",
	}
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}
	b, err := ecs.FromEnv(cfg, func(k string) string { return env[k] }, r.bucket, ecs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.Exec(t.Context(), sandbox.Request{Owner: "key:a", SessionID: "s", Command: "echo hi", Workspace: r.workspace})
	if err != nil || got.Stdout != "hi\n" {
		t.Errorf("Exec: %+v, %v", got, err)
	}
	var sent struct {
		NetworkConfiguration struct {
			AwsvpcConfiguration struct{ Subnets []string } `json:"awsvpcConfiguration"`
		} `json:"networkConfiguration"`
	}
	if err := json.Unmarshal(r.ecs.Tasks()[0].Input, &sent); err != nil || !slices.Equal(sent.NetworkConfiguration.AwsvpcConfiguration.Subnets, []string{"subnet-1", "subnet-2"}) {
		t.Errorf("RunTask's subnets %v (%v)", sent.NetworkConfiguration.AwsvpcConfiguration.Subnets, err)
	}
	for k, v := range map[string]string{ecs.EnvBackend: "", ecs.EnvCluster: "", ecs.EnvIdle: "soon", ecs.EnvAssignPublicIP: "yes"} {
		bad := maps.Clone(env)
		bad[k] = v
		if _, err := ecs.FromEnv(cfg, func(k string) string { return bad[k] }, r.bucket, ecs.Config{}); err == nil {
			t.Errorf("%s=%q: no error", k, v)
		} else if v == "" && !errors.Is(err, sandbox.ErrUnavailable) {
			t.Errorf("%s unset: %v, want ErrUnavailable", k, err)
		}
	}
}

// TestFromEnvPublicNetwork: with the stack's public network
// (SANDBOX_ASSIGN_PUBLIC_IP=ENABLED, infra's sandbox_network=public)
// RunTask asks for a public IP; without it, for none.
func TestFromEnvPublicNetwork(t *testing.T) {
	for _, public := range []bool{false, true} {
		t.Run(fmt.Sprint("public=", public), func(t *testing.T) {
			r := newRig(t, time.Minute, nil)
			env := map[string]string{
				ecs.EnvBackend: "fargate", ecs.EnvCluster: cloudtest.ECSCluster, ecs.EnvTaskDefinition: cloudtest.ECSTaskDefinition,
				ecs.EnvContainer: cloudtest.ECSContainer, ecs.EnvSubnets: "subnet-1", ecs.EnvSecurityGroups: "sg-1", ecs.EnvEndpoint: r.ecs.URL,
			}
			want := "DISABLED"
			if public {
				r.ecs.PublicNetwork()
				env[ecs.EnvAssignPublicIP], want = "ENABLED", "ENABLED"
			}
			cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}
			b, err := ecs.FromEnv(cfg, func(k string) string { return env[k] }, r.bucket, ecs.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if got, err := b.Exec(t.Context(), sandbox.Request{Owner: "key:a", SessionID: "s", Command: "echo hi", Workspace: r.workspace}); err != nil || got.Stdout != "hi\n" {
				t.Fatalf("Exec: %+v, %v", got, err)
			}
			var sent struct {
				NetworkConfiguration struct {
					AwsvpcConfiguration struct{ AssignPublicIp string } `json:"awsvpcConfiguration"`
				} `json:"networkConfiguration"`
			}
			if err := json.Unmarshal(r.ecs.Tasks()[0].Input, &sent); err != nil || sent.NetworkConfiguration.AwsvpcConfiguration.AssignPublicIp != want {
				t.Errorf("RunTask's assignPublicIp %q (%v), want %s", sent.NetworkConfiguration.AwsvpcConfiguration.AssignPublicIp, err, want)
			}
		})
	}
}

// BenchmarkWarmExec measures a command in a warm task with the
// production's polling (the task every 200 ms, the backend every 250 ms),
// against the fakes: what the protocol adds to a command, S3's own
// latency aside. It reports the median.
func BenchmarkWarmExec(b *testing.B) {
	r := newRigPolling(b, time.Minute, 200*time.Millisecond, func(c *ecs.Config) { c.Poll, c.Describe = 0, 0 })
	r.write(b, "notes.md", "hello\n")
	run := func() {
		if _, err := r.backend.Exec(b.Context(), sandbox.Request{Owner: "key:a", SessionID: "s", Command: "cat notes.md", Workspace: r.workspace}); err != nil {
			b.Fatal(err)
		}
	}
	run() // the cold start
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		run()
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "p50-ms")
}

// TestConcurrentCommands: two commands of one session at once both run,
// one after the other, in the one warm task.
func TestConcurrentCommands(t *testing.T) {
	r := newRig(t, time.Minute, nil)
	if _, err := r.exec(t, "key:a", "s1", "true", sandbox.Limits{}); err != nil {
		t.Fatal(err)
	}
	outs := make(chan string, 2)
	errs := make(chan error, 2)
	for _, word := range []string{"one", "two"} {
		go func() {
			res, err := r.backend.Exec(t.Context(), sandbox.Request{Owner: "key:a", SessionID: "s1", Command: "echo " + word, Workspace: r.workspace})
			errs <- err
			outs <- res.Stdout
		}()
	}
	var got []string
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		got = append(got, <-outs)
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"one\n", "two\n"}, got); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	if n := len(r.ecs.Tasks()); n != 1 {
		t.Errorf("%d tasks, want the one warm task", n)
	}
}

// TestWorkspaceLimitsAndLinks: a workspace file over the file size limit
// is an error, nothing run; a link a command makes is not written back
// and does not disturb the next sync.
func TestWorkspaceLimitsAndLinks(t *testing.T) {
	r := newRig(t, time.Minute, nil)
	r.write(t, "big.bin", strings.Repeat("x", 2048))
	_, err := r.exec(t, "key:a", "s1", "touch ran", sandbox.Limits{FileSize: 1024})
	if err == nil || !strings.Contains(err.Error(), "big.bin") {
		t.Errorf("a file over the limit: %v, want an error naming it", err)
	}
	if _, ok := r.files(t)["ran"]; ok {
		t.Error("the command ran")
	}
	if err := r.workspace.Remove(t.Context(), "big.bin"); err != nil {
		t.Fatal(err)
	}
	r.write(t, "a.txt", "a\n")
	if _, err := r.exec(t, "key:a", "s1", "ln -s /etc/passwd link && ln -s a.txt b.txt", sandbox.Limits{}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"a.txt": "a\n"}, r.files(t)); diff != "" {
		t.Errorf("workspace (-want +got):\n%s", diff)
	}
	r.write(t, "b.txt", "bucket's b\n")
	got, err := r.exec(t, "key:a", "s1", "cat a.txt b.txt", sandbox.Limits{})
	if err != nil || got.Stdout != "a\nbucket's b\n" {
		t.Errorf("after the links: %+v, %v; want the bucket's files", got, err)
	}
}

// TestWorkspaceQuota: what a command adds to the workspace is written back
// within the quota's room and the disk limit; the rest is not, and the
// command is reported cut by the disk limit.
func TestWorkspaceQuota(t *testing.T) {
	r := newRig(t, time.Minute, nil)
	r.write(t, "seed.txt", strings.Repeat("s", 100))
	tests := []struct {
		name    string
		quota   int64
		limits  sandbox.Limits
		command string
		files   []string
		cut     sandbox.Cut
	}{
		{"within", 10_000, sandbox.Limits{}, "head -c 600 /dev/zero > a.bin", []string{"a.bin", "seed.txt"}, sandbox.NotCut},
		{"over the quota", 1_500, sandbox.Limits{}, "head -c 600 /dev/zero > b.bin; head -c 600 /dev/zero > c.bin", []string{"a.bin", "b.bin", "seed.txt"}, sandbox.Disk},
		{"over the disk limit", 0, sandbox.Limits{Disk: 1 << 20}, "head -c 1500000 /dev/zero > d.bin", []string{"a.bin", "b.bin", "seed.txt"}, sandbox.Disk},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.backend.Exec(t.Context(), sandbox.Request{Owner: "key:a", Agent: "main", SessionID: "s1", Command: tt.command,
				Limits: tt.limits, Workspace: r.workspace, Quota: tt.quota})
			if err != nil {
				t.Fatal(err)
			}
			if got.Cut != tt.cut {
				t.Errorf("cut %q, want %q: %+v", got.Cut, tt.cut, got)
			}
			if diff := cmp.Diff(tt.files, slices.Sorted(maps.Keys(r.files(t)))); diff != "" {
				t.Errorf("workspace (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMain makes the test binary also the bridge's client in the tests'
// commands: "bridge-client SOCKET LINE" sends LINE and prints the reply.
func TestMain(m *testing.M) {
	if len(os.Args) == 4 && os.Args[1] == "bridge-client" {
		conn, err := net.Dial("unix", os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		conn.Write([]byte(os.Args[3] + "\n"))
		io.Copy(os.Stdout, conn)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestBridge: a script's tool calls reach the request's Bridge through
// the bucket and the step function, in order, with the tools described
// in the tools directory; a command without a bridge has no socket.
func TestBridge(t *testing.T) {
	r := newRig(t, time.Minute, func(c *ecs.Config) {
		c.ServeBridge = serveLines
		c.ToolFiles = func(defs []chat.ToolDef) map[string][]byte {
			files := map[string][]byte{}
			for _, d := range defs {
				files["index.txt"] = append(files["index.txt"], d.Name+"\n"...)
				files[d.Name+"/description.txt"] = []byte(d.Description)
			}
			return files
		}
	})
	br := &recorder{}
	client := os.Args[0] + " bridge-client " + r.socket
	command := "cat " + r.tools + "/index.txt " + r.tools + "/upper/description.txt; " +
		client + ` '{"tool":"upper","args":{"text":"hi"}}'; ` + client + ` '{"tool":"nope","args":{}}'`
	got, err := r.backend.Exec(t.Context(), sandbox.Request{Owner: "key:a", SessionID: "s1", Command: command, Workspace: r.workspace, Bridge: br})
	if err != nil {
		t.Fatal(err)
	}
	want := "nope\nupper\nUpper-cases text.\n" + `{"output":"HI"}` + "\n" + `{"error":"refused: no tool nope"}` + "\n"
	if got.Stdout != want {
		t.Errorf("stdout %q, want %q (stderr %q)", got.Stdout, want, got.Stderr)
	}
	if diff := cmp.Diff([]string{`upper {"text":"hi"}`, "nope {}"}, br.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	got, err = r.exec(t, "key:a", "s1", "test -S "+r.socket+" || echo no bridge", sandbox.Limits{})
	if err != nil || got.Stdout != "no bridge\n" {
		t.Errorf("without a bridge: %+v, %v", got, err)
	}
}

// serveLines serves the bridge's wire format, one JSON line each way per
// connection, as sandbox.ServeBridge does.
func serveLines(ctx context.Context, ln net.Listener, b sandbox.Bridge) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			line, _ := bufio.NewReader(conn).ReadBytes('\n')
			var req struct {
				Tool string          `json:"tool"`
				Args json.RawMessage `json:"args"`
			}
			var reply struct {
				Output string `json:"output,omitempty"`
				Error  string `json:"error,omitempty"`
			}
			if err := json.Unmarshal(line, &req); err != nil {
				reply.Error = err.Error()
			} else if out, err := b.Call(ctx, req.Tool, req.Args); err != nil {
				reply.Error = err.Error()
			} else {
				reply.Output = out
			}
			data, _ := json.Marshal(reply)
			conn.Write(append(data, '\n'))
		}()
	}
}

// recorder is a Bridge of upper and nope (which refuses) that keeps the
// calls, one at a time as the test's script makes them.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (b *recorder) Tools() []chat.ToolDef {
	return []chat.ToolDef{{Name: "nope", Description: "Refuses."}, {Name: "upper", Description: "Upper-cases text.\n"}}
}

func (b *recorder) Call(_ context.Context, name string, args json.RawMessage) (string, error) {
	b.mu.Lock()
	b.calls = append(b.calls, name+" "+string(args))
	b.mu.Unlock()
	if name != "upper" {
		return "", fmt.Errorf("refused: no tool %s", name)
	}
	var a struct{ Text string }
	if err := json.Unmarshal(args, &a); err != nil {
		return "", err
	}
	return strings.ToUpper(a.Text), nil
}
