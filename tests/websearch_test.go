package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/tests/fakellm"
	"github.com/lambdaclaw/lambdaclaw/tests/fakesearch"
)

// TestWebSearch has an agent answer a question with web_search through
// each provider's fake: the tool is offered, the model's call reaches the
// provider in its format with the key from the config's secret
// reference, the results come back to the model, and doctor checks the
// provider.
func TestWebSearch(t *testing.T) {
	t.Parallel()
	const key = "search-key-0123456789abcdef"
	search := fakesearch.New(key)
	t.Cleanup(search.Close)
	search.SetResults(
		fakesearch.Result{Title: "Lambdaclaw 2.0 released", URL: "https://example.org/news/lambdaclaw-2", Snippet: "Version 2.0 adds web search.", AgeDays: 1},
		fakesearch.Result{Title: "Old news", URL: "https://example.org/old", Snippet: "Nothing new.", AgeDays: 90},
	)
	for _, tt := range []struct{ provider, section string }{
		{"searxng", "{provider: searxng, url: %s}"},
		{"brave", "{provider: brave, url: %s/res/v1, api_key: {env: SEARCH_KEY}}"},
		{"tavily", "{provider: tavily, url: %s, api_key: {env: SEARCH_KEY}, max_results: 3}"},
	} {
		t.Run(tt.provider, func(t *testing.T) {
			t.Parallel()
			fake := newFake(t)
			g := newGateway(t, fake, "tools:\n  web_search: "+fmt.Sprintf(tt.section, search.URL)+"\n")
			g.env = append(g.env, "SEARCH_KEY="+key)
			g.start()
			question := "what is new in lambdaclaw this week? (" + tt.provider + ")"
			call := fakellm.ToolCall{ID: "call_search", Name: "web_search", Arguments: `{"query": "lambdaclaw release ` + tt.provider + `", "freshness": "week"}`}
			fake.Enqueue(fakellm.Reply{ToolCalls: []fakellm.ToolCall{call}}, fakellm.Reply{Content: "Lambdaclaw 2.0 adds web search."})
			if got := ask(t, g.client(g.firstKey()), question); got != "Lambdaclaw 2.0 adds web search." {
				t.Errorf("reply = %q", got)
			}
			reqs := fake.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d model requests, want 2", len(reqs))
			}
			if !strings.Contains(strings.Join(reqs[0].Tools, ","), "web_search") {
				t.Errorf("tools offered = %v, want web_search among them", reqs[0].Tools)
			}
			conv := conversation(reqs[1].Messages)
			result := conv[len(conv)-1]
			if result.Role != "tool" || !strings.Contains(result.Content, "1. Lambdaclaw 2.0 released\n   https://example.org/news/lambdaclaw-2\n   Version 2.0 adds web search.") ||
				strings.Contains(result.Content, "Old news") {
				t.Errorf("tool result = %+v, want the fresh result only", result)
			}
			var sent *fakesearch.Request
			for _, r := range search.Requests() {
				if r.Query == "lambdaclaw release "+tt.provider {
					sent = &r
				}
			}
			switch {
			case sent == nil:
				t.Fatalf("the provider got no search; it got %+v", search.Requests())
			case sent.Provider != tt.provider || sent.Freshness != "week":
				t.Errorf("search sent = %+v", *sent)
			case tt.provider != "searxng" && sent.Key != key:
				t.Errorf("key sent = %q, want the configured one", sent.Key)
			case tt.provider == "tavily" && sent.Count != 3:
				t.Errorf("max_results sent = %d, want max_results 3 of the config", sent.Count)
			}

			stdout, stderr, _ := g.run(t, "doctor")
			doctorLine(t, stdout, "ok", "web search", tt.provider+" answered a search (1 result)")
			if strings.Contains(stdout+stderr, key) {
				t.Errorf("doctor printed the key:\n%s%s", stdout, stderr)
			}
		})
	}
}
