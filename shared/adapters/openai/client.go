package openai

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// defaultBaseURL is OpenAI's own API, used when no base URL is set.
const defaultBaseURL = "https://api.openai.com/v1/"

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 16 << 10

// maxRedirects is how many redirects a call follows, as net/http does.
const maxRedirects = 10

// client sends the package's calls, chat completions, embeddings and
// transcriptions, as OpenAI's HTTP API takes them: a body POSTed under the base URL,
// the key as a bearer token. It never retries: that is the llm package's
// wrappers' job.
type client struct {
	// base is the API root; its path ends with a slash.
	base   *url.URL
	apiKey string
	hc     *http.Client
}

// maxIdlePerHost is how many idle connections to a model's server are
// kept: one server takes the model calls of every session at once, and
// net/http's default (2) closed all but two after each burst of
// concurrent turns, which then dialled again (with https, a TLS
// handshake each).
const maxIdlePerHost = 64

// transport is the HTTP transport of clients given none: net/http's
// default, keeping maxIdlePerHost idle connections per server.
var transport = sync.OnceValue(func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = maxIdlePerHost
	t.MaxIdleConns = max(t.MaxIdleConns, maxIdlePerHost)
	return t
})

// newClient returns a client for the API at baseURL (OpenAI's when
// empty), sending requests with hc (a plain client over transport when
// nil). hc is copied, to follow redirects within the base URL's origin
// only: the key and the conversation go nowhere else.
func newClient(baseURL, apiKey string, hc *http.Client) (*client, error) {
	u, err := url.Parse(cmp.Or(baseURL, defaultBaseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("base URL %q is not an http(s) URL", baseURL)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	c := &client{base: u, apiKey: apiKey, hc: &http.Client{Transport: transport()}}
	if hc != nil {
		*c.hc = *hc
	}
	next := c.hc.CheckRedirect
	c.hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		switch {
		case !sameOrigin(req.URL, u):
			return errors.New("redirected away from the API's origin")
		case next != nil:
			return next(req, via)
		case len(via) >= maxRedirects:
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}
	return c, nil
}

// official reports whether the client calls OpenAI's own API.
func (c *client) official() bool { return c.base.Hostname() == "api.openai.com" }

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}

// post sends body to the endpoint at path under the base URL. It returns
// the response to a status below 400, its body for the caller to read
// and close. An error status fails with an *apiError holding what its
// body says; the response comes back too, closed.
func (c *client) post(ctx context.Context, path string, body []byte) (*http.Response, error) {
	return c.send(ctx, path, "application/json", body)
}

// send is post with a body of contentType (a multipart form's).
func (c *client) send(ctx context.Context, path, contentType string, body []byte) (*http.Response, error) {
	u := c.base.ResolveReference(&url.URL{Path: path})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "lambdaclaw-openai/1")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode >= 400 {
		defer res.Body.Close()
		// What fails to arrive is left out: the status says enough.
		data, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		code, msg := errorBody(data)
		return res, &apiError{status: res.StatusCode, header: res.Header, code: code, msg: msg}
	}
	return res, nil
}

// apiError is an error status a server answered with, and the code and
// message its body gave.
type apiError struct {
	status    int
	header    http.Header
	code, msg string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.status, http.StatusText(e.status), e.msg)
}
