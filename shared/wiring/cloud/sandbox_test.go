package cloud_test

import (
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/cloud"
	"github.com/lambdaclaw/lambdaclaw/tests/cloudtest"
)

// The step function offers exec when the stack gives it the Fargate
// sandbox (-c sandbox=fargate), with a call timeout that covers a cold
// task; other functions, and a sandbox missing its settings, do not.
func TestExecOnFargate(t *testing.T) {
	fargate := map[string]string{
		"SANDBOX_BACKEND": "fargate", "SANDBOX_CLUSTER": "lambdaclaw-sandbox", "SANDBOX_TASK_DEFINITION": "Lambdaclaw-sandbox",
		"SANDBOX_CONTAINER": "sandbox", "SANDBOX_SUBNETS": "subnet-1,subnet-2", "SANDBOX_SECURITY_GROUPS": "sg-1",
	}
	tests := []struct {
		name    string
		env     map[string]string
		offered bool
	}{
		{"no sandbox in this function", nil, false},
		{"the stack's Fargate sandbox", fargate, true},
		{"no cluster", map[string]string{"SANDBOX_BACKEND": "fargate", "SANDBOX_CLUSTER": ""}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cloudtest.Setup(t)
			t.Setenv("ECS_ENDPOINT", cloudtest.NewECS(t).URL)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			r, err := cloud.New(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			def, _ := r.Agents.Agent("default")
			exec, ok := def.Registry().Get("exec")
			if ok != tt.offered {
				t.Fatalf("exec offered: %v; want %v", ok, tt.offered)
			}
			if ok && exec.Policy().Timeout < 3*time.Minute {
				t.Errorf("exec's call timeout %s does not cover a cold task", exec.Policy().Timeout)
			}
		})
	}
}
