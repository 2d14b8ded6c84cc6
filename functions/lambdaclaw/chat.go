package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/wsproto"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/workspace"
)

// chatInput is where `lambdaclaw chat` reads the user's lines; tests
// replace it.
var chatInput io.Reader = os.Stdin

const chatHelp = `Type a message and press Enter; the reply streams as it arrives.
When the agent asks for approval, answer /yes, /no or /always.
Commands:
  /new          start the conversation afresh
  /agent NAME   talk to another agent (/agent alone shows the current one)
  /help         show this help
  /exit         quit (also /quit, or end of input)
`

// chatFrame is any frame of the /ws protocol; fields a frame type does not
// have stay empty.
type chatFrame struct {
	Type       string `json:"type"`
	ID         string `json:"id,omitempty"`
	RunID      string `json:"run_id,omitempty"`
	SessionID  string `json:"session_id,omitempty"`
	Duplicate  bool   `json:"duplicate,omitempty"`
	Agent      string `json:"agent,omitempty"`
	User       string `json:"user,omitempty"`
	Text       string `json:"text,omitempty"`
	ApprovalID string `json:"approval_id,omitempty"`
	Prompt     string `json:"prompt,omitempty"`
	Code       string `json:"code,omitempty"`
	Message    string `json:"message,omitempty"`
}

// chatRetry is how chat reconnects after losing its connection: it waits
// first, doubling up to max between attempts, and gives up after giveUp. A
// frame whose connection was lost tries times is given up.
type chatRetry struct {
	first, max, giveUp time.Duration
	tries              int
}

var defaultChatRetry = chatRetry{first: 250 * time.Millisecond, max: 5 * time.Second, giveUp: 2 * time.Minute, tries: 3}

// chatCommand runs `lambdaclaw chat`: a terminal client of the local
// server's WebSocket endpoint. It sends each line of input as a message and
// waits for the reply before reading the next, so it works from a pipe as
// well as at a terminal. A lost connection is reconnected.
func chatCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return chatWith(ctx, args, stdin, stdout, stderr, defaultChatRetry)
}

func chatWith(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, retry chatRetry) error {
	fs := newFlags("chat", "", "Chat with an agent of the running gateway over its WebSocket endpoint. Each line is a\nmessage; /help lists the commands. A lost connection is reconnected.", stderr)
	addr := fs.String("addr", "", "server HOST:PORT or URL (default $LAMBDACLAW_ADDR or 127.0.0.1:8080)")
	agentName := fs.String("agent", wsproto.DefaultAgent, "the agent to talk to")
	user := fs.String("user", "", "your name: the conversation is yours with the agent (default $USER)")
	key := fs.String("key", "", "API key (default $LAMBDACLAW_API_KEY)")
	if _, err := fs.parse(args, 0, 0, stdout); err != nil {
		return err
	}
	if err := workspace.ValidName(*agentName); err != nil {
		return fmt.Errorf("--agent: %w", err)
	}
	who := cmp.Or(*user, getenv("USER"), "local")
	if err := agent.CheckSessionKey("--user", who); err != nil {
		return err
	}
	token := cmp.Or(*key, getenv("LAMBDACLAW_API_KEY"))
	if token == "" {
		return errors.New("no API key: pass --key or set LAMBDACLAW_API_KEY, for example:\n" +
			"  export LAMBDACLAW_API_KEY=$(lambdaclaw keys create --name chat)")
	}
	u, err := wsURL(cmp.Or(*addr, getenv("LAMBDACLAW_ADDR"), "127.0.0.1:8080"))
	if err != nil {
		return err
	}
	c := &chatClient{
		url: u, models: modelsURL(u), token: token, retry: retry,
		out: stdout, errw: stderr, agent: *agentName, user: who,
		terminal: stdinIsTerminal(), idPrefix: "chat-" + agent.NewID()[:12] + "-",
		streamed: map[string]bool{},
	}
	conn, err := dialChat(ctx, u, token)
	if err != nil {
		return err
	}
	c.connected(conn)
	// The agent is checked once connected, so that a bad key or a server
	// that is down get their own errors first. When the list cannot be
	// had, the server tells about a missing agent at the first message.
	if names, err := c.agentNames(ctx); err == nil && !slices.Contains(names, c.agent) {
		c.close()
		return noAgentForKey(c.agent, names)
	}
	return c.loop(ctx, stdin)
}

// wsURL turns HOST:PORT or an http, https, ws or wss URL into the URL of
// the /ws endpoint.
func wsURL(addr string) (string, error) {
	if !strings.Contains(addr, "://") {
		addr = "ws://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("--addr %q: want HOST:PORT or a URL such as http://127.0.0.1:8080", addr)
	}
	switch u.Scheme {
	case "ws", "wss":
	case "http":
		u.Scheme = "ws"
	case "https":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("--addr %q: the scheme must be http, https, ws or wss", addr)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/ws"
	}
	return u.String(), nil
}

// modelsURL is the URL of GET /v1/models beside the /ws endpoint wsu (a
// URL wsURL made).
func modelsURL(wsu string) string {
	u, err := url.Parse(wsu)
	if err != nil {
		return ""
	}
	u.Scheme = strings.Replace(u.Scheme, "ws", "http", 1)
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/ws") + "/v1/models"
	u.RawQuery, u.Fragment = "", ""
	return u.String()
}

// errKeyRefused is the server's refusal of the API key; errNoModelList
// says that the server has no model list to check agents against.
var (
	errKeyRefused  = errors.New("the server refused the API key")
	errNoModelList = errors.New("the server does not list its agents")
)

// dialChat connects and explains a refusal in the server's words.
func dialChat(ctx context.Context, u, token string) (*websocket.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	h := http.Header{}
	h.Set("Authorization", "Bearer "+token)
	conn, resp, err := websocket.Dial(dctx, u, &websocket.DialOptions{HTTPHeader: h})
	if err == nil {
		conn.SetReadLimit(64 << 20)
		return conn, nil
	}
	if resp == nil {
		return nil, fmt.Errorf("cannot reach lambdaclaw at %s (is `lambdaclaw serve` running?): %w", u, err)
	}
	msg := serverMessage(resp)
	if resp.StatusCode == http.StatusUnauthorized {
		return nil, fmt.Errorf("%w: %s\ncreate one with: export LAMBDACLAW_API_KEY=$(lambdaclaw keys create --name chat)", errKeyRefused, msg)
	}
	return nil, fmt.Errorf("connect to %s: %s", u, msg)
}

// serverMessage is the message of an error response in OpenAI's JSON, or
// its status.
func serverMessage(resp *http.Response) string {
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10)); json.Unmarshal(b, &body) == nil && body.Error.Message != "" {
		return body.Error.Message
	}
	return resp.Status
}

// agentNames asks the server which agents the key may use.
func (c *chatClient) agentNames(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.models, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the server: %w", err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return nil, fmt.Errorf("%w: %s", errKeyRefused, serverMessage(resp))
	case http.StatusNotFound:
		return nil, errNoModelList
	default:
		return nil, fmt.Errorf("GET %s: %s", c.models, serverMessage(resp))
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&list); err != nil {
		return nil, fmt.Errorf("GET %s: %w", c.models, err)
	}
	names := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		names = append(names, m.ID)
	}
	return names, nil
}

// noAgentForKey is the error for an agent the key may not use or that does
// not exist; it lists the agents the key may use.
func noAgentForKey(name string, names []string) error {
	if len(names) == 0 {
		return fmt.Errorf("no agent %q: this API key may use no agent", name)
	}
	return fmt.Errorf("no agent %q that this API key may use; it may use: %s", name, strings.Join(names, ", "))
}

// chatClient is one chat: it reads lines, sends them and shows the frames
// that come back. One request is in flight at a time. Everything but the
// reader of each connection and the reconnection runs in loop's goroutine.
type chatClient struct {
	url, models, token string
	retry              chatRetry
	out, errw          io.Writer
	agent, user        string
	terminal           bool
	idPrefix           string
	seq                int

	// conn is the connection and events its frames; both are nil while
	// disconnected, when redial brings the next connection.
	conn   *websocket.Conn
	events chan connEvent
	redial chan redialed

	// outgoing is the frame awaiting its ack: written to the connection
	// (sent), or waiting for one. lost counts the connections lost while
	// it was sent; resent says it was sent again after a reconnect.
	outgoing *chatFrame
	sent     bool
	lost     int
	resent   bool
	// run is the run whose reply is awaited, started by runFrame.
	run      string
	runFrame *chatFrame
	// streamed marks the runs whose text is on screen; midLine says the
	// output does not end with a newline.
	streamed map[string]bool
	midLine  bool
}

// connEvent is a frame of a connection, or the error that ended it.
type connEvent struct {
	frame chatFrame
	err   error
}

// redialed is the outcome of reconnecting.
type redialed struct {
	conn *websocket.Conn
	err  error
}

// connected starts reading conn.
func (c *chatClient) connected(conn *websocket.Conn) {
	events := make(chan connEvent, 64)
	go func() {
		defer close(events)
		for {
			_, b, err := conn.Read(context.Background())
			if err != nil {
				events <- connEvent{err: err}
				return
			}
			var f chatFrame
			if json.Unmarshal(b, &f) == nil {
				events <- connEvent{frame: f}
			}
		}
	}()
	c.conn, c.events = conn, events
}

// loop is the chat's event loop.
func (c *chatClient) loop(ctx context.Context, stdin io.Reader) error {
	ctx, cancel := context.WithCancel(ctx) // also ends a reconnection
	defer cancel()
	lines := make(chan string)
	go readLines(stdin, lines)

	if c.terminal {
		fmt.Fprintf(c.out, "lambdaclaw chat with %s as %s at %s. /help lists the commands.\n", c.agent, c.user, c.url)
		c.prompt()
	}
	for {
		var lineCh <-chan string
		if !c.busy() {
			lineCh = lines
		}
		select {
		case <-ctx.Done():
			c.unsent()
			c.close()
			return nil
		case line, ok := <-lineCh:
			if !ok {
				c.close()
				return nil
			}
			quit, err := c.line(ctx, line)
			if err != nil || quit {
				c.close()
				return err
			}
			if !c.busy() {
				c.prompt()
			}
		case ev := <-c.events:
			if ev.err != nil {
				c.connectionLost(ctx, ev.err)
				continue
			}
			wasBusy := c.busy()
			c.frame(ctx, ev.frame)
			if wasBusy && !c.busy() {
				c.prompt()
			}
		case r := <-c.redial:
			c.redial = nil
			if ctx.Err() != nil {
				if r.conn != nil {
					r.conn.CloseNow()
				}
				continue // the next round returns
			}
			if r.err != nil {
				c.endLine()
				c.unsent()
				return r.err
			}
			fmt.Fprintln(c.errw, "reconnected")
			c.connected(r.conn)
			if c.outgoing == nil {
				c.prompt()
				break
			}
			c.resent = c.sent
			c.write(ctx)
		}
	}
}

// connectionLost notes a lost connection and starts reconnecting. The
// frame awaiting its ack is sent again on the next connection, with its id,
// so that the server does not take it twice; a reply being written is
// followed again by sending its message again. A frame whose connections
// were lost retry.tries times is given up.
func (c *chatClient) connectionLost(ctx context.Context, err error) {
	c.endLine()
	c.conn.CloseNow()
	c.conn, c.events = nil, nil
	why := err.Error()
	if websocket.CloseStatus(err) == websocket.StatusGoingAway {
		why = "the server shut down"
	}
	if c.run != "" {
		c.outgoing, c.sent, c.lost = c.runFrame, true, 0
		c.run = ""
	}
	fmt.Fprintf(c.errw, "connection lost (%s); reconnecting…\n", why)
	if c.outgoing != nil && c.sent {
		if c.lost++; c.lost >= c.retry.tries {
			fmt.Fprintf(c.errw, "error: the connection was lost %d times before the server answered; giving up on %s\n", c.lost, describeFrame(c.outgoing))
			c.outgoing = nil
		}
	}
	c.reconnect(ctx)
}

// reconnect dials again in the background with backoff, until it
// connects, the key is refused, ctx ends or retry.giveUp has passed.
func (c *chatClient) reconnect(ctx context.Context) {
	done := make(chan redialed, 1)
	c.redial = done
	retry, u, token := c.retry, c.url, c.token
	go func() {
		giveUp := time.Now().Add(retry.giveUp)
		wait := retry.first
		for {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				done <- redialed{err: ctx.Err()}
				return
			case <-t.C:
			}
			conn, err := dialChat(ctx, u, token)
			switch {
			case err == nil && ctx.Err() != nil:
				conn.CloseNow()
				done <- redialed{err: ctx.Err()}
				return
			case err == nil:
				done <- redialed{conn: conn}
				return
			case errors.Is(err, errKeyRefused):
				done <- redialed{err: err}
				return
			case !time.Now().Before(giveUp):
				done <- redialed{err: fmt.Errorf("the connection did not come back within %s: %w", retry.giveUp, err)}
				return
			}
			wait = min(2*wait, retry.max)
		}
	}()
}

// unsent tells the user about the frame that is leaving with the chat.
func (c *chatClient) unsent() {
	switch {
	case c.outgoing == nil:
	case c.sent:
		fmt.Fprintf(c.errw, "the server did not confirm %s; it may not have been delivered\n", describeFrame(c.outgoing))
	default:
		fmt.Fprintf(c.errw, "not sent: %s\n", describeFrame(c.outgoing))
	}
}

// describeFrame names a frame for the user: a message by its text.
func describeFrame(f *chatFrame) string {
	if f.Type == "reset" {
		return "/new"
	}
	return fmt.Sprintf("the message %q", f.Text)
}

// readLines sends the lines of r to lines and closes it at the end of
// input.
func readLines(r io.Reader, lines chan<- string) {
	defer close(lines)
	br := bufio.NewReader(r)
	for {
		s, err := br.ReadString('\n')
		if s != "" {
			lines <- strings.TrimRight(s, "\r\n")
		}
		if err != nil {
			return
		}
	}
}

func (c *chatClient) busy() bool { return c.outgoing != nil || c.run != "" }

// prompt shows the input prompt at a terminal.
func (c *chatClient) prompt() {
	if c.terminal {
		fmt.Fprint(c.out, "you> ")
	}
}

// line handles one line of input: a command or a message.
func (c *chatClient) line(ctx context.Context, line string) (quit bool, err error) {
	text := strings.TrimSpace(line)
	if text == "" {
		return false, nil
	}
	if strings.HasPrefix(text, "/") {
		if _, answer := agent.ParseDecision(text); !answer {
			cmd, arg, _ := strings.Cut(text, " ")
			arg = strings.TrimSpace(arg)
			switch cmd {
			case "/exit", "/quit":
				return true, nil
			case "/help":
				fmt.Fprint(c.out, chatHelp)
			case "/agent":
				if arg == "" {
					fmt.Fprintln(c.out, c.agent)
					break
				}
				if err := c.switchAgent(ctx, arg); err != nil {
					if !c.terminal {
						// Lines that follow were meant for that agent.
						return false, err
					}
					fmt.Fprintln(c.errw, "error:", err)
				}
			case "/new":
				c.send(ctx, chatFrame{Type: "reset", Agent: c.agent, User: c.user})
			default:
				fmt.Fprintf(c.errw, "unknown command %s; /help lists the commands\n", cmd)
			}
			return false, nil
		}
	}
	c.send(ctx, chatFrame{Type: "message", Agent: c.agent, User: c.user, Text: line})
	return false, nil
}

// switchAgent makes name the agent to talk to, if the key may use it.
// When the server does not list its agents, the switch is made with a
// warning: the server tells about a missing agent at the next message.
func (c *chatClient) switchAgent(ctx context.Context, name string) error {
	if err := workspace.ValidName(name); err != nil {
		return err
	}
	names, err := c.agentNames(ctx)
	switch {
	case errors.Is(err, errNoModelList):
		fmt.Fprintf(c.errw, "warning: %v, so agent %q was not checked\n", err, name)
	case err != nil:
		return fmt.Errorf("cannot check agent %q (%w); still talking to %s", name, err, c.agent)
	case !slices.Contains(names, name):
		return fmt.Errorf("%w; still talking to %s", noAgentForKey(name, names), c.agent)
	}
	c.agent = name
	if c.terminal {
		fmt.Fprintf(c.out, "now talking to %s\n", c.agent)
	}
	return nil
}

// send gives a frame a fresh client id and writes it, or holds it until
// the connection is back.
func (c *chatClient) send(ctx context.Context, f chatFrame) {
	c.seq++
	f.ID = fmt.Sprintf("%s%d", c.idPrefix, c.seq)
	c.outgoing, c.sent, c.lost, c.resent = &f, false, 0, false
	if c.conn == nil {
		fmt.Fprintf(c.errw, "not connected: %s is sent when the connection is back\n", describeFrame(&f))
		return
	}
	c.write(ctx)
}

// write writes the outgoing frame. A failed write closes the connection,
// whose reader then reports it lost.
func (c *chatClient) write(ctx context.Context) {
	b, err := json.Marshal(c.outgoing)
	if err != nil {
		fmt.Fprintf(c.errw, "error: %s cannot be encoded: %v\n", describeFrame(c.outgoing), err)
		c.outgoing = nil
		return
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c.sent = true
	if err := c.conn.Write(wctx, websocket.MessageText, b); err != nil {
		c.conn.CloseNow()
	}
}

// frame shows one server frame and notes when the awaited reply is over.
func (c *chatClient) frame(ctx context.Context, f chatFrame) {
	switch f.Type {
	case "ack":
		if c.outgoing == nil || f.ID != c.outgoing.ID {
			return
		}
		sent := c.outgoing
		c.outgoing = nil
		switch {
		case f.RunID == "":
			if c.terminal {
				fmt.Fprintf(c.out, "(new conversation with %s)\n", c.agent)
			}
		case f.Duplicate && c.resent:
			fmt.Fprintln(c.errw, "the server had this message already; the rest of its reply follows if it is still being written")
		case f.Duplicate:
			fmt.Fprintln(c.errw, "the server had this message already")
		default:
			c.run, c.runFrame = f.RunID, sent
		}
	case "delta":
		if !c.streamed[f.RunID] {
			c.streamed[f.RunID] = true
			if c.terminal {
				c.endLine()
				fmt.Fprintf(c.out, "%s> ", c.agent)
			}
		}
		fmt.Fprint(c.out, f.Text)
		c.midLine = true
	case "approval":
		c.endLine()
		fmt.Fprintln(c.out, strings.TrimRight(f.Prompt, "\n"))
		delete(c.streamed, f.RunID)
		c.ended(f.RunID)
	case "final":
		// The final text is the whole answer; it is shown only when no
		// delta was (a reply made before this client listened).
		if !c.streamed[f.RunID] {
			c.endLine()
			if c.terminal {
				fmt.Fprintf(c.out, "%s> ", c.agent)
			}
			fmt.Fprint(c.out, f.Text)
			c.midLine = true
		}
		delete(c.streamed, f.RunID)
		c.endLine()
		c.ended(f.RunID)
	case "error":
		c.endLine()
		fmt.Fprintf(c.errw, "error: %s (%s)\n", f.Message, f.Code)
		if f.Code == "model_not_found" {
			if names, err := c.agentNames(ctx); err == nil {
				fmt.Fprintf(c.errw, "agents this API key may use: %s\n", cmp.Or(strings.Join(names, ", "), "none"))
			}
		}
		switch {
		case c.outgoing != nil && f.ID == c.outgoing.ID:
			c.outgoing = nil
		case f.RunID != "":
			delete(c.streamed, f.RunID)
			c.ended(f.RunID)
		case f.ID == "":
			c.outgoing = nil // about a frame the server could not read
		}
	}
}

// ended notes that a run has nothing more to say for now.
func (c *chatClient) ended(runID string) {
	if runID == c.run {
		c.run, c.runFrame = "", nil
	}
}

// endLine ends a line of streamed text.
func (c *chatClient) endLine() {
	if c.midLine {
		fmt.Fprintln(c.out)
		c.midLine = false
	}
}

// close ends the connection, if there is one, with a normal closure. The
// reader keeps draining frames so that the close handshake can complete.
func (c *chatClient) close() {
	c.endLine()
	if c.conn == nil {
		return
	}
	go func(events <-chan connEvent) {
		for range events {
		}
	}(c.events)
	c.conn.Close(websocket.StatusNormalClosure, "bye")
	c.conn, c.events = nil, nil
}
