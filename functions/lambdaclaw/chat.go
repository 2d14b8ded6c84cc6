package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/lambdaclaw/lambdaclaw/shared/agent"
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

// chatCommand runs `lambdaclaw chat`: a terminal client of the local
// server's WebSocket endpoint. It sends each line of input as a message and
// waits for the reply before reading the next, so it works from a pipe as
// well as at a terminal.
func chatCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "", "server HOST:PORT or URL (default $LAMBDACLAW_ADDR or 127.0.0.1:8080)")
	agentName := fs.String("agent", "default", "the agent to talk to")
	user := fs.String("user", "", "your name: the conversation is yours with the agent (default $USER)")
	key := fs.String("key", "", "API key (default $LAMBDACLAW_API_KEY)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "chat takes no arguments, got %q\n\n%s", fs.Args(), usage)
		return errUsage
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
	conn, err := dialChat(ctx, u, token)
	if err != nil {
		return err
	}
	c := &chatClient{
		conn: conn, out: stdout, errw: stderr,
		agent: *agentName, user: cmp.Or(*user, getenv("USER"), "local"),
		terminal: stdinIsTerminal(), idPrefix: "chat-" + agent.NewID()[:12] + "-",
		streamed: map[string]bool{},
	}
	return c.loop(ctx, stdin, u)
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
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := resp.Status
	if b, _ := io.ReadAll(resp.Body); json.Unmarshal(b, &body) == nil && body.Error.Message != "" {
		msg = body.Error.Message
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return nil, fmt.Errorf("the server refused the API key: %s\ncreate one with: export LAMBDACLAW_API_KEY=$(lambdaclaw keys create --name chat)", msg)
	}
	return nil, fmt.Errorf("connect to %s: %s", u, msg)
}

// chatClient is one chat: it reads lines, sends them and shows the frames
// that come back. One request is in flight at a time.
type chatClient struct {
	conn        *websocket.Conn
	out, errw   io.Writer
	agent, user string
	terminal    bool
	idPrefix    string
	seq         int

	// pending is the client id of the frame awaiting its ack, and run the
	// run whose reply is awaited; both empty when the next line may go.
	pending string
	run     string
	// streamed marks the runs whose text is on screen; midLine says the
	// output does not end with a newline.
	streamed map[string]bool
	midLine  bool
}

// loop is the chat's event loop.
func (c *chatClient) loop(ctx context.Context, stdin io.Reader, u string) error {
	frames := make(chan chatFrame, 64)
	var readErr error
	go func() {
		defer close(frames)
		for {
			_, b, err := c.conn.Read(context.Background())
			if err != nil {
				readErr = err
				return
			}
			var f chatFrame
			if json.Unmarshal(b, &f) == nil {
				frames <- f
			}
		}
	}()
	lines := make(chan string)
	go readLines(stdin, lines)

	if c.terminal {
		fmt.Fprintf(c.out, "lambdaclaw chat with %s as %s at %s. /help lists the commands.\n", c.agent, c.user, u)
		c.prompt()
	}
	for {
		var lineCh <-chan string
		if !c.busy() {
			lineCh = lines
		}
		select {
		case <-ctx.Done():
			c.close(frames)
			return nil
		case line, ok := <-lineCh:
			if !ok {
				c.close(frames)
				return nil
			}
			quit, err := c.line(ctx, line)
			if err != nil || quit {
				c.close(frames)
				return err
			}
			if !c.busy() {
				c.prompt()
			}
		case f, ok := <-frames:
			if !ok {
				c.endLine()
				if websocket.CloseStatus(readErr) == websocket.StatusGoingAway {
					return errors.New("the server shut down")
				}
				return fmt.Errorf("connection lost: %w", readErr)
			}
			wasBusy := c.busy()
			c.frame(f)
			if wasBusy && !c.busy() {
				c.prompt()
			}
		}
	}
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

func (c *chatClient) busy() bool { return c.pending != "" || c.run != "" }

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
				c.agent = arg
				if c.terminal {
					fmt.Fprintf(c.out, "now talking to %s\n", c.agent)
				}
			case "/new":
				return false, c.send(ctx, chatFrame{Type: "reset", Agent: c.agent, User: c.user})
			default:
				fmt.Fprintf(c.errw, "unknown command %s; /help lists the commands\n", cmd)
			}
			return false, nil
		}
	}
	return false, c.send(ctx, chatFrame{Type: "message", Agent: c.agent, User: c.user, Text: line})
}

// send writes a frame with a fresh client id and waits for its ack.
func (c *chatClient) send(ctx context.Context, f chatFrame) error {
	c.seq++
	f.ID = fmt.Sprintf("%s%d", c.idPrefix, c.seq)
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.conn.Write(wctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	c.pending = f.ID
	return nil
}

// frame shows one server frame and notes when the awaited reply is over.
func (c *chatClient) frame(f chatFrame) {
	switch f.Type {
	case "ack":
		if f.ID != c.pending {
			return
		}
		c.pending = ""
		switch {
		case f.RunID == "":
			if c.terminal {
				fmt.Fprintf(c.out, "(new conversation with %s)\n", c.agent)
			}
		case f.Duplicate:
			fmt.Fprintln(c.errw, "the server had this message already")
		default:
			c.run = f.RunID
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
		switch {
		case f.ID != "" && f.ID == c.pending:
			c.pending = ""
		case f.RunID != "":
			delete(c.streamed, f.RunID)
			c.ended(f.RunID)
		case f.ID == "":
			c.pending = "" // about a frame the server could not read
		}
	}
}

// ended notes that a run has nothing more to say for now.
func (c *chatClient) ended(runID string) {
	if runID == c.run {
		c.run = ""
	}
}

// endLine ends a line of streamed text.
func (c *chatClient) endLine() {
	if c.midLine {
		fmt.Fprintln(c.out)
		c.midLine = false
	}
}

// close ends the connection with a normal closure. The reader keeps
// draining frames so that the close handshake can complete.
func (c *chatClient) close(frames <-chan chatFrame) {
	c.endLine()
	go func() {
		for range frames {
		}
	}()
	c.conn.Close(websocket.StatusNormalClosure, "bye")
}
