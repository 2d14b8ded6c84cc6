// Package websearch provides the web_search agent tool: a query sent to a
// search provider, whose ranked results (title, URL, snippet) come back as
// text for the model, at most MaxResults of them, scrubbed and within
// MaxBytes. The providers are SearXNG (its JSON API, self-hosted, no key),
// the Brave Search API (X-Subscription-Token) and Tavily (POST /search,
// a bearer key); each speaks its service's request and error formats
// (searxng.go, brave.go, tavily.go), and a provider's refusal (a bad key,
// a rate limit with its wait) reaches the model as an *Error that says
// what happened.
//
// The key is a function, asked at each call, so that it can come from a
// secret reference of the configuration (wiring/config's tools.web_search)
// or, on AWS, from Secrets Manager.
package websearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
	"github.com/lambdaclaw/lambdaclaw/shared/core/scrub"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// The providers.
const (
	SearXNG = "searxng"
	Brave   = "brave"
	Tavily  = "tavily"
)

// Providers lists the providers' names.
var Providers = []string{SearXNG, Brave, Tavily}

// Defaults and bounds.
const (
	DefaultMaxResults = 5
	// MaxResults is the most results any call returns: Brave's and
	// Tavily's own maximum per request.
	MaxResults      = 20
	DefaultMaxBytes = 16 << 10
	DefaultTimeout  = 15 * time.Second
	// maxBody bounds a provider's answer.
	maxBody       = 2 << 20
	maxQueryBytes = 400 // Brave's limit, the strictest
	maxTitle      = 300
	maxSnippet    = 1000
)

// Freshness values a call may ask for: results of the past day, week,
// month or year.
var freshness = []string{"day", "week", "month", "year"}

// Config sets up the web_search tool.
type Config struct {
	// Provider is searxng, brave or tavily.
	Provider string
	// URL is the provider's base URL: the SearXNG instance (required),
	// or another endpoint for Brave (default
	// https://api.search.brave.com/res/v1) or Tavily (default
	// https://api.tavily.com).
	URL string
	// Key returns the provider's API key; SearXNG needs none.
	Key func(context.Context) (string, error)
	// MaxResults is the most results a call returns (default 5, at most
	// 20); a call may ask for fewer with count.
	MaxResults int
	// MaxBytes bounds the text of a call's results (default 16 KiB).
	MaxBytes int
	// Timeout bounds one search (default 15 s).
	Timeout time.Duration
	// Client sends the requests; a client with Timeout when nil.
	Client *http.Client
}

// Result is one search result, in the provider's rank order.
type Result struct {
	Title   string
	URL     string
	Snippet string
}

// Query is what a call asks for.
type Query struct {
	Text string
	// Count is how many results to return, 1..Config.MaxResults.
	Count int
	// Freshness is "", day, week, month or year.
	Freshness string
}

// Error is a provider's refusal of a search.
type Error struct {
	Provider string
	Status   int
	// Code is the provider's code of the error, when it gives one
	// (Brave's RATE_LIMITED, SUBSCRIPTION_TOKEN_INVALID).
	Code    string
	Message string
	// RetryAfter is how long the provider asks to wait, when it says.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ", e.Provider)
	switch {
	case e.RateLimited():
		b.WriteString("rate limited")
	case e.BadKey():
		b.WriteString("the API key was refused")
	default:
		b.WriteString("search failed")
	}
	fmt.Fprintf(&b, " (HTTP %d", e.Status)
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	}
	b.WriteString(")")
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, "; try again in %s", e.RetryAfter)
	}
	return b.String()
}

// RateLimited says the provider refused for the rate or quota of the key.
func (e *Error) RateLimited() bool {
	return e.Status == http.StatusTooManyRequests || e.Code == "RATE_LIMITED" || e.Code == "QUOTA_LIMITED" || e.Status == 432 || e.Status == 433
}

// BadKey says the provider refused the key.
func (e *Error) BadKey() bool {
	return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden && e.Provider != SearXNG ||
		strings.HasPrefix(e.Code, "SUBSCRIPTION_TOKEN_")
}

// provider sends one search to a service.
type provider interface {
	search(ctx context.Context, s *Searcher, q Query) ([]Result, error)
}

// Searcher searches with one configured provider. The tool and doctor's
// check use it.
type Searcher struct {
	cfg  Config
	base *url.URL
	p    provider
}

// New checks cfg, fills in its defaults and returns its Searcher.
func New(cfg Config) (*Searcher, error) {
	var p provider
	def := ""
	switch cfg.Provider {
	case SearXNG:
		p = searxng{}
	case Brave:
		p, def = brave{}, "https://api.search.brave.com/res/v1"
	case Tavily:
		p, def = tavily{}, "https://api.tavily.com"
	default:
		return nil, fmt.Errorf("websearch: provider %q: want %s", cfg.Provider, strings.Join(Providers, ", "))
	}
	if cfg.URL == "" {
		if def == "" {
			return nil, fmt.Errorf("websearch: %s needs the url of its instance, such as http://localhost:8888", cfg.Provider)
		}
		cfg.URL = def
	}
	base, err := url.Parse(cfg.URL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" || base.User != nil {
		return nil, fmt.Errorf("websearch: url %q: want an http(s) URL without a user name", cfg.URL)
	}
	base.Path = strings.TrimSuffix(base.Path, "/")
	if cfg.Provider != SearXNG && cfg.Key == nil {
		return nil, fmt.Errorf("websearch: %s needs an API key", cfg.Provider)
	}
	switch {
	case cfg.MaxResults < 0 || cfg.MaxResults > MaxResults:
		return nil, fmt.Errorf("websearch: max_results %d: want 1 to %d", cfg.MaxResults, MaxResults)
	case cfg.MaxResults == 0:
		cfg.MaxResults = DefaultMaxResults
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.Timeout}
	}
	return &Searcher{cfg: cfg, base: base, p: p}, nil
}

// Provider is the provider's name.
func (s *Searcher) Provider() string { return s.cfg.Provider }

// Search sends q and returns at most q.Count results (MaxResults when
// zero), in rank order, with empty URLs dropped and long texts cut.
func (s *Searcher) Search(ctx context.Context, q Query) ([]Result, error) {
	if q.Count <= 0 || q.Count > s.cfg.MaxResults {
		q.Count = s.cfg.MaxResults
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	rs, err := s.p.search(ctx, s, q)
	if err != nil {
		return nil, err
	}
	out := make([]Result, 0, min(len(rs), q.Count))
	for _, r := range rs {
		if len(out) == q.Count {
			break
		}
		if r.URL = strings.TrimSpace(r.URL); r.URL == "" {
			continue
		}
		r.Title = clip(oneLine(r.Title), maxTitle)
		r.Snippet = clip(oneLine(r.Snippet), maxSnippet)
		out = append(out, r)
	}
	return out, nil
}

// key returns the provider's key.
func (s *Searcher) key(ctx context.Context) (string, error) {
	k, err := s.cfg.Key(ctx)
	if err != nil {
		return "", fmt.Errorf("%s: the API key cannot be read: %w", s.cfg.Provider, err)
	}
	if k == "" {
		return "", fmt.Errorf("%s: the API key is not set", s.cfg.Provider)
	}
	return k, nil
}

// endpoint is the base URL with path appended and query set.
func (s *Searcher) endpoint(path string, query url.Values) string {
	u := *s.base
	u.Path += path
	u.RawQuery = query.Encode()
	return u.String()
}

// do sends req and decodes a 200 answer's JSON into v; any other status
// is given to refusal, which makes the provider's error of it.
func (s *Searcher) do(req *http.Request, v any, refusal func(status int, h http.Header, body []byte) *Error) error {
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "lambdaclaw-web_search/1")
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%s: %s %s: %w", s.cfg.Provider, req.Method, redacted(req.URL), err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return fmt.Errorf("%s: reading the answer: %w", s.cfg.Provider, err)
	}
	if len(body) > maxBody {
		return fmt.Errorf("%s: the answer is larger than %d bytes", s.cfg.Provider, maxBody)
	}
	if resp.StatusCode != http.StatusOK {
		e := refusal(resp.StatusCode, resp.Header, body)
		e.Provider, e.Status = s.cfg.Provider, resp.StatusCode
		if e.Message == "" {
			e.Message = clip(oneLine(string(body)), 200)
		}
		if e.RetryAfter == 0 {
			e.RetryAfter = llm.ParseRetryAfter(resp.Header, time.Now())
		}
		return e
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s: the answer is not the JSON expected: %w", s.cfg.Provider, err)
	}
	return nil
}

// redacted is u without its query, which may hold what was searched for.
func redacted(u *url.URL) string {
	c := *u
	c.RawQuery = ""
	return c.Redacted()
}

// oneLine folds white space runs into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// clip cuts s to at most n bytes, on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// searchTool is the web_search tool.
type searchTool struct{ s *Searcher }

// NewTool returns the web_search tool searching with cfg's provider.
func NewTool(cfg Config) (tool.Tool, error) {
	s, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return &searchTool{s: s}, nil
}

func (t *searchTool) Definition() chat.ToolDef {
	return chat.ToolDef{
		Name: "web_search",
		Description: fmt.Sprintf("Search the web. Returns up to %d results, best first, each with its title, URL and a snippet; "+
			"fetch a page with web_fetch to read it.", t.s.cfg.MaxResults),
		Parameters: json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "What to search for."},
    "count": {"type": "integer", "minimum": 1, "maximum": %d, "description": "How many results to return (default %d)."},
    "freshness": {"type": "string", "enum": ["day", "week", "month", "year"], "description": "Only results from the past day, week, month or year."}
  },
  "required": ["query"],
  "additionalProperties": false
}`, t.s.cfg.MaxResults, t.s.cfg.MaxResults)),
	}
}

// Policy: a search changes nothing lambdaclaw or the person owns.
func (t *searchTool) Policy() tool.Policy { return tool.Policy{Effect: tool.Read} }

func (t *searchTool) Call(ctx context.Context, _ tool.Env, args json.RawMessage) (string, error) {
	var in struct {
		Query     string `json:"query"`
		Count     *int   `json:"count"`
		Freshness string `json:"freshness"`
	}
	if err := tool.DecodeArgs(args, &in, "query", "count", "freshness"); err != nil {
		return "", err
	}
	q := Query{Text: strings.TrimSpace(in.Query), Freshness: in.Freshness}
	switch {
	case q.Text == "":
		return "", errors.New(`"query" is required, e.g. {"query": "lambdaclaw release notes"}`)
	case len(q.Text) > maxQueryBytes:
		return "", fmt.Errorf(`"query" is %d bytes long; at most %d are allowed`, len(q.Text), maxQueryBytes)
	case in.Freshness != "" && !slices.Contains(freshness, in.Freshness):
		return "", fmt.Errorf(`"freshness" is %q; want one of %s`, in.Freshness, strings.Join(freshness, ", "))
	case in.Count != nil && (*in.Count < 1 || *in.Count > t.s.cfg.MaxResults):
		return "", fmt.Errorf(`"count" is %d; want 1 to %d`, *in.Count, t.s.cfg.MaxResults)
	}
	if in.Count != nil {
		q.Count = *in.Count
	}
	rs, err := t.s.Search(ctx, q)
	if err != nil {
		return "", t.s.scrubbed(ctx, err)
	}
	return t.s.render(ctx, q, rs), nil
}

// render writes the results as numbered entries, scrubbed, within
// MaxBytes: entries that do not fit are left out and counted.
func (s *Searcher) render(ctx context.Context, q Query, rs []Result) string {
	if len(rs) == 0 {
		return fmt.Sprintf("No results for %q.", q.Text)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Results for %q (%s):\n", q.Text, s.cfg.Provider)
	for i, r := range rs {
		entry := fmt.Sprintf("\n%d. %s\n   %s\n", i+1, r.Title, r.URL)
		if r.Snippet != "" {
			entry += "   " + r.Snippet + "\n"
		}
		entry = s.scrub(ctx, entry)
		if b.Len()+len(entry) > s.cfg.MaxBytes {
			fmt.Fprintf(&b, "\n[%d more results left out: the results are limited to %d bytes]", len(rs)-i, s.cfg.MaxBytes)
			break
		}
		b.WriteString(entry)
	}
	return b.String()
}

// scrub removes credentials from text, the provider's key among them.
func (s *Searcher) scrub(ctx context.Context, text string) string {
	text = scrub.Scrub(text)
	if s.cfg.Key != nil {
		if k, err := s.cfg.Key(ctx); err == nil {
			text = scrub.Known(text, k)
		}
	}
	return text
}

// scrubbed is err with credentials removed from its message.
func (s *Searcher) scrubbed(ctx context.Context, err error) error {
	msg := err.Error()
	if clean := s.scrub(ctx, msg); clean != msg {
		return errors.New(clean)
	}
	return err
}
