package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"
)

func TestWSURL(t *testing.T) {
	tests := []struct{ in, want, models string }{
		{"127.0.0.1:8080", "ws://127.0.0.1:8080/ws", "http://127.0.0.1:8080/v1/models"},
		{"localhost:9", "ws://localhost:9/ws", "http://localhost:9/v1/models"},
		{"http://127.0.0.1:8080", "ws://127.0.0.1:8080/ws", "http://127.0.0.1:8080/v1/models"},
		{"http://127.0.0.1:8080/", "ws://127.0.0.1:8080/ws", "http://127.0.0.1:8080/v1/models"},
		{"https://claw.example.com", "wss://claw.example.com/ws", "https://claw.example.com/v1/models"},
		{"wss://claw.example.com/prefix/ws", "wss://claw.example.com/prefix/ws", "https://claw.example.com/prefix/v1/models"},
	}
	for _, tt := range tests {
		got, err := wsURL(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("wsURL(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
		if m := modelsURL(got); m != tt.models {
			t.Errorf("modelsURL(%q) = %q, want %q", got, m, tt.models)
		}
	}
	for _, bad := range []string{"ftp://x:1", "http://", "://"} {
		if got, err := wsURL(bad); err == nil {
			t.Errorf("wsURL(%q) = %q, want an error", bad, got)
		}
	}
}

func TestChatNeedsKey(t *testing.T) {
	t.Setenv("LAMBDACLAW_API_KEY", "")
	var stdout, stderr bytes.Buffer
	err := chatCommand(context.Background(), []string{"--addr", "127.0.0.1:1"}, strings.NewReader("hi\n"), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "export LAMBDACLAW_API_KEY=$(lambdaclaw keys create --name chat)") {
		t.Errorf("err = %v, want one that says how to get a key", err)
	}
}

// chatServer is a scripted /ws server. A message is acked, answered with
// two deltas ("re: " and its text) and a final; a repeated id is acked as a
// duplicate, and the reply follows if it was not finished. A reset is
// acked. GET /v1/models lists agents.
type chatServer struct {
	t   *testing.T
	url string

	mu sync.Mutex
	// refuse, when not zero, answers connections with this status.
	refuse int
	// agents are the agents /v1/models lists; nil answers 404.
	agents []string
	// drop and ackDrop count, per message text, how many more times the
	// server drops the connection on receiving it: before the ack, or
	// after it (the reply is then unfinished).
	drop, ackDrop map[string]int
	conns         map[*websocket.Conn]bool
	frames        []chatFrame
	runs          map[string]string // client id -> run id
	finished      map[string]bool   // run ids
}

func newChatServer(t *testing.T) *chatServer {
	s := &chatServer{
		t: t, agents: []string{"coder", "default"}, drop: map[string]int{}, ackDrop: map[string]int{},
		conns: map[*websocket.Conn]bool{}, runs: map[string]string{}, finished: map[string]bool{},
	}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *chatServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	refuse, agents := s.refuse, s.agents
	s.mu.Unlock()
	switch {
	case r.Header.Get("Authorization") != "Bearer lc_test" || refuse == http.StatusUnauthorized:
		http.Error(w, `{"error":{"message":"invalid API key"}}`, http.StatusUnauthorized)
		return
	case refuse != 0:
		http.Error(w, `{"error":{"message":"not now"}}`, refuse)
		return
	case r.URL.Path == "/v1/models" && agents == nil:
		http.NotFound(w, r)
		return
	case r.URL.Path == "/v1/models":
		var list struct {
			Data []map[string]string `json:"data"`
		}
		for _, a := range agents {
			list.Data = append(list.Data, map[string]string{"id": a})
		}
		json.NewEncoder(w).Encode(list)
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.conns[c] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.CloseNow()
	}()
	ctx := context.Background()
	send := func(v map[string]any) {
		b, _ := json.Marshal(v)
		c.Write(ctx, websocket.MessageText, b)
	}
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return
		}
		var f chatFrame
		json.Unmarshal(b, &f)
		s.mu.Lock()
		s.frames = append(s.frames, f)
		dropNow := s.drop[f.Text] > 0 && f.Type == "message"
		if dropNow {
			s.drop[f.Text]--
		}
		run, seen := s.runs[f.ID]
		if !seen {
			run = "run-" + f.ID
			s.runs[f.ID] = run
		}
		ackDrop := !seen && s.ackDrop[f.Text] > 0
		if ackDrop {
			s.ackDrop[f.Text]--
		}
		done := s.finished[run]
		s.mu.Unlock()
		switch {
		case dropNow:
			delete(s.runs, f.ID) // it never arrived
			return
		case f.Type == "reset":
			send(map[string]any{"type": "ack", "id": f.ID, "session_id": "s1"})
			continue
		}
		send(map[string]any{"type": "ack", "id": f.ID, "run_id": run, "session_id": "s1", "duplicate": seen})
		if ackDrop {
			return
		}
		if done {
			continue
		}
		send(map[string]any{"type": "delta", "run_id": run, "text": "re: "})
		send(map[string]any{"type": "delta", "run_id": run, "text": f.Text})
		send(map[string]any{"type": "final", "run_id": run, "text": "re: " + f.Text})
		s.mu.Lock()
		s.finished[run] = true
		s.mu.Unlock()
	}
}

// goDown closes every connection as a server that shuts down does, and
// refuses new ones with 503 until goUp.
func (s *chatServer) goDown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = http.StatusServiceUnavailable
	for c := range s.conns {
		c.Close(websocket.StatusGoingAway, "server shutting down")
	}
}

func (s *chatServer) set(f func(s *chatServer)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s)
}

// messages returns the id and text of each message frame received.
func (s *chatServer) messages() [][2]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][2]string
	for _, f := range s.frames {
		if f.Type == "message" {
			out = append(out, [2]string{f.ID, f.Text})
		}
	}
	return out
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls b until it contains want, failing the test after 10 s.
func waitFor(t *testing.T, name string, b *lockedBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(b.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("%s does not contain %q after 10s:\n%s", name, want, b.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// setTerminal makes stdin look like a terminal, or not, for the test.
func setTerminal(t *testing.T, terminal bool) {
	old := stdinIsTerminal
	stdinIsTerminal = func() bool { return terminal }
	t.Cleanup(func() { stdinIsTerminal = old })
}

// fastRetry reconnects at once and gives up after 10 s.
var fastRetry = chatRetry{first: time.Millisecond, max: 5 * time.Millisecond, giveUp: 10 * time.Second, tries: 3}

// liveChat is a chat running in the background with input written by the
// test.
type liveChat struct {
	in             *io.PipeWriter
	stdout, stderr lockedBuffer
	done           chan error
}

func startChat(t *testing.T, terminal bool, args ...string) *liveChat {
	t.Helper()
	setTerminal(t, terminal)
	r, w := io.Pipe()
	lc := &liveChat{in: w, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { lc.done <- chatWith(ctx, args, r, &lc.stdout, &lc.stderr, fastRetry) }()
	t.Cleanup(func() {
		cancel()
		w.Close()
		<-lc.done
	})
	return lc
}

// send writes a line of input; it returns once the chat has read it.
func (lc *liveChat) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(lc.in, line+"\n"); err != nil {
		t.Fatalf("write %q: %v", line, err)
	}
}

// end closes the input and returns the chat's error.
func (lc *liveChat) end(t *testing.T) error {
	t.Helper()
	lc.in.Close()
	select {
	case err := <-lc.done:
		lc.done <- err // for the cleanup
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("chat did not end 10s after its input; stderr:\n%s", lc.stderr.String())
		return nil
	}
}

func TestChatTerminal(t *testing.T) {
	srv := newChatServer(t)
	setTerminal(t, true)
	var stdout, stderr bytes.Buffer
	err := chatCommand(context.Background(), []string{"--addr", srv.url, "--key", "lc_test", "--user", "ada"},
		strings.NewReader("hi\n/agent coder\nhi\n/new\n/exit\nnever sent\n"), &stdout, &stderr)
	if err != nil {
		t.Fatalf("chat: %v\nstderr: %s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"you> default> re: hi\n", "now talking to coder\n", "you> coder> re: hi\n", "(new conversation with coder)\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout does not contain %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "re: ") != 2 {
		t.Errorf("stdout:\n%s\nwant two replies: nothing after /exit", out)
	}
}

func TestChatAgents(t *testing.T) {
	srv := newChatServer(t)
	args := []string{"--addr", srv.url, "--key", "lc_test"}
	tests := []struct {
		name      string
		terminal  bool
		args      []string
		input     string
		noList    bool
		wantOut   string
		wantErr   string
		wantInErr string // in stderr
		wantSent  []string
	}{
		{name: "--agent that does not exist", args: []string{"--agent", "nope"}, input: "hi\n",
			wantErr: `no agent "nope" that this API key may use; it may use: coder, default`},
		{name: "--agent invalid", args: []string{"--agent", "Bad/Name"}, wantErr: "--agent: agent name \"Bad/Name\" is invalid"},
		{name: "--agent empty", args: []string{"--agent", ""}, wantInErr: "--agent is empty", wantErr: "usage"},
		{name: "--agent that exists", args: []string{"--agent", "coder"}, input: "hi\n", wantOut: "re: hi\n", wantSent: []string{"coder"}},
		{name: "/agent that does not exist, at a terminal", terminal: true, input: "/agent nope\n/agent\nhi\n",
			wantInErr: `error: no agent "nope" that this API key may use; it may use: coder, default; still talking to default`,
			wantOut:   "default\nre: hi\n", wantSent: []string{"default"}},
		{name: "/agent that does not exist, from a pipe", input: "/agent nope\nhi\n",
			wantErr: `no agent "nope" that this API key may use; it may use: coder, default; still talking to default`},
		{name: "/agent invalid", terminal: true, input: "/agent ../x\n/agent\n", wantInErr: "is invalid", wantOut: "default\n"},
		{name: "/agent that exists", input: "/agent coder\nhi\n/agent\n", wantOut: "re: hi\ncoder\n", wantSent: []string{"coder"}},
		{name: "server without a model list", noList: true, input: "/agent other\nhi\n", wantOut: "re: hi\n",
			wantInErr: `the server does not list its agents, so agent "other" was not checked`, wantSent: []string{"other"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.set(func(s *chatServer) {
				s.frames = nil
				s.agents = []string{"coder", "default"}
				if tt.noList {
					s.agents = nil
				}
			})
			setTerminal(t, tt.terminal)
			var stdout, stderr bytes.Buffer
			err := chatWith(context.Background(), append(append([]string{}, args...), tt.args...), strings.NewReader(tt.input), &stdout, &stderr, fastRetry)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("chat: %v\nstderr: %s", err, stderr.String())
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("chat = %v, want an error containing %q", err, tt.wantErr)
			}
			out := stdout.String()
			if tt.terminal {
				out = terminalText(out)
			}
			if diff := cmp.Diff(tt.wantOut, out); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if !strings.Contains(stderr.String(), tt.wantInErr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.wantInErr)
			}
			var sent []string
			srv.set(func(s *chatServer) {
				for _, f := range s.frames {
					sent = append(sent, f.Agent)
				}
			})
			if diff := cmp.Diff(tt.wantSent, sent); diff != "" {
				t.Errorf("agents of the frames sent (-want +got):\n%s", diff)
			}
		})
	}
}

// terminalText drops the banner, prompts and agent prefixes of terminal
// output.
func terminalText(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if strings.HasPrefix(line, "lambdaclaw chat with") {
			continue
		}
		line = strings.ReplaceAll(line, "you> ", "")
		line = strings.TrimPrefix(line, "default> ")
		b.WriteString(line)
	}
	return b.String()
}

// chatDuringRestart starts a chat that gets an answer to "one", then
// takes the server down and types "two" while the chat reconnects.
func chatDuringRestart(t *testing.T, srv *chatServer) *liveChat {
	t.Helper()
	lc := startChat(t, false, "--addr", srv.url, "--key", "lc_test")
	lc.send(t, "one")
	waitFor(t, "stdout", &lc.stdout, "re: one\n")
	srv.goDown()
	waitFor(t, "stderr", &lc.stderr, "connection lost (the server shut down); reconnecting…")
	lc.send(t, "two")
	waitFor(t, "stderr", &lc.stderr, `not connected: the message "two" is sent when the connection is back`)
	return lc
}

// TestChatReconnects restarts the server under a chat: the chat says it is
// reconnecting, a line typed meanwhile is sent once the server is back.
func TestChatReconnects(t *testing.T) {
	srv := newChatServer(t)
	lc := chatDuringRestart(t, srv)
	srv.set(func(s *chatServer) { s.refuse = 0 })
	waitFor(t, "stdout", &lc.stdout, "re: two\n")
	lc.send(t, "three")
	if err := lc.end(t); err != nil {
		t.Fatalf("chat: %v\nstderr: %s", err, lc.stderr.String())
	}
	if got := lc.stdout.String(); got != "re: one\nre: two\nre: three\n" {
		t.Errorf("stdout = %q, want the three replies", got)
	}
	if !strings.Contains(lc.stderr.String(), "reconnected") {
		t.Errorf("stderr = %q, want it to say it reconnected", lc.stderr.String())
	}
	var texts []string
	for _, m := range srv.messages() {
		texts = append(texts, m[1])
	}
	if diff := cmp.Diff([]string{"one", "two", "three"}, texts); diff != "" {
		t.Errorf("messages received (-want +got):\n%s", diff)
	}
}

// TestChatResends drops connections at each point of a request: the
// frame goes again, with its id, and nothing is shown twice.
func TestChatResends(t *testing.T) {
	tests := []struct {
		name       string
		setup      func(s *chatServer)
		wantOut    string
		wantStderr string
		wantTexts  []string
	}{
		{
			name:       "lost before the ack",
			setup:      func(s *chatServer) { s.drop["flaky"] = 2 },
			wantOut:    "re: flaky\nre: after\n",
			wantStderr: "reconnected",
			wantTexts:  []string{"flaky", "flaky", "flaky", "after"},
		},
		{
			name:       "lost while the reply is written",
			setup:      func(s *chatServer) { s.ackDrop["flaky"] = 1 },
			wantOut:    "re: flaky\nre: after\n",
			wantStderr: "the server had this message already; the rest of its reply follows if it is still being written",
			wantTexts:  []string{"flaky", "flaky", "after"},
		},
		{
			name:       "lost every time: given up",
			setup:      func(s *chatServer) { s.drop["flaky"] = 100 },
			wantOut:    "re: after\n",
			wantStderr: `error: the connection was lost 3 times before the server answered; giving up on the message "flaky"`,
			wantTexts:  []string{"flaky", "flaky", "flaky", "after"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newChatServer(t)
			srv.set(tt.setup)
			setTerminal(t, false)
			var stdout, stderr bytes.Buffer
			err := chatWith(context.Background(), []string{"--addr", srv.url, "--key", "lc_test"}, strings.NewReader("flaky\nafter\n"), &stdout, &stderr, fastRetry)
			if err != nil {
				t.Fatalf("chat: %v\nstderr: %s", err, stderr.String())
			}
			if got := stdout.String(); got != tt.wantOut {
				t.Errorf("stdout = %q, want %q", got, tt.wantOut)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
			msgs := srv.messages()
			var texts []string
			ids := map[string]string{}
			for _, m := range msgs {
				texts = append(texts, m[1])
				if prev, ok := ids[m[1]]; ok && prev != m[0] {
					t.Errorf("message %q sent again with id %s, first with %s", m[1], m[0], prev)
				}
				ids[m[1]] = m[0]
			}
			if diff := cmp.Diff(tt.wantTexts, texts); diff != "" {
				t.Errorf("messages received (-want +got):\n%s", diff)
			}
		})
	}
}

// TestChatReconnectFails checks the ends of reconnecting: a refused key
// and a server that does not come back end the chat with an error, and a
// line typed meanwhile is reported as not sent.
func TestChatReconnectFails(t *testing.T) {
	t.Run("key refused", func(t *testing.T) {
		srv := newChatServer(t)
		lc := chatDuringRestart(t, srv)
		srv.set(func(s *chatServer) { s.refuse = http.StatusUnauthorized })
		err := lc.end(t)
		if err == nil || !strings.Contains(err.Error(), "the server refused the API key") {
			t.Errorf("chat = %v, want the refusal", err)
		}
		if !strings.Contains(lc.stderr.String(), `not sent: the message "two"`) {
			t.Errorf("stderr = %q, want the unsent message named", lc.stderr.String())
		}
	})
	t.Run("server does not come back", func(t *testing.T) {
		srv := newChatServer(t)
		setTerminal(t, false)
		// "bye" drops the connection, and the server refuses new ones.
		srv.set(func(s *chatServer) { s.drop["bye"] = 1 })
		r, w := io.Pipe()
		var stdout, stderr lockedBuffer
		done := make(chan error, 1)
		go func() {
			done <- chatWith(context.Background(), []string{"--addr", srv.url, "--key", "lc_test"}, r, &stdout, &stderr,
				chatRetry{first: time.Millisecond, max: time.Millisecond, giveUp: 0, tries: 3})
		}()
		io.WriteString(w, "hello\n")
		waitFor(t, "stdout", &stdout, "re: hello\n")
		srv.set(func(s *chatServer) { s.refuse = http.StatusServiceUnavailable })
		io.WriteString(w, "bye\n")
		var err error
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("chat did not give up")
		}
		w.Close()
		if err == nil || !strings.Contains(err.Error(), "the connection did not come back within 0s") {
			t.Errorf("chat = %v, want it to give up", err)
		}
		if !strings.Contains(stderr.String(), `the server did not confirm the message "bye"; it may not have been delivered`) {
			t.Errorf("stderr = %q, want the unconfirmed message named", stderr.String())
		}
	})
}
