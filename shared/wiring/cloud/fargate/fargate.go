// Package fargate is the exec tool of the AWS deployment: commands run in
// the stack's Fargate sandbox (adapters/ecs). Only the step function, where
// the stack sets the sandbox's environment, builds it (cloud.Turns.Exec),
// so only it links the ECS client.
package fargate

import (
	"context"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/ecs"
	s3fs "github.com/lambdaclaw/lambdaclaw/shared/adapters/s3"
	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/setup"
)

// Exec returns the exec tool on the Fargate sandbox of the stack
// (SANDBOX_BACKEND=fargate and the task's settings, which the stack gives
// the step function with -c sandbox=fargate), or nil when there is none:
// exec is not offered then, never run unsandboxed. files is the
// workspaces' bucket, where the sandbox's commands, results and workspace
// copies go.
func Exec(ctx context.Context, cfg *config.Config, awsCfg aws.Config, getenv func(string) string, files *s3fs.FS, log *slog.Logger, quota *workspace.Quota) tool.Tool {
	if getenv(ecs.EnvBackend) == "" {
		return nil // no sandbox in this function
	}
	backend, err := ecs.FromEnv(awsCfg, getenv, files, ecs.Config{ServeBridge: sandbox.ServeBridge, ToolFiles: sandbox.ToolFiles})
	if err == nil {
		err = backend.Probe(ctx)
	}
	var t tool.Tool
	if err == nil {
		t, err = setup.ExecTool(cfg, backend, quota)
	}
	if err != nil {
		log.Warn("exec tool not offered", "reason", err.Error())
		return nil
	}
	return t
}
