package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

// stackModel is the Bedrock model of the test stack's functions.
const stackModel = "global.anthropic.claude-haiku-4-5-20251001-v1:0"

// newDoctorFixture is newStackFixture with the fakes doctor --stack
// calls besides: CloudWatch, Bedrock, and the step function of the stack
// stackTable, configured with stackModel.
func newDoctorFixture(t *testing.T) (*stackFixture, *cloudtest.CloudWatch, *cloudtest.Bedrock) {
	f := newStackFixture(t)
	cw := cloudtest.NewCloudWatch(t)
	t.Setenv(envCloudWatchEndpoint, cw.URL)
	br := cloudtest.NewBedrock(t)
	t.Setenv(envBedrockEndpoint, br.URL)
	f.env.Lambda.Configure(stackTable+"-step", map[string]string{"BEDROCK_MODEL": stackModel, "DEFAULT_PROVIDER": "bedrock"})
	return f, cw, br
}

// stackDoctorRun runs doctor --stack stack and returns its report.
func stackDoctorRun(stack string) (string, error) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"doctor", "--stack", stack}, &out, &errOut)
	return out.String(), err
}

// wantLine fails t unless the report out has a line matching pattern.
func wantLine(t *testing.T, out, pattern string) {
	t.Helper()
	if !regexp.MustCompile(`(?m)` + pattern).MatchString(out) {
		t.Errorf("report has no line matching %q:\n%s", pattern, out)
	}
}

func TestDoctorStack(t *testing.T) {
	_, cw, _ := newDoctorFixture(t)
	since := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	cw.Put(
		cloudtest.Alarm{Name: stackTable + "-LoopFailedAlarm-1A2B3C", State: "OK"},
		cloudtest.Alarm{Name: stackTable + "-ApiErrorsAlarm-4D5E6F", State: "INSUFFICIENT_DATA"},
		// Another stack's alarm is not this stack's.
		cloudtest.Alarm{Name: "other-LoopFailedAlarm-777", State: "ALARM", Since: since, Reason: "Threshold Crossed"},
	)
	want := func(out, pattern string) {
		t.Helper()
		wantLine(t, out, pattern)
	}

	out, err := stackDoctorRun(stackTable)
	if err != nil {
		t.Fatalf("doctor --stack %s: %v\n%s", stackTable, err, out)
	}
	want(out, `^ok +stack +stack test \(us-east-1\) is UPDATE_COMPLETE$`)
	want(out, `^ok +outputs +TableName, Agents, WorkspaceBucket present$`)
	want(out, `^ok +table +table \S+ is ACTIVE$`)
	want(out, `^ok +alarms +none of the stack's 2 alarms is in ALARM$`)
	want(out, `^ok +model +a one-token call to `+regexp.QuoteMeta(stackModel)+` in us-east-1 answered$`)
	want(out, `^ok +lambda concurrency +the account may run 1000 executions at once in us-east-1, 1000 of them unreserved$`)

	cw.Put(cloudtest.Alarm{Name: stackTable + "-StepErrorsAlarm-9Z", State: "ALARM", Since: since, Reason: "Threshold Crossed: 1 datapoint [3.0] was greater than the threshold (0.0)."})
	out, err = stackDoctorRun(stackTable)
	if err == nil || err.Error() != "doctor: 1 of 6 checks failed" {
		t.Errorf("doctor with an alarm in ALARM: %v, want 1 of 6 checks failed", err)
	}
	want(out, `^FAIL +alarms +1 of 3 alarms in ALARM: test-StepErrorsAlarm-9Z since 2026-11-25T08:00:00Z \(Threshold Crossed: 1 datapoint .*\)\. Fix: read the failing functions' logs`)

	// An alarm's description (infra/alarms.go) says what to do: it is the fix.
	cw.Put(cloudtest.Alarm{Name: stackTable + "-Api5XXAlarm-8Y", State: "ALARM", Since: since, Reason: "Threshold Crossed",
		Description: "lambdaclaw: the REST API answered with 5XX errors. Read the api function's log group"})
	out, _ = stackDoctorRun(stackTable)
	want(out, `^FAIL +alarms +2 of 4 alarms in ALARM: .*\. Fix: the REST API answered with 5XX errors\. Read the api function's log group$`)

	// A command it names is given this stack's name.
	cw.Put(cloudtest.Alarm{Name: stackTable + "-RunFailuresDepthAlarm-7X", State: "ALARM", Since: since, Reason: "Threshold Crossed",
		Description: "lambdaclaw: messages wait in the dead-letter queue RunFailures. Run `lambdaclaw runs list --stack <stack name>`"})
	out, _ = stackDoctorRun(stackTable)
	want(out, "Run `lambdaclaw runs list --stack "+stackTable+"`$")

	out, _ = stackDoctorRun(stackNoTable)
	want(out, `^FAIL +table +table lambdaclaw-deleted \(output TableName\) does not exist in us-east-1\. Fix: `)
	want(out, `^info +alarms +the stack has no alarms named gone-`)
	want(out, `^FAIL +model +the stack has no function gone-step in us-east-1\. Fix: make deploy$`)

	out, _ = stackDoctorRun(stackNoOutputs)
	want(out, `^FAIL +stack +stack failed \(us-east-1\) is ROLLBACK_COMPLETE\. Fix: read why in the stack's events`)
	want(out, `^FAIL +outputs +stack "failed" \(ROLLBACK_COMPLETE\) has no output TableName, Agents, WorkspaceBucket`)

	out, err = stackDoctorRun("nosuch")
	if err == nil {
		t.Error("doctor of a missing stack succeeded")
	}
	want(out, `^FAIL +stack +no stack "nosuch" in us-east-1: .*\. Fix: check the stack's name and Region`)
}

func TestDoctorStackModel(t *testing.T) {
	f, _, br := newDoctorFixture(t)
	out, _ := stackDoctorRun(stackTable)
	wantLine(t, out, `^ok +model +a one-token call to `+regexp.QuoteMeta(stackModel)+` in us-east-1 answered$`)
	calls := br.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d Converse calls, want 1", len(calls))
	}
	if got := fmt.Sprint(calls[0]["inferenceConfig"].(map[string]any)["maxTokens"]); got != "1" {
		t.Errorf("the call's maxTokens is %s, want 1", got)
	}

	for _, tc := range []struct {
		name string
		e    cloudtest.BedrockError
		want string
	}{
		{"no model access", cloudtest.BedrockError{Status: 403, Code: "AccessDeniedException", Message: "You don't have access to the model with the specified model ID."},
			`^FAIL +model +a one-token call to \S+ in us-east-1 failed: .*AccessDeniedException.*\. Fix: enable access to \S+ for the account in us-east-1 in the Bedrock console`},
		{"credentials not allowed", cloudtest.BedrockError{Status: 403, Code: "AccessDeniedException",
			Message: "User: arn:aws:iam::123456789012:user/ada is not authorized to perform: bedrock:InvokeModel on resource: arn:aws:bedrock:us-east-1::foundation-model/x"},
			`^FAIL +model +.*\. Fix: allow your credentials bedrock:InvokeModel on the model`},
		{"unknown model", cloudtest.BedrockError{Status: 404, Code: "ResourceNotFoundException", Message: "Model not found"},
			`^FAIL +model +.*\. Fix: us-east-1 does not offer that model: set the stack's model \(make deploy CDK_FLAGS='-c model=ID'\) to one it lists`},
		{"no on-demand", cloudtest.BedrockError{Status: 400, Code: "ValidationException",
			Message: "Invocation of model ID anthropic.claude-haiku-4-5-20251001-v1:0 with on-demand throughput isn't supported. Retry your request with the ID or ARN of an inference profile that contains this model."},
			`^FAIL +model +.*\. Fix: the model is called through an inference profile`},
		{"throttled", cloudtest.BedrockError{Status: 429, Code: "ThrottlingException", Message: "Too many requests, please wait before trying again."},
			`^warn +model +\S+ in us-east-1 is reachable but throttled the call: .*\. Fix: the account's Bedrock quota for the model is used up or low`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			br.Refuse(stackModel, tc.e)
			out, err := stackDoctorRun(stackTable)
			wantLine(t, out, tc.want)
			if failed := strings.HasPrefix(tc.want, "^FAIL"); failed != (err != nil) {
				t.Errorf("doctor: %v; want a failure: %v", err, failed)
			}
		})
	}

	f.env.Lambda.Configure(stackTable+"-step", map[string]string{"DEFAULT_PROVIDER": "openai", "OPENAI_MODEL": "gpt-5-mini"})
	out, _ = stackDoctorRun(stackTable)
	wantLine(t, out, `^info +model +the functions use no Bedrock model \(test-step has no BEDROCK_MODEL\)$`)
}

func TestDoctorStackConcurrency(t *testing.T) {
	f, _, _ := newDoctorFixture(t)
	for _, tc := range []struct {
		name  string
		limit cloudtest.AccountLimit
		want  string
	}{
		{"enough", cloudtest.AccountLimit{ConcurrentExecutions: 1000, UnreservedConcurrentExecutions: 900},
			`^ok +lambda concurrency +the account may run 1000 executions at once in us-east-1, 900 of them unreserved$`},
		{"a new account", cloudtest.AccountLimit{ConcurrentExecutions: 10, UnreservedConcurrentExecutions: 10},
			`^warn +lambda concurrency +the account may run 10 executions at once in us-east-1, 10 of them unreserved; the stack may need 50 .*\. ` +
				`Fix: request more: aws service-quotas request-service-quota-increase --service-code lambda --quota-code L-B99A9384 --desired-value 1000 --region us-east-1$`},
		{"reserved by others", cloudtest.AccountLimit{ConcurrentExecutions: 1000, UnreservedConcurrentExecutions: 30},
			`^warn +lambda concurrency +.*30 of them unreserved; the stack's functions share .*\. Fix: lower other functions' reserved concurrency, or request more \(quota L-B99A9384`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.env.Lambda.SetAccount(tc.limit)
			out, err := stackDoctorRun(stackTable)
			if err != nil {
				t.Errorf("doctor: %v; a warning is no failure", err)
			}
			wantLine(t, out, tc.want)
		})
	}
}
