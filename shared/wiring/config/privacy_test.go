package config_test

import (
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

func TestPrivacy(t *testing.T) {
	dir, path := writeConfig(t, "agents:\n  support:\n    privacy:\n      pii: tokenize\n      patterns: [{name: EMPLOYEE, regex: 'EMP-[0-9]{6}'}]\n")
	c, err := config.Load(path, env(map[string]string{"LAMBDACLAW_HOME": dir}))
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Agents["support"].Privacy.Scanner()
	if err != nil || s == nil || len(s.Patterns) != 1 || len(s.Find("ask EMP-000123")) != 1 {
		t.Errorf("scanner = %+v, %v", s, err)
	}
	if s, err := (*config.Privacy)(nil).Scanner(); s != nil || err != nil {
		t.Errorf("no privacy: %v, %v", s, err)
	}
	for body, want := range map[string]string{
		"pii: mask": `pii is "mask"; want off or tokenize`,
		"pii: off\n      patterns: [{name: X, regex: x}]":        "patterns are set but pii is",
		"pii: tokenize\n      patterns: [{name: x, regex: x}]":   `pattern name "x"`,
		"pii: tokenize\n      patterns: [{name: X, regex: '('}]": "missing closing )",
	} {
		dir, path := writeConfig(t, "agents:\n  support:\n    privacy:\n      "+body+"\n")
		if _, err := config.Load(path, env(map[string]string{"LAMBDACLAW_HOME": dir})); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", body, err, want)
		}
	}
}
