package tests

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMakeRun runs `make run` as a newcomer does (issue 26: on a cold
// cache it printed the module downloads, then nothing for minutes): it
// says that it builds, builds bin/lambdaclaw once (no `go run`, which
// builds and links again at every start), then starts it, which says
// where it serves.
func TestMakeRun(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	dryCmd := exec.Command("make", "-n", "run")
	dryCmd.Dir = ".."
	dryCmd.Env = outsideMake(os.Environ())
	dry, err := dryCmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(dry), "go run") || !strings.Contains(string(dry), "-o bin/lambdaclaw ./functions/lambdaclaw") ||
		!strings.Contains(string(dry), "exec bin/lambdaclaw serve") {
		t.Errorf("make run's recipe:\n%s\nwant a build into bin/ and an exec of bin/lambdaclaw serve, no go run", dry)
	}

	g := newGateway(t, nil, "")
	bin := t.TempDir()
	// The home is new, the Go caches this test's own (g's HOME is a
	// temporary directory, which would leave them cold).
	goEnv, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	if err != nil {
		t.Fatal(err)
	}
	caches := strings.Fields(string(goEnv))
	cmd := exec.Command("make", "run", "BIN="+bin)
	cmd.Dir = ".."
	cmd.Env = append(outsideMake(g.env), "LAMBDACLAW_ADDR=127.0.0.1:0", "GOCACHE="+caches[0], "GOMODCACHE="+caches[1], "GOPATH="+caches[2])
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		cmd.Wait()
	}()
	lines := make(chan string)
	go func() {
		defer close(lines)
		for sc := bufio.NewScanner(out); sc.Scan(); {
			lines <- sc.Text()
		}
	}()
	var seen []string
	serving := regexp.MustCompile(`^Serving on (http://127\.0\.0\.1:\d+) `)
	var addr string
	for deadline := time.After(5 * time.Minute); addr == ""; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("make run ended; it printed:\n%s", strings.Join(seen, "\n"))
			}
			seen = append(seen, l)
			if m := serving.FindStringSubmatch(l); m != nil {
				addr = m[1]
			}
		case <-deadline:
			t.Fatalf("make run did not say where it serves within 5 minutes; it printed:\n%s", strings.Join(seen, "\n"))
		}
	}
	if !strings.HasPrefix(seen[0], "building lambdaclaw into "+bin+"/ (the first build downloads the Go modules and can take a few minutes)") {
		t.Errorf("make run's first line = %q, want that it builds", seen[0])
	}
	if _, err := os.Stat(filepath.Join(bin, "lambdaclaw")); err != nil {
		t.Errorf("make run built no binary: %v", err)
	}
	resp, err := http.Get(addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /health of make run's server: %s", resp.Status)
	}
}

// outsideMake returns env without what a make running this test passes
// on to the makes it starts (MAKELEVEL makes them print "Entering
// directory" first): the test runs make run as a person does.
func outsideMake(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "MAKELEVEL" || name == "MAKEFLAGS" || name == "MFLAGS"
	})
}
