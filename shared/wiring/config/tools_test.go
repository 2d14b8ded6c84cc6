package config_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

func TestLoadWebSearch(t *testing.T) {
	dir, path := writeConfig(t, "tools:\n  web_search: {provider: brave, api_key: {env: BRAVE_API_KEY}, max_results: 8}\n")
	c, err := config.Load(path, env(map[string]string{"LAMBDACLAW_HOME": dir, "BRAVE_API_KEY": "BSA-from-env"}))
	if err != nil {
		t.Fatal(err)
	}
	ws := c.Tools.WebSearch
	key, err := ws.Key(context.Background())
	if ws.Provider != "brave" || ws.MaxResults != 8 || key != "BSA-from-env" || err != nil {
		t.Errorf("web_search = %+v, key %q, %v", ws, key, err)
	}

	for body, want := range map[string]string{
		"tools:\n  web_search: {provider: google}\n":                                      `tools.web_search.provider is "google"; want searxng, brave, tavily`,
		"tools:\n  web_search: {provider: searxng}\n":                                     "searxng needs the url of its instance",
		"tools:\n  web_search: {provider: searxng, url: 'file:///x'}\n":                   `tools.web_search.url "file:///x"`,
		"tools:\n  web_search: {provider: searxng, url: 'http://s', api_key: {env: K}}\n": "searxng takes no api_key",
		"tools:\n  web_search: {provider: tavily}\n":                                      "tavily needs an api_key, such as {env: TAVILY_API_KEY}",
		"tools:\n  web_search: {provider: tavily, api_key: {env: K}, max_results: 21}\n":  "max_results is 21; want 1 to 20",
		"tools:\n  web_search: {provider: brave, api_key: sk-literal}\n":                  "secrets are not written in config files",
	} {
		dir, path := writeConfig(t, body)
		if _, err := config.Load(path, env(map[string]string{"LAMBDACLAW_HOME": dir})); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", body, err, want)
		}
	}
}
