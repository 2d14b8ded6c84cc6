// Package layers checks the dependency rules of ARCHITECTURE.md: the
// groups of shared/ import downward only (layers_test.go), and the
// storage adapters import no channel, since the ports an adapter
// implements live in shared/core/store (and shared/core/memory), never in
// the channel that uses them.
package layers

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const module = "github.com/lambdaclaw/lambdaclaw/"

// channels are the packages that talk to users: the HTTP and WebSocket
// gateway, the API Gateway WebSocket transport and its protocol, the MCP
// server, and Telegram.
var channels = []string{
	module + "shared/channels/gateway",
	module + "shared/channels/mcpserver",
	module + "shared/adapters/apigw",
	module + "shared/channels/wsproto",
	module + "shared/channels/telegram",
}

// goList runs go list with args and returns the import paths it prints,
// without the " [pkg.test]" of test variants.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}}"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	var paths []string
	for line := range strings.Lines(string(out)) {
		p, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		if !slices.Contains(paths, p) {
			paths = append(paths, p)
		}
	}
	return paths
}

// channelsOf returns the channel packages pkg or its tests depend on.
func channelsOf(t *testing.T, pkg string) []string {
	var found []string
	for _, d := range goList(t, "-deps", "-test", pkg) {
		for _, ch := range channels {
			if d == ch || strings.HasPrefix(d, ch+"/") {
				found = append(found, d)
			}
		}
	}
	slices.Sort(found)
	return found
}

func TestStorageAdaptersImportNoChannel(t *testing.T) {
	// Every channel listed exists, so a renamed one fails here instead of
	// passing unnoticed.
	got := goList(t, channels...)
	if d := cmp.Diff(channels, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); d != "" {
		t.Fatalf("channels listed (-want +got):\n%s", d)
	}
	tests := []struct {
		pkg  string
		want []string
	}{
		{"shared/adapters/sqlite", nil},
		{"shared/adapters/dynamo", nil},
		{"shared/core/store/memstore", nil},
		// The local binary shows that the check sees channels.
		{"functions/lambdaclaw", []string{module + "shared/channels/gateway", module + "shared/channels/telegram"}},
	}
	for _, tt := range tests {
		t.Run(tt.pkg, func(t *testing.T) {
			got := channelsOf(t, module+tt.pkg)
			if tt.want != nil {
				// The control only needs these among what it links.
				got = slices.DeleteFunc(got, func(p string) bool { return !slices.Contains(tt.want, p) })
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("channels %s depends on (-want +got):\n%s", tt.pkg, d)
			}
		})
	}
}
