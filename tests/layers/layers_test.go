package layers

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rank orders the groups of shared/: a package may import packages of its
// own group and of lower ranks only. Tools and channels share a rank and
// do not import each other.
var rank = map[string]int{"core": 0, "tools": 1, "channels": 1, "adapters": 2, "wiring": 3}

// group returns the group of a package path under shared/, or "".
func group(path string) string {
	rest, ok := strings.CutPrefix(path, module+"shared/")
	if !ok {
		return ""
	}
	g, _, _ := strings.Cut(rest, "/")
	return g
}

// violation says whether a package of group from may not import one of
// group to.
func violation(from, to string) bool {
	if from == "" || to == "" || from == to {
		return false
	}
	rf, okf := rank[from]
	rt, okt := rank[to]
	return !okf || !okt || rt >= rf
}

func TestGroupsImportDownward(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"shared/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	var bad []string
	seen := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		from := group(f[0])
		seen[from] = true
		if _, ok := rank[from]; !ok {
			bad = append(bad, f[0]+" is in no group of "+strings.Join([]string{"core", "tools", "channels", "adapters", "wiring"}, ", "))
			continue
		}
		for _, imp := range f[1:] {
			if violation(from, group(imp)) {
				bad = append(bad, f[0]+" -> "+imp)
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("imports against the layering:\n%s", strings.Join(bad, "\n"))
	}
	if len(seen) != len(rank) {
		t.Errorf("groups found %v, want every one of %v", seen, rank)
	}
}

func TestViolation(t *testing.T) {
	tests := []struct {
		from, to string
		want     bool
	}{
		{"core", "core", false},
		{"core", "tools", true},
		{"tools", "core", false},
		{"tools", "channels", true},
		{"channels", "tools", true},
		{"adapters", "channels", false},
		{"adapters", "wiring", true},
		{"wiring", "adapters", false},
		{"core", "", false},
		{"misc", "core", true},
	}
	var got, want []bool
	for _, tt := range tests {
		got = append(got, violation(tt.from, tt.to))
		want = append(want, tt.want)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("violation, in the order of the cases (-want +got):\n%s", d)
	}
}
