// Package cloudtest sets up what the Lambda functions' tests run against:
// a fresh table in DynamoDB Local (DYNAMODB_ENDPOINT, set by `make test`),
// the scripted OpenAI-compatible fake LLM (tests/fakellm), a fake Step
// Functions endpoint and a fake API Gateway Management API, both httptest
// servers speaking the real wire protocols to the clients of
// shared/adapters/awsapi, as AWS answers them.
// Setup points the environment of shared/wiring/cloud at them, so a function's
// handler is built exactly as in Lambda. Fakes stand only at the edge.
//
// The fake Step Functions can also play the loop's state machine
// (infra/statemachine.go) for the executions it starts, invoking a step
// handler the way the definition's tasks do. The fake ECS (ecs.go) plays
// the sandbox's Fargate tasks, with the runner, for the ecs backend.
//
// Like every package under tests/, cloudtest is test support: only tests
// import it (tests/lambdadeps checks that no production package does).
package cloudtest

import (
	"context"
	"encoding/json"
	s3fs "github.com/lambdaclaw/lambdaclaw/shared/adapters/s3"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/dynamo"
	"github.com/lambdaclaw/lambdaclaw/shared/channels/apikey"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/fargate"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/turns"
	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// SampleKey is the API key of the events/ samples; Setup stores it.
const SampleKey = "lc_SampleKeyOfTheEventsFolder00000000000000000"

// StateMachineARN is the state machine Setup configures.
const StateMachineARN = "arn:aws:states:us-east-1:123456789012:stateMachine:Lambdaclaw-loop"

// Env is the test environment of one test.
type Env struct {
	// Store is the table, for setting up and checking records;
	// TableName is its name.
	Store     *dynamo.Store
	TableName string
	// Key is SampleKey's record.
	Key    store.APIKey
	LLM    *fakellm.Server
	SFN    *SFN
	Lambda *Lambda
	APIGW  *Management
	// Scheduler is EventBridge Scheduler (SCHEDULER_ENDPOINT), its group
	// SchedulerGroup, on the real clock.
	Scheduler *Scheduler
	// Files is the workspace bucket (WORKSPACE_BUCKET) in an S3-compatible
	// server (S3).
	Files *s3fs.FS

	table *Table
}

// Root builds the adapters as the Lambda function named function does
// (NewRoot, from the environment), with that function's grants on the
// table (Table.Policed).
func (e *Env) Root(t *testing.T, function string) *cloud.Root {
	t.Helper()
	prev := os.Getenv("DYNAMODB_ENDPOINT")
	t.Setenv("DYNAMODB_ENDPOINT", e.table.Policed(t, function))
	r, err := NewRoot(t.Context(), function)
	t.Setenv("DYNAMODB_ENDPOINT", prev)
	if err != nil {
		t.Fatalf("cloud.New as the %s function: %v", function, err)
	}
	return r
}

// NewRoot builds the root of the Lambda function named function from the
// environment, with the parts that function's main builds: the step
// function runs the loop's steps with the sandbox, the api function its
// stateless turns (turns.New); the others start runs only (cloud.New).
func NewRoot(ctx context.Context, function string) (*cloud.Root, error) {
	switch function {
	case "step":
		return turns.New(ctx, fargate.Exec)
	case "api":
		return turns.New(ctx, nil)
	}
	return cloud.New(ctx)
}

// Policed returns an endpoint of the table that lets through only what
// the deployment grants function (Table.Policed).
func (e *Env) Policed(t *testing.T, function string) string {
	t.Helper()
	return e.table.Policed(t, function)
}

// PlayStep makes the fake Step Functions run the executions it starts
// (SFN.Play) with the step function's handler, built as Root(t, "step").
func (e *Env) PlayStep(t *testing.T) {
	t.Helper()
	e.SFN.Play(e.Root(t, "step").Driver.Handle)
}

// PlayInline turns the inline driver on (RUN_FUNCTION) for the handlers
// built from now on, and makes the fake Lambda run the runs they invoke
// with the step function's handler, built as Root(t, "step"), whose
// hand-overs the fake Step Functions plays with the same handler. The
// inline leases run on the clock now returns; before Lambda retries a
// failed attempt, retry runs (a test moves its clock on there, as Lambda
// waits a minute and more). It returns the step function's root.
func (e *Env) PlayInline(t *testing.T, now func() time.Time, retry func()) *cloud.Root {
	t.Helper()
	t.Setenv("RUN_FUNCTION", RunFunction)
	root := e.Root(t, "step")
	if root.Driver.Inline == nil {
		t.Fatal("RUN_FUNCTION is set but the step function's driver does not run inline")
	}
	root.Driver.Inline.Now = now
	e.Lambda.Play(root.Driver.Handle, retry)
	e.SFN.Play(root.Driver.Handle)
	return root
}

// Setup creates a table and the fakes, stores SampleKey (supervised
// autonomy, no rate limit) and sets the environment (t.Setenv, so the
// test may not be parallel). In the tests of a deployed Lambda function
// (the package directory functions/<name>), DYNAMODB_ENDPOINT lets
// through only what the deployment grants that function (Table.Policed). Without
// DYNAMODB_ENDPOINT the test fails, unless LAMBDACLAW_SKIP_DYNAMODB=1
// skips it.
func Setup(t *testing.T) *Env {
	t.Helper()
	table := NewTable(t)
	SetCredentials(t)
	key := store.APIKey{ID: "key_sample", Name: "events", Hash: apikey.Hash(SampleKey), Prefix: SampleKey[:9],
		Autonomy: "supervised", CreatedAt: time.Now().UTC()}
	if err := table.Store.CreateKey(t.Context(), key); err != nil {
		t.Fatal(err)
	}

	e := &Env{Store: table.Store, TableName: table.Name, Key: key, LLM: fakellm.New(), SFN: NewSFN(t), Lambda: NewLambda(t),
		APIGW: NewManagement(t), Scheduler: NewScheduler(t, nil), table: table}
	t.Cleanup(e.LLM.Close)
	s3Endpoint, bucket := S3(t)
	e.Files = s3FS(t, s3Endpoint, bucket, "")
	endpoint := table.Endpoint
	if fn := testedFunction(t); fn != "" {
		endpoint = table.Policed(t, fn)
	}
	for k, v := range map[string]string{
		"TABLE_NAME": table.Name, "DYNAMODB_ENDPOINT": endpoint, "SESSION_TTL": "",
		"STATE_MACHINE_ARN": StateMachineARN, "STEPFUNCTIONS_ENDPOINT": e.SFN.URL,
		"WS_ENDPOINT": e.APIGW.URL, "WORKSPACE_BUCKET": bucket, "S3_ENDPOINT": s3Endpoint,
		"LAMBDA_ENDPOINT": e.Lambda.URL, "RUN_FUNCTION": "",
		"SCHEDULER_ENDPOINT": e.Scheduler.URL, "SCHEDULE_GROUP": SchedulerGroup,
		"SCHEDULER_ROLE_ARN": SchedulerRoleARN, "SCHEDULER_TARGET_ARN": SchedulerTargetARN, "SCHEDULER_DEAD_LETTER_ARN": SchedulerDeadLetterARN,
		"DEFAULT_PROVIDER": "openai", "OPENAI_BASE_URL": e.LLM.URL + "/v1", "OPENAI_MODEL": "fake-model",
		"OPENAI_API_KEY": "sk-fake", "OPENAI_API_KEY_SECRET_ARN": "", "BEDROCK_MODEL": "",
		"AGENTS_CONFIG": "", "SESSION_SHARING": "", "LOG_LEVEL": "error", "MAX_REPLY_BYTES": "",
		"WEB_SEARCH_PROVIDER": "", "WEB_SEARCH_URL": "", "WEB_SEARCH_KEY_SECRET": "",
	} {
		t.Setenv(k, v)
	}
	return e
}

// SetCredentials sets the AWS SDK's environment (t.Setenv) to the static
// credentials local/local in us-east-1, with no profile, config file or
// instance metadata: the user's own AWS configuration never leaks in.
func SetCredentials(t *testing.T) {
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_SESSION_TOKEN": "",
		"AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": os.DevNull, "AWS_SHARED_CREDENTIALS_FILE": os.DevNull,
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "",
	} {
		t.Setenv(k, v)
	}
}

// testedFunction returns the name of the deployed Lambda function whose
// tests run (the working directory is functions/<name>, and the stack
// grants <name> access to the table), or "".
func testedFunction(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(filepath.Dir(dir)) != "functions" {
		return ""
	}
	if _, ok := loadAccess(t)[filepath.Base(dir)]; !ok {
		return ""
	}
	return filepath.Base(dir)
}

// LoadEvent reads the sample events/<name> into v; name is relative to
// the events directory of the repository, found above the working
// directory.
func LoadEvent(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(EventPath(t, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("events/%s: %v", name, err)
	}
}

// EventPath returns the path of events/<name>.
func EventPath(t *testing.T, name string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "events", filepath.FromSlash(name))
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no go.mod above %s", dir)
		}
	}
}

// Wait polls cond every 20 ms until it holds or timeout passes.
func Wait(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
