//go:build linux

package tests

import (
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// TestFirstRunAtTerminal runs `lambdaclaw serve` on a pseudo-terminal with
// nothing configured: it asks for a provider, a model and a key (not
// echoed), writes config.yaml and the key file, and serves with them.
func TestFirstRunAtTerminal(t *testing.T) {
	fake := newFake(t)
	g := newGateway(t, nil, "")
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	defer tty.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g.addr = "http://" + l.Addr().String()
	sock, err := l.(*net.TCPListener).File()
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	cmd := exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" serve`, binary)
	cmd.Env, cmd.Dir = g.env, g.home
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.ExtraFiles = []*os.File{sock}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()

	// What the terminal shows, read as it comes.
	chunks := make(chan string, 64)
	go func() {
		defer close(chunks)
		b := make([]byte, 4096)
		for {
			n, err := ptmx.Read(b)
			if n > 0 {
				chunks <- string(b[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	var screen strings.Builder
	expect := func(want string) {
		t.Helper()
		deadline := time.After(60 * time.Second)
		for !strings.Contains(screen.String(), want) {
			select {
			case c, ok := <-chunks:
				if !ok {
					t.Fatalf("the terminal closed before %q:\n%s", want, screen.String())
				}
				screen.WriteString(c)
			case <-deadline:
				t.Fatalf("the terminal did not show %q:\n%s", want, screen.String())
			}
		}
	}
	answer := func(s string) {
		t.Helper()
		if _, err := io.WriteString(ptmx, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}

	expect("Choose [1]: ")
	answer("4")
	expect("Base URL of its API [http://localhost:8000/v1]: ")
	answer(fake.URL + "/v1")
	expect("Model [gpt-4o-mini]: ")
	answer("fake-model")
	expect("API key (not shown as you type; empty: the server takes none): ")
	// Type the key once the terminal no longer echoes.
	for deadline := time.Now().Add(30 * time.Second); ; {
		tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		if tio.Lflag&unix.ECHO == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the terminal still echoes at the key prompt")
		}
		time.Sleep(5 * time.Millisecond)
	}
	const typed = "sk-typed-at-the-terminal-0123456789"
	answer(typed)
	expect("ok    provider custom")
	expect("API key (shown once): ")
	expect(`"msg":"lambdaclaw listening"`)
	key := regexp.MustCompile(`API key \(shown once\): (lc_\S+)`).FindStringSubmatch(screen.String())
	if key == nil {
		t.Fatalf("no API key on the terminal:\n%s", screen.String())
	}
	if strings.Contains(screen.String(), typed) {
		t.Errorf("the terminal showed the key:\n%s", screen.String())
	}

	body, err := os.ReadFile(filepath.Join(g.home, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), "api_key: {file: secrets/custom.key}") || strings.Contains(string(body), typed) {
		t.Errorf("config.yaml:\n%s", body)
	}
	st, err := os.Stat(filepath.Join(g.home, "secrets", "custom.key"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v, mode %v; want 0600", err, st.Mode().Perm())
	}

	// The server uses the provider, with the key typed.
	if got := ask(t, g.client(key[1]), "hello"); got != "echo: hello" {
		t.Errorf("reply = %q", got)
	}
	reqs := fake.Requests()
	if len(reqs) == 0 || reqs[len(reqs)-1].APIKey != typed {
		t.Errorf("the provider got keys %v, want the one typed", reqs)
	}
}

// TestFirstRunNotATerminal: without a terminal, serve starts without a
// provider as before and writes no config file.
func TestFirstRunNotATerminal(t *testing.T) {
	g := startGateway(t, nil, "")
	g.stop() // all its output is read once it exited
	if _, err := os.Stat(filepath.Join(g.home, "config.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("serve wrote config.yaml: %v", err)
	}
	if strings.Contains(g.stdout.String(), "A short setup") {
		t.Errorf("serve offered the setup without a terminal:\n%s", g.stdout.String())
	}
	if !strings.Contains(g.stderr.String(), "no LLM provider configured") {
		t.Errorf("serve did not warn about the missing provider:\n%s", g.stderr.String())
	}
}
