package tests

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
)

// hostileConfig makes the server's timeouts short, so that slow clients
// are cut quickly, and its per-key limits small.
const hostileConfig = `server:
  read_header_timeout: 1s
  read_timeout: 1s
  idle_timeout: 1s
  max_concurrent_requests_per_key: 2
  max_websockets_per_key: 1
`

// serverTimeout is the timeouts of hostileConfig. A connection the server
// cuts lasted at least this long; the upper bounds below are generous for
// a loaded machine, yet below the timeouts the server had before they
// came from the config (ReadHeaderTimeout 10s, IdleTimeout 2m, no body
// timeout).
const serverTimeout = time.Second

// noKeepAlive sends each request on a new connection, so that no request
// races the server closing an idle one.
var noKeepAlive = &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}

// probe is a raw TCP client that sends a request's start and then, if
// filler is set, one more byte of it every 50 ms until the server closes
// the connection.
type probe struct {
	start  time.Time
	done   chan struct{}
	got    strings.Builder // what the server sent, complete once done
	lasted time.Duration   // from dialling until the server closed
}

func startProbe(t *testing.T, g *gateway, head, filler string) *probe {
	t.Helper()
	p := &probe{start: time.Now(), done: make(chan struct{})}
	conn, err := net.Dial("tcp", strings.TrimPrefix(g.addr, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			p.got.Write(buf[:n])
			if err != nil {
				p.lasted = time.Since(p.start)
				return
			}
		}
	}()
	if filler != "" {
		go func() {
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-p.done:
					return
				case <-tick.C:
				}
				if _, err := io.WriteString(conn, filler); err != nil {
					return
				}
			}
		}()
	}
	return p
}

// closed waits until the server has closed the connection, at most
// within, and returns what it sent. It fails the test when the connection
// lasted less than serverTimeout.
func (p *probe) closed(t *testing.T, what string, within time.Duration) string {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(within - time.Since(p.start)):
		t.Fatalf("%s: the server kept the connection open for %v", what, within)
	}
	if p.lasted < serverTimeout {
		t.Errorf("%s: the server closed the connection after %v, before the %v timeout", what, p.lasted, serverTimeout)
	}
	return p.got.String()
}

// trickleHeaders starts a request whose headers never end.
func trickleHeaders(t *testing.T, g *gateway) *probe {
	return startProbe(t, g, "GET /v1/models HTTP/1.1\r\nHost: lambdaclaw\r\nX-Slow: ", "a")
}

// trickleBody starts a chat request whose body never ends.
func trickleBody(t *testing.T, g *gateway, key string) *probe {
	return startProbe(t, g, "POST /v1/chat/completions HTTP/1.1\r\nHost: lambdaclaw\r\nAuthorization: Bearer "+key+
		"\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", " ")
}

// wantBodyTimeout checks the answer to trickleBody: 408 with OpenAI error
// JSON.
func wantBodyTimeout(t *testing.T, got string) {
	t.Helper()
	if !strings.HasPrefix(got, "HTTP/1.1 408 ") || !strings.Contains(got, `"code":"request_timeout"`) {
		t.Errorf("answer to a trickled body = %q, want 408 request_timeout", got)
	}
}

// chatOnce sends a chat request on a new connection and returns the
// response with its body; a failed request is a test error and an empty
// response.
func chatOnce(t *testing.T, g *gateway, key, text string, stream bool) (*http.Response, string) {
	t.Helper()
	body := fmt.Sprintf(`{"model":"default","stream":%v,"messages":[{"role":"user","content":%q}]}`, stream, text)
	req, err := http.NewRequest(http.MethodPost, g.addr+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return &http.Response{Header: http.Header{}}, ""
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		t.Errorf("chat %q: %v", text, err)
		return &http.Response{Header: http.Header{}}, ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("chat %q: reading the answer: %v", text, err)
	}
	return resp, string(b)
}

// wantChatOK checks that a chat request succeeded with the fake's echo.
func wantChatOK(t *testing.T, resp *http.Response, body, text string) {
	t.Helper()
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "echo: "+text) {
		t.Errorf("chat %q: %d %s; want 200 with the echo", text, resp.StatusCode, body)
	}
}

// holdRequests makes the fake wait, for each request whose last user
// message is "hold", until release is closed; arrived receives one value
// per held request.
func holdRequests(t *testing.T, fake *fakellm.Server) (arrived chan struct{}, release func()) {
	arrived, gate := make(chan struct{}, 16), make(chan struct{})
	fake.OnRequest(func(r fakellm.Request) {
		if r.LastUser() == "hold" {
			arrived <- struct{}{}
			<-gate
		}
	})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	return arrived, release
}

// waitArrived waits for n held requests.
func waitArrived(t *testing.T, arrived chan struct{}, n int) {
	t.Helper()
	for i := range n {
		select {
		case <-arrived:
		case <-time.After(30 * time.Second):
			t.Fatalf("%d of %d held requests reached the model", i, n)
		}
	}
}

func TestHostileClients(t *testing.T) {
	t.Parallel()
	fake := newFake(t)
	g := startGateway(t, fake, hostileConfig)
	key := g.firstKey()
	slow := g.createKey(t) // the slow clients' key, so that they hold none of key's slots

	t.Run("slow headers and bodies are cut", func(t *testing.T) {
		headers := []*probe{trickleHeaders(t, g), trickleHeaders(t, g)}
		body := trickleBody(t, g, slow)
		// Meanwhile the server answers others.
		for i := range 3 {
			text := fmt.Sprintf("meanwhile %d", i)
			resp, b := chatOnce(t, g, key, text, false)
			wantChatOK(t, resp, b, text)
		}
		for i, p := range headers {
			p.closed(t, fmt.Sprintf("headers trickled (%d)", i), 9*time.Second)
		}
		wantBodyTimeout(t, body.closed(t, "body trickled", 30*time.Second))
	})

	t.Run("idle connections are closed", func(t *testing.T) {
		p := startProbe(t, g, "GET /health HTTP/1.1\r\nHost: lambdaclaw\r\n\r\n", "")
		if got := p.closed(t, "idle keep-alive connection", 30*time.Second); !strings.HasPrefix(got, "HTTP/1.1 200 ") {
			t.Errorf("answer to GET /health = %q", got)
		}
	})

	t.Run("streams outlive the read timeout", func(t *testing.T) {
		var wg sync.WaitGroup
		t.Cleanup(wg.Wait) // after holdRequests' release
		arrived, release := holdRequests(t, fake)
		defer fake.OnRequest(nil)
		ws := g.dialWS(t, key)
		type result struct {
			resp *http.Response
			body string
		}
		sse := make(chan result, 1)
		wg.Go(func() {
			resp, body := chatOnce(t, g, key, "hold", true)
			sse <- result{resp, body}
		})
		waitArrived(t, arrived, 1)
		// A body trickled from now on is cut after the read timeout: once
		// it is, the stream and the WebSocket have outlived that timeout.
		wantBodyTimeout(t, trickleBody(t, g, slow).closed(t, "body trickled", 30*time.Second))
		ws.message("w1", "still there?")
		run := ws.ack("w1", false)
		if _, last := ws.reply(run); last.Type != "final" || last.Text != "echo: still there?" {
			t.Errorf("WebSocket after the read timeout: %+v", last)
		}
		release()
		r := <-sse
		if r.resp.StatusCode != http.StatusOK || !strings.Contains(r.body, `"content":"echo`) ||
			!strings.HasSuffix(r.body, "data: [DONE]\n\n") || strings.Contains(r.body, `"error"`) {
			t.Errorf("stream held past the read timeout: %d\n%s", r.resp.StatusCode, r.body)
		}
	})

	t.Run("per-key limits", func(t *testing.T) {
		var wg sync.WaitGroup
		t.Cleanup(wg.Wait) // after holdRequests' release
		arrived, release := holdRequests(t, fake)
		defer fake.OnRequest(nil)
		for range 2 {
			wg.Go(func() {
				resp, body := chatOnce(t, g, slow, "hold", false)
				wantChatOK(t, resp, body, "hold")
			})
		}
		waitArrived(t, arrived, 2)
		resp, body := chatOnce(t, g, slow, "one too many", false)
		e := wantErrorJSON(t, resp, []byte(body), http.StatusTooManyRequests, "concurrency_limit_exceeded")
		if resp.Header.Get("Retry-After") == "" || e.Error == nil || !strings.Contains(e.Error.Message, "2 requests in flight") {
			t.Errorf("refusal: Retry-After %q, body %s", resp.Header.Get("Retry-After"), body)
		}
		resp, body = chatOnce(t, g, key, "another key", false)
		wantChatOK(t, resp, body, "another key")
		release()
		wg.Wait()
		resp, body = chatOnce(t, g, slow, "after", false)
		wantChatOK(t, resp, body, "after")

		g.dialWS(t, slow)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, wsResp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(g.addr, "http")+"/ws", &websocket.DialOptions{
			HTTPHeader: http.Header{"Authorization": {"Bearer " + slow}},
		})
		if err == nil || wsResp == nil || wsResp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("second WebSocket of a key: %v, %+v; want refused with 429", err, wsResp)
		}
		b, _ := io.ReadAll(wsResp.Body)
		wantErrorJSON(t, wsResp, b, http.StatusTooManyRequests, "websocket_limit_exceeded")
	})

	t.Run("provider failure", func(t *testing.T) {
		fake.Enqueue(fakellm.Reply{Status: http.StatusBadRequest, ErrorMessage: "Invalid parameter: messages[3] is malformed (quota account acct_91)"})
		resp, body := chatOnce(t, g, key, "fail", false)
		e := wantErrorJSON(t, resp, []byte(body), http.StatusBadGateway, "upstream_error")
		id := resp.Header.Get("X-Request-Id")
		if id == "" || e.Error == nil || !strings.HasPrefix(e.Error.Message, "the model provider failed") || !strings.HasSuffix(e.Error.Message, "(request id "+id+")") {
			t.Errorf("message %q, want a generic one ending with the request id %s", body, id)
		}
		for _, leak := range []string{strings.TrimPrefix(fake.URL, "http://"), "acct_91", "Invalid parameter", providerKey} {
			if strings.Contains(body, leak) {
				t.Errorf("the answer leaks %q: %s", leak, body)
			}
		}
		waitEvent(t, g, "run failed", map[string]string{"request_id": id})
		if logs := g.stderr.String(); !strings.Contains(logs, "acct_91") || strings.Contains(logs, providerKey) {
			t.Errorf("the log must hold the provider's answer, and not the provider key:\n%s", tail(logs, 4000))
		}
	})
}
