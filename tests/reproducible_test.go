package tests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMakeBuildReproducible runs `make build` twice, one run after the
// other, with the Makefile's own version, commit and date, and requires
// byte-identical binaries: the local one and a Lambda bootstrap. A build
// stamped with the time it ran (the two runs start seconds apart) would
// give every function new code on every deploy, and `cdk deploy` would
// upload and update every function even when nothing changed. Linking
// twice takes about 40 seconds here, more than make test's budget leaves:
// CI runs it beside TestMakeRelease (.ci/run), and so does
// LAMBDACLAW_TEST_RELEASE=1.
func TestMakeBuildReproducible(t *testing.T) {
	if os.Getenv("LAMBDACLAW_TEST_RELEASE") == "" {
		t.Skip("set LAMBDACLAW_TEST_RELEASE=1 to build twice and compare (.ci/run does, after make test)")
	}
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	dir := t.TempDir()
	build := func(run string) {
		t.Helper()
		// One Lambda function is enough: they are all built the same way.
		cmd := exec.Command("make", "-s", "build", "LAMBDAS=indexer",
			"BIN="+filepath.Join(dir, run, "bin"), "DIST="+filepath.Join(dir, run, "dist"))
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make build: %v\n%s", err, out)
		}
	}
	build("first")
	build("second")
	for _, f := range []string{"bin/lambdaclaw", "dist/indexer/bootstrap"} {
		a, err := os.ReadFile(filepath.Join(dir, "first", f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "second", f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two builds of one checkout", f)
		}
	}
}
