// Package exectool is the exec tool: the agent runs a shell command or a
// script in a sandbox (sandbox.Backend) with its workspace at /workspace,
// and gets back the exit code, stdout, stderr (scrubbed) and a note when a
// limit stopped it. Inside the sandbox a script can call the agent's tools
// through the bridge (the lambdaclaw-tool client, /tools/index.txt).
//
// It asks for a person's approval before each command under autonomy
// supervised (the approval shows the command), runs under full, and is not
// offered to read-only runs. Per agent, allow and deny rules (Rules) bound
// which commands are accepted at all. A successful script can be saved as
// a skill of type sandbox_script (save_as) and run again by name (script).
package exectool

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/core/skill"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
)

// Name is the tool's name.
const Name = "exec"

// MaxCommand caps a command's length.
const MaxCommand = 64 << 10

// Settings are one agent's: its limits and command rules.
type Settings struct {
	Limits sandbox.Limits
	Rules  Rules
}

// Rules accept or refuse commands before they run. Each is a pattern
// matched against the whole command (surrounding blanks trimmed), where *
// stands for any text. A command matching a Deny rule is refused; when
// Allow has rules, a command must match one of them. Rules are a policy
// on what the agent asks for, not a security boundary: the sandbox is.
type Rules struct {
	Allow []string `yaml:"allow" json:"allow,omitempty"`
	Deny  []string `yaml:"deny" json:"deny,omitempty"`
}

// Check says what is wrong with the rules' patterns.
func (r Rules) Check() error {
	for _, p := range append(append([]string(nil), r.Allow...), r.Deny...) {
		if strings.TrimSpace(p) == "" {
			return errors.New("an empty command rule")
		}
	}
	return nil
}

// match reports whether command matches the pattern.
func match(pattern, command string) bool {
	parts := strings.Split(strings.TrimSpace(pattern), "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	re := regexp.MustCompile(`(?s)^` + strings.Join(parts, ".*") + `$`)
	return re.MatchString(command)
}

// Judge returns why command is refused by the rules, or "".
func (r Rules) Judge(command string) string {
	c := strings.TrimSpace(command)
	for _, p := range r.Deny {
		if match(p, c) {
			return fmt.Sprintf("refused: the command matches the deny rule %q of this agent", p)
		}
	}
	if len(r.Allow) == 0 {
		return ""
	}
	for _, p := range r.Allow {
		if match(p, c) {
			return ""
		}
	}
	return fmt.Sprintf("refused: the command matches none of this agent's allow rules (%s)", strings.Join(r.Allow, ", "))
}

// Config configures the tool.
type Config struct {
	Backend sandbox.Backend
	// Settings returns an agent's settings; nil gives every agent the
	// default limits and no rules.
	Settings func(agent string) Settings
	// MaxWallTime is the longest wall time of any agent's limits (the
	// default limits' when zero). With a backend that takes longer than
	// a command's wall time (sandbox.Bounded: Fargate starts a task
	// first), a call's timeout is the backend's bound for a command of
	// that wall time, instead of the loop's limit of a tool call.
	MaxWallTime time.Duration
	// Quota, when set, is the workspaces' quota the file tools share:
	// what a command adds to the workspace counts against it.
	Quota *workspace.Quota
}

// New returns the exec tool on backend.
func New(cfg Config) (tool.Tool, error) {
	if cfg.Backend == nil {
		return nil, errors.New("exec tool: no sandbox backend")
	}
	if cfg.Settings == nil {
		cfg.Settings = func(string) Settings { return Settings{} }
	}
	return &execTool{cfg: cfg}, nil
}

type execTool struct {
	cfg Config
}

var definition = chat.ToolDef{
	Name: Name,
	Description: "Run a shell command (/bin/sh -c) in a sandbox: your workspace is the working directory, /workspace (read-write); " +
		"/tmp is kept for this conversation; there is no network. Returns the exit code, stdout and stderr. " +
		"Scripts can call your other tools: /tools/index.txt lists them, /tools/NAME/schema.json describes their arguments, " +
		"and `lambdaclaw-tool NAME '{\"arg\":\"value\"}'` calls one and prints its result, so a script can do many calls and print only a summary. " +
		"save_as saves a command that succeeded as a skill; script runs a saved one by name.",
	Parameters: json.RawMessage(`{"type":"object","properties":{` +
		`"command":{"type":"string","description":"the shell command or script to run"},` +
		`"timeout_s":{"type":"integer","minimum":1,"description":"stop it after this many seconds (at most the agent's limit)"},` +
		`"save_as":{"type":"object","properties":{"name":{"type":"string"},"description":{"type":"string"}},"required":["name","description"],"description":"save the command, if it succeeds, as a sandbox_script skill of this name"},` +
		`"script":{"type":"string","description":"run the saved sandbox_script skill of this name instead of a command"}` +
		`}}`),
}

func (t *execTool) Definition() chat.ToolDef { return definition }

// Policy asks before each command unless autonomy is full, and keeps the
// tool from read-only runs.
func (t *execTool) Policy() tool.Policy {
	p := tool.Policy{Effect: tool.External}
	if b, ok := t.cfg.Backend.(sandbox.Bounded); ok {
		p.Timeout = b.Bound(cmp.Or(t.cfg.MaxWallTime, sandbox.DefaultLimits().WallTime))
	}
	return p
}

type saveAs struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

type args struct {
	Command  string  `json:"command"`
	TimeoutS *int    `json:"timeout_s"`
	SaveAs   *saveAs `json:"save_as"`
	Script   string  `json:"script"`
}

func (t *execTool) Call(ctx context.Context, env tool.Env, raw json.RawMessage) (string, error) {
	var a args
	if err := tool.DecodeArgs(raw, &a, "command", "timeout_s", "save_as", "script"); err != nil {
		return "", err
	}
	command, err := t.command(ctx, env, a)
	if err != nil {
		return "", err
	}
	settings := t.cfg.Settings(env.Agent)
	limits := settings.Limits.WithDefaults()
	if reason := settings.Rules.Judge(command); reason != "" {
		return "", errors.New(reason)
	}
	req := sandbox.Request{Owner: env.Owner, Agent: env.Agent, SessionID: env.SessionID, Command: command,
		Limits: limits, Workspace: env.Workspace}
	if t.cfg.Quota != nil {
		req.Quota = t.cfg.Quota.Limits().WorkspaceQuotaBytes
	}
	if a.TimeoutS != nil {
		if *a.TimeoutS < 1 {
			return "", errors.New("invalid arguments: timeout_s must be at least 1")
		}
		req.Timeout = time.Duration(*a.TimeoutS) * time.Second
	}
	if env.Tools != nil {
		req.Bridge = env.Tools
	}
	res, err := t.cfg.Backend.Exec(ctx, req)
	if t.cfg.Quota != nil {
		t.forget(ctx, env)
	}
	if err != nil {
		return "", fmt.Errorf("the sandbox failed: %w", err)
	}
	out := Format(res, req.Wall(), limits)
	if a.SaveAs != nil {
		out += "\n" + t.save(ctx, env, *a.SaveAs, command, res)
	}
	return out, nil
}

// forget has the quota measure env's workspace again before the next
// write: the command may have changed it.
func (t *execTool) forget(ctx context.Context, env tool.Env) {
	w, err := t.cfg.Quota.Begin(context.WithoutCancel(ctx), env)
	if err != nil {
		return // measuring failed: the next write measures again
	}
	w.Unknown()
	w.End()
}

// command is the command a call runs: its own, or a saved script's.
func (t *execTool) command(ctx context.Context, env tool.Env, a args) (string, error) {
	switch {
	case a.Script != "" && a.Command != "":
		return "", errors.New("invalid arguments: give command or script, not both")
	case a.Script != "" && a.SaveAs != nil:
		return "", errors.New("invalid arguments: save_as saves a command, not a script")
	case a.Script != "":
		return scriptCommand(ctx, env, a.Script)
	case strings.TrimSpace(a.Command) == "":
		return "", errors.New("invalid arguments: command is required (a shell command to run)")
	case len(a.Command) > MaxCommand:
		return "", fmt.Errorf("invalid arguments: the command is over %d bytes; write a script file with write_file and run it", MaxCommand)
	}
	return a.Command, nil
}

// Format is the text the model gets for a result.
func Format(res sandbox.Result, wall time.Duration, l sandbox.Limits) string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit code: %d\n", res.ExitCode)
	if note := cutNote(res.Cut, wall, l); note != "" {
		fmt.Fprintf(&b, "stopped: %s\n", note)
	}
	fmt.Fprintf(&b, "stdout:\n%s", res.Stdout)
	if res.Stdout != "" && !strings.HasSuffix(res.Stdout, "\n") {
		b.WriteString("\n")
	}
	if res.Stderr != "" {
		fmt.Fprintf(&b, "stderr:\n%s", scrub.Scrub(res.Stderr))
	}
	return strings.TrimRight(b.String(), "\n")
}

func cutNote(c sandbox.Cut, wall time.Duration, l sandbox.Limits) string {
	switch c {
	case sandbox.WallTime:
		return fmt.Sprintf("it ran past its time limit of %s and was killed", wall)
	case sandbox.Output:
		return fmt.Sprintf("it wrote more than %d bytes of output and was killed; the output is cut", l.Output)
	case sandbox.CPUTime:
		return "it used up its CPU time and was killed"
	case sandbox.FileSize:
		return fmt.Sprintf("it wrote a file over the limit of %d bytes", l.FileSize)
	case sandbox.Memory:
		return fmt.Sprintf("it used more than its memory limit of %d bytes", l.Memory)
	case sandbox.Pids:
		return fmt.Sprintf("it started more than %d processes at once; forks were refused", l.Pids)
	case sandbox.Disk:
		return fmt.Sprintf("it wrote more than its disk limit of %s (its /tmp and what it adds to /workspace together) or than the workspace's quota has room for; "+
			"writes failed with \"No space left on device\", and what did not fit was not kept", workspace.SizeText(l.Disk))
	case sandbox.NotCut:
		return ""
	}
	return string(c)
}

// SkillType is the metadata type of a saved script.
const SkillType = "sandbox_script"

// scriptFile is a saved script's file in its skill's directory.
const scriptFile = "script.sh"

// save writes a script that succeeded as a skill of the agent's workspace,
// and says how it went.
func (t *execTool) save(ctx context.Context, env tool.Env, s saveAs, command string, res sandbox.Result) string {
	if res.ExitCode != 0 || res.Cut != sandbox.NotCut {
		return "not saved: only a command that succeeds (exit code 0) is saved as a skill"
	}
	if env.Workspace == nil {
		return "not saved: this agent has no workspace"
	}
	if err := skill.CheckName(s.Name); err != nil {
		return "not saved: " + err.Error()
	}
	desc := strings.Join(strings.Fields(s.Description), " ")
	if desc == "" {
		return "not saved: save_as needs a description"
	}
	meta, _ := json.Marshal(map[string]any{"lambdaclaw": map[string]string{"type": SkillType}})
	descYAML, _ := json.Marshal(desc)
	md := fmt.Sprintf("---\nname: %s\ndescription: %s\nmetadata: %s\n---\n# %s\n\nA saved sandbox script (skills/%s/%s of the workspace). Run it with the exec tool: {\"script\": %q}.\n",
		s.Name, descYAML, meta, s.Name, s.Name, scriptFile, s.Name)
	if _, err := skill.Parse([]byte(md)); err != nil {
		return "not saved: " + err.Error()
	}
	dir := "skills/" + s.Name + "/"
	if _, err := env.Workspace.WriteFile(ctx, dir+scriptFile, []byte(strings.TrimRight(command, "\n")+"\n"), filestore.Any); err != nil {
		return "not saved: " + err.Error()
	}
	if _, err := env.Workspace.WriteFile(ctx, dir+skill.FileName, []byte(md), filestore.Any); err != nil {
		return "not saved: " + err.Error()
	}
	return fmt.Sprintf("saved as the skill %s: run it again with {\"script\": %q}", s.Name, s.Name)
}

// scriptCommand is the command that runs the saved script name: its skill
// must be the agent's and of type sandbox_script.
func scriptCommand(ctx context.Context, env tool.Env, name string) (string, error) {
	if err := skill.CheckName(name); err != nil {
		return "", fmt.Errorf("invalid arguments: %w", err)
	}
	if env.Workspace == nil {
		return "", errors.New("this agent has no workspace, so no saved scripts")
	}
	data, _, err := env.Workspace.ReadFile(ctx, "skills/"+name+"/"+skill.FileName, skill.MaxSize)
	if err != nil {
		return "", fmt.Errorf("there is no saved script %q in this agent's skills", name)
	}
	s, err := skill.Parse(data)
	if err != nil {
		return "", fmt.Errorf("saved script %q: %w", name, err)
	}
	if typeOf(s) != SkillType {
		return "", fmt.Errorf("the skill %q is not a saved script (type %s)", name, SkillType)
	}
	return "sh /workspace/skills/" + name + "/" + scriptFile, nil
}

// typeOf is a skill's lambdaclaw type (metadata lambdaclaw.type).
func typeOf(s skill.Skill) string {
	ns, _ := s.Metadata["lambdaclaw"].(map[string]any)
	t, _ := ns["type"].(string)
	return t
}
