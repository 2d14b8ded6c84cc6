package websearch

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// searxng is SearXNG's search API: GET /search?q=…&format=json, whose
// JSON format the instance must enable (search.formats in its
// settings.yml; a 403 otherwise). It takes time_range but no count: the
// first page's results are cut to the count.
type searxng struct{}

type searxngAnswer struct {
	Results []struct {
		URL     string  `json:"url"`
		Title   string  `json:"title"`
		Content string  `json:"content"`
		Score   float64 `json:"score"`
	} `json:"results"`
}

func (searxng) search(ctx context.Context, s *Searcher, q Query) ([]Result, error) {
	v := url.Values{"q": {q.Text}, "format": {"json"}, "pageno": {"1"}}
	if q.Freshness != "" {
		v.Set("time_range", q.Freshness)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.endpoint("/search", v), nil)
	if err != nil {
		return nil, fmt.Errorf("searxng: %w", err)
	}
	var a searxngAnswer
	if err := s.do(req, &a, searxngRefusal); err != nil {
		return nil, err
	}
	// SearXNG ranks its results already (by score, merged across
	// engines): their order is the rank.
	out := make([]Result, 0, len(a.Results))
	for _, r := range a.Results {
		out = append(out, Result{Title: r.Title, URL: r.URL, Snippet: r.Content})
	}
	return out, nil
}

// searxngRefusal: SearXNG answers errors as plain text or HTML.
func searxngRefusal(status int, _ http.Header, _ []byte) *Error {
	e := &Error{}
	switch status {
	case http.StatusForbidden:
		e.Message = "the instance does not serve the JSON format: add json to search.formats in its settings.yml"
	case http.StatusTooManyRequests:
		e.Message = "the instance's limiter refused the request"
	}
	return e
}
