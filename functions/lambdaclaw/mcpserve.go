package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpInput is where `lambdaclaw mcp serve --stdio` reads the client's
// messages.
var mcpInput io.Reader = os.Stdin

// mcpServeCommand runs `lambdaclaw mcp serve --stdio`: the gateway's MCP
// server (/mcp, shared/channels/mcpserver) for desktop clients that start
// a command. Each message the client writes on stdin goes to the
// gateway's /mcp with the API key, and what the gateway sends back (the
// results, progress notifications, elicitations) is written on stdout, so
// the client sees the same server, with the same tools, as over HTTP.
func mcpServeCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("mcp serve", "--stdio", "Serve the gateway's MCP server (the tools chat, agents_list, history and memory_search) over\n"+
		"standard input and output, for desktop MCP clients (Claude Desktop, Cursor, VS Code). It relays\n"+
		"each message to the /mcp endpoint of the running gateway, local or deployed, with the API key.", stderr)
	stdio := fs.Bool("stdio", false, "serve over standard input and output (required: the only transport; the gateway serves HTTP at /mcp itself)")
	addr := fs.String("addr", "", "gateway HOST:PORT or URL, such as a deployed stack's API URL (default $LAMBDACLAW_ADDR or 127.0.0.1:8080)")
	key := fs.String("key", "", "API key (default $LAMBDACLAW_API_KEY)")
	if _, err := fs.parse(args, 0, 0, stdout); err != nil {
		return err
	}
	if !*stdio {
		return errors.New("--stdio is required: `lambdaclaw mcp serve --stdio` serves MCP over standard input and output; over HTTP the gateway serves it at /mcp")
	}
	token := cmp.Or(*key, getenv("LAMBDACLAW_API_KEY"))
	if token == "" {
		return errors.New("no API key: pass --key or set LAMBDACLAW_API_KEY in the MCP client's configuration, for example:\n" +
			"  lambdaclaw keys create --name desktop")
	}
	endpoint, err := mcpURL(cmp.Or(*addr, getenv("LAMBDACLAW_ADDR"), "127.0.0.1:8080"))
	if err != nil {
		return err
	}
	client := &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}
	// The key and the address are checked before the client's first
	// message, so that a mistake is told on stderr, which desktop clients
	// show in their logs, instead of as a failed request.
	if err := checkMCP(ctx, client, endpoint); err != nil {
		return err
	}
	local, err := (&mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}).Connect(ctx)
	if err != nil {
		return fmt.Errorf("standard input and output: %w", err)
	}
	transport := &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: client}
	return relayMCP(ctx, local, transport.Connect, stderr)
}

// mcpURL turns HOST:PORT or an http or https URL into the URL of the /mcp
// endpoint: /mcp is added to the URL's path (a deployed stack's API URL
// ends with its stage) unless it ends with it already, in place of /v1
// (an OpenAI base URL).
func mcpURL(addr string) (string, error) {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("--addr %q: want HOST:PORT or a URL such as http://127.0.0.1:8080", addr)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("--addr %q: the scheme must be http or https", addr)
	}
	if !strings.HasSuffix(u.Path, "/mcp") {
		u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1") + "/mcp"
	}
	u.RawQuery, u.Fragment = "", ""
	return u.String(), nil
}

// checkMCP asks the gateway's model list, beside endpoint, whether it
// takes the key.
func checkMCP(ctx context.Context, client *http.Client, endpoint string) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	models := strings.TrimSuffix(endpoint, "/mcp") + "/v1/models"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, models, nil)
	if err != nil {
		return fmt.Errorf("check the gateway: %w", err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach lambdaclaw at %s (is `lambdaclaw serve` running?): %w", endpoint, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("%w: %s", errKeyRefused, serverMessage(resp))
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("check the gateway at %s: %s", models, serverMessage(resp))
	}
	return nil
}

// bearer sends the API key with every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// relayMCP passes messages between the client (local) and the gateway
// (remote connections that connect makes) until the client closes its
// input or ctx ends. A request the gateway could not be sent gets an error
// response, also written on stderr. When the gateway has lost the MCP
// session (it restarted, or the session was idle too long), a new one is
// opened with the client's initialize request again, and the message
// sent on it: the client does not notice.
func relayMCP(ctx context.Context, local mcp.Connection, connect func(context.Context) (mcp.Connection, error), stderr io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r := &relay{local: local, connect: connect, stderr: stderr}
	if err := r.open(ctx); err != nil {
		return err
	}
	var failed error
	for {
		msg, err := local.Read(ctx)
		if err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				failed = fmt.Errorf("read the client's messages: %w", err)
			}
			break
		}
		if err := r.send(ctx, msg); err != nil {
			fmt.Fprintf(stderr, "lambdaclaw mcp serve: %v\n", err)
			if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
				resp := &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "lambdaclaw gateway: " + err.Error()}}
				if local.Write(ctx, resp) != nil {
					break
				}
			}
		}
	}
	cancel()
	r.remote.Close()
	local.Close()
	r.pumps.Wait()
	return failed
}

// relay is the state of relayMCP. Only the goroutine that reads the
// client's messages changes it.
type relay struct {
	local   mcp.Connection
	connect func(context.Context) (mcp.Connection, error)
	stderr  io.Writer
	remote  mcp.Connection
	pumps   sync.WaitGroup
	// initialize and initialized are the client's opening messages, sent
	// again on a new session; reopened counts the sessions opened again.
	initialize  *jsonrpc.Request
	initialized jsonrpc.Message
	reopened    int
}

// reinitPrefix starts the id of an initialize request sent again, whose
// response is the relay's, not the client's.
const reinitPrefix = "lambdaclaw-reinitialize-"

// open connects to the gateway and passes what it sends to the client.
func (r *relay) open(ctx context.Context) error {
	remote, err := r.connect(ctx)
	if err != nil {
		return fmt.Errorf("connect to the gateway: %w", err)
	}
	r.remote = remote
	r.pumps.Go(func() {
		for {
			msg, err := remote.Read(ctx)
			if err != nil {
				return // closed, or lost: the next message opens a new session
			}
			if resp, ok := msg.(*jsonrpc.Response); ok {
				if id, _ := resp.ID.Raw().(string); strings.HasPrefix(id, reinitPrefix) {
					continue
				}
			}
			if r.local.Write(ctx, msg) != nil {
				return
			}
		}
	})
	return nil
}

// send sends a client's message to the gateway, on a new session if the
// gateway lost the one it was in.
func (r *relay) send(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok {
		switch req.Method {
		case "initialize":
			r.initialize = req
		case "notifications/initialized":
			r.initialized = req
		}
	}
	// The call's context is the relay's: a response stream lives as long
	// as the call, which the client cancels with a message.
	err := r.remote.Write(ctx, msg)
	if !errors.Is(err, mcp.ErrSessionMissing) {
		return err
	}
	fmt.Fprintln(r.stderr, "lambdaclaw mcp serve: the gateway lost the MCP session; opening a new one")
	r.remote.Close()
	if err := r.open(ctx); err != nil {
		return err
	}
	if r.initialize != nil {
		r.reopened++
		again := *r.initialize
		if again.ID, err = jsonrpc.MakeID(fmt.Sprintf("%s%d", reinitPrefix, r.reopened)); err != nil {
			return err
		}
		if err := r.remote.Write(ctx, &again); err != nil {
			return fmt.Errorf("open a new MCP session: %w", err)
		}
		if r.initialized != nil {
			if err := r.remote.Write(ctx, r.initialized); err != nil {
				return fmt.Errorf("open a new MCP session: %w", err)
			}
		}
	}
	return r.remote.Write(ctx, msg)
}
