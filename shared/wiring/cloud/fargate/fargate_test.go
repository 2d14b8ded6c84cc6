package fargate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/fargate"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud/turns"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

// stackEnv is the environment the stack gives the step function with
// -c sandbox=fargate.
var stackEnv = map[string]string{
	"SANDBOX_BACKEND": "fargate", "SANDBOX_CLUSTER": "lambdaclaw-sandbox", "SANDBOX_TASK_DEFINITION": "Lambdaclaw-sandbox",
	"SANDBOX_CONTAINER": "sandbox", "SANDBOX_SUBNETS": "subnet-1,subnet-2", "SANDBOX_SECURITY_GROUPS": "sg-1",
}

// The step function offers exec when the stack gives it the Fargate
// sandbox (-c sandbox=fargate), with a call timeout that covers what the
// sandbox may wait for: the default wall time (30 s) and a minute's sync
// twice (a warm task found stopped, then a new one) and a task's start
// (3 minutes); other functions, and a sandbox missing its settings, do
// not.
func TestExecOnFargate(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		exec    cloud.Exec
		offered bool
	}{
		{"no sandbox in this function", nil, fargate.Exec, false},
		{"the stack's Fargate sandbox", stackEnv, fargate.Exec, true},
		{"no cluster", map[string]string{"SANDBOX_BACKEND": "fargate", "SANDBOX_CLUSTER": ""}, fargate.Exec, false},
		// The api function runs turns without the sandbox: it does not
		// link it.
		{"a function built without the sandbox", stackEnv, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cloudtest.Setup(t)
			t.Setenv("ECS_ENDPOINT", cloudtest.NewECS(t).URL)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			r, err := turns.New(t.Context(), tt.exec)
			if err != nil {
				t.Fatal(err)
			}
			def, _ := r.Agents.Agent("default")
			exec, ok := def.Registry().Get("exec")
			if ok != tt.offered {
				t.Fatalf("exec offered: %v; want %v", ok, tt.offered)
			}
			if want := 6 * time.Minute; ok && exec.Policy().Timeout != want {
				t.Errorf("exec's call timeout %s, want %s", exec.Policy().Timeout, want)
			}
		})
	}
}

// TestStepTimeout: a function told its invocations' timeout (STEP_TIMEOUT)
// cuts model calls before it (the loop's MaxStep, less sfn.StepMargin),
// and does not start when a tool's calls may take longer: exec on
// Fargate (6 minutes) in invocations of 5.
func TestStepTimeout(t *testing.T) {
	tests := []struct {
		name, timeout string
		sandbox       bool
		maxStep       time.Duration
		err           string
	}{
		{"the stack's 15 minutes", "15m0s", true, 14*time.Minute + 30*time.Second, ""},
		{"exec cannot fit", "5m0s", true, 0, "exec may take 6m0s, longer than a step may (4m30s)"},
		{"no exec, 5 minutes", "5m0s", false, 4*time.Minute + 30*time.Second, ""},
		{"no timeout: no limit", "", true, 0, ""},
		{"not a duration", "soon", false, 0, `STEP_TIMEOUT="soon"`},
		{"no time left for a step", "30s", false, 0, `STEP_TIMEOUT="30s"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cloudtest.Setup(t)
			t.Setenv("ECS_ENDPOINT", cloudtest.NewECS(t).URL)
			if tt.sandbox {
				for k, v := range stackEnv {
					t.Setenv(k, v)
				}
			}
			t.Setenv(cloud.StepTimeoutVar, tt.timeout)
			r, err := turns.New(t.Context(), fargate.Exec)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("New: %v; want an error saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Loop.MaxStep != tt.maxStep {
				t.Errorf("MaxStep %s, want %s", r.Loop.MaxStep, tt.maxStep)
			}
		})
	}
}
