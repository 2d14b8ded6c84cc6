package tests

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/apigw"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/core/schedule"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/turns"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

// TestStackAdmin administers a deployment from the command line: the real
// binary creates a key with `keys create --stack`, reading the table's
// name from the stack's outputs (a fake CloudFormation) and writing to
// DynamoDB Local; the api function's handler, built as in Lambda, accepts
// the key; after `keys revoke --stack` it refuses it.
func TestStackAdmin(t *testing.T) {
	env := cloudtest.Setup(t)
	cfn := cloudtest.NewCloudFormation(t)
	bucket, _ := env.Files.Bucket()
	cfn.Put("test", cloudtest.Stack{Outputs: map[string]string{"TableName": env.TableName, "Agents": "default", "WorkspaceBucket": bucket}})
	root, err := cloudtest.NewRoot(t.Context(), "api")
	if err != nil {
		t.Fatal(err)
	}
	h, err := turns.API(root)
	if err != nil {
		t.Fatal(err)
	}
	api := apigw.Stream(h, root.Log)
	// The CLI gets the environment Setup made (the AWS credentials and
	// Region, DYNAMODB_ENDPOINT) and an empty home of its own.
	cliEnv := append(os.Environ(), "LAMBDACLAW_HOME="+t.TempDir(), "CLOUDFORMATION_ENDPOINT="+cfn.URL)
	lambdaclaw := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Env = cliEnv
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("lambdaclaw %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return string(out)
	}
	// call sends the models sample and a stateless chat completion with
	// key and returns their status codes and bodies.
	call := func(key string) (codes []int, bodies []string) {
		t.Helper()
		for _, name := range []string{"models.json", "chat-completions.json"} {
			var ev events.APIGatewayProxyRequest
			cloudtest.LoadEvent(t, "api/"+name, &ev)
			ev.Headers["Authorization"] = "Bearer " + key
			ev.MultiValueHeaders["Authorization"] = []string{"Bearer " + key}
			resp, err := api(t.Context(), ev)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			codes, bodies = append(codes, resp.StatusCode), append(bodies, string(body))
		}
		return codes, bodies
	}

	key := strings.TrimSpace(lambdaclaw("keys", "create", "--stack", "test", "--name", "laptop"))
	if !apikey.Plausible(key) {
		t.Fatalf("keys create --stack printed %q, want the key", key)
	}
	codes, bodies := call(key)
	if codes[0] != http.StatusOK || codes[1] != http.StatusOK {
		t.Fatalf("with the new key: status %v: %v", codes, bodies)
	}
	var models struct {
		Data []struct{ ID string } `json:"data"`
	}
	if err := json.Unmarshal([]byte(bodies[0]), &models); err != nil || len(models.Data) != 1 || models.Data[0].ID != "default" {
		t.Errorf("models = %s (%v), want the default agent", bodies[0], err)
	}
	if !strings.Contains(bodies[1], "echo: What is a lambda?") {
		t.Errorf("chat completion = %s", bodies[1])
	}

	list := lambdaclaw("keys", "list", "--stack", "test")
	var id string
	for l := range strings.Lines(list) {
		if f := strings.Fields(l); len(f) > 1 && f[1] == "laptop" {
			id = f[0]
		}
	}
	if id == "" {
		t.Fatalf("keys list --stack does not list the key:\n%s", list)
	}
	lambdaclaw("keys", "revoke", id, "--stack", "test")
	codes, bodies = call(key)
	for i, c := range codes {
		if c != http.StatusUnauthorized || !strings.Contains(bodies[i], "invalid_api_key") {
			t.Errorf("after revoke: status %d: %s; want 401 invalid_api_key", c, bodies[i])
		}
	}
	// The sample key, created otherwise, still works.
	if codes, _ = call(cloudtest.SampleKey); codes[0] != http.StatusOK {
		t.Errorf("the sample key got %d after another key was revoked", codes[0])
	}
}

// TestStackAdminErrors runs the binary on bad stacks: it exits 1 with a
// clear message on stderr and prints nothing on stdout.
func TestStackAdminErrors(t *testing.T) {
	cloudtest.SetCredentials(t)
	cfn := cloudtest.NewCloudFormation(t)
	cfn.Put("half", cloudtest.Stack{Status: "CREATE_IN_PROGRESS"})
	for _, tc := range []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"keys", "create", "--stack", "nope"}, nil, `lambdaclaw: no stack "nope" in us-east-1`},
		{[]string{"status", "--stack", "half"}, nil, `lambdaclaw: stack "half" (CREATE_IN_PROGRESS) has no output TableName`},
		{[]string{"keys", "list", "--stack", "half"}, []string{"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY="}, "lambdaclaw: no AWS credentials"},
	} {
		cmd := exec.Command(binary, tc.args...)
		cmd.Env = append(os.Environ(), append([]string{"LAMBDACLAW_HOME=" + t.TempDir(), "CLOUDFORMATION_ENDPOINT=" + cfn.URL}, tc.env...)...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.HasPrefix(stderr.String(), tc.want) || stdout.Len() > 0 {
			t.Errorf("lambdaclaw %s: exit %d (%v), stdout %q, stderr %q; want 1 and %q", strings.Join(tc.args, " "), code, err, stdout.String(), stderr.String(), tc.want)
		}
	}
}

// TestStackCron manages a deployed stack's jobs from the command line:
// the real binary makes a job with `cron add --stack` (a schedule in the
// stack's group, the job in DynamoDB Local), lists, pauses and resumes
// it; `cron run --stack` asks the scheduler function (played by the fake
// Lambda with its handler, as built in Lambda) to fire it, and the turn
// runs through the state machine; `cron rm --stack` deletes the job and
// its schedule. Intervals under a minute and other owners' ids are
// refused.
// stackCLI returns functions that run the lambdaclaw binary with
// --stack test, in this environment with env added: one returns its
// output and error, must fails the test on an error.
func stackCLI(t *testing.T, env ...string) (lambdaclaw func(args ...string) (string, string, error), must func(args ...string) string) {
	cliEnv := append(append(os.Environ(), "LAMBDACLAW_HOME="+t.TempDir()), env...)
	lambdaclaw = func(args ...string) (string, string, error) {
		t.Helper()
		cmd := exec.Command(binary, append(args, "--stack", "test")...)
		cmd.Env = cliEnv
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		return string(out), stderr.String(), err
	}
	must = func(args ...string) string {
		t.Helper()
		out, stderr, err := lambdaclaw(args...)
		if err != nil {
			t.Fatalf("lambdaclaw %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		return out
	}
	return lambdaclaw, must
}

func TestStackCron(t *testing.T) {
	env := cloudtest.Setup(t)
	env.PlayStep(t)
	env.Lambda.Serve(cloudtest.SchedulerTargetARN, env.Root(t, "scheduler").Scheduler())
	cfn := cloudtest.NewCloudFormation(t)
	bucket, _ := env.Files.Bucket()
	cfn.Put("test", cloudtest.Stack{Outputs: map[string]string{"TableName": env.TableName, "Agents": "default", "WorkspaceBucket": bucket,
		"ScheduleGroup": cloudtest.SchedulerGroup, "SchedulerRoleArn": cloudtest.SchedulerRoleARN, "SchedulerFunctionArn": cloudtest.SchedulerTargetARN,
		"ScheduleFailuresArn": cloudtest.SchedulerDeadLetterARN}})
	lambdaclaw, must := stackCLI(t, "CLOUDFORMATION_ENDPOINT="+cfn.URL)

	if _, stderr, err := lambdaclaw("cron", "add", "--every", "30s", "--message", "too often"); err == nil || !strings.Contains(stderr, "shorter than 1m0s") {
		t.Errorf("every 30s on a stack: %v, %q; want it refused", err, stderr)
	}
	id := lastLine(must("cron", "add", "--every", "5m", "--message", "What is a lambda?", "--name", "quiz"))
	if s, ok := env.Scheduler.Schedules()[id]; !ok || s.Expression != "rate(5 minutes)" || s.State != "ENABLED" || s.TargetArn != cloudtest.SchedulerTargetARN ||
		s.DeadLetterArn != cloudtest.SchedulerDeadLetterARN {
		t.Fatalf("schedule of %s = %+v, %v; want rate(5 minutes) targeting the scheduler function, with the stack's dead-letter queue", id, s, ok)
	}
	if list := must("cron", "list"); !strings.Contains(list, id) || !strings.Contains(list, "quiz") {
		t.Errorf("cron list --stack = %q; want the job", list)
	}
	must("cron", "pause", id)
	if s := env.Scheduler.Schedules()[id]; s.State != "DISABLED" {
		t.Errorf("paused job's schedule is %s", s.State)
	}
	must("cron", "resume", id)
	if _, stderr, err := lambdaclaw("cron", "run", id, "--owner", "key:someone-else"); err == nil || !strings.Contains(stderr, "no job") {
		t.Errorf("another owner's cron run: %v, %q; want no job", err, stderr)
	}

	out := must("cron", "run", id)
	if !strings.Contains(out, "started") {
		t.Fatalf("cron run --stack = %q", out)
	}
	run := schedule.Run{}
	waitFor(t, "the run of cron run --stack", 20*time.Second, func() bool {
		runs, err := env.Store.Schedule(nil, nil).Runs(t.Context(), "user:local", id, 10)
		if err == nil && len(runs) == 1 && runs[0].Status != schedule.RunRunning {
			run = runs[0]
			return true
		}
		return false
	})
	if run.Status != schedule.RunDone || !run.Manual || !strings.Contains(run.Reply, "echo: What is a lambda?") {
		t.Errorf("run = %+v; want a done manual run with the model's answer", run)
	}
	if runs := must("cron", "runs", id); !strings.Contains(runs, "done (manual)") {
		t.Errorf("cron runs --stack = %q", runs)
	}

	must("cron", "rm", id)
	if _, ok := env.Scheduler.Schedules()[id]; ok {
		t.Error("the deleted job's schedule is still there")
	}
	if _, stderr, err := lambdaclaw("cron", "run", id); err == nil || !strings.Contains(stderr, "no job") {
		t.Errorf("cron run --stack of a deleted job: %v, %q", err, stderr)
	}
}
