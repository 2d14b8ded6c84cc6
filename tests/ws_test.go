package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// wsFrame is any frame of the /ws protocol.
type wsFrame struct {
	Type       string   `json:"type"`
	ID         string   `json:"id,omitempty"`
	RunID      string   `json:"run_id,omitempty"`
	SessionID  string   `json:"session_id,omitempty"`
	Duplicate  *bool    `json:"duplicate,omitempty"`
	Agent      string   `json:"agent,omitempty"`
	User       string   `json:"user,omitempty"`
	Text       string   `json:"text,omitempty"`
	ApprovalID string   `json:"approval_id,omitempty"`
	Tools      []string `json:"tools,omitempty"`
	Prompt     string   `json:"prompt,omitempty"`
	Usage      *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// wsConn is a WebSocket client of the gateway.
type wsConn struct {
	t *testing.T
	c *websocket.Conn
}

// dialWS connects to the gateway's /ws with key.
func (g *gateway) dialWS(t *testing.T, key string) *wsConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(g.addr, "http")+"/ws", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + key}},
	})
	if err != nil {
		t.Fatalf("dial /ws: %v", err)
	}
	c.SetReadLimit(-1)
	t.Cleanup(func() { c.CloseNow() })
	return &wsConn{t: t, c: c}
}

// message sends a message frame as user ws-user.
func (w *wsConn) message(id, text string) {
	w.t.Helper()
	b, _ := json.Marshal(wsFrame{Type: "message", ID: id, Agent: "default", User: "ws-user", Text: text})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.c.Write(ctx, websocket.MessageText, b); err != nil {
		w.t.Fatalf("send: %v", err)
	}
}

func (w *wsConn) read() wsFrame {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, b, err := w.c.Read(ctx)
	if err != nil {
		w.t.Fatalf("read: %v", err)
	}
	var f wsFrame
	if err := json.Unmarshal(b, &f); err != nil {
		w.t.Fatalf("frame %s: %v", b, err)
	}
	return f
}

// ack reads the ack of client id and returns its run id.
func (w *wsConn) ack(id string, duplicate bool) string {
	w.t.Helper()
	f := w.read()
	if f.Type != "ack" || f.ID != id || f.RunID == "" || f.SessionID == "" || f.Duplicate == nil || *f.Duplicate != duplicate {
		w.t.Fatalf("frame %+v: want an ack of %s with a run and session, duplicate %v", f, id, duplicate)
	}
	return f.RunID
}

// reply reads the frames of run until its final or approval frame and
// returns the streamed deltas and that last frame.
func (w *wsConn) reply(run string) ([]string, wsFrame) {
	w.t.Helper()
	var deltas []string
	for {
		f := w.read()
		if f.RunID != run {
			w.t.Fatalf("frame %+v does not belong to run %s", f, run)
		}
		switch f.Type {
		case "delta":
			deltas = append(deltas, f.Text)
		case "final", "approval":
			return deltas, f
		default:
			w.t.Fatalf("unexpected frame %+v", f)
		}
	}
}

func TestWebSocketConversation(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	ws := g.dialWS(t, g.firstKey()) // autonomy supervised

	// Streaming: several deltas, then the final text.
	const text = "Streaming over a WebSocket: the quick brown fox jumps over the lazy dog."
	fake.Enqueue(fakellm.Reply{Content: text, ChunkSize: 5})
	ws.message("m1", "stream please")
	run := ws.ack("m1", false)
	deltas, final := ws.reply(run)
	if final.Type != "final" || final.Text != text {
		t.Fatalf("last frame %+v: want final %q", final, text)
	}
	if len(deltas) < 2 || strings.Join(deltas, "") != text {
		t.Errorf("deltas %q: want the text in several pieces", deltas)
	}
	if final.Usage == nil || final.Usage.TotalTokens <= 0 {
		t.Errorf("final usage %+v: want the provider's counts", final.Usage)
	}

	// An approval, asked and answered in-band.
	call := fakellm.ToolCall{ID: "call_ws_write", Name: "write_file", Arguments: `{"path":"ws.txt","content":"written over ws"}`}
	fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{call}}, fakellm.Reply{Content: "The file is written.", ChunkSize: 4})
	ws.message("m2", "write ws.txt")
	run = ws.ack("m2", false)
	_, ap := ws.reply(run)
	if ap.Type != "approval" || ap.ApprovalID == "" || !cmp.Equal(ap.Tools, []string{"write_file"}) || !strings.Contains(ap.Prompt, "/yes") {
		t.Fatalf("frame %+v: want an approval of write_file with a prompt", ap)
	}
	path := filepath.Join(g.workspace(), "ws.txt")
	if _, err := os.Stat(path); err == nil {
		t.Fatal("ws.txt was written before the approval")
	}
	ws.message("m3", "/yes")
	if got := ws.ack("m3", false); got != run {
		t.Errorf("the answer's ack names run %s, want the parked run %s", got, run)
	}
	deltas, final = ws.reply(run)
	if final.Type != "final" || final.Text != "The file is written." || len(deltas) < 2 {
		t.Errorf("after /yes: deltas %q, last frame %+v; want the streamed final answer", deltas, final)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "written over ws" {
		t.Errorf("ws.txt = %q, %v; want it written after /yes", data, err)
	}
	reqs := fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("fake LLM got %d requests, want 3", len(reqs))
	}
	if !reqs[0].Stream || !reqs[2].Stream {
		t.Error("the WebSocket runs did not stream from the provider")
	}
	var result string
	for _, m := range reqs[2].Messages {
		if m.Role == "tool" && m.ToolCallID == call.ID {
			result = m.Content
		}
	}
	if result == "" || strings.Contains(result, "refused") {
		t.Errorf("write_file result %q: want the tool's output", result)
	}
}

func TestWebSocketDuplicateID(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	key := g.firstKey()
	ws := g.dialWS(t, key)
	ws.message("dup-1", "hello")
	run := ws.ack("dup-1", false)
	if _, final := ws.reply(run); final.Text != "echo: hello" {
		t.Fatalf("final %+v", final)
	}

	ws.message("dup-1", "hello")
	if got := ws.ack("dup-1", true); got != run {
		t.Errorf("duplicate ack names run %s, want %s", got, run)
	}
	// After a reconnect, and after a restart of the server.
	ws.c.CloseNow()
	ws = g.dialWS(t, key)
	ws.message("dup-1", "hello")
	ws.ack("dup-1", true)
	ws.c.CloseNow()
	g.stop()
	g.start()
	ws = g.dialWS(t, key)
	ws.message("dup-1", "hello")
	if got := ws.ack("dup-1", true); got != run {
		t.Errorf("duplicate ack after a restart names run %s, want %s", got, run)
	}

	// The next frame is the next message's: the duplicates queued nothing.
	ws.message("dup-2", "again")
	run2 := ws.ack("dup-2", false)
	if _, final := ws.reply(run2); final.Text != "echo: again" {
		t.Errorf("final %+v, want echo: again", final)
	}
	if n := len(fake.Requests()); n != 2 {
		t.Errorf("fake LLM got %d requests, want 2 (one per distinct id)", n)
	}
}

func TestChatPipe(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, "")
	key := g.firstKey()
	call := fakellm.ToolCall{ID: "call_chat_write", Name: "write_file", Arguments: `{"path":"chat.txt","content":"from the chat"}`}
	fake.SetDefault(func(r fakellm.Request) fakellm.Reply {
		last := r.Messages[len(r.Messages)-1]
		switch {
		case last.Role == "tool":
			return fakellm.Reply{Content: "Notes written.", ChunkSize: 3}
		case last.Content == "please write notes":
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{call}}
		}
		return fakellm.Echo(r)
	})

	input := "hello there\nplease write notes\n/yes\n/new\nwho am I?\n"
	stdout, stderr, err := g.chat(t, input, "--addr", g.addr, "--user", "pipe-user", "--key", key)
	if err != nil {
		t.Fatalf("lambdaclaw chat: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	// The reply to a line is shown before the next line is sent, so no
	// line finds the conversation busy (/new once did: its run was still
	// running in the store after its final reply was sent).
	if stderr != "" {
		t.Errorf("stderr:\n%s\nwant nothing: every line is answered without error", stderr)
	}
	lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
	if len(lines) < 5 {
		t.Fatalf("stdout:\n%s\nwant the replies and the approval prompt", stdout)
	}
	prompt := strings.Join(lines[1:len(lines)-2], "\n")
	want := []string{"echo: hello there", "Notes written.", "echo: who am I?"}
	got := []string{lines[0], lines[len(lines)-2], lines[len(lines)-1]}
	if diff := cmp.Diff(want, got); diff != "" || !strings.Contains(prompt, "Approval needed") || !strings.Contains(prompt, "write_file") {
		t.Errorf("stdout:\n%s\nwant replies %q around an approval prompt naming write_file (-want +got):\n%s", stdout, want, diff)
	}
	if strings.Contains(stdout, "you>") {
		t.Errorf("stdout has prompt decorations although stdin is a pipe:\n%s", stdout)
	}
	if data, err := os.ReadFile(filepath.Join(g.workspace(), "chat.txt")); err != nil || string(data) != "from the chat" {
		t.Errorf("chat.txt = %q, %v; want it written after /yes", data, err)
	}
	reqs := fake.Requests()
	if len(reqs) != 4 {
		t.Fatalf("fake LLM got %d requests, want 4", len(reqs))
	}
	if diff := cmp.Diff([]fakellm.Message{user("who am I?")}, conversation(reqs[3].Messages)); diff != "" {
		t.Errorf("after /new the conversation is not fresh (-want +got):\n%s", diff)
	}
	if n := len(conversation(reqs[2].Messages)); n != 5 {
		t.Errorf("before /new the conversation had %d messages, want 5 (history kept)", n)
	}
}

func TestChatErrors(t *testing.T) {
	t.Parallel()
	g := startGateway(t, nil, "")
	g.firstKey()
	_, stderr, err := g.chat(t, "hi\n", "--addr", g.addr)
	if err == nil || !strings.Contains(stderr, "lambdaclaw keys create") {
		t.Errorf("chat without a key: err %v, stderr %q; want a failure that says how to get a key", err, stderr)
	}
	_, stderr, err = g.chat(t, "hi\n", "--addr", g.addr, "--key", "lc_not_a_real_key")
	if err == nil || !strings.Contains(stderr, "refused the API key") {
		t.Errorf("chat with a bad key: err %v, stderr %q; want a failure that names the key", err, stderr)
	}
	// Without a provider the run fails: the error goes to stderr and the
	// chat goes on to the next line.
	stdout, stderr, err := g.chat(t, "hi\n/agent\n", "--addr", g.addr, "--key", g.createKey(t))
	if err != nil || !strings.Contains(stderr, "provider_not_configured") || stdout != "default\n" {
		t.Errorf("chat without a provider: err %v, stdout %q, stderr %q; want the run's error on stderr, then the agent name", err, stdout, stderr)
	}
	g.stop()
	if _, stderr, err := g.chat(t, "hi\n", "--addr", g.addr, "--key", "lc_x"); err == nil || !strings.Contains(stderr, "cannot reach") {
		t.Errorf("chat with no server: err %v, stderr %q", err, stderr)
	}
}

// chat runs `lambdaclaw chat` with input on stdin (a pipe).
func (g *gateway) chat(t *testing.T, input string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"chat"}, args...)...)
	cmd.Env = g.env
	cmd.Dir = g.home
	cmd.Stdin = strings.NewReader(input)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), err
}
