package tests

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/nettest"
)

// doctorLine matches the line of a check in doctor's report.
func doctorLine(t *testing.T, out, verdict, check, detail string) {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(verdict) + ` +` + regexp.QuoteMeta(check) + ` +.*` + regexp.QuoteMeta(detail))
	if !re.MatchString(out) {
		t.Errorf("doctor's report has no %s line for %q with %q:\n%s", verdict, check, detail, out)
	}
}

// TestDoctorHealthyHome runs doctor on the home of a running gateway
// whose provider is the fake model.
func TestDoctorHealthyHome(t *testing.T) {
	g := startGateway(t, newFake(t), "")
	stdout, stderr, status := g.run(t, "doctor")
	if status != 0 {
		t.Fatalf("doctor exit status %d, want 0\nstdout:\n%s\nstderr: %s", status, stdout, stderr)
	}
	doctorLine(t, stdout, "ok", "data directory", g.home+" is writable")
	doctorLine(t, stdout, "ok", "database", "integrity ok, schema version")
	doctorLine(t, stdout, "ok", "disk space", "free on the file system of "+g.home)
	doctorLine(t, stdout, "ok", "provider openai", "key accepted, model fake-model listed")
	doctorLine(t, stdout, "info", "embeddings", "not configured")
	doctorLine(t, stdout, "ok", "clock", "within 1s of 127.0.0.1:")
	if strings.Contains(stdout+stderr, providerKey) {
		t.Errorf("doctor printed the provider key:\n%s%s", stdout, stderr)
	}
	if strings.Contains(stdout, "FAIL") {
		t.Errorf("a check failed:\n%s", stdout)
	}

	// The container health check: GET /health of the running server.
	addr := strings.TrimPrefix(g.addr, "http://")
	if out, stderr, status := g.runEnv(t, []string{"LAMBDACLAW_ADDR=" + addr}, "doctor", "--health"); status != 0 || !strings.Contains(out, "200 OK") {
		t.Errorf("doctor --health = %d, %q, %q; want 0 and 200 OK", status, out, stderr)
	}
	g.stop()
	if _, _, status := g.runEnv(t, []string{"LAMBDACLAW_ADDR=" + addr}, "doctor", "--health"); status != 1 {
		t.Errorf("doctor --health of a stopped server: exit status %d, want 1", status)
	}
}

// TestDoctorBadProvider: a provider that does not answer fails its check,
// with a fix, and doctor exits 1.
func TestDoctorBadProvider(t *testing.T) {
	g := newGateway(t, nil, "")
	g.env = append(g.env, "OPENAI_BASE_URL="+nettest.RefusedURL(t)+"/v1", "OPENAI_API_KEY="+providerKey)
	stdout, stderr, status := g.run(t, "doctor")
	if status != 1 {
		t.Fatalf("doctor exit status %d, want 1\nstdout:\n%s\nstderr: %s", status, stdout, stderr)
	}
	doctorLine(t, stdout, "FAIL", "provider openai", "connection refused. Fix: check that the server runs and that OPENAI_BASE_URL is its API root")
	doctorLine(t, stdout, "info", "database", "no database yet")
	if want := "lambdaclaw: doctor: 1 of "; !strings.HasPrefix(stderr, want) {
		t.Errorf("stderr = %q, want %q…", stderr, want)
	}
	if strings.Contains(stdout+stderr, providerKey) {
		t.Errorf("doctor printed the provider key:\n%s%s", stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(g.home, "lambdaclaw.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("doctor created the database: %v", err)
	}
}

// TestDoctorUnwritableHome: a data directory this user cannot write fails
// its check. Root writes everywhere, so as root doctor runs as nobody.
func TestDoctorUnwritableHome(t *testing.T) {
	g := startGateway(t, newFake(t), "")
	g.stop()
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		// nobody reaches the binary and the home, and writes neither.
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
		for dir := g.home; dir != "/" && dir != os.TempDir(); dir = filepath.Dir(dir) {
			chmod(t, dir, 0o755)
		}
		chmod(t, filepath.Dir(binary), 0o755)
		chmod(t, filepath.Join(g.home, "lambdaclaw.db"), 0o644)
	} else {
		chmod(t, g.home, 0o555)
		t.Cleanup(func() { os.Chmod(g.home, 0o700) })
	}
	cmd := exec.Command(binary, "doctor")
	cmd.Env, cmd.Dir = g.env, "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if exit, ok := errors.AsType[*exec.ExitError](err); !ok || exit.ExitCode() != 1 {
		t.Fatalf("doctor: %v, want exit status 1\nstdout:\n%s\nstderr: %s", err, out.String(), errb.String())
	}
	doctorLine(t, out.String(), "FAIL", "data directory", g.home+" is not writable: permission denied. Fix: make it writable for this user")
	doctorLine(t, out.String(), "ok", "provider openai", "key accepted")
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// runEnv is run with more environment variables.
func (g *gateway) runEnv(t testing.TB, env []string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	saved := g.env
	g.env = append(append([]string(nil), g.env...), env...)
	defer func() { g.env = saved }()
	return g.run(t, args...)
}
