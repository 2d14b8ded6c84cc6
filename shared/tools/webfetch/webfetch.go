// Package webfetch provides the web_fetch agent tool: an HTTP(S) GET with a
// size limit, a time limit and protection against server-side request
// forgery. The address check runs on every connection the HTTP client makes,
// after DNS resolution (net.Dialer.Control), so DNS rebinding and redirects
// to internal addresses are refused as well as internal URLs.
package webfetch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// Defaults used when a Config field is zero.
const (
	DefaultMaxBytes = 1 << 20
	DefaultTimeout  = 15 * time.Second
	// MaxRedirects is how many redirects a fetch follows.
	MaxRedirects = 5
	maxURLLen    = 8 << 10
)

// Config sets the limits of the web_fetch tool.
type Config struct {
	// MaxBytes is the most body bytes read per fetch. Default 1 MiB.
	MaxBytes int64
	// Timeout bounds a whole fetch, redirects and body included. Default 15 s.
	Timeout time.Duration
	// Allow decides which IP addresses may be connected to. It sees the
	// resolved address of every connection, unmapped and without zone.
	// Default Public: public internet addresses only.
	Allow func(netip.Addr) bool
}

type fetcher struct {
	cfg    Config
	client *http.Client
}

// New returns the web_fetch tool with cfg's limits.
func New(cfg Config) (tool.Tool, error) {
	client, err := Client(&cfg)
	if err != nil {
		return nil, err
	}
	return &fetcher{cfg: cfg, client: client}, nil
}

// Client returns an HTTP client with web_fetch's protection against
// server-side request forgery: it connects only to addresses cfg.Allow
// accepts (public internet addresses by default), checked after DNS
// resolution on every connection, uses no proxy, follows at most
// MaxRedirects redirects to http(s) URLs, and gives up after cfg.Timeout.
// It fills in cfg's defaults. Webhook deliveries use it too.
func Client(cfg *Config) (*http.Client, error) {
	if cfg.MaxBytes < 0 {
		return nil, fmt.Errorf("webfetch: MaxBytes must not be negative, got %d", cfg.MaxBytes)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("webfetch: Timeout must not be negative, got %s", cfg.Timeout)
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Allow == nil {
		cfg.Allow = Public
	}
	guard := guard{allow: cfg.Allow}
	dialer := &net.Dialer{Timeout: cfg.Timeout, Control: guard.control}
	transport := &http.Transport{
		Proxy:                  nil, // never a proxy from the environment: it would bypass the address check
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    cfg.Timeout,
		ResponseHeaderTimeout:  cfg.Timeout,
		MaxResponseHeaderBytes: 256 << 10,
		MaxIdleConns:           16,
		IdleConnTimeout:        30 * time.Second,
	}
	return &http.Client{
		Transport:     transport,
		Timeout:       cfg.Timeout,
		CheckRedirect: checkRedirect,
	}, nil
}

// AllowNetworks returns an address policy for Config.Allow: public
// internet addresses, and the addresses of the given networks, which an
// operator trusts (a LAN host, a service on this machine).
func AllowNetworks(nets []netip.Prefix) func(netip.Addr) bool {
	if len(nets) == 0 {
		return Public
	}
	return func(a netip.Addr) bool {
		return Public(a) || slices.ContainsFunc(nets, func(p netip.Prefix) bool { return p.Contains(a) })
	}
}

// refusedError is a connection refused by the address policy.
type refusedError struct {
	addr   netip.Addr
	reason string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("refused: %s is %s; only public internet addresses are reached", e.addr, e.reason)
}

// urlError is a URL web_fetch will not fetch, first or after a redirect.
type urlError struct{ msg string }

func (e *urlError) Error() string { return e.msg }

// guard is the address check of a Client's connections.
type guard struct{ allow func(netip.Addr) bool }

// control runs after DNS resolution, just before each connection, with the
// IP address about to be dialled.
func (g guard) control(network, address string, _ syscall.RawConn) error {
	if network != "tcp4" && network != "tcp6" {
		return &urlError{fmt.Sprintf("refused: network %s is not allowed", network)}
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &urlError{fmt.Sprintf("refused: cannot check address %q", address)}
	}
	addr := ap.Addr().Unmap().WithZone("")
	if g.allow(addr) {
		return nil
	}
	reason := Classify(ap.Addr())
	if reason == "" {
		reason = "not on the allowed list"
	}
	return &refusedError{addr: ap.Addr().WithZone(""), reason: reason}
}

func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > MaxRedirects {
		return &urlError{fmt.Sprintf("stopped after %d redirects (last to %s)", MaxRedirects, req.URL.Redacted())}
	}
	if err := CheckURL(req.URL); err != nil {
		return &urlError{"refused redirect: " + err.Error()}
	}
	return nil
}

// CheckURL reports why u is not a URL a Client may be sent to: not
// http(s), with a user name or password, or without a host.
func CheckURL(u *url.URL) error {
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		if u.Scheme == "" {
			return errors.New("the URL has no scheme; use http:// or https://")
		}
		return fmt.Errorf("scheme %q is not allowed; only http and https are", u.Scheme)
	case u.User != nil:
		return errors.New("URLs with a user name or password are not allowed")
	case u.Hostname() == "":
		return errors.New("the URL has no host")
	}
	return nil
}

func (f *fetcher) Definition() chat.ToolDef {
	return chat.ToolDef{
		Name: "web_fetch",
		Description: fmt.Sprintf("Fetch a public web page or file over HTTP(S) with GET and return its status, "+
			"content type and text. HTML is converted to readable text. At most %d bytes are read and "+
			"the fetch gives up after %s. Internal and private network addresses are refused.",
			f.cfg.MaxBytes, f.cfg.Timeout),
		Parameters: json.RawMessage(`{
  "type": "object",
  "properties": {
    "url": {"type": "string", "description": "The http:// or https:// URL to fetch."}
  },
  "required": ["url"],
  "additionalProperties": false
}`),
	}
}

func (f *fetcher) Policy() tool.Policy {
	return tool.Policy{Effect: tool.Read}
}

func (f *fetcher) Call(ctx context.Context, env tool.Env, args json.RawMessage) (string, error) {
	var in struct {
		URL string `json:"url"`
	}
	if err := tool.DecodeArgs(args, &in, "url"); err != nil {
		return "", err
	}
	raw := strings.TrimSpace(in.URL)
	if raw == "" {
		return "", errors.New(`"url" is required, e.g. "https://example.com/"`)
	}
	if len(raw) > maxURLLen {
		return "", fmt.Errorf("the URL is %d bytes long; at most %d are allowed", len(raw), maxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("invalid URL: %v", errors.Unwrap(err))
	}
	if err := CheckURL(u); err != nil {
		return "", fmt.Errorf("cannot fetch: %w", err)
	}
	u.Fragment, u.RawFragment = "", ""

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", fmt.Errorf("invalid URL: %v", err)
	}
	req.Header.Set("User-Agent", "lambdaclaw-web_fetch/1")
	req.Header.Set("Accept", "text/html, text/plain;q=0.9, application/json;q=0.9, */*;q=0.5")
	resp, err := f.client.Do(req)
	if err != nil {
		return "", f.fetchError(u, err)
	}
	defer resp.Body.Close()

	body, truncated, err := readLimited(resp.Body, f.cfg.MaxBytes)
	if err != nil {
		return "", f.fetchError(u, err)
	}
	return f.render(u, resp, body, truncated), nil
}

// fetchError rewrites a client error into a message for the model.
func (f *fetcher) fetchError(u *url.URL, err error) error {
	var refused *refusedError
	var bad *urlError
	var dns *net.DNSError
	var netErr net.Error
	switch {
	case errors.As(err, &refused):
		return refused
	case errors.As(err, &bad):
		return bad
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("fetching %s was canceled", u.Redacted())
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("fetching %s timed out (limit %s)", u.Redacted(), f.cfg.Timeout)
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return fmt.Errorf("cannot resolve host %q: no such host", dns.Name)
		}
		return fmt.Errorf("cannot resolve host %q: %s", dns.Name, dns.Err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot connect to %s: connection refused", u.Host)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("fetching %s failed: %v", u.Redacted(), err)
}

// readLimited reads at most limit bytes and reports whether more followed.
func readLimited(r io.Reader, limit int64) ([]byte, bool, error) {
	body, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, false, err
	}
	if int64(len(body)) > limit {
		return body[:limit], true, nil
	}
	return body, false, nil
}

func (f *fetcher) render(requested *url.URL, resp *http.Response, body []byte, truncated bool) string {
	var out strings.Builder
	fmt.Fprintf(&out, "HTTP %s\n", resp.Status)
	if final := resp.Request.URL; final.String() != requested.String() {
		fmt.Fprintf(&out, "URL: %s\n", final.Redacted())
	}
	ctype := resp.Header.Get("Content-Type")
	if ctype == "" && len(body) > 0 {
		ctype = http.DetectContentType(body)
	}
	if ctype != "" {
		fmt.Fprintf(&out, "Content-Type: %s\n", ctype)
	}
	out.WriteByte('\n')

	media, params, err := mime.ParseMediaType(ctype)
	if err != nil {
		media = strings.ToLower(strings.TrimSpace(strings.Split(ctype, ";")[0]))
	}
	switch {
	case len(body) == 0:
		out.WriteString("(empty body)")
		return out.String()
	case !isText(media):
		size := fmt.Sprintf("%d bytes", len(body))
		if truncated {
			size = fmt.Sprintf("more than %d bytes", f.cfg.MaxBytes)
			if resp.ContentLength > f.cfg.MaxBytes {
				size = fmt.Sprintf("%d bytes", resp.ContentLength)
			}
		}
		fmt.Fprintf(&out, "binary content of type %s, %s, not shown", orUnknown(media), size)
		return out.String()
	}
	text := decodeText(body, params["charset"], truncated)
	if media == "text/html" || media == "application/xhtml+xml" {
		text = htmlText(text, resp.Request.URL)
	}
	out.WriteString(strings.TrimSpace(text))
	if truncated {
		fmt.Fprintf(&out, "\n\n[truncated: only the first %d bytes of the response were read]", f.cfg.MaxBytes)
	}
	return out.String()
}

func orUnknown(media string) string {
	if media == "" {
		return "unknown"
	}
	return media
}

// isText reports whether a media type is worth showing to a model as text.
func isText(media string) bool {
	switch {
	case strings.HasPrefix(media, "text/"),
		strings.HasSuffix(media, "+json"), strings.HasSuffix(media, "+xml"), strings.HasSuffix(media, "+yaml"):
		return true
	}
	switch media {
	case "application/json", "application/xml", "application/javascript", "application/ecmascript",
		"application/x-javascript", "application/yaml", "application/x-yaml", "application/toml",
		"application/x-ndjson", "application/x-www-form-urlencoded", "application/sql", "application/graphql":
		return true
	}
	return false
}

// decodeText turns body into valid UTF-8. Latin-1 is decoded exactly; other
// charsets are assumed to be UTF-8 compatible and invalid bytes replaced. A
// truncated body loses the partial character it may end with.
func decodeText(body []byte, charset string, truncated bool) string {
	switch strings.ToLower(charset) {
	case "iso-8859-1", "latin1", "latin-1", "iso8859-1":
		runes := make([]rune, len(body))
		for i, b := range body {
			runes[i] = rune(b)
		}
		return string(runes)
	}
	if truncated {
		body = trimPartialRune(body)
	}
	return strings.ToValidUTF8(string(body), "\uFFFD")
}

// trimPartialRune drops an incomplete UTF-8 sequence cut off at the end.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}
