package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
)

// SocketPath is where a backend puts the bridge's Unix socket inside the
// sandbox, and where the lambdaclaw-tool client looks for it.
const SocketPath = "/run/lambdaclaw/bridge.sock"

// ToolsDir is where the tool descriptions are inside the sandbox.
const ToolsDir = "/tools"

// MaxBridgeRequest caps one bridge request (a tool name and its
// arguments); MaxBridgeReply one answer.
const (
	MaxBridgeRequest = 1 << 20
	MaxBridgeReply   = 4 << 20
)

// bridgeRequest and bridgeReply are the bridge's wire format: one JSON
// line each way per connection.
type bridgeRequest struct {
	Tool string          `json:"tool"`
	Args json.RawMessage `json:"args"`
}

type bridgeReply struct {
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
}

// ToolFiles returns the files that describe defs to a script, by path
// under ToolsDir: index.txt (a line per tool: its name, a tab and the first
// line of its description) and <name>/description.txt and
// <name>/schema.json for each.
func ToolFiles(defs []chat.ToolDef) map[string][]byte {
	defs = append([]chat.ToolDef(nil), defs...)
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	files := map[string][]byte{}
	var index strings.Builder
	for _, d := range defs {
		first, _, _ := strings.Cut(strings.TrimSpace(d.Description), "\n")
		fmt.Fprintf(&index, "%s\t%s\n", d.Name, first)
		files[d.Name+"/description.txt"] = []byte(strings.TrimSpace(d.Description) + "\n")
		schema := d.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		files[d.Name+"/schema.json"] = append(append([]byte(nil), schema...), '\n')
	}
	files["index.txt"] = []byte(index.String())
	return files
}

// ServeBridge answers bridge connections on ln with b until ctx ends or
// ln is closed; it waits for the calls under way before returning. Each
// connection carries one call.
func ServeBridge(ctx context.Context, ln net.Listener, b Bridge) {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		wg.Go(func() {
			defer conn.Close()
			serveCall(ctx, conn, b)
		})
	}
}

func serveCall(ctx context.Context, conn net.Conn, b Bridge) {
	r := bufio.NewReaderSize(io.LimitReader(conn, MaxBridgeRequest+1), 64<<10)
	line, err := r.ReadBytes('\n')
	var reply bridgeReply
	var req bridgeRequest
	switch {
	case len(line) > MaxBridgeRequest:
		reply.Error = fmt.Sprintf("the request is over %d bytes", MaxBridgeRequest)
	case err != nil && !errors.Is(err, io.EOF):
		reply.Error = "reading the request: " + err.Error()
	case json.Unmarshal(line, &req) != nil || req.Tool == "":
		reply.Error = `the request is not {"tool": NAME, "args": {...}}`
	default:
		if len(req.Args) == 0 {
			req.Args = json.RawMessage("{}")
		}
		out, err := b.Call(ctx, req.Tool, req.Args)
		if err != nil {
			reply.Error = err.Error()
		} else {
			reply.Output = out
		}
	}
	if len(reply.Output) > MaxBridgeReply {
		reply.Output = reply.Output[:MaxBridgeReply]
	}
	enc, _ := json.Marshal(reply)
	conn.Write(append(enc, '\n'))
}

// CallBridge calls the tool name with args through the bridge at socket.
// An error is either the tool's refusal or failure, or the bridge's.
func CallBridge(ctx context.Context, socket, name string, args json.RawMessage) (string, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return "", fmt.Errorf("the tool bridge is not reachable: %w", err)
	}
	defer conn.Close()
	if deadline, ok := ctx.Deadline(); ok {
		conn.SetDeadline(deadline)
	}
	req, err := json.Marshal(bridgeRequest{Tool: name, Args: args})
	if err != nil {
		return "", fmt.Errorf("the arguments are not JSON: %w", err)
	}
	if _, err := conn.Write(append(req, '\n')); err != nil {
		return "", fmt.Errorf("tool bridge: %w", err)
	}
	line, err := bufio.NewReader(io.LimitReader(conn, 2*MaxBridgeReply)).ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("tool bridge: %w", err)
	}
	var reply bridgeReply
	if err := json.Unmarshal(line, &reply); err != nil {
		return "", fmt.Errorf("tool bridge: a reply that is not JSON: %w", err)
	}
	if reply.Error != "" {
		return "", errors.New(reply.Error)
	}
	return reply.Output, nil
}

// ClientUsage is the lambdaclaw-tool client's help.
const ClientUsage = `usage: lambdaclaw-tool NAME [JSON|-]
Calls the agent's tool NAME with the JSON arguments (default {}; - reads them
from stdin) and prints its output. The tools are listed in /tools/index.txt,
each described in /tools/NAME/description.txt and /tools/NAME/schema.json.
`

// Client is the lambdaclaw-tool command run in a sandbox, calling the
// bridge at socket (SocketPath in a sandbox): args are NAME and optional
// JSON. It returns the exit status: 0 with the output on
// stdout, 1 with the refusal or failure on stderr, 2 for bad usage.
func Client(socket string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) < 1 || len(args) > 2 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, ClientUsage)
		return 2
	}
	raw := "{}"
	if len(args) == 2 {
		raw = args[1]
	}
	if raw == "-" {
		b, err := io.ReadAll(io.LimitReader(stdin, MaxBridgeRequest+1))
		if err != nil || len(b) > MaxBridgeRequest {
			fmt.Fprintf(stderr, "lambdaclaw-tool: reading the arguments: at most %d bytes of JSON\n", MaxBridgeRequest)
			return 2
		}
		raw = string(bytes.TrimSpace(b))
	}
	if !json.Valid([]byte(raw)) {
		fmt.Fprintln(stderr, "lambdaclaw-tool: the arguments are not valid JSON")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	out, err := CallBridge(ctx, socket, args[0], json.RawMessage(raw))
	if err != nil {
		fmt.Fprintln(stderr, "lambdaclaw-tool:", err)
		return 1
	}
	fmt.Fprint(stdout, out)
	if out != "" && !strings.HasSuffix(out, "\n") {
		fmt.Fprintln(stdout)
	}
	return 0
}
