package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// binary is the lambdaclaw executable built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	if os.Getenv(mcpServerVar) != "" {
		serveMCP()
		return
	}
	dir, err := os.MkdirTemp("", "lambdaclaw-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "lambdaclaw")
	// Stripped as released (the Makefile's LDFLAGS), which TestBinarySize
	// holds to its budget.
	build := exec.Command("go", "build", "-ldflags", "-s -w", "-o", binary, "./functions/lambdaclaw")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./functions/lambdaclaw failed: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer is a bytes.Buffer safe for a writer goroutine and readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// gateway is a lambdaclaw home directory and the serve process running on
// it. Stdout and stderr accumulate across restarts.
type gateway struct {
	t      *testing.T
	home   string
	env    []string
	addr   string // base URL, http://127.0.0.1:PORT
	stdout syncBuffer
	stderr syncBuffer
	sock   *os.File // the listening socket every start is given
	cmd    *exec.Cmd
	exited chan struct{}
}

// newGateway prepares a home directory. With fake non-nil the OPENAI_*
// variables point at it; config, when not empty, is written to
// $LAMBDACLAW_HOME/config.yaml. Call start to run the server.
func newGateway(t *testing.T, fake *fakellm.Server, config string) *gateway {
	t.Helper()
	g := &gateway{t: t, home: t.TempDir()}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "OPENAI_") || strings.HasPrefix(kv, "LAMBDACLAW_") || strings.HasPrefix(kv, "HOME=") {
			continue
		}
		g.env = append(g.env, kv)
	}
	g.env = append(g.env, "LAMBDACLAW_HOME="+g.home, "HOME="+g.home)
	if fake != nil {
		g.env = append(g.env,
			"OPENAI_BASE_URL="+fake.URL+"/v1",
			"OPENAI_API_KEY="+providerKey,
			"OPENAI_MODEL=fake-model")
	}
	if config != "" {
		if err := os.WriteFile(filepath.Join(g.home, "config.yaml"), []byte(config), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		g.kill()
		if g.sock != nil {
			g.sock.Close()
		}
		if t.Failed() {
			t.Logf("lambdaclaw stdout:\n%s\nlambdaclaw stderr (tail):\n%s", g.stdout.String(), tail(g.stderr.String(), 6000))
		}
	})
	return g
}

// providerKey is the API key the gateway is given for the fake provider.
const providerKey = "test-provider-key"

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// startGateway is newGateway followed by start.
func startGateway(t *testing.T, fake *fakellm.Server, config string) *gateway {
	t.Helper()
	g := newGateway(t, fake, config)
	g.start()
	return g
}

// start runs `lambdaclaw serve` and waits until /health answers 200.
// The server gets its socket by systemd socket activation: the harness
// listens once, on a free port, and passes the same socket to every start,
// so no other process can take the port between starts, and clients that
// reconnect find the server where it was.
func (g *gateway) start() {
	g.t.Helper()
	if g.cmd != nil {
		g.t.Fatal("gateway already running")
	}
	if g.sock == nil {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			g.t.Fatal(err)
		}
		g.addr = "http://" + l.Addr().String()
		g.sock, err = l.(*net.TCPListener).File()
		l.Close()
		if err != nil {
			g.t.Fatal(err)
		}
	}

	// The shell sets LISTEN_PID to its own pid, which exec hands on.
	cmd := exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" serve`, binary)
	cmd.Env = g.env
	cmd.Dir = g.home
	cmd.Stdout = &g.stdout
	cmd.Stderr = &g.stderr
	cmd.ExtraFiles = []*os.File{g.sock}
	if err := cmd.Start(); err != nil {
		g.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	g.cmd, g.exited = cmd, exited

	deadline := time.Now().Add(15 * time.Second)
	hc := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-exited:
			g.cmd = nil
			g.t.Fatalf("lambdaclaw serve exited before becoming healthy:\n%s", tail(g.stderr.String(), 4000))
		default:
		}
		resp, err := hc.Get(g.addr + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("GET /health did not answer 200 within 15s (last: %v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop asks the server to shut down (SIGTERM) and waits for it to exit.
func (g *gateway) stop() {
	g.t.Helper()
	if g.cmd == nil {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(10 * time.Second):
		g.t.Error("lambdaclaw serve did not exit within 10s of SIGTERM; killing it")
		_ = g.cmd.Process.Kill()
		<-g.exited
	}
	g.cmd = nil
}

// kill stops the server with SIGKILL, as a crash would.
func (g *gateway) kill() {
	if g.cmd == nil {
		return
	}
	_ = g.cmd.Process.Kill()
	<-g.exited
	g.cmd = nil
}

// firstKey returns the key printed on first start.
func (g *gateway) firstKey() string {
	g.t.Helper()
	re := regexp.MustCompile(`API key \(shown once\): (lc_\S+)`)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if m := re.FindStringSubmatch(g.stdout.String()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("no %q line on stdout after first start; stdout:\n%s", "API key (shown once): lc_...", g.stdout.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cli runs a lambdaclaw command on the same home and returns its stdout;
// a failure fails the test.
func (g *gateway) cli(t testing.TB, args ...string) string {
	t.Helper()
	stdout, stderr, status := g.run(t, args...)
	if status != 0 {
		t.Fatalf("lambdaclaw %s: exit status %d\nstderr: %s", strings.Join(args, " "), status, stderr)
	}
	return stdout
}

// run runs a lambdaclaw command on the same home and returns its output
// and exit status.
func (g *gateway) run(t testing.TB, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = g.env
	cmd.Dir = g.home
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		status = exit.ExitCode()
	case err != nil:
		t.Fatalf("lambdaclaw %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), status
}

// createKey runs `lambdaclaw keys create` and checks that stdout holds only
// the key.
func (g *gateway) createKey(t testing.TB, args ...string) string {
	t.Helper()
	out := g.cli(t, append([]string{"keys", "create"}, args...)...)
	key := strings.TrimSuffix(out, "\n")
	if !strings.HasPrefix(key, "lc_") || strings.ContainsAny(key, " \t\n") {
		t.Fatalf("keys create stdout = %q, want one line holding only the lc_ key", out)
	}
	return key
}

// workspace is the default agent's workspace directory.
func (g *gateway) workspace() string {
	return filepath.Join(g.home, "agents", "default")
}

// writeWorkspaceFile writes a file into the default agent's workspace.
func (g *gateway) writeWorkspaceFile(name, content string) {
	g.t.Helper()
	path := filepath.Join(g.workspace(), name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		g.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		g.t.Fatal(err)
	}
}

// client returns an OpenAI client for the gateway that never retries,
// with more options when given.
func (g *gateway) client(key string, opts ...option.RequestOption) *openai.Client {
	c := openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(g.addr + "/v1"),
		option.WithAPIKey(key),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(30 * time.Second),
	}, opts...)...)
	return &c
}

// post sends a raw chat completions request.
func (g *gateway) post(t testing.TB, key, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	return g.postTo(t, "/v1/chat/completions", key, body, header)
}

// postTo sends a raw JSON request to path.
func (g *gateway) postTo(t testing.TB, path, key, body string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, g.addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// session is the request option that makes a request stateful.
func session(key string) option.RequestOption {
	return option.WithHeader("X-Lambdaclaw-Session-Key", key)
}

// chatParams is a request to the default agent.
func chatParams(msgs ...openai.ChatCompletionMessageParamUnion) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{Model: "default", Messages: msgs}
}

// ask sends one user message and returns the reply's content.
func ask(t *testing.T, c *openai.Client, text string, opts ...option.RequestOption) string {
	t.Helper()
	resp, err := c.Chat.Completions.New(context.Background(), chatParams(openai.UserMessage(text)), opts...)
	if err != nil {
		t.Fatalf("chat %q: %v", text, err)
	}
	if len(resp.Choices) == 0 {
		t.Fatalf("chat %q: no choices", text)
	}
	return resp.Choices[0].Message.Content
}

// errorBody is OpenAI's error JSON.
type errorBody struct {
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    string `json:"code"`
	} `json:"error"`
}

// wantErrorJSON checks a raw response's status and OpenAI error body; code
// is checked when not empty.
func wantErrorJSON(t *testing.T, resp *http.Response, body []byte, status int, code string) errorBody {
	t.Helper()
	var e errorBody
	if resp.StatusCode != status {
		t.Errorf("status = %d, want %d; body: %s", resp.StatusCode, status, body)
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error == nil || e.Error.Message == "" {
		t.Errorf("body is not OpenAI error JSON with a message: %s", body)
		return e
	}
	if code != "" && e.Error.Code != code {
		t.Errorf("error code = %q, want %q; body: %s", e.Error.Code, code, body)
	}
	return e
}

// wantAPIError checks that err is an *openai.Error with the status and code.
func wantAPIError(t *testing.T, err error, status int, code string) *openai.Error {
	t.Helper()
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *openai.Error with status %d", err, status)
	}
	if apiErr.StatusCode != status || (code != "" && apiErr.Code != code) {
		t.Errorf("got status %d code %q (%s), want %d %q", apiErr.StatusCode, apiErr.Code, apiErr.Message, status, code)
	}
	return apiErr
}

// newFake starts a fake LLM that is closed after the test and that fails the
// test if the gateway ever sent it a conversation the real API rejects.
func newFake(t *testing.T) *fakellm.Server {
	t.Helper()
	f := fakellm.New()
	t.Cleanup(func() {
		for i, r := range f.Requests() {
			if r.Invalid != "" {
				t.Errorf("LLM request %d was invalid for the OpenAI API: %s\nbody: %s", i, r.Invalid, r.Body)
			}
		}
		f.Close()
	})
	return f
}

// conversation drops system and developer messages, which the gateway adds
// from the agent's workspace.
func conversation(msgs []fakellm.Message) []fakellm.Message {
	var out []fakellm.Message
	for _, m := range msgs {
		if m.Role != "system" && m.Role != "developer" {
			out = append(out, m)
		}
	}
	return out
}

func user(s string) fakellm.Message      { return fakellm.Message{Role: "user", Content: s} }
func assistant(s string) fakellm.Message { return fakellm.Message{Role: "assistant", Content: s} }

// logEvents parses stderr as JSON lines; it fails the test on a line that
// is not JSON.
func logEvents(t *testing.T, stderr string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.SplitSeq(stderr, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("stderr line is not JSON: %q", line)
			continue
		}
		out = append(out, m)
	}
	return out
}

// hasEvent reports whether some log line names the event (as any top-level
// string value) and has every given field value.
func hasEvent(events []map[string]any, name string, fields map[string]string) bool {
	for _, e := range events {
		named := false
		for _, v := range e {
			if s, ok := v.(string); ok && s == name {
				named = true
			}
		}
		if !named {
			continue
		}
		ok := true
		for k, want := range fields {
			if fmt.Sprint(e[k]) != want {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}
