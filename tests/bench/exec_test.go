package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/bwrap"
	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox/sandboxtest"
)

// BenchmarkSandboxExec measures an exec in a bubblewrap sandbox from
// request to result, with the real binary as the sandbox's helper and
// bridge client: cold is a session's first command (its sandbox made),
// warm a later one, bridge a warm command that makes one call through the
// tool bridge. It reports the median as p50-ms.
func BenchmarkSandboxExec(b *testing.B) {
	if _, err := os.Stat("/usr/bin/bwrap"); err != nil {
		b.Skip("bubblewrap is not installed")
	}
	home := b.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "agents", "a"), 0o755); err != nil {
		b.Fatal(err)
	}
	be, err := bwrap.New(bwrap.Config{Home: home, Helper: binary,
		Workspace: func(agent string) (string, error) { return filepath.Join(home, "agents", agent), nil }})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	if err := be.Probe(context.Background()); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		session func(i int) string
		command string
		bridge  sandbox.Bridge
	}{
		{"cold", func(i int) string { return fmt.Sprint("cold", i) }, "true", nil},
		{"warm", func(int) string { return "warm" }, "true", nil},
		{"bridge", func(int) string { return "warm" }, `lambdaclaw-tool upper '{"text":"x"}'`, &sandboxtest.Bridge{}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var took []time.Duration
			for i := range b.N {
				start := time.Now()
				res, err := be.Exec(context.Background(), sandbox.Request{Owner: "o", Agent: "a", SessionID: c.session(i), Command: c.command, Bridge: c.bridge})
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("exec: %+v, %v", res, err)
				}
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
		})
	}
}
