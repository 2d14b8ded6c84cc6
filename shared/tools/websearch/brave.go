package websearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// brave is the Brave Search API's web search: GET /web/search with the
// key in X-Subscription-Token, count (at most 20) and freshness (pd, pw,
// pm, py). Its errors are JSON ({"type": "ErrorResponse", "error": {…}});
// a bad key is a 422 SUBSCRIPTION_TOKEN_INVALID, a rate limit a 429
// RATE_LIMITED whose X-RateLimit-Reset says, per window, in how many
// seconds it resets.
type brave struct{}

var braveFreshness = map[string]string{"day": "pd", "week": "pw", "month": "pm", "year": "py"}

type braveAnswer struct {
	Web struct {
		Results []struct {
			Title       string `json:"title"`
			URL         string `json:"url"`
			Description string `json:"description"`
		} `json:"results"`
	} `json:"web"`
}

func (brave) search(ctx context.Context, s *Searcher, q Query) ([]Result, error) {
	key, err := s.key(ctx)
	if err != nil {
		return nil, err
	}
	v := url.Values{"q": {q.Text}, "count": {strconv.Itoa(q.Count)}}
	if f := braveFreshness[q.Freshness]; f != "" {
		v.Set("freshness", f)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.endpoint("/web/search", v), nil)
	if err != nil {
		return nil, fmt.Errorf("brave: %w", err)
	}
	req.Header.Set("X-Subscription-Token", key)
	var a braveAnswer
	if err := s.do(req, &a, braveRefusal); err != nil {
		return nil, err
	}
	out := make([]Result, 0, len(a.Web.Results))
	for _, r := range a.Web.Results {
		out = append(out, Result{Title: r.Title, URL: r.URL, Snippet: stripTags(r.Description)})
	}
	return out, nil
}

// braveError is one error of Brave's ErrorResponse.
type braveError struct {
	Code   string `json:"code"`
	Detail string `json:"detail"`
}

// braveRefusal reads Brave's ErrorResponse: its "error", or the first of
// "errors" as its API reference shows them.
func braveRefusal(_ int, h http.Header, body []byte) *Error {
	var r struct {
		Error  *braveError  `json:"error"`
		Errors []braveError `json:"errors"`
	}
	e := &Error{}
	if json.Unmarshal(body, &r) == nil {
		be := r.Error
		if be == nil && len(r.Errors) > 0 {
			be = &r.Errors[0]
		}
		if be != nil {
			e.Code, e.Message = be.Code, be.Detail
		}
	}
	e.RetryAfter = braveReset(h.Get("X-RateLimit-Reset"), h.Get("X-RateLimit-Remaining"))
	return e
}

// braveReset is the wait before the first exhausted window of Brave's
// rate limits resets: X-RateLimit-Reset and X-RateLimit-Remaining list,
// per window (a second, a month), the seconds until it resets and the
// requests left.
func braveReset(reset, remaining string) time.Duration {
	resets, lefts := strings.Split(reset, ","), strings.Split(remaining, ",")
	for i, r := range resets {
		n, err := strconv.Atoi(strings.TrimSpace(r))
		if err != nil || n < 0 {
			continue
		}
		if i < len(lefts) {
			if left, err := strconv.Atoi(strings.TrimSpace(lefts[i])); err == nil && left > 0 {
				continue
			}
		}
		return time.Duration(n) * time.Second
	}
	return 0
}

// stripTags removes the <strong> marks Brave puts around matched words.
func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>' && in:
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}
