package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

func TestDoctorStack(t *testing.T) {
	newStackFixture(t)
	cw := cloudtest.NewCloudWatch(t)
	t.Setenv(envCloudWatchEndpoint, cw.URL)
	since := time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC)
	cw.Put(
		cloudtest.Alarm{Name: stackTable + "-LoopFailedAlarm-1A2B3C", State: "OK"},
		cloudtest.Alarm{Name: stackTable + "-ApiErrorsAlarm-4D5E6F", State: "INSUFFICIENT_DATA"},
		// Another stack's alarm is not this stack's.
		cloudtest.Alarm{Name: "other-LoopFailedAlarm-777", State: "ALARM", Since: since, Reason: "Threshold Crossed"},
	)
	doctor := func(stack string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(context.Background(), []string{"doctor", "--stack", stack}, &out, &errOut)
		return out.String(), err
	}
	want := func(out, pattern string) {
		t.Helper()
		if !regexp.MustCompile(`(?m)` + pattern).MatchString(out) {
			t.Errorf("report has no line matching %q:\n%s", pattern, out)
		}
	}

	out, err := doctor(stackTable)
	if err != nil {
		t.Fatalf("doctor --stack %s: %v\n%s", stackTable, err, out)
	}
	want(out, `^ok +stack +stack test \(us-east-1\) is UPDATE_COMPLETE$`)
	want(out, `^ok +outputs +TableName, Agents, WorkspaceBucket present$`)
	want(out, `^ok +table +table \S+ is ACTIVE$`)
	want(out, `^ok +alarms +none of the stack's 2 alarms is in ALARM$`)

	cw.Put(cloudtest.Alarm{Name: stackTable + "-StepErrorsAlarm-9Z", State: "ALARM", Since: since, Reason: "Threshold Crossed: 1 datapoint [3.0] was greater than the threshold (0.0)."})
	out, err = doctor(stackTable)
	if err == nil || err.Error() != "doctor: 1 of 4 checks failed" {
		t.Errorf("doctor with an alarm in ALARM: %v, want 1 of 4 checks failed", err)
	}
	want(out, `^FAIL +alarms +1 of 3 alarms in ALARM: test-StepErrorsAlarm-9Z since 2026-11-25T08:00:00Z \(Threshold Crossed: 1 datapoint .*\)\. Fix: read the failing functions' logs`)

	// An alarm's description (infra/alarms.go) says what to do: it is the fix.
	cw.Put(cloudtest.Alarm{Name: stackTable + "-Api5XXAlarm-8Y", State: "ALARM", Since: since, Reason: "Threshold Crossed",
		Description: "lambdaclaw: the REST API answered with 5XX errors. Read the api function's log group"})
	out, _ = doctor(stackTable)
	want(out, `^FAIL +alarms +2 of 4 alarms in ALARM: .*\. Fix: the REST API answered with 5XX errors\. Read the api function's log group$`)

	// A command it names is given this stack's name.
	cw.Put(cloudtest.Alarm{Name: stackTable + "-RunFailuresDepthAlarm-7X", State: "ALARM", Since: since, Reason: "Threshold Crossed",
		Description: "lambdaclaw: messages wait in the dead-letter queue RunFailures. Run `lambdaclaw runs list --stack <stack name>`"})
	out, _ = doctor(stackTable)
	want(out, "Run `lambdaclaw runs list --stack "+stackTable+"`$")

	out, _ = doctor(stackNoTable)
	want(out, `^FAIL +table +table lambdaclaw-deleted \(output TableName\) does not exist in us-east-1\. Fix: `)
	want(out, `^info +alarms +the stack has no alarms named gone-`)

	out, _ = doctor(stackNoOutputs)
	want(out, `^FAIL +stack +stack failed \(us-east-1\) is ROLLBACK_COMPLETE\. Fix: read why in the stack's events`)
	want(out, `^FAIL +outputs +stack "failed" \(ROLLBACK_COMPLETE\) has no output TableName, Agents, WorkspaceBucket`)

	out, err = doctor("nosuch")
	if err == nil {
		t.Error("doctor of a missing stack succeeded")
	}
	want(out, `^FAIL +stack +no stack "nosuch" in us-east-1: .*\. Fix: check the stack's name and Region`)
}
