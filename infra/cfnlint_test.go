package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// lintVariants are the deploy variants cfn-lint checks: the default, each
// context option that changes what is deployed alone, and all of them
// together.
var lintVariants = []string{variantDefault, variantSandbox, variantSandboxPublic, variantOpenSearch, "search=opensearch", "telegram=on", variantChannels, "slack=on", "openai_base_url",
	"agents_file", "alarms=off", "alarm_email", variantWAF, variantTracing, variantShortApproval, variantWebSearch, variantAll}

// cfnLintFinding is one of cfn-lint's JSON findings.
type cfnLintFinding struct {
	Rule struct {
		ID string `json:"Id"`
	}
	Level    string
	Message  string
	Location struct {
		Path []any
	}
}

// TestCfnLint runs cfn-lint (AWS's linter of CloudFormation templates,
// installed on the project's machines and CI) on the template of every
// deploy variant: an error (E*) is a template CloudFormation would refuse
// or roll back.
func TestCfnLint(t *testing.T) {
	lint, err := exec.LookPath("cfn-lint")
	if err != nil {
		t.Fatalf("cfn-lint is not installed (pip install cfn-lint): %v", err)
	}
	dir := t.TempDir()
	for _, name := range lintVariants {
		t.Run(name, func(t *testing.T) {
			s := stack(t, name)
			b, err := json.Marshal(s.json)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, fmt.Sprintf("%x.template.json", name))
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(lint, "--format", "json", "--", path).Output()
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				t.Fatalf("cfn-lint: %v", err)
			}
			var findings []cfnLintFinding
			if err := json.Unmarshal(out, &findings); err != nil {
				t.Fatalf("cfn-lint's output %q: %v", out, err)
			}
			for _, f := range findings {
				if f.Level == "Error" {
					t.Errorf("%s at %v: %s", f.Rule.ID, f.Location.Path, f.Message)
				}
			}
		})
	}
}
