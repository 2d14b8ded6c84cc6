package skill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// ToolName is the name of the tool that loads a skill.
const ToolName = "load_skill"

// LoadTool returns the load_skill tool: given a skill's name, it returns
// the instructions (the SKILL.md body) of that skill if it is visible to
// the calling agent, whose workspace is tool.Env.Workspace, and eligible in
// env. It reads nothing but SKILL.md files the catalog found, needs no
// approval and is allowed at read_only autonomy.
func LoadTool(c *Catalog, env Env) tool.Tool { return loadTool{c: c, env: env} }

type loadTool struct {
	c   *Catalog
	env Env
}

func (loadTool) Definition() chat.ToolDef {
	return chat.ToolDef{
		Name: ToolName,
		Description: "Read the instructions of one of your skills, listed in the system prompt under Skills. " +
			"Call it with the skill's name before doing a task the skill covers, then follow what it returns.",
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "name": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]{0,63}$", "description": "The skill's name, as listed under Skills."}
  },
  "required": ["name"],
  "additionalProperties": false
}`),
	}
}

func (loadTool) Policy() tool.Policy {
	return tool.Policy{Effect: tool.Read}
}

func (t loadTool) Call(ctx context.Context, env tool.Env, args json.RawMessage) (string, error) {
	var in struct {
		Name string `json:"name"`
	}
	if err := tool.DecodeArgs(args, &in, "name"); err != nil {
		return "", err
	}
	if t.c == nil {
		return "", errNoCatalog
	}
	all, _ := t.c.For(ctx, env.Agent, env.Workspace)
	eligible, ineligible := Filter(all, t.env)
	name := strings.TrimSpace(in.Name)
	if name == "" {
		return "", fmt.Errorf(`"name" is required. %s`, available(eligible))
	}
	if err := CheckName(name); err != nil {
		return "", fmt.Errorf("%v. %s", err, available(eligible))
	}
	for _, s := range eligible {
		if s.Name == name {
			if s.Body == "" {
				return fmt.Sprintf("Skill %q has no instructions beyond its description: %s", s.Name, s.Description), nil
			}
			return s.Body, nil
		}
	}
	for _, s := range ineligible {
		if s.Skill.Name == name {
			return "", fmt.Errorf("skill %q cannot be used here: it %s. %s", name, s.Reason, available(eligible))
		}
	}
	return "", fmt.Errorf("there is no skill %q. %s", name, available(eligible))
}

// available names the skills that can be loaded, for error messages.
func available(eligible []Skill) string {
	if len(eligible) == 0 {
		return "No skills are available."
	}
	names := make([]string, len(eligible))
	for i, s := range eligible {
		names[i] = s.Name
	}
	return "Available skills: " + strings.Join(names, ", ") + "."
}

// errNoCatalog guards against a tool built without a catalog.
var errNoCatalog = errors.New("skills are not configured")
