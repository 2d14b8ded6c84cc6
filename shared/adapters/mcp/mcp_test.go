package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// testServerVar makes the test binary an MCP server on stdio (TestMain).
const testServerVar = "MCPTEST_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(testServerVar) != "" {
		serveTestServer()
		return
	}
	os.Exit(m.Run())
}

// serveTestServer is the Go SDK's server with the tools the tests need:
// add (read-only), sleep (until cancelled), fail (an isError result),
// grow (adds the tool extra, which notifies tools/list_changed), names
// to sanitise (bad.name and bad_name clash) and a long one.
func serveTestServer() {
	s := sdk.NewServer(&sdk.Implementation{Name: "test", Version: "1"}, nil)
	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "add", Description: "Adds a and b.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil, nil
		})
	raw := func(name string, h sdk.ToolHandler) {
		s.AddTool(&sdk.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, h)
	}
	raw("sleep", func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	raw("fail", func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "it failed"}}}, nil
	})
	raw("grow", func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		s.AddTool(&sdk.Tool{Name: "extra", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "extra"}}}, nil
			})
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "grown"}}}, nil
	})
	for _, n := range []string{"bad.name", "bad_name", strings.Repeat("long", 20)} {
		raw(n, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: n}}}, nil
		})
	}
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, err)
	}
}

// goServer is the test binary as a stdio server.
func goServer(t testing.TB, name string) Server {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Server{Name: name, Command: exe, Env: map[string]string{testServerVar: "1"}}
}

// everythingDir is the installed @modelcontextprotocol/server-everything.
func everythingDir(t testing.TB) string {
	dir, err := filepath.Abs("../../../tests/testdata/clients/node_modules/@modelcontextprotocol/server-everything/dist")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "index.js")); err != nil {
		t.Fatalf("the MCP everything server is not installed: run bash tests/testdata/clients/install.sh (make test does): %v", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not on PATH: the MCP tests run the everything server with Node.js (apt-get install nodejs npm)")
	}
	return dir
}

func everythingStdio(t testing.TB) Server {
	return Server{Name: "everything", Command: "node", Args: []string{filepath.Join(everythingDir(t), "index.js"), "stdio"}}
}

// startEverythingHTTP runs the everything server over streamable HTTP on
// port ("0": one the system picks) and returns its port and process.
func startEverythingHTTP(t *testing.T, port string) (string, *exec.Cmd) {
	dir := everythingDir(t)
	preload, err := filepath.Abs("testdata/listenport.mjs")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "--import", preload, filepath.Join(dir, "index.js"), "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+port)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	got := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "lambdaclaw-test-port "); ok {
				got <- p
			}
		}
	}()
	select {
	case p := <-got:
		return p, cmd
	case <-time.After(30 * time.Second):
		t.Fatal("the everything server did not tell its port")
		return "", nil
	}
}

func newRegistry(t *testing.T, cfg Config) *Registry {
	t.Helper()
	if cfg.Backoff == 0 {
		cfg.Backoff, cfg.MaxBackoff = 10*time.Millisecond, 200*time.Millisecond
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// waitFor waits until cond holds of the registry's status.
func waitFor(t *testing.T, r *Registry, what string, cond func(map[string]Status) bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		ch := r.Changed()
		m := map[string]Status{}
		for _, s := range r.Status() {
			m[s.Name] = s
		}
		if cond(m) {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("waiting for %s: status %+v", what, m)
		}
	}
}

func toolNamed(t *testing.T, r *Registry, server, name string) *Tool {
	t.Helper()
	tools, _ := r.Tools(server)
	for _, tl := range tools {
		if tl.Definition().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s among %d of %s", name, len(tools), server)
	return nil
}

func call(t *testing.T, tl tool.Tool, args string) (string, error) {
	t.Helper()
	return tl.Call(context.Background(), tool.Env{}, json.RawMessage(args))
}

// testEverything runs the checks both transports share: the tools, echo,
// an error result, an image, structured content.
func testEverything(t *testing.T, r *Registry) {
	echo := toolNamed(t, r, "everything", "everything__echo")
	if !echo.ReadOnly || echo.Remote() != "echo" || !strings.Contains(string(echo.Definition().Parameters), `"message"`) {
		t.Errorf("echo: read-only %v, remote %q, schema %s", echo.ReadOnly, echo.Remote(), echo.Definition().Parameters)
	}
	if got, err := call(t, echo, `{"message":"hello"}`); err != nil || got != "Echo: hello" {
		t.Errorf("echo = %q, %v; want Echo: hello", got, err)
	}
	if got, err := call(t, echo, `{}`); err == nil || !strings.Contains(err.Error(), "message") {
		t.Errorf("echo without its argument = %q, %v; want an error about message", got, err)
	}
	if got, err := call(t, toolNamed(t, r, "everything", "everything__get-tiny-image"), `{}`); err != nil || !strings.Contains(got, "[image: image/png, ") {
		t.Errorf("get-tiny-image = %q, %v; want the image described", got, err)
	}
	got, err := call(t, toolNamed(t, r, "everything", "everything__get-structured-content"), `{"location":"New York"}`)
	if err != nil || !strings.Contains(got, "temperature") || strings.Contains(got, "structured content:") {
		t.Errorf("get-structured-content = %q, %v; want the weather once (its text is the structured content)", got, err)
	}
}

func TestEverythingStdio(t *testing.T) {
	t.Parallel()
	r := newRegistry(t, Config{Servers: []Server{everythingStdio(t)}})
	r.Start()
	if st := r.Status()[0]; st.State != Running || st.Transport != "stdio" || st.Tools < 10 {
		t.Fatalf("status %+v; want running over stdio with the everything tools", st)
	}
	testEverything(t, r)

	// A crash: the server is started again, and its tools work again.
	s := r.servers["everything"]
	s.mu.Lock()
	proc := s.proc
	s.mu.Unlock()
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, "the restart", func(m map[string]Status) bool {
		return m["everything"].State == Running && m["everything"].Restarts == 1
	})
	if got, err := call(t, toolNamed(t, r, "everything", "everything__echo"), `{"message":"again"}`); err != nil || got != "Echo: again" {
		t.Errorf("echo after the restart = %q, %v", got, err)
	}
}

func TestEverythingStreamableHTTP(t *testing.T) {
	t.Parallel()
	port, node := startEverythingHTTP(t, "0")
	r := newRegistry(t, Config{Servers: []Server{{Name: "everything", URL: "http://127.0.0.1:" + port + "/mcp"}}})
	r.Start()
	if st := r.Status()[0]; st.State != Running || st.Transport != "streamable-http" || st.Tools < 10 {
		t.Fatalf("status %+v; want running over streamable HTTP", st)
	}
	testEverything(t, r)

	// A crash of the server, started again on its port: the session is
	// gone; the registry connects again once it notices, at the latest
	// when a call fails on the dead session.
	echo := toolNamed(t, r, "everything", "everything__echo")
	node.Process.Kill()
	node.Wait()
	startEverythingHTTP(t, port)
	if _, err := call(t, echo, `{"message":"x"}`); err == nil {
		t.Log("the call on the old session worked: the registry had reconnected already")
	}
	waitFor(t, r, "the reconnection", func(m map[string]Status) bool {
		return m["everything"].State == Running && m["everything"].Restarts >= 1
	})
	if got, err := call(t, toolNamed(t, r, "everything", "everything__echo"), `{"message":"again"}`); err != nil || got != "Echo: again" {
		t.Errorf("echo after the restart = %q, %v", got, err)
	}
}

func TestHeadersAndSSEFallback(t *testing.T) {
	t.Parallel()
	// The everything server's older HTTP+SSE transport: the streamable
	// POST fails there, and the registry falls back.
	dir := everythingDir(t)
	preload, _ := filepath.Abs("testdata/listenport.mjs")
	cmd := exec.Command("node", "--import", preload, filepath.Join(dir, "index.js"), "sse")
	cmd.Env = append(os.Environ(), "PORT=0")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	var port string
	for port == "" && sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "lambdaclaw-test-port "); ok {
			port = p
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	r := newRegistry(t, Config{Servers: []Server{{Name: "everything", URL: "http://127.0.0.1:" + port + "/sse", Headers: map[string]string{"Authorization": "Bearer ${TEST_TOKEN}"}}},
		Getenv: func(k string) string { return map[string]string{"TEST_TOKEN": "t0ken"}[k] }})
	r.Start()
	if st := r.Status()[0]; st.State != Running || st.Transport != "sse" {
		t.Fatalf("status %+v; want running over HTTP+SSE", st)
	}
	if got, err := call(t, toolNamed(t, r, "everything", "everything__echo"), `{"message":"sse"}`); err != nil || got != "Echo: sse" {
		t.Errorf("echo = %q, %v", got, err)
	}
}

func TestStdioEnvironmentIsolated(t *testing.T) {
	for k, v := range map[string]string{
		"OPENAI_API_KEY": "sk-gateway-secret", "TELEGRAM_BOT_TOKEN": "123:bot-secret", "LAMBDACLAW_HOME": "/secret/home",
		"LAMBDACLAW_API_KEY": "lc-secret", "AWS_SECRET_ACCESS_KEY": "aws-secret", "MY_TOKEN": "given-to-the-server",
	} {
		t.Setenv(k, v)
	}
	srv := everythingStdio(t)
	srv.Env = map[string]string{"TOKEN": "${MY_TOKEN}", "PLAIN": "x"}
	r := newRegistry(t, Config{Servers: []Server{srv}})
	r.Start()
	out, err := call(t, toolNamed(t, r, "everything", "everything__get-env"), `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]string
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		t.Fatalf("get-env: %v: %s", err, out)
	}
	want := map[string]string{"TOKEN": "given-to-the-server", "PLAIN": "x"}
	for _, k := range inherited {
		if v := os.Getenv(k); v != "" {
			want[k] = v
		}
	}
	if diff := cmp.Diff(want, env); diff != "" {
		t.Errorf("the server's environment (-want +got):\n%s", diff)
	}
}

func TestUnsetVariableFailsTheServerOnly(t *testing.T) {
	var logs syncBuf
	srv := goServer(t, "test")
	srv.Env["TOKEN"] = "${MCPTEST_UNSET_VARIABLE}"
	r := newRegistry(t, Config{Servers: []Server{srv, goServer(t, "other")}, Log: slog.New(slog.NewTextHandler(&logs, nil)),
		Getenv: func(k string) string { return map[string]string{"PATH": os.Getenv("PATH")}[k] }})
	r.Start()
	st := r.Status()
	if st[0].State != Running || st[1].State != Failed || !strings.Contains(st[1].Err, "MCPTEST_UNSET_VARIABLE is not set") {
		t.Fatalf("status %+v; want other running, test failed for the unset variable", st)
	}
	if tools, _ := r.Tools("test"); len(tools) != 0 {
		t.Errorf("the failed server has %d tools", len(tools))
	}
}

func TestFailingServerDoesNotBlock(t *testing.T) {
	r := newRegistry(t, Config{Servers: []Server{{Name: "broken", Command: "/nonexistent/mcp-server"}}})
	ts := r.Toolset(nil, Filter{})
	if reg := ts.Current(); len(reg.Definitions()) != 0 {
		t.Errorf("tools of a broken server: %v", reg.Definitions())
	}
	if st := r.Status()[0]; st.State != Failed && st.State != Starting {
		t.Errorf("status %+v; want failed", st)
	}
	if _, err := (&Tool{srv: r.servers["broken"], remote: "x"}).Call(context.Background(), tool.Env{}, nil); err == nil || !strings.Contains(err.Error(), "MCP server broken is not running") {
		t.Errorf("call on a broken server: %v", err)
	}
}

func TestGoServer(t *testing.T) {
	var logs syncBuf
	r := newRegistry(t, Config{Servers: []Server{goServer(t, "test")}, Log: slog.New(slog.NewTextHandler(&logs, nil)), CallTimeout: 30 * time.Second})
	r.Start()
	tools, _ := r.Tools("test")
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Definition().Name)
	}
	long := ToolName("test", strings.Repeat("long", 20))
	want := []string{"test__add", "test__bad_name", "test__fail", "test__grow", long, "test__sleep"}
	slices.Sort(want)
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if got, _ := call(t, toolNamed(t, r, "test", "test__bad_name"), `{}`); got != "bad.name" {
		t.Errorf("test__bad_name calls %q, want bad.name (the first of the clashing names)", got)
	}
	if !strings.Contains(logs.String(), "clash") || !strings.Contains(logs.String(), "left_out=bad_name") {
		t.Errorf("the clash is not logged: %s", logs.String())
	}
	if got, err := call(t, toolNamed(t, r, "test", "test__add"), `{"a":2,"b":3}`); err != nil || got != "5" {
		t.Errorf("add = %q, %v", got, err)
	}
	if _, err := call(t, toolNamed(t, r, "test", "test__fail"), `{}`); err == nil || err.Error() != "it failed" {
		t.Errorf("fail: %v; want the isError result's text as the error", err)
	}

	// Cancelling the run cancels the call.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := toolNamed(t, r, "test", "test__sleep").Call(ctx, tool.Env{}, nil)
		done <- err
	}()
	cancel()
	if err := <-done; err == nil {
		t.Error("a cancelled call returned no error")
	}

	// notifications/tools/list_changed refreshes the tools.
	ts := r.Toolset(nil, Filter{})
	if _, ok := ts.Current().Get("test__extra"); ok {
		t.Fatal("extra before it was added")
	}
	if _, err := call(t, toolNamed(t, r, "test", "test__grow"), `{}`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, r, "the new tool", func(m map[string]Status) bool { return m["test"].Tools == len(want)+1 })
	extra, ok := ts.Current().Get("test__extra")
	if !ok {
		t.Fatal("the toolset did not follow the new tool")
	}
	if got, err := extra.Call(context.Background(), tool.Env{}, nil); err != nil || got != "extra" {
		t.Errorf("extra = %q, %v", got, err)
	}
}

func TestCallTimeout(t *testing.T) {
	r := newRegistry(t, Config{Servers: []Server{goServer(t, "test")}, CallTimeout: 50 * time.Millisecond})
	r.Start()
	_, err := call(t, toolNamed(t, r, "test", "test__sleep"), `{}`)
	if err == nil || !strings.Contains(err.Error(), "test__sleep did not answer within 50ms") {
		t.Errorf("err = %v; want the timeout", err)
	}
}

type fixedTool struct{ name string }

func (f fixedTool) Definition() chat.ToolDef { return chat.ToolDef{Name: f.name} }
func (f fixedTool) Policy() tool.Policy      { return tool.Policy{Effect: tool.Read} }
func (f fixedTool) Call(context.Context, tool.Env, json.RawMessage) (string, error) {
	return "fixed", nil
}

func TestToolset(t *testing.T) {
	r := newRegistry(t, Config{Servers: []Server{
		goServer(t, "test"),
		{Name: "trusted", Command: goServer(t, "").Command, Env: map[string]string{testServerVar: "1"}, TrustReadOnlyHints: true},
	}})
	fixed, err := tool.NewRegistry(fixedTool{"web_fetch"}, fixedTool{"test__fail"})
	if err != nil {
		t.Fatal(err)
	}
	names := func(ts *Toolset) []string {
		var out []string
		for _, d := range ts.Current().Definitions() {
			out = append(out, d.Name)
		}
		return out
	}
	tests := []struct {
		name   string
		filter Filter
		want   []string
	}{
		{"one server, a fixed tool wins a clash", Filter{Servers: []string{"test"}, Allow: []string{"test__add", "test__fail", "test__sleep"}},
			[]string{"test__add", "test__fail", "test__sleep", "web_fetch"}},
		{"deny after allow", Filter{Allow: []string{"*__add", "*__sleep"}, Deny: []string{"trusted__*"}},
			[]string{"test__add", "test__fail", "test__sleep", "web_fetch"}},
		{"no servers", Filter{Servers: []string{}}, []string{"test__fail", "web_fetch"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := r.Toolset(fixed, tt.filter)
			if diff := cmp.Diff(tt.want, names(ts)); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if first := ts.Current(); ts.Current() != first {
				t.Error("an unchanged toolset makes a new registry")
			}
		})
	}
	// The fixed test__fail is the fixed tool, not the server's.
	if got, _ := call(t, mustGet(t, r.Toolset(fixed, Filter{}), "test__fail"), `{}`); got != "fixed" {
		t.Errorf("test__fail = %q; want the fixed tool", got)
	}
	// Policies: approval unless read-only and trusted.
	ts := r.Toolset(nil, Filter{})
	for name, want := range map[string]tool.Policy{
		"test__add":     {Effect: tool.External},
		"trusted__add":  {Effect: tool.Read},
		"trusted__fail": {Effect: tool.External},
	} {
		if diff := cmp.Diff(want, mustGet(t, ts, name).Policy()); diff != "" {
			t.Errorf("%s policy (-want +got):\n%s", name, diff)
		}
	}
}

func mustGet(t *testing.T, ts *Toolset, name string) tool.Tool {
	t.Helper()
	tl, ok := ts.Current().Get(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tl
}

func TestToolName(t *testing.T) {
	tests := []struct{ server, tool, want string }{
		{"everything", "echo", "everything__echo"},
		{"gh", "repos/list.all", "gh__repos_list_all"},
		{"s", "naïve tool", "s__na_ve_tool"},
		{"s", strings.Repeat("x", 70), "s__" + strings.Repeat("x", 52) + "_"},
	}
	for _, tt := range tests {
		got := ToolName(tt.server, tt.tool)
		if !strings.HasPrefix(got, tt.want) || len(got) > 64 || !invalidNameChars().MatchString("!") || invalidNameChars().MatchString(got) {
			t.Errorf("ToolName(%q, %q) = %q, want %q…, at most 64 valid characters", tt.server, tt.tool, got, tt.want)
		}
		if again := ToolName(tt.server, tt.tool); again != got {
			t.Errorf("ToolName is not deterministic: %q then %q", got, again)
		}
	}
	if a, b := ToolName("s", strings.Repeat("x", 70)), ToolName("s", strings.Repeat("x", 71)); a == b || len(a) != 64 {
		t.Errorf("long names %q and %q: want different names of 64 characters", a, b)
	}
}

func TestRender(t *testing.T) {
	tests := []struct {
		name string
		res  *sdk.CallToolResult
		max  int
		want string
	}{
		{"texts", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a"}, &sdk.TextContent{Text: "b"}}}, 100, "a\nb"},
		{"image", &sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{MIMEType: "image/png", Data: []byte("12345")}}}, 100,
			"[image: image/png, 5 bytes; images of MCP tools are not shown to the model]"},
		{"link", &sdk.CallToolResult{Content: []sdk.Content{&sdk.ResourceLink{Name: "f", URI: "file:///f"}}}, 100, "[resource link: f file:///f]"},
		{"resource", &sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "x:1", Text: "body"}}}}, 100, "[resource x:1]\nbody"},
		{"structured only", &sdk.CallToolResult{StructuredContent: map[string]any{"a": 1}}, 100, `structured content: {"a":1}`},
		{"structured as text", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: `{ "a": 1 }`}}, StructuredContent: map[string]any{"a": 1}}, 100, `{ "a": 1 }`},
		{"cut", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "héllo"}, &sdk.TextContent{Text: "world"}}}, 3, "hé"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := render(tt.res, tt.max); got != tt.want {
				t.Errorf("render = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestExpandEnv(t *testing.T) {
	env := func(k string) string { return map[string]string{"A": "1", "TOKEN": "s3cret"}[k] }
	tests := []struct{ in, want, err string }{
		{"Bearer ${TOKEN}", "Bearer s3cret", ""},
		{"${A}-${A}", "1-1", ""},
		{"plain $A", "plain $A", ""},
		{"${MISSING}", "", "the environment variable MISSING is not set"},
	}
	for _, tt := range tests {
		got, err := ExpandEnv(tt.in, env)
		if got != tt.want || (err == nil) != (tt.err == "") || err != nil && err.Error() != tt.err {
			t.Errorf("ExpandEnv(%q) = %q, %v; want %q, %q", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// syncBuf is a log written by several goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
