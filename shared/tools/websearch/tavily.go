package websearch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
)

// tavily is Tavily's search API: POST /search with a JSON body (query,
// max_results up to 20, time_range day/week/month/year) and the key as
// a bearer token, as its official clients send it. Its errors are JSON,
// {"detail": {"error": "…"}}: 401 a bad key, 429 a rate limit, 432 and
// 433 a plan's or pay-as-you-go limit, 403 forbidden.
type tavily struct{}

type tavilyAnswer struct {
	Results []struct {
		Title   string  `json:"title"`
		URL     string  `json:"url"`
		Content string  `json:"content"`
		Score   float64 `json:"score"`
	} `json:"results"`
}

func (tavily) search(ctx context.Context, s *Searcher, q Query) ([]Result, error) {
	key, err := s.key(ctx)
	if err != nil {
		return nil, err
	}
	body := map[string]any{"query": q.Text, "max_results": q.Count, "search_depth": "basic", "topic": "general"}
	if q.Freshness != "" {
		body["time_range"] = q.Freshness
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("tavily: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.endpoint("/search", nil), bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("tavily: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	var a tavilyAnswer
	if err := s.do(req, &a, tavilyRefusal); err != nil {
		return nil, err
	}
	// Tavily scores each result's relevance; rank by it.
	sort.SliceStable(a.Results, func(i, j int) bool { return a.Results[i].Score > a.Results[j].Score })
	out := make([]Result, 0, len(a.Results))
	for _, r := range a.Results {
		out = append(out, Result{Title: r.Title, URL: r.URL, Snippet: r.Content})
	}
	return out, nil
}

// tavilyRefusal reads Tavily's {"detail": {"error": "…"}}.
func tavilyRefusal(_ int, _ http.Header, body []byte) *Error {
	var r struct {
		Detail struct {
			Error string `json:"error"`
		} `json:"detail"`
	}
	e := &Error{}
	if json.Unmarshal(body, &r) == nil {
		e.Message = r.Detail.Error
	}
	return e
}
