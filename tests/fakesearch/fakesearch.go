// Package fakesearch is a fake of the web search services lambdaclaw's
// web_search tool speaks to, each in its own request and answer format:
// SearXNG (GET /search?format=json), the Brave Search API (GET
// /res/v1/web/search, X-Subscription-Token) and Tavily (POST /search with
// a JSON body and a bearer key, or the key as api_key in the body as its
// older clients send it). It checks every request as the service would
// (required parameters, their ranges, the key) and answers a refusal in
// the service's error format: a bad key, a rate limit with the service's
// headers, SearXNG's 403 when its JSON format is off.
package fakesearch

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Result is one indexed page.
type Result struct {
	Title   string
	URL     string
	Snippet string
	// AgeDays is how old the page is; a freshness filter leaves out the
	// older ones.
	AgeDays int
}

// Request is a search the fake answered or refused.
type Request struct {
	// Provider is searxng, brave or tavily.
	Provider  string
	Query     string
	Count     int // 0 when the request gave none
	Freshness string
	// Key is the key the request carried.
	Key string
}

// Server is the fake. Its results are the index every query matches, in
// rank order (Tavily's scores fall with the rank).
type Server struct {
	*httptest.Server
	// Key is the API key Brave and Tavily accept.
	Key string

	mu       sync.Mutex
	results  []Result
	requests []Request
	limited  int
	jsonOff  bool
}

// New starts a fake accepting key.
func New(key string) *Server {
	s := &Server{Key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /search", s.searxng)
	mux.HandleFunc("GET /res/v1/web/search", s.brave)
	mux.HandleFunc("POST /search", s.tavily)
	s.Server = httptest.NewServer(mux)
	return s
}

// SetResults replaces the index.
func (s *Server) SetResults(rs ...Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.results = rs
}

// RateLimit makes the next n searches be refused as over the rate limit.
func (s *Server) RateLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limited = n
}

// DisableJSON makes SearXNG refuse the JSON format, as an instance that
// does not list it in search.formats.
func (s *Server) DisableJSON() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jsonOff = true
}

// Requests returns the searches received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// take records r and reports whether it is rate limited, and the results
// for it (freshness applied).
func (s *Server) take(r Request) (limited bool, rs []Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
	if s.limited > 0 {
		s.limited--
		return true, nil
	}
	maxAge := map[string]int{"day": 1, "week": 7, "month": 31, "year": 366}[r.Freshness]
	for _, res := range s.results {
		if maxAge == 0 || res.AgeDays <= maxAge {
			rs = append(rs, res)
		}
	}
	return false, rs
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// searxng serves SearXNG's /search: q required, format=json only when
// enabled, time_range day/week/month/year.
func (s *Server) searxng(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	off := s.jsonOff
	s.mu.Unlock()
	if q.Get("format") != "json" || off {
		// SearXNG refuses a format its settings do not list.
		http.Error(w, "403 Forbidden", http.StatusForbidden)
		return
	}
	tr := q.Get("time_range")
	if tr != "" && !slices.Contains([]string{"day", "week", "month", "year"}, tr) {
		http.Error(w, "invalid time_range", http.StatusBadRequest)
		return
	}
	if strings.TrimSpace(q.Get("q")) == "" {
		http.Error(w, "no query", http.StatusBadRequest)
		return
	}
	limited, rs := s.take(Request{Provider: "searxng", Query: q.Get("q"), Freshness: tr})
	if limited {
		// The limiter plugin's answer.
		http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
		return
	}
	results := make([]map[string]any, 0, len(rs))
	for i, res := range rs {
		results = append(results, map[string]any{
			"template": "default.html", "url": res.URL, "title": res.Title, "content": res.Snippet,
			"engine": "duckduckgo", "engines": []string{"duckduckgo"}, "positions": []int{i + 1},
			"parsed_url": []string{"https", "example", "/", "", "", ""}, "score": 1.0 / float64(i+1), "category": "general",
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"query": q.Get("q"), "number_of_results": 0, "results": results,
		"answers": []any{}, "corrections": []any{}, "infoboxes": []any{}, "suggestions": []any{}, "unresponsive_engines": []any{},
	})
}

// braveError writes Brave's ErrorResponse.
func braveError(w http.ResponseWriter, status int, code, detail, component string) {
	writeJSON(w, status, map[string]any{
		"type": "ErrorResponse",
		"error": map[string]any{
			"id": "5d832250-9396-4f6e-b84a-2a1fe524cd7d", "status": status, "code": code, "detail": detail,
			"meta": map[string]any{"component": component},
		},
		"time": 1663072993,
	})
}

// brave serves the Brave Search API's web search: the key in
// X-Subscription-Token, q of 1..400 characters, count 1..20, freshness
// pd/pw/pm/py.
func (s *Server) brave(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("X-Subscription-Token")
	q := r.URL.Query()
	switch {
	case key == "":
		braveError(w, http.StatusUnprocessableEntity, "VALIDATION", "Unable to validate request parameter(s)", "validation")
		return
	case key != s.Key:
		s.take(Request{Provider: "brave", Query: q.Get("q"), Key: key})
		braveError(w, http.StatusUnprocessableEntity, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid.", "authentication")
		return
	}
	text := q.Get("q")
	count := 0
	if c := q.Get("count"); c != "" {
		n, err := strconv.Atoi(c)
		if err != nil || n < 1 || n > 20 {
			braveError(w, http.StatusUnprocessableEntity, "VALIDATION", "Unable to validate request parameter(s)", "validation")
			return
		}
		count = n
	}
	fresh := map[string]string{"pd": "day", "pw": "week", "pm": "month", "py": "year", "": ""}
	f, ok := fresh[q.Get("freshness")]
	if text == "" || utf8.RuneCountInString(text) > 400 || !ok {
		braveError(w, http.StatusUnprocessableEntity, "VALIDATION", "Unable to validate request parameter(s)", "validation")
		return
	}
	limited, rs := s.take(Request{Provider: "brave", Query: text, Count: count, Freshness: f, Key: key})
	if limited {
		h := w.Header()
		h.Set("X-RateLimit-Limit", "1, 2000")
		h.Set("X-RateLimit-Policy", "1;w=1, 2000;w=2592000")
		h.Set("X-RateLimit-Remaining", "0, 1500")
		h.Set("X-RateLimit-Reset", "1, 1419704")
		braveError(w, http.StatusTooManyRequests, "RATE_LIMITED", "Request rate limit exceeded for plan.", "rate_limiter")
		return
	}
	if count == 0 {
		count = 20
	}
	results := make([]map[string]any, 0, len(rs))
	for _, res := range rs[:min(count, len(rs))] {
		results = append(results, map[string]any{
			"type": "search_result", "title": res.Title, "url": res.URL,
			// Brave marks the matched words.
			"description": "<strong>" + res.Snippet + "</strong>",
			"age":         fmt.Sprintf("%d days ago", res.AgeDays), "language": "en", "family_friendly": true,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"type":  "search",
		"query": map[string]any{"original": text, "more_results_available": false},
		"web":   map[string]any{"type": "search", "results": results, "family_friendly": true},
	})
}

func tavilyError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"detail": map[string]any{"error": msg}})
}

// tavily serves Tavily's POST /search: a JSON body with query, the key as
// a bearer token or api_key, max_results 0..20, time_range
// day/week/month/year (or d/w/m/y).
func (s *Server) tavily(w http.ResponseWriter, r *http.Request) {
	var body struct {
		APIKey      string  `json:"api_key"`
		Query       *string `json:"query"`
		MaxResults  *int    `json:"max_results"`
		TimeRange   string  `json:"time_range"`
		SearchDepth string  `json:"search_depth"`
		Topic       string  `json:"topic"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&body); err != nil || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		tavilyError(w, http.StatusBadRequest, "Invalid request body")
		return
	}
	key := body.APIKey
	if auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		key = auth
	}
	if key == "" || key != s.Key {
		if body.Query != nil {
			s.take(Request{Provider: "tavily", Query: *body.Query, Key: key})
		}
		tavilyError(w, http.StatusUnauthorized, "Unauthorized: missing or invalid API key.")
		return
	}
	ranges := map[string]string{"day": "day", "d": "day", "week": "week", "w": "week", "month": "month", "m": "month", "year": "year", "y": "year", "": ""}
	tr, ok := ranges[body.TimeRange]
	switch {
	case body.Query == nil || strings.TrimSpace(*body.Query) == "":
		tavilyError(w, http.StatusBadRequest, "Query is missing.")
		return
	case body.MaxResults != nil && (*body.MaxResults < 0 || *body.MaxResults > 20):
		tavilyError(w, http.StatusBadRequest, "max_results must be between 0 and 20.")
		return
	case !ok:
		tavilyError(w, http.StatusBadRequest, "Invalid time_range.")
		return
	case body.SearchDepth != "" && !slices.Contains([]string{"basic", "advanced", "fast", "ultra-fast"}, body.SearchDepth),
		body.Topic != "" && !slices.Contains([]string{"general", "news", "finance"}, body.Topic):
		tavilyError(w, http.StatusBadRequest, "Invalid search_depth or topic.")
		return
	}
	count := 5
	if body.MaxResults != nil {
		count = *body.MaxResults
	}
	limited, rs := s.take(Request{Provider: "tavily", Query: *body.Query, Count: count, Freshness: tr, Key: key})
	if limited {
		tavilyError(w, http.StatusTooManyRequests, "Your request has been blocked due to excessive requests. Please reduce rate of requests.")
		return
	}
	results := make([]map[string]any, 0, len(rs))
	for i, res := range rs[:min(count, len(rs))] {
		results = append(results, map[string]any{
			"title": res.Title, "url": res.URL, "content": res.Snippet, "score": 0.99 - 0.01*float64(i), "raw_content": nil,
		})
	}
	// Tavily's order is not its rank: the scores are.
	slices.Reverse(results)
	writeJSON(w, http.StatusOK, map[string]any{
		"query": *body.Query, "follow_up_questions": nil, "answer": nil, "images": []any{},
		"results": results, "response_time": 0.42, "request_id": "123e4567-e89b-12d3-a456-426614174111",
	})
}
