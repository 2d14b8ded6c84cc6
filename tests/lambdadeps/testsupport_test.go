package lambdadeps

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const module = "github.com/lambdaclaw/lambdaclaw"

// testSupport reports whether the package path is test support: the
// testing package, a package under tests/ (the shared fakes and helpers,
// such as tests/fakellm and tests/cloudtest), or a port's conformance
// suite, kept beside the port and named after it (shared/core/store/storetest).
func testSupport(path string) bool {
	if path == "testing" || underTests(path) {
		return true
	}
	rest, ok := strings.CutPrefix(path, module+"/")
	return ok && strings.HasSuffix(rest[strings.LastIndex(rest, "/")+1:], "test")
}

func underTests(path string) bool { return strings.HasPrefix(path, module+"/tests/") }

// productionTree reports whether the package path is in shared/ or
// functions/.
func productionTree(path string) bool {
	return strings.HasPrefix(path, module+"/shared/") || strings.HasPrefix(path, module+"/functions/")
}

// production reports whether the package path is production code: in
// the production tree and not test support.
func production(path string) bool { return productionTree(path) && !testSupport(path) }

// testSupportLinks lists, as "package links dependency", what breaks the
// rule in deps (a package's path to the paths of all it depends on): a
// production package links no test support, and no package of the
// production tree, a conformance suite included, links tests/ (the fakes
// live there, out of the way of production code).
func testSupportLinks(deps map[string][]string) []string {
	var out []string
	for pkg, ds := range deps {
		if !productionTree(pkg) {
			continue
		}
		for _, d := range ds {
			if underTests(d) || production(pkg) && testSupport(d) {
				out = append(out, pkg+" links "+d)
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestTestSupportLinks(t *testing.T) {
	const (
		cloud     = module + "/shared/cloud"
		store     = module + "/shared/store"
		storetest = module + "/shared/store/storetest"
		fakellm   = module + "/tests/fakellm"
		cloudtest = module + "/tests/cloudtest"
		api       = module + "/functions/api"
	)
	tests := []struct {
		name string
		deps map[string][]string
		want []string
	}{
		{"clean", map[string][]string{
			api: {cloud, store, "net/http"}, cloud: {store}, store: {"time"},
		}, nil},
		{"test support links test support", map[string][]string{
			storetest: {store, "testing"}, cloudtest: {fakellm, storetest, "testing"}, fakellm: {"net/http"},
		}, nil},
		{"a dependency outside the module links testing", map[string][]string{
			"example.com/lib": {"testing"},
		}, nil},
		{"production links a fake under tests/", map[string][]string{
			api: {cloud, fakellm}, cloud: {fakellm},
		}, []string{api + " links " + fakellm, cloud + " links " + fakellm}},
		{"production links a conformance suite", map[string][]string{
			cloud: {storetest, store, "testing"},
		}, []string{cloud + " links " + storetest, cloud + " links testing"}},
		{"a suite beside its port links a fake under tests/", map[string][]string{
			module + "/shared/cloud/cloudtest": {fakellm, store, "testing"},
		}, []string{module + "/shared/cloud/cloudtest links " + fakellm}},
		{"production links testing", map[string][]string{
			module + "/shared/cloud/fakes": {"net/http/httptest", "testing"},
		}, []string{module + "/shared/cloud/fakes links testing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, testSupportLinks(tt.deps)); d != "" {
				t.Errorf("testSupportLinks (-want +got):\n%s", d)
			}
		})
	}
}

// TestProductionLinksNoTestSupport checks, with the dependencies go list
// -deps walks, that no production package links test support, and that
// the fakes under tests/ are linked by tests only.
func TestProductionLinksNoTestSupport(t *testing.T) {
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./shared/...", "./functions/...")
	cmd.Dir = root(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	deps := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) > 0 {
			deps[f[0]] = f[1:]
		}
	}
	var n int
	for pkg := range deps {
		if production(pkg) {
			n++
		}
	}
	if n < 20 || len(deps[module+"/functions/lambdaclaw"]) < 10 {
		t.Fatalf("go list printed too little: %d production packages\n%s", n, out)
	}
	if links := testSupportLinks(deps); len(links) > 0 {
		t.Errorf("shared/ or functions/ links test support (shared fakes and helpers belong under tests/, imported by tests only):\n%s", strings.Join(links, "\n"))
	}
}
