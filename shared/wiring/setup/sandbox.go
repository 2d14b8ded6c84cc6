package setup

import (
	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
	"github.com/lambdaclaw/lambdaclaw/shared/tools/exectool"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// ExecTool returns the exec tool on backend, a backend that passed its
// probe, with each agent's configured limits and command rules
// (config.SandboxSettings); what a command adds to a workspace counts
// against quota, the file tools' (Quota). A call's timeout follows from
// the longest wall time the agents have (exectool.Config.MaxWallTime).
// The composition roots offer it only when their backend works.
func ExecTool(cfg *config.Config, backend sandbox.Backend, quota *workspace.Quota) (tool.Tool, error) {
	return exectool.New(exectool.Config{Backend: backend, MaxWallTime: cfg.LongestWallTime(), Quota: quota, Settings: func(agent string) exectool.Settings {
		limits, allow, deny := cfg.SandboxSettings(agent)
		return exectool.Settings{Limits: limits, Rules: exectool.Rules{Allow: allow, Deny: deny}}
	}})
}
