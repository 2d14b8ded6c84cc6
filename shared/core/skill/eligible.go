package skill

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
)

// Env is the machine skills are checked against. Its zero value is the
// real one: exec.LookPath, os.Getenv and runtime.GOOS. Tests set the fields
// to be deterministic.
type Env struct {
	LookPath func(file string) (string, error)
	Getenv   func(key string) string
	GOOS     string
}

func (e Env) lookPath(file string) bool {
	if e.LookPath == nil {
		_, err := exec.LookPath(file)
		return err == nil
	}
	_, err := e.LookPath(file)
	return err == nil
}

func (e Env) getenv(key string) string {
	if e.Getenv == nil {
		return os.Getenv(key)
	}
	return e.Getenv(key)
}

func (e Env) goos() string {
	if e.GOOS == "" {
		return runtime.GOOS
	}
	return e.GOOS
}

// Check returns why a skill with requirements r cannot be used in e, or ""
// when it can.
func (e Env) Check(r Requirements) string {
	var why []string
	if len(r.OS) > 0 && !slices.Contains(r.OS, e.goos()) {
		why = append(why, fmt.Sprintf("works only on %s, not %s", strings.Join(r.OS, ", "), e.goos()))
	}
	var missing []string
	for _, b := range r.Bins {
		if !e.lookPath(b) {
			missing = append(missing, b)
		}
	}
	if len(missing) > 0 {
		why = append(why, "needs "+strings.Join(missing, ", ")+" on PATH")
	}
	if len(r.AnyBins) > 0 && !slices.ContainsFunc(r.AnyBins, e.lookPath) {
		why = append(why, "needs one of "+strings.Join(r.AnyBins, ", ")+" on PATH")
	}
	missing = nil
	for _, k := range r.Env {
		if e.getenv(k) == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		why = append(why, "needs the environment variable"+plural(len(missing))+" "+strings.Join(missing, ", ")+" set")
	}
	return strings.Join(why, "; ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Ineligible is a skill whose requirements are not met, and why.
type Ineligible struct {
	Skill  Skill
	Reason string
}

// Filter splits skills into those usable in e and the others, keeping
// their order.
func Filter(skills []Skill, e Env) (eligible []Skill, ineligible []Ineligible) {
	for _, s := range skills {
		if why := e.Check(s.Requires); why != "" {
			ineligible = append(ineligible, Ineligible{Skill: s, Reason: why})
			continue
		}
		eligible = append(eligible, s)
	}
	return eligible, ineligible
}
