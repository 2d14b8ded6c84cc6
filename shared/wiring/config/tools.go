package config

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Tools configures built-in tools that need settings.
type Tools struct {
	// WebSearch, when set, gives agents the web_search tool.
	WebSearch *WebSearch `yaml:"web_search"`
}

// The web search providers (tools/websearch).
var webSearchProviders = []string{"searxng", "brave", "tavily"}

// WebSearch is the web_search tool's provider:
//
//	tools:
//	  web_search: {provider: brave, api_key: {env: BRAVE_API_KEY}}
//	  # or {provider: searxng, url: http://localhost:8888}
//	  # or {provider: tavily, api_key: {file: secrets/tavily.key}}
type WebSearch struct {
	// Provider is searxng, brave or tavily.
	Provider string `yaml:"provider"`
	// URL is the SearXNG instance (required), or another endpoint of
	// Brave's or Tavily's API.
	URL string `yaml:"url"`
	// APIKey is Brave's or Tavily's key, a secret reference.
	APIKey Secret `yaml:"api_key"`
	// MaxResults is the most results a search returns (default 5, at
	// most 20).
	MaxResults int `yaml:"max_results"`
	// KeyFunc, when set, reads the key at each search instead of APIKey:
	// on AWS, the Secrets Manager secret the stack made for it.
	KeyFunc func(context.Context) (string, error) `yaml:"-"`
}

// Key returns the provider's key: KeyFunc's, else APIKey's value.
func (w *WebSearch) Key(ctx context.Context) (string, error) {
	if w.KeyFunc != nil {
		return w.KeyFunc(ctx)
	}
	return w.APIKey.Value(), nil
}

// Check checks the provider, its URL and key: Validate's check of the
// section, which the CDK app also makes of its web_search options.
func (w *WebSearch) Check() error {
	if w == nil {
		return nil
	}
	if !slices.Contains(webSearchProviders, w.Provider) {
		return fmt.Errorf("config: tools.web_search.provider is %q; want %s", w.Provider, strings.Join(webSearchProviders, ", "))
	}
	if w.URL != "" {
		u, err := url.Parse(w.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return fmt.Errorf("config: tools.web_search.url %q: want an http(s) URL without a user name", w.URL)
		}
	}
	switch {
	case w.Provider == "searxng" && w.URL == "":
		return fmt.Errorf("config: tools.web_search: searxng needs the url of its instance, such as http://localhost:8888")
	case w.Provider == "searxng" && w.APIKey.Set():
		return fmt.Errorf("config: tools.web_search: searxng takes no api_key")
	case w.Provider != "searxng" && !w.APIKey.Set() && w.KeyFunc == nil:
		return fmt.Errorf("config: tools.web_search: %s needs an api_key, such as {env: %s_API_KEY}", w.Provider, strings.ToUpper(w.Provider))
	case w.MaxResults < 0 || w.MaxResults > 20:
		return fmt.Errorf("config: tools.web_search.max_results is %d; want 1 to 20", w.MaxResults)
	}
	return nil
}
