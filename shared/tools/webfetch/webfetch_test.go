package webfetch

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

var localhost = netip.MustParseAddr("127.0.0.1")

// onlyLocalhost lets tests reach their httptest server on 127.0.0.1 and
// nothing else, not even the rest of 127/8.
func onlyLocalhost(a netip.Addr) bool { return a == localhost }

func newTool(t *testing.T, cfg Config) tool.Tool {
	t.Helper()
	tl, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return tl
}

func fetch(t *testing.T, tl tool.Tool, rawURL string) (string, error) {
	t.Helper()
	args, err := json.Marshal(map[string]string{"url": rawURL})
	if err != nil {
		t.Fatal(err)
	}
	return tl.Call(context.Background(), tool.Env{Agent: "a"}, args)
}

// countingServer is a loopback server that counts the requests it serves.
func countingServer(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestDefaultRefusesLoopback(t *testing.T) {
	srv, hits := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "internal secret")
	}))
	tl := newTool(t, Config{})
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		url     string
		wantErr string
	}{
		{srv.URL, "refused: 127.0.0.1 is a loopback address"},
		{"http://localhost:" + port + "/", "is a loopback address"},
		{"http://[::ffff:127.0.0.1]:" + port + "/", "refused: 127.0.0.1 is a loopback address"},
		{"http://0.0.0.0:" + port + "/", "refused: 0.0.0.0 is an unspecified address"},
	}
	for _, tc := range cases {
		t.Run(tc.url, func(t *testing.T) {
			out, err := fetch(t, tl, tc.url)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("fetch(%s) = %q, %v; want error containing %q", tc.url, out, err, tc.wantErr)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback server was reached %d times", n)
	}
}

func TestRedirects(t *testing.T) {
	// The forbidden server listens on 127.0.0.2, which the test policy
	// refuses; it must never see a request.
	forbiddenHits := new(atomic.Int64)
	forbidden := "http://127.0.0.2:1/"
	if ln, err := net.Listen("tcp", "127.0.0.2:0"); err == nil {
		srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			forbiddenHits.Add(1)
			fmt.Fprint(w, "internal secret")
		})}}
		srv.Start()
		t.Cleanup(srv.Close)
		forbidden = srv.URL + "/"
	}

	var base string
	srv, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to":
			http.Redirect(w, r, r.URL.Query().Get("u"), http.StatusFound)
		case "/hops":
			var n int
			fmt.Sscanf(r.URL.Query().Get("n"), "%d", &n)
			if n == 0 {
				fmt.Fprint(w, "arrived")
				return
			}
			http.Redirect(w, r, fmt.Sprintf("%s/hops?n=%d", base, n-1), http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	base = srv.URL
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	tl := newTool(t, Config{Allow: onlyLocalhost})

	cases := []struct {
		name    string
		url     string
		want    string
		wantErr string
	}{
		{name: "to 127.0.0.2", url: base + "/to?u=" + forbidden, wantErr: "refused: 127.0.0.2 is a loopback address"},
		{name: "to ::1", url: base + "/to?u=http://[::1]:" + port + "/", wantErr: "refused: ::1 is a loopback address"},
		{name: "to metadata", url: base + "/to?u=http://169.254.169.254/latest/meta-data/", wantErr: "refused: 169.254.169.254 is a link-local address (the cloud metadata endpoint)"},
		{name: "to mapped private", url: base + "/to?u=http://[::ffff:10.0.0.5]/", wantErr: "refused: 10.0.0.5 is a private address"},
		{name: "to ftp", url: base + "/to?u=ftp://example.com/file", wantErr: `refused redirect: scheme "ftp" is not allowed`},
		{name: "to file", url: base + "/to?u=file:///etc/passwd", wantErr: `refused redirect: scheme "file" is not allowed`},
		{name: "to userinfo", url: base + "/to?u=http://user:pw@127.0.0.1:" + port + "/hops", wantErr: "refused redirect: URLs with a user name or password are not allowed"},
		{name: "five hops", url: base + "/hops?n=5", want: "HTTP 200 OK\nURL: " + base + "/hops?n=0\nContent-Type: text/plain; charset=utf-8\n\narrived"},
		{name: "six hops", url: base + "/hops?n=6", wantErr: "stopped after 5 redirects"},
	}
	ipv6 := true
	if ln, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		ipv6 = false
	} else {
		ln.Close()
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.url, "[::1]") && !ipv6 {
				t.Skip("no IPv6 loopback on this machine")
			}
			out, err := fetch(t, tl, tc.url)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %q, %v; want error containing %q", out, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("output mismatch (-want +got):\n%s", diff)
			}
		})
	}
	if n := forbiddenHits.Load(); n != 0 {
		t.Errorf("the forbidden server was reached %d times", n)
	}
}

func TestFetch(t *testing.T) {
	page := `<!doctype html><html><head><title> Test  page </title><style>body{}</style></head>
<body><h1>Hello</h1><p>Some   <b>bold</b>
text.</p><script>alert(1)</script></body></html>`
	srv, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		send := func(ctype string, status int, body string) {
			if ctype != "" {
				w.Header().Set("Content-Type", ctype)
			} else {
				w.Header()["Content-Type"] = nil
			}
			w.WriteHeader(status)
			fmt.Fprint(w, body)
		}
		switch r.URL.Path {
		case "/text":
			send("text/plain; charset=utf-8", 200, "plain text\n")
		case "/html":
			send("text/html; charset=utf-8", 200, page)
		case "/json":
			send("application/json", 200, `{"ok":true}`)
		case "/png":
			send("image/png", 200, "\x89PNG\r\n\x1a\nrest")
		case "/sniff":
			send("", 200, "<html><body><p>sniffed</p></body></html>")
		case "/latin1":
			send("text/plain; charset=iso-8859-1", 200, "caf\xe9")
		case "/missing":
			send("text/plain; charset=utf-8", 404, "no such page")
		case "/empty":
			send("text/plain", 204, "")
		case "/big":
			send("text/plain; charset=utf-8", 200, strings.Repeat("a", 50)+"é"+strings.Repeat("b", 100))
		case "/bigbin":
			send("application/octet-stream", 200, strings.Repeat("\x00", 500))
		case "/agent":
			send("text/plain", 200, r.UserAgent())
		}
	}))
	small := newTool(t, Config{Allow: onlyLocalhost, MaxBytes: 51})
	tl := newTool(t, Config{Allow: onlyLocalhost})
	cases := []struct {
		name string
		tool tool.Tool
		path string
		want string
	}{
		{"text", tl, "/text", "HTTP 200 OK\nContent-Type: text/plain; charset=utf-8\n\nplain text"},
		{"html", tl, "/html", "HTTP 200 OK\nContent-Type: text/html; charset=utf-8\n\nTitle: Test page\n\n# Hello\n\nSome bold text."},
		{"json", tl, "/json", "HTTP 200 OK\nContent-Type: application/json\n\n{\"ok\":true}"},
		{"binary", tl, "/png", "HTTP 200 OK\nContent-Type: image/png\n\nbinary content of type image/png, 12 bytes, not shown"},
		{"sniffed html", tl, "/sniff", "HTTP 200 OK\nContent-Type: text/html; charset=utf-8\n\nsniffed"},
		{"latin-1", tl, "/latin1", "HTTP 200 OK\nContent-Type: text/plain; charset=iso-8859-1\n\ncafé"},
		{"not found", tl, "/missing", "HTTP 404 Not Found\nContent-Type: text/plain; charset=utf-8\n\nno such page"},
		{"empty", tl, "/empty", "HTTP 204 No Content\nContent-Type: text/plain\n\n(empty body)"},
		{"fragment dropped", tl, "/text#section", "HTTP 200 OK\nContent-Type: text/plain; charset=utf-8\n\nplain text"},
		{"user agent", tl, "/agent", "HTTP 200 OK\nContent-Type: text/plain\n\nlambdaclaw-web_fetch/1"},
		{"size limit", small, "/big", "HTTP 200 OK\nContent-Type: text/plain; charset=utf-8\n\n" + strings.Repeat("a", 50) +
			"\n\n[truncated: only the first 51 bytes of the response were read]"},
		{"binary size limit", small, "/bigbin", "HTTP 200 OK\nContent-Type: application/octet-stream\n\nbinary content of type application/octet-stream, 500 bytes, not shown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := fetch(t, tc.tool, srv.URL+tc.path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("output mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release) }) // runs before srv.Close
	tl := newTool(t, Config{Allow: onlyLocalhost, Timeout: 50 * time.Millisecond})
	out, err := fetch(t, tl, srv.URL)
	if err == nil || !strings.Contains(err.Error(), "timed out (limit 50ms)") {
		t.Fatalf("fetch = %q, %v; want a timeout error", out, err)
	}
}

func TestCanceled(t *testing.T) {
	srv, _ := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	tl := newTool(t, Config{Allow: onlyLocalhost})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tl.Call(ctx, tool.Env{}, json.RawMessage(fmt.Sprintf(`{"url":%q}`, srv.URL)))
	if err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("error = %v, want canceled", err)
	}
}

func TestBadArguments(t *testing.T) {
	srv, hits := countingServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	hostPort := strings.TrimPrefix(srv.URL, "http://")
	tl := newTool(t, Config{Allow: onlyLocalhost})
	cases := []struct {
		name, args, wantErr string
	}{
		{"empty url", `{"url":""}`, `"url" is required`},
		{"no arguments", ``, `"url" is required`},
		{"ftp", `{"url":"ftp://example.com/"}`, `scheme "ftp" is not allowed`},
		{"file", `{"url":"file:///etc/passwd"}`, `scheme "file" is not allowed`},
		{"no scheme", `{"url":"example.com/page"}`, "no scheme"},
		{"no host", `{"url":"http:///path"}`, "no host"},
		{"userinfo", `{"url":"http://user:pass@` + hostPort + `/"}`, "user name or password"},
		{"user only", `{"url":"http://user@` + hostPort + `/"}`, "user name or password"},
		{"bad url", `{"url":"http://[::1"}`, "invalid URL"},
		{"bad escape", `{"url":"http://example.com/%zz"}`, "invalid URL"},
		{"too long", `{"url":"http://example.com/` + strings.Repeat("a", maxURLLen) + `"}`, "at most 8192 are allowed"},
		{"bad json", `{"url":`, "incomplete"},
		{"unknown field", `{"url":"http://example.com","method":"POST"}`, `unknown argument "method" (allowed: url)`},
		{"wrong type", `{"url":["http://example.com"]}`, `"url" must be a string, got array`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := tl.Call(context.Background(), tool.Env{}, json.RawMessage(tc.args))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %q, %v; want error containing %q", out, err, tc.wantErr)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("refused URLs reached the server %d times", n)
	}
}

func TestNew(t *testing.T) {
	if _, err := New(Config{MaxBytes: -1}); err == nil {
		t.Error("New accepted a negative MaxBytes")
	}
	if _, err := New(Config{Timeout: -time.Second}); err == nil {
		t.Error("New accepted a negative Timeout")
	}
	tl := newTool(t, Config{})
	f := tl.(*fetcher)
	if f.cfg.MaxBytes != DefaultMaxBytes || f.cfg.Timeout != DefaultTimeout {
		t.Errorf("defaults = %d bytes, %s; want %d, %s", f.cfg.MaxBytes, f.cfg.Timeout, DefaultMaxBytes, DefaultTimeout)
	}
	tr, ok := f.client.Transport.(*http.Transport)
	if !ok || tr.Proxy != nil {
		t.Errorf("transport %T uses a proxy; web_fetch must dial directly", f.client.Transport)
	}
	if diff := cmp.Diff(tool.Policy{Effect: tool.Read}, tl.Policy()); diff != "" {
		t.Errorf("policy mismatch (-want +got):\n%s", diff)
	}
	d := tl.Definition()
	var schema struct {
		Type     string   `json:"type"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(d.Parameters, &schema); err != nil {
		t.Fatalf("parameters are not JSON: %v", err)
	}
	if diff := cmp.Diff([]string{"web_fetch", "object", "url"}, []string{d.Name, schema.Type, strings.Join(schema.Required, ",")}); diff != "" {
		t.Errorf("definition mismatch (-want +got):\n%s", diff)
	}
}
