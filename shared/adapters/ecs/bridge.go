package ecs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"sync"

	"github.com/lambdaclaw/lambdaclaw/shared/core/filestore"
	"github.com/lambdaclaw/lambdaclaw/shared/core/sandbox"
)

// The tool bridge on Fargate. A script in the task calls the agent's
// tools through the runner's Unix socket, one line each way per
// connection (the bridge's wire format, which the runner does not read);
// the runner relays each call as an object of the control directory,
// call/<n>/<k>.json, and answers with ret/<n>/<k>.json, which the step
// function, waiting for the command's result, writes after serving the
// call with the request's sandbox.Bridge (Config.ServeBridge). The
// channel is authenticated by IAM: only the task role and the step
// function may write the control directory, and a command has no AWS
// credentials, so no token is needed.

// Limits of a relayed call.
const (
	// maxCallBytes bounds a call's request line (sandbox.MaxBridgeRequest
	// and its newline).
	maxCallBytes = 1<<20 + 1
	// maxReturnBytes bounds its reply, JSON escapes included.
	maxReturnBytes = 6 * (4 << 20)
)

func callName(control string, n, k int) string {
	return path.Join(control, "call", fmt.Sprintf("%010d", n), seqName(k))
}

func retName(control string, n, k int) string {
	return path.Join(control, "ret", fmt.Sprintf("%010d", n), seqName(k))
}

// writeTools makes dir hold the tool description files and nothing else.
func writeTools(dir string, files map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := emptyDir(dir); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for name, data := range files {
		if !fs.ValidPath(name) || name == "." {
			return fmt.Errorf("tool file %q: %w", name, fs.ErrInvalid)
		}
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return err
		}
		if err := root.WriteFile(name, []byte(data), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// relay serves the bridge's socket during command n: each connection's
// request line goes to the bucket as a call, and the reply that comes
// back to the connection. It returns a func that stops it and waits for
// the calls under way, which end unanswered.
func (r *Runner) relay(ctx context.Context, n int) (func(), error) {
	os.Remove(r.Socket)
	if err := os.MkdirAll(filepath.Dir(r.Socket), 0o755); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", r.Socket)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for k := 1; ; k++ {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer conn.Close()
				r.relayCall(ctx, conn, n, k)
			})
		}
	})
	return func() {
		cancel()
		ln.Close()
		wg.Wait()
		os.Remove(r.Socket)
	}, nil
}

// relayCall relays the k-th call of command n.
func (r *Runner) relayCall(ctx context.Context, conn net.Conn, n, k int) {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	line, err := bufio.NewReader(io.LimitReader(conn, maxCallBytes+1)).ReadBytes('\n')
	if len(line) > maxCallBytes || (err != nil && !errors.Is(err, io.EOF)) || len(line) == 0 {
		return
	}
	if _, err := r.Bucket.WriteFile(ctx, callName(r.Control, n, k), line, filestore.Absent); err != nil {
		r.logf("bridge call %d/%d: %v", n, k, err)
		return
	}
	for {
		reply, _, err := r.Bucket.ReadFile(ctx, retName(r.Control, n, k), maxReturnBytes+1)
		switch {
		case err == nil && len(reply) <= maxReturnBytes:
			conn.Write(reply)
			return
		case err == nil || !errors.Is(err, fs.ErrNotExist):
			r.logf("bridge reply %d/%d: over the limit or unreadable: %v", n, k, err)
			return
		}
		if sleep(ctx, r.poll()) != nil {
			return
		}
	}
}

// ServeFunc serves bridge connections on a listener with a
// sandbox.Bridge, as sandbox.ServeBridge does, until ctx ends or the
// listener closes.
type ServeFunc func(ctx context.Context, ln net.Listener, b sandbox.Bridge)

// calls serves a command's relayed calls in the step function: each call
// object becomes a connection of a listener that the configured
// ServeFunc serves with the request's Bridge, and what it answers on the
// connection becomes the ret object.
type calls struct {
	b       *Backend
	control string
	n, next int
	bridge  sandbox.Bridge
	ctx     context.Context
	cancel  context.CancelFunc
	ln      *pipeListener
	wg      sync.WaitGroup
}

func (b *Backend) newCalls(ctx context.Context, control string, n int, bridge sandbox.Bridge) *calls {
	if bridge == nil || b.cfg.ServeBridge == nil {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &calls{b: b, control: control, n: n, next: 1, bridge: bridge, ctx: ctx, cancel: cancel, ln: newPipeListener()}
	c.wg.Go(func() { b.cfg.ServeBridge(ctx, c.ln, bridge) })
	return c
}

// poll serves the calls that came since the last poll.
func (c *calls) poll() error {
	if c == nil {
		return nil
	}
	for {
		req, _, err := c.b.cfg.Bucket.ReadFile(c.ctx, callName(c.control, c.n, c.next), maxCallBytes+1)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("ecs sandbox: read a bridge call: %w", err)
		}
		k := c.next
		c.next++
		c.wg.Go(func() { c.serve(k, req) })
	}
}

// serve answers the k-th call.
func (c *calls) serve(k int, req []byte) {
	server, client := net.Pipe()
	select {
	case c.ln.conns <- server:
	case <-c.ctx.Done():
		return
	}
	stop := context.AfterFunc(c.ctx, func() { client.Close() })
	defer stop()
	defer client.Close()
	go client.Write(req)
	reply, err := io.ReadAll(io.LimitReader(client, maxReturnBytes+1))
	if err != nil || len(reply) > maxReturnBytes || c.ctx.Err() != nil {
		return // the script's call fails on its side
	}
	c.b.cfg.Bucket.WriteFile(c.ctx, retName(c.control, c.n, k), reply, filestore.Absent)
}

// close stops serving and waits for the calls under way.
func (c *calls) close() {
	if c == nil {
		return
	}
	c.cancel()
	c.ln.Close()
	c.wg.Wait()
}

// pipeListener is a net.Listener of in-process connections.
type pipeListener struct {
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "bridge" }
