package tests

// A crash never repeats a side effect (issue 23 §2): a tool call that was
// running when the server was killed (kill -9) is not run again after
// the restart; the model is told it was interrupted, and the run goes on.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// mcpServerVar makes the test binary an MCP stdio server (serveMCP)
// instead of running the tests.
const mcpServerVar = "LAMBDACLAW_TEST_MCP_SERVER"

// serveMCP serves one tool over stdio, append: it appends its line to
// the file at path, then holds for hold_ms (or until the call is
// cancelled) before it answers. Its effect is unknown to the gateway (no
// annotations): an external side effect.
func serveMCP() {
	s := sdk.NewServer(&sdk.Implementation{Name: "appender", Version: "1"}, nil)
	type in struct {
		Path   string `json:"path"`
		Line   string `json:"line"`
		HoldMS int    `json:"hold_ms"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "append", Description: "Appends a line to a file."},
		func(ctx context.Context, _ *sdk.CallToolRequest, a in) (*sdk.CallToolResult, any, error) {
			f, err := os.OpenFile(a.Path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return nil, nil, err
			}
			_, err = fmt.Fprintln(f, a.Line)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return nil, nil, err
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(a.HoldMS) * time.Millisecond):
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "appended"}}}, nil, nil
		})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, err)
	}
}

// killDuringCall has the model make call, with a full-autonomy key in a
// stateful session; once the call's side effect shows in lines (the tool
// is running), it kills the server (SIGKILL) and starts it again. It
// returns the model's request after the restart, which holds the call's
// result, and lines once the run is over.
func killDuringCall(t *testing.T, g *gateway, fake *fakellm.Server, call fakellm.ToolCall, lines func() []string) (fakellm.Request, []string) {
	t.Helper()
	key := g.createKey(t, "--name", "full", "--autonomy", "full")
	fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{call}}, fakellm.Reply{Content: "carried on"})
	done := make(chan error, 1)
	go func() {
		_, err := g.client(key).Chat.Completions.New(context.Background(), chatParams(openai.UserMessage("run it")), session("crash"))
		done <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if slices.Contains(lines(), "start") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the call did not start within 20s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	g.kill()
	if err := <-done; err == nil {
		t.Error("request to a killed server succeeded")
	}
	g.start()
	reqs, ok := fake.WaitRequests(2, 30*time.Second)
	if !ok {
		t.Fatalf("the killed run did not go on after the restart: the model got %d requests, want 2", len(reqs))
	}
	// The run is over once its answer is in history: the next turn of the
	// session waits for it.
	if got := ask(t, g.client(key), "and now?", session("crash")); got != "echo: and now?" {
		t.Errorf("next turn = %q", got)
	}
	return reqs[1], lines()
}

// logLines returns the lines of the file at path.
func logLines(path string) func() []string {
	return func() []string {
		b, _ := os.ReadFile(path)
		return strings.Fields(string(b))
	}
}

// wantInterrupted checks that the model got the interrupted result of
// call, and that the call's side effect happened once.
func wantInterrupted(t *testing.T, g *gateway, req fakellm.Request, callID string, lines []string) {
	t.Helper()
	res, ok := toolResult(req, callID)
	if !ok {
		t.Fatalf("no result of %s in the model's request after the restart", callID)
	}
	if !strings.Contains(res, "interrupted by a restart before it finished; it may have partly run") {
		t.Errorf("result after the restart = %q, want it to say the call was interrupted", res)
	}
	starts := 0
	for _, l := range lines {
		if l == "start" {
			starts++
		}
	}
	if starts != 1 {
		t.Errorf("the call ran %d times (lines %q), want once", starts, lines)
	}
	waitEvent(t, g, "tool_call_interrupted", map[string]string{"call_id": callID})
}

func TestKilledExecNotRepeated(t *testing.T) {
	t.Parallel()
	bwrapInstalled(t)
	fake := newFake(t)
	g := startGateway(t, fake, "")
	waitEvent(t, g, "exec tool offered", nil)
	// A command works on a copy of the workspace, written back when it
	// ends; its start is told at once through the tool bridge, a file of
	// its own in starts/ each time it runs.
	call := execCall("call_exec", `lambdaclaw-tool write_file "{\"path\":\"starts/$(date +%s%N).txt\",\"content\":\"start\"}" && sleep 5 && echo end >> crash.log`, 0)
	dir := filepath.Join(g.workspace(), "starts")
	starts := func() []string {
		var lines []string
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
			lines = append(lines, strings.Fields(string(b))...)
		}
		b, _ := os.ReadFile(filepath.Join(g.workspace(), "crash.log"))
		return append(lines, strings.Fields(string(b))...)
	}
	req, lines := killDuringCall(t, g, fake, call, starts)
	wantInterrupted(t, g, req, "call_exec", lines)
}

func TestKilledMCPCallNotRepeated(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fake := newFake(t)
	g := newGateway(t, fake, fmt.Sprintf("mcp:\n  servers:\n    appender:\n      command: %q\n      env: {%s: \"1\"}\n", exe, mcpServerVar))
	g.start()
	log := filepath.Join(t.TempDir(), "mcp.log")
	args, err := json.Marshal(map[string]any{"path": log, "line": "start", "hold_ms": 5000})
	if err != nil {
		t.Fatal(err)
	}
	call := fakellm.ToolCall{ID: "call_mcp", Name: "appender__append", Arguments: string(args)}
	req, lines := killDuringCall(t, g, fake, call, logLines(log))
	wantInterrupted(t, g, req, "call_mcp", lines)
}
