package mcp

import (
	"fmt"
	"regexp"
	"sync"
)

// envRef is a ${VAR} reference in a server's env or headers.
var envRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`) })

// ExpandEnv replaces the ${VAR} references of v with getenv's values. A
// variable that is not set is an error naming it, never a value.
func ExpandEnv(v string, getenv func(string) string) (string, error) {
	var missing string
	out := envRef().ReplaceAllStringFunc(v, func(ref string) string {
		name := ref[2 : len(ref)-1]
		val := getenv(name)
		if val == "" && missing == "" {
			missing = name
		}
		return val
	})
	if missing != "" {
		return "", fmt.Errorf("the environment variable %s is not set", missing)
	}
	return out, nil
}
