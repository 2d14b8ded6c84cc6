package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/statemachine*.asl.json from the synthesized stack")

// aslPath is the state machine definition the end-to-end tests execute
// with aws-local-stepfunctions (tests/): the synthesized definition with
// the step function's ARN replaced by StepFunctionPlaceholderArn, which a
// local runner overrides by state name (taskResourceLocalHandlers) or by
// replacing the string. aslShortApprovalPath is the same definition
// synthesized with -c approval_timeout=2s, for the test of an approval
// that expires.
const (
	aslPath              = "testdata/statemachine.asl.json"
	aslShortApprovalPath = "testdata/statemachine-approval-2s.asl.json"
)

// StepFunctionPlaceholderArn stands for the step function's ARN in aslPath.
const StepFunctionPlaceholderArn = "arn:aws:lambda:us-east-1:123456789012:function:lambdaclaw-step"

// definition returns the synthesized state machine definition as ASL JSON
// with placeholders for the tokens CloudFormation resolves at deploy time.
func definition(t *testing.T, s *synthesized) []byte {
	t.Helper()
	sms := s.resources("AWS::StepFunctions::StateMachine")
	if len(sms) != 1 {
		t.Fatalf("%d state machines, want 1", len(sms))
	}
	var def any
	for _, r := range sms {
		def = props(r)["DefinitionString"]
	}
	step := s.functionID(t, "step")
	replacer := strings.NewReplacer(
		"${"+step+".Arn}", StepFunctionPlaceholderArn,
		"${AWS::Partition}", "aws",
	)
	text := replacer.Replace(render(def))
	if strings.Contains(text, "${") {
		t.Fatalf("unresolved token in the definition: %s", text)
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("definition is not JSON: %v\n%s", err, text)
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// TestStateMachineDefinitionFile keeps testdata/statemachine.asl.json and
// the short-approval variant equal to the synthesized definitions:
// go test -run StateMachineDefinitionFile -update.
func TestStateMachineDefinitionFile(t *testing.T) {
	got := definition(t, stack(t, variantDefault))
	short := definition(t, stack(t, variantShortApproval))
	for path, def := range map[string][]byte{aslPath: got, aslShortApprovalPath: short} {
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, def, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run: cd infra && go test -run StateMachineDefinitionFile -update)", err)
		}
		if !bytes.Equal(def, want) {
			t.Errorf("%s is stale: run cd infra && go test -run StateMachineDefinitionFile -update\n--- synthesized:\n%s", path, def)
		}
	}
	// The definition does not depend on the options, but for the
	// approval timeout.
	if other := definition(t, stack(t, variantOpenSearch)); !bytes.Equal(got, other) {
		t.Errorf("the opensearch variant's definition differs:\n%s", other)
	}
	week := fmt.Sprintf(`"TimeoutSeconds": %d,`, 7*24*3600)
	if n := bytes.Count(got, []byte(week)); n != 1 {
		t.Fatalf("%d approval timeouts of 7 days in the default definition, want 1", n)
	}
	if want := bytes.Replace(got, []byte(week), []byte(`"TimeoutSeconds": 2,`), 1); !bytes.Equal(short, want) {
		t.Errorf("with approval_timeout=2s, the definition differs in more than the approval timeout:\n%s", short)
	}
}

// asl is the part of the Amazon States Language the tests look at.
type asl struct {
	StartAt string
	States  map[string]aslState
}

type aslState struct {
	Type           string
	Resource       string
	Next           string
	End            bool
	Default        string
	Parameters     map[string]any
	ItemSelector   map[string]any
	ItemsPath      string
	MaxConcurrency int
	ResultPath     *string
	TimeoutSeconds int
	ItemProcessor  *asl
	Choices        []struct {
		Variable     string
		StringEquals string
		Next         string
	}
	Retry []struct {
		ErrorEquals     []string
		IntervalSeconds int
		MaxAttempts     int
		BackoffRate     float64
		MaxDelaySeconds int
		JitterStrategy  string
	}
	Catch []struct {
		ErrorEquals []string
		ResultPath  string
		Next        string
	}
}

func TestStateMachine(t *testing.T) {
	s := stack(t, variantDefault)
	assert(t, "standard state machine logging errors", func() {
		s.template.HasResourceProperties(stringp("AWS::StepFunctions::StateMachine"), m{
			"StateMachineType": "STANDARD",
			"StateMachineName": StackName + "-loop",
			"LoggingConfiguration": objectLike(m{
				"Level":                "ERROR",
				"IncludeExecutionData": false,
			}),
		})
	})

	var def asl
	if err := json.Unmarshal(definition(t, s), &def); err != nil {
		t.Fatal(err)
	}
	st := def.States
	if def.StartAt != stateStep {
		t.Errorf("StartAt %q", def.StartAt)
	}

	// The tasks and their payloads.
	for name, params := range map[string]map[string]any{
		stateStep:    {"action": "step", "state.$": "$"},
		stateFail:    {"action": "fail", "state.$": "$"},
		stateExpired: {"action": "expire", "state.$": "$"},
		stateRelease: {"action": "release", "state.$": "$"},
	} {
		if st[name].Type != "Task" || st[name].Resource != StepFunctionPlaceholderArn || !equalJSON(st[name].Parameters, params) {
			t.Errorf("%s: %s %s %v, want a Task invoking the step function with %v", name, st[name].Type, st[name].Resource, st[name].Parameters, params)
		}
	}
	ap := st[stateApproval]
	if ap.Type != "Task" || ap.Resource != "arn:aws:states:::lambda:invoke.waitForTaskToken" || ap.TimeoutSeconds != 7*24*3600 ||
		!equalJSON(ap.Parameters, map[string]any{
			"FunctionName": StepFunctionPlaceholderArn,
			"Payload":      map[string]any{"action": "park", "state.$": "$", "task_token.$": "$$.Task.Token"},
		}) || ap.Next != stateNext || ap.ResultPath != nil {
		t.Errorf("%s: %+v", stateApproval, ap)
	}
	// An approval that times out expires: the run ends through Approval
	// expired, which goes on like a step.
	if c := ap.Catch; len(c) != 2 || !slices.Equal(c[0].ErrorEquals, []string{"States.Timeout"}) || c[0].Next != stateExpired ||
		c[0].ResultPath != "$.error_info" || !slices.Equal(c[1].ErrorEquals, []string{"States.ALL"}) || c[1].Next != stateFail {
		t.Errorf("%s: Catch %+v, want States.Timeout → %s, then States.ALL → %s", stateApproval, c, stateExpired, stateFail)
	}
	if st[stateExpired].Next != stateNext {
		t.Errorf("%s → %s, want %s", stateExpired, st[stateExpired].Next, stateNext)
	}

	// The Choice on the step name.
	ch := st[stateNext]
	if st[stateStep].Next != stateNext || ch.Type != "Choice" || ch.Default != stateStep {
		t.Errorf("Step → %s (%s, default %s)", st[stateStep].Next, ch.Type, ch.Default)
	}
	routes := map[string]string{}
	for _, c := range ch.Choices {
		if c.Variable != "$.step" {
			t.Errorf("choice on %s", c.Variable)
		}
		routes[c.StringEquals] = c.Next
	}
	if want := map[string]string{"done": stateDone, "wait": stateApproval, "act": stateTools}; !equalJSON(routes, want) {
		t.Errorf("choices %v, want %v", routes, want)
	}
	if st[stateDone].Type != "Succeed" || st[stateFail].Next != stateDone || st[stateRelease].Next != stateDone || st[stateFailed].Type != "Fail" {
		t.Errorf("Done is %s; Fail → %s; Release lane → %s; %s is %s", st[stateDone].Type, st[stateFail].Next, st[stateRelease].Next, stateFailed, st[stateFailed].Type)
	}

	// The Map over the tool calls.
	mp := st[stateTools]
	if mp.Type != "Map" || mp.ItemsPath != "$.calls" || mp.MaxConcurrency != toolConcurrency || mp.ResultPath != nil || mp.Next != stateStep ||
		!equalJSON(mp.ItemSelector, map[string]any{"action": "call", "call_id.$": "$$.Map.Item.Value", "state.$": "$"}) {
		t.Errorf("Tools: %+v", mp)
	}
	if mp.ItemProcessor == nil || mp.ItemProcessor.States[stateCallTool].Resource != StepFunctionPlaceholderArn ||
		mp.ItemProcessor.States[stateCallTool].Parameters != nil {
		t.Errorf("Tools item processor: %+v", mp.ItemProcessor)
	}
	if !strings.Contains(string(definition(t, s)), `"ResultPath": null`) {
		t.Error("the Map's result is not discarded")
	}

	// Retry and Catch on every task.
	tasks := map[string]aslState{}
	for n, x := range st {
		if x.Type == "Task" {
			tasks[n] = x
		}
	}
	tasks[stateCallTool] = mp.ItemProcessor.States[stateCallTool]
	if len(tasks) != 6 {
		t.Errorf("tasks %v", keys(tasks))
	}
	for n, x := range tasks {
		if n == stateRelease {
			// Release lane retries everything, for about half an hour: it
			// is what frees the session when all else failed.
			if r := x.Retry; len(r) != 1 || !slices.Equal(r[0].ErrorEquals, []string{"States.ALL"}) || r[0].MaxAttempts < 8 ||
				r[0].MaxDelaySeconds != 300 || r[0].JitterStrategy != "FULL" {
				t.Errorf("%s: Retry %+v", n, r)
			}
		} else if len(x.Retry) != 1 || !slices.Equal(x.Retry[0].ErrorEquals, retryErrors) || x.Retry[0].BackoffRate != 2 || x.Retry[0].MaxAttempts < 3 {
			t.Errorf("%s: Retry %+v", n, x.Retry)
		}
		switch n {
		case stateCallTool:
			// Caught by the Map around it.
		case stateApproval:
			// Above.
		case stateFail:
			// A Fail task that fails (a crash while telling the user, the
			// store out) still frees the session.
			if len(x.Catch) != 1 || !slices.Equal(x.Catch[0].ErrorEquals, []string{"States.ALL"}) ||
				x.Catch[0].ResultPath != "$.fail_error_info" || x.Catch[0].Next != stateRelease {
				t.Errorf("Fail: Catch %+v", x.Catch)
			}
		case stateRelease:
			if len(x.Catch) != 1 || x.Catch[0].Next != stateFailed || x.Catch[0].ResultPath == "$.error_info" || x.Catch[0].ResultPath == "$.fail_error_info" {
				t.Errorf("Release lane: Catch %+v", x.Catch)
			}
		default:
			if len(x.Catch) != 1 || !slices.Equal(x.Catch[0].ErrorEquals, []string{"States.ALL"}) ||
				x.Catch[0].ResultPath != "$.error_info" || x.Catch[0].Next != stateFail {
				t.Errorf("%s: Catch %+v", n, x.Catch)
			}
		}
	}
	if c := mp.Catch; len(c) != 1 || c[0].ResultPath != "$.error_info" || c[0].Next != stateFail {
		t.Errorf("Tools: Catch %+v", c)
	}
	if len(definition(t, s)) > 16*1024 {
		t.Errorf("definition is %d bytes", len(definition(t, s)))
	}
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

func stringp(s string) *string { return &s }
