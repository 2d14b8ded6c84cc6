package mcp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
)

// inherited are the only variables of the gateway's environment a stdio
// server gets besides those its configuration names.
var inherited = []string{"PATH", "HOME", "LANG"}

// maxTools bounds the tools read of one server.
const maxTools = 1000

// probeTimeout bounds the ping that tells whether a session whose call
// failed still works.
const probeTimeout = 5 * time.Second

// maxStderr is how much of a stdio server's standard error is kept to
// tell why it failed.
const maxStderr = 2048

// server is one configured server and its current session.
type server struct {
	reg *Registry
	cfg Server

	mu       sync.Mutex
	launched bool
	first    chan struct{} // closed when the first start ended
	state    State
	sess     *sdk.ClientSession
	tools    []*Tool
	err      string
	restarts int
	sse      bool        // the HTTP server spoke the HTTP+SSE transport
	proc     *os.Process // the running stdio server, for tests
	stderr   *tailBuffer
}

func newServer(r *Registry, cfg Server) *server {
	return &server{reg: r, cfg: cfg, first: make(chan struct{}), state: Stopped}
}

// launch starts the server's lifecycle once and returns the channel
// closed when its first start ended.
func (s *server) launch() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.launched && s.reg.ctx.Err() == nil {
		s.launched = true
		s.state = Starting
		s.reg.wg.Add(1)
		go s.run(s.reg.ctx)
	}
	return s.first
}

// run keeps the server running until ctx ends: it connects, serves the
// session until it ends, and starts again after a delay that grows with
// each failure in a row.
func (s *server) run(ctx context.Context) {
	defer s.reg.wg.Done()
	defer s.set(func() { s.state, s.sess, s.tools = Stopped, nil, nil })
	log := s.reg.cfg.Log.With("mcp_server", s.cfg.Name)
	backoff := s.reg.cfg.Backoff
	for attempt := 0; ; attempt++ {
		began := time.Now()
		sess, err := s.connect(ctx)
		if err == nil {
			var tools []*Tool
			if tools, err = s.list(ctx, sess); err == nil {
				s.up(sess, tools, attempt)
				log.Info("MCP server started", "transport", s.transport(), "tools", len(tools))
				err = s.serve(ctx, sess)
			} else {
				sess.Close()
			}
		}
		if ctx.Err() != nil {
			return
		}
		msg := s.failure(err)
		s.set(func() { s.state, s.sess, s.tools, s.err = Failed, nil, nil, msg })
		s.started()
		if time.Since(began) > 2*s.reg.cfg.MaxBackoff {
			backoff = s.reg.cfg.Backoff
		}
		log.Warn("MCP server failed; its tools are absent until it starts again", "err", msg, "retry_in", backoff.String())
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, s.reg.cfg.MaxBackoff)
	}
}

// serve waits for the session to end, or closes it when ctx ends.
func (s *server) serve(ctx context.Context, sess *sdk.ClientSession) error {
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	select {
	case <-ctx.Done():
		sess.Close()
		<-done
		return ctx.Err()
	case err := <-done:
		if err == nil {
			err = errors.New("the connection closed")
		}
		return fmt.Errorf("stopped: %w", err)
	}
}

// failure describes err for logs and status, with what the server wrote
// on standard error, scrubbed.
func (s *server) failure(err error) string {
	msg := err.Error()
	s.mu.Lock()
	if s.stderr != nil {
		if tail := strings.TrimSpace(s.stderr.String()); tail != "" {
			msg += "; stderr: " + tail
		}
	}
	s.mu.Unlock()
	return scrub.Scrub(msg)
}

func (s *server) set(f func()) {
	s.mu.Lock()
	f()
	s.mu.Unlock()
	s.reg.bump()
}

// started closes first, once.
func (s *server) started() {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.first:
	default:
		close(s.first)
	}
}

func (s *server) up(sess *sdk.ClientSession, tools []*Tool, attempt int) {
	s.set(func() {
		s.state, s.sess, s.tools, s.err = Running, sess, tools, ""
		if attempt > 0 {
			s.restarts++
		}
	})
	s.started()
}

// connect starts a stdio server or connects to an HTTP one, and
// initializes the session.
func (s *server) connect(ctx context.Context) (*sdk.ClientSession, error) {
	cctx, cancel := context.WithTimeout(ctx, s.reg.cfg.StartTimeout)
	defer cancel()
	// A client per attempt: a failed one keeps nothing for the next.
	client := func() *sdk.Client {
		return sdk.NewClient(&sdk.Implementation{Name: "lambdaclaw", Version: "1"}, &sdk.ClientOptions{
			Capabilities: &sdk.ClientCapabilities{},
			ToolListChangedHandler: func(_ context.Context, req *sdk.ToolListChangedRequest) {
				go s.refresh(ctx, req.Session)
			},
		})
	}
	if s.cfg.Command != "" {
		t, err := s.command()
		if err != nil {
			return nil, err
		}
		sess, err := client().Connect(cctx, t, nil)
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", s.cfg.Command, err)
		}
		s.mu.Lock()
		s.proc = t.Command.Process
		s.mu.Unlock()
		return sess, nil
	}
	headers := http.Header{}
	for k, v := range s.cfg.Headers {
		val, err := ExpandEnv(v, s.reg.cfg.Getenv)
		if err != nil {
			return nil, fmt.Errorf("headers.%s: %w", k, err)
		}
		headers.Set(k, val)
	}
	hc := &http.Client{Transport: headerTransport{base: s.reg.cfg.HTTPClient.Transport, headers: headers}, Jar: s.reg.cfg.HTTPClient.Jar}
	s.mu.Lock()
	sse := s.sse
	s.mu.Unlock()
	if !sse {
		sess, err := client().Connect(cctx, &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc, MaxRetries: 2}, nil)
		if err == nil || ctx.Err() != nil {
			return sess, err
		}
		// A server of the older HTTP+SSE transport answers the
		// streamable POST with an error: try that transport.
		sessSSE, errSSE := s.connectSSE(ctx, client(), hc)
		if errSSE != nil {
			return nil, fmt.Errorf("connect %s: %w (and over HTTP+SSE: %v)", s.cfg.URL, err, errSSE)
		}
		s.mu.Lock()
		s.sse = true
		s.mu.Unlock()
		return sessSSE, nil
	}
	sess, err := s.connectSSE(ctx, client(), hc)
	if err != nil {
		return nil, fmt.Errorf("connect %s over HTTP+SSE: %w", s.cfg.URL, err)
	}
	return sess, nil
}

// connectSSE connects over HTTP+SSE, whose event stream lives as long as
// the context of Connect: ctx, not one ended by the start timeout.
func (s *server) connectSSE(ctx context.Context, client *sdk.Client, hc *http.Client) (*sdk.ClientSession, error) {
	sctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(s.reg.cfg.StartTimeout, cancel)
	sess, err := client.Connect(sctx, &sdk.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc}, nil)
	timer.Stop()
	if err != nil {
		cancel()
		return nil, err
	}
	go func() {
		sess.Wait()
		cancel()
	}()
	return sess, nil
}

// command is the stdio server's process, with only the environment its
// configuration names plus PATH, HOME and LANG.
func (s *server) command() (*sdk.CommandTransport, error) {
	getenv := s.reg.cfg.Getenv
	var env []string
	for _, k := range inherited {
		if _, named := s.cfg.Env[k]; !named && getenv(k) != "" {
			env = append(env, k+"="+getenv(k))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.cfg.Env)) {
		v, err := ExpandEnv(s.cfg.Env[k], getenv)
		if err != nil {
			return nil, fmt.Errorf("env.%s: %w", k, err)
		}
		env = append(env, k+"="+v)
	}
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	cmd.Env = env
	tail := &tailBuffer{max: maxStderr}
	cmd.Stderr = tail
	s.mu.Lock()
	s.stderr = tail
	s.mu.Unlock()
	return &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
}

// list reads the session's tools.
func (s *server) list(ctx context.Context, sess *sdk.ClientSession) ([]*Tool, error) {
	cctx, cancel := context.WithTimeout(ctx, s.reg.cfg.StartTimeout)
	defer cancel()
	var remote []*sdk.Tool
	for t, err := range sess.Tools(cctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", err)
		}
		if len(remote) == maxTools {
			s.reg.cfg.Log.Warn("MCP server has more tools than are read", "mcp_server", s.cfg.Name, "max", maxTools)
			break
		}
		remote = append(remote, t)
	}
	return s.wrap(remote), nil
}

// refresh reads the tools again after notifications/tools/list_changed,
// if sess is still the server's session.
func (s *server) refresh(ctx context.Context, sess *sdk.ClientSession) {
	tools, err := s.list(ctx, sess)
	if ctx.Err() != nil {
		return // stopping
	}
	if err != nil {
		s.reg.cfg.Log.Warn("MCP server's tools could not be read again", "mcp_server", s.cfg.Name, "err", scrub.Scrub(err.Error()))
		return
	}
	s.mu.Lock()
	current := s.sess == sess
	s.mu.Unlock()
	if current {
		s.set(func() {
			if s.sess == sess {
				s.tools = tools
			}
		})
		s.reg.cfg.Log.Info("MCP server's tools changed", "mcp_server", s.cfg.Name, "tools", len(tools))
	}
}

// session returns the current session, or why there is none.
func (s *server) session() (*sdk.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != nil {
		return s.sess, nil
	}
	why := string(s.state)
	if s.err != "" {
		why += ": " + s.err
	}
	return nil, fmt.Errorf("MCP server %s is not running (%s)", s.cfg.Name, why)
}

// probe checks sess after a call on it failed: a session the server no
// longer answers (it crashed, or restarted and forgot the session, which
// an HTTP server may tell with a JSON-RPC error) is closed, so that run
// connects again. A server that answers the ping keeps its session.
func (s *server) probe(sess *sdk.ClientSession) {
	ctx, cancel := context.WithTimeout(s.reg.ctx, probeTimeout)
	defer cancel()
	if err := sess.Ping(ctx, nil); err == nil || s.reg.ctx.Err() != nil {
		return
	}
	s.mu.Lock()
	current := s.sess == sess
	s.mu.Unlock()
	if current {
		sess.Close()
	}
}

func (s *server) current() []*Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

func (s *server) transport() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.cfg.Command != "":
		return "stdio"
	case s.sse:
		return "sse"
	}
	return "streamable-http"
}

func (s *server) status() Status {
	tr := s.transport()
	s.mu.Lock()
	defer s.mu.Unlock()
	return Status{Name: s.cfg.Name, Transport: tr, State: s.state, Tools: len(s.tools), Restarts: s.restarts, Err: s.err}
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	if len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header[k] = v
		}
	}
	return base.RoundTrip(req)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
