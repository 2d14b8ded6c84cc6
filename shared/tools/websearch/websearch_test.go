package websearch_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
	"github.com/lambdaclaw/lambdaclaw/shared/tools/websearch"
	"github.com/lambdaclaw/lambdaclaw/tests/fakesearch"
)

const goodKey = "BSA-good-key-0123456789abcdef"

var index = []fakesearch.Result{
	{Title: "Go 1.26 release notes", URL: "https://go.dev/doc/go1.26", Snippet: "The latest Go release.", AgeDays: 0},
	{Title: "Go blog", URL: "https://go.dev/blog/", Snippet: "News   about\nGo.", AgeDays: 5},
	{Title: "Effective Go", URL: "https://go.dev/doc/effective_go", Snippet: "Tips for writing clear, idiomatic Go code.", AgeDays: 400},
}

// config is the web_search configuration of provider against fake with key.
func config(provider string, fake *fakesearch.Server, key string) websearch.Config {
	cfg := websearch.Config{Provider: provider, URL: fake.URL}
	switch provider {
	case websearch.Brave:
		cfg.URL = fake.URL + "/res/v1"
		fallthrough
	case websearch.Tavily:
		cfg.Key = func(context.Context) (string, error) { return key, nil }
	}
	return cfg
}

func call(t *testing.T, tl tool.Tool, args string) (string, error) {
	t.Helper()
	return tl.Call(context.Background(), tool.Env{}, json.RawMessage(args))
}

func TestProviders(t *testing.T) {
	for _, p := range websearch.Providers {
		t.Run(p, func(t *testing.T) {
			fake := fakesearch.New(goodKey)
			defer fake.Close()
			fake.SetResults(index...)
			tl, err := websearch.NewTool(config(p, fake, goodKey))
			if err != nil {
				t.Fatal(err)
			}
			if tl.Policy().Effect != tool.Read {
				t.Errorf("effect = %v, want read", tl.Policy().Effect)
			}

			got, err := call(t, tl, `{"query": "golang release"}`)
			if err != nil {
				t.Fatal(err)
			}
			want := `Results for "golang release" (` + p + `):

1. Go 1.26 release notes
   https://go.dev/doc/go1.26
   The latest Go release.

2. Go blog
   https://go.dev/blog/
   News about Go.

3. Effective Go
   https://go.dev/doc/effective_go
   Tips for writing clear, idiomatic Go code.
`
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}

			got, err = call(t, tl, `{"query": "golang release", "count": 1, "freshness": "week"}`)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got, "1. Go 1.26 release notes") || strings.Contains(got, "2.") {
				t.Errorf("count 1 gave:\n%s", got)
			}
			got, err = call(t, tl, `{"query": "golang release", "freshness": "week"}`)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(got, "Effective Go") || !strings.Contains(got, "2. Go blog") {
				t.Errorf("freshness week gave:\n%s", got)
			}
			reqs := fake.Requests()
			last := reqs[len(reqs)-1]
			if last.Provider != p || last.Query != "golang release" || last.Freshness != "week" {
				t.Errorf("last request = %+v", last)
			}
			if p != websearch.SearXNG && (last.Key != goodKey || last.Count != websearch.DefaultMaxResults) {
				t.Errorf("last request = %+v, want the key and count %d", last, websearch.DefaultMaxResults)
			}

			fake.SetResults()
			if got, err := call(t, tl, `{"query": "nothing"}`); err != nil || got != `No results for "nothing".` {
				t.Errorf("no results: %q, %v", got, err)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	tests := []struct {
		provider string
		setup    func(*fakesearch.Server)
		key      string
		want     string
		limited  bool
		badKey   bool
		wait     time.Duration
	}{
		{provider: "brave", key: "BSA-wrong-key-99999999", badKey: true,
			want: "brave: the API key was refused (HTTP 422 SUBSCRIPTION_TOKEN_INVALID): The provided subscription token is invalid."},
		{provider: "brave", key: goodKey, setup: func(f *fakesearch.Server) { f.RateLimit(1) }, limited: true, wait: time.Second,
			want: "brave: rate limited (HTTP 429 RATE_LIMITED): Request rate limit exceeded for plan.; try again in 1s"},
		{provider: "tavily", key: "tvly-wrong-key-99999999", badKey: true,
			want: "tavily: the API key was refused (HTTP 401): Unauthorized: missing or invalid API key."},
		{provider: "tavily", key: goodKey, setup: func(f *fakesearch.Server) { f.RateLimit(1) }, limited: true,
			want: "tavily: rate limited (HTTP 429): Your request has been blocked due to excessive requests. Please reduce rate of requests."},
		{provider: "searxng", setup: func(f *fakesearch.Server) { f.RateLimit(1) }, limited: true,
			want: "searxng: rate limited (HTTP 429): the instance's limiter refused the request"},
		{provider: "searxng", setup: func(f *fakesearch.Server) { f.DisableJSON() },
			want: "searxng: search failed (HTTP 403): the instance does not serve the JSON format: add json to search.formats in its settings.yml"},
	}
	for _, tt := range tests {
		t.Run(tt.provider+" "+tt.want[len(tt.provider)+2:20], func(t *testing.T) {
			fake := fakesearch.New(goodKey)
			defer fake.Close()
			fake.SetResults(index...)
			if tt.setup != nil {
				tt.setup(fake)
			}
			s, err := websearch.New(config(tt.provider, fake, tt.key))
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Search(context.Background(), websearch.Query{Text: "go"})
			var e *websearch.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want a *websearch.Error", err)
			}
			if err.Error() != tt.want {
				t.Errorf("err =\n %s\nwant\n %s", err, tt.want)
			}
			if e.RateLimited() != tt.limited || e.BadKey() != tt.badKey || e.RetryAfter != tt.wait {
				t.Errorf("limited %v, bad key %v, wait %s; want %v, %v, %s", e.RateLimited(), e.BadKey(), e.RetryAfter, tt.limited, tt.badKey, tt.wait)
			}
			if strings.Contains(err.Error(), tt.key) && tt.key != "" {
				t.Errorf("the error shows the key: %v", err)
			}
		})
	}
}

func TestBadArguments(t *testing.T) {
	fake := fakesearch.New(goodKey)
	defer fake.Close()
	tl, err := websearch.NewTool(config("brave", fake, goodKey))
	if err != nil {
		t.Fatal(err)
	}
	for args, want := range map[string]string{
		`{}`:                                            `"query" is required`,
		`{"query": "x", "count": 0}`:                    `"count" is 0; want 1 to 5`,
		`{"query": "x", "count": 6}`:                    `"count" is 6; want 1 to 5`,
		`{"query": "x", "freshness": "pd"}`:             `"freshness" is "pd"; want one of day, week, month, year`,
		`{"query": "x", "site": "go.dev"}`:              `unknown argument "site"`,
		`{"query": "` + strings.Repeat("a", 401) + `"}`: `at most 400 are allowed`,
	} {
		if _, err := call(t, tl, args); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", args[:min(len(args), 40)], err, want)
		}
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d requests sent for bad arguments, want none", n)
	}
}

func TestLimitsAndScrubbing(t *testing.T) {
	fake := fakesearch.New(goodKey)
	defer fake.Close()
	var many []fakesearch.Result
	for range 20 {
		many = append(many, fakesearch.Result{Title: "T", URL: "https://example.com/" + strings.Repeat("p", 100), Snippet: strings.Repeat("word ", 400)})
	}
	// A page that shows a credential, and one that echoes the key.
	many[0].Snippet = "config: password=hunter2hunter2 and key " + goodKey
	fake.SetResults(many...)
	cfg := config("tavily", fake, goodKey)
	cfg.MaxResults, cfg.MaxBytes = 20, 3000
	tl, err := websearch.NewTool(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := call(t, tl, `{"query": "x"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 3000+100 {
		t.Errorf("%d bytes of results, want about 3000 at most", len(got))
	}
	if !strings.Contains(got, "more results left out: the results are limited to 3000 bytes]") {
		t.Errorf("the cut is not said:\n%s", got)
	}
	if strings.Contains(got, "hunter2hunter2") || strings.Contains(got, goodKey) {
		t.Errorf("credentials shown:\n%s", got)
	}
	if !strings.Contains(got, "…") {
		t.Errorf("a long snippet is not cut:\n%s", got)
	}
	if reqs := fake.Requests(); reqs[0].Count != 20 {
		t.Errorf("max_results sent = %d, want 20", reqs[0].Count)
	}
}

func TestNewRefuses(t *testing.T) {
	key := func(context.Context) (string, error) { return "k", nil }
	for _, tt := range []struct {
		cfg  websearch.Config
		want string
	}{
		{websearch.Config{Provider: "google"}, `provider "google": want searxng, brave, tavily`},
		{websearch.Config{Provider: "searxng"}, "searxng needs the url of its instance"},
		{websearch.Config{Provider: "searxng", URL: "ftp://x"}, `url "ftp://x": want an http(s) URL`},
		{websearch.Config{Provider: "brave"}, "brave needs an API key"},
		{websearch.Config{Provider: "tavily", Key: key, MaxResults: 21}, "max_results 21: want 1 to 20"},
	} {
		if _, err := websearch.New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: err = %v, want %q", tt.cfg, err, tt.want)
		}
	}
}

func TestKeyUnreadable(t *testing.T) {
	fake := fakesearch.New(goodKey)
	defer fake.Close()
	cfg := config("brave", fake, "")
	cfg.Key = func(context.Context) (string, error) { return "", errors.New("secret has no value") }
	s, err := websearch.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Search(context.Background(), websearch.Query{Text: "go"}); err == nil || err.Error() != "brave: the API key cannot be read: secret has no value" {
		t.Errorf("err = %v", err)
	}
	if len(fake.Requests()) != 0 {
		t.Error("a request was sent without a key")
	}
}
