package mcp

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// BenchmarkCallStdio measures an MCP tool call as an agent makes it: the
// registry's tool, over stdio, to a server (the Go SDK's, in the test
// binary) whose tool does next to nothing, so the time is the gateway's
// and the transport's. BenchmarkCallStdioSDK is the same call made with
// the SDK's session directly: the difference is the registry's overhead.
func BenchmarkCallStdio(b *testing.B) {
	r, err := New(Config{Servers: []Server{goServer(b, "test")}})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	r.Start()
	tools, _ := r.Tools("test")
	var add *Tool
	for _, t := range tools {
		if t.Remote() == "add" {
			add = t
		}
	}
	if add == nil {
		b.Fatal("no add tool")
	}
	args := json.RawMessage(`{"a":2,"b":3}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if out, err := add.Call(ctx, tool.Env{}, args); err != nil || out != "5" {
			b.Fatalf("add = %q, %v", out, err)
		}
	}
}

func BenchmarkCallStdioSDK(b *testing.B) {
	srv := goServer(b, "test")
	cmd := exec.Command(srv.Command)
	cmd.Env = []string{testServerVar + "=1"}
	client := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	ctx := context.Background()
	sess, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	args := json.RawMessage(`{"a":2,"b":3}`)
	b.ReportAllocs()
	for b.Loop() {
		res, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: "add", Arguments: args})
		if err != nil || res.IsError {
			b.Fatalf("add: %v", err)
		}
	}
}

// BenchmarkCallInMemorySDK is the SDK's client and server of the same
// tool connected in memory: their own work, without pipes or a second
// process.
func BenchmarkCallInMemorySDK(b *testing.B) {
	s := sdk.NewServer(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "add"}, func(_ context.Context, _ *sdk.CallToolRequest, in addIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "5"}}}, nil, nil
	})
	ct, st := sdk.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ss.Close()
	sess, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	args := json.RawMessage(`{"a":2,"b":3}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := sess.CallTool(ctx, &sdk.CallToolParams{Name: "add", Arguments: args}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCallOverhead is what Tool.Call does besides the SDK's
// CallTool: look up the session, bound the call, make the result's text.
// It is the registry's share of BenchmarkCallStdio, measured without the
// noise of a round trip to another process.
func BenchmarkCallOverhead(b *testing.B) {
	r, err := New(Config{Servers: []Server{goServer(b, "test")}})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	r.Start()
	s := r.servers["test"]
	res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "5"}}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.session(); err != nil {
			b.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
		if render(res, r.cfg.MaxResultBytes) != "5" || cctx.Err() != nil {
			b.Fatal("render")
		}
		cancel()
	}
}
