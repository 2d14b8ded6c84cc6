package main

import (
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentenv"
)

// TestWebSearch checks the web_search options: every function of the
// agents gets the provider (and its URL); with a provider that takes a
// key, the stack creates its secret without a value, names it in
// WEB_SEARCH_KEY_SECRET of api and step, which alone may read it, and in
// the WebSearchKeySecret output. Without the option there is none of it.
func TestWebSearch(t *testing.T) {
	for variant, tc := range map[string]struct {
		provider, url string
		secret        bool
	}{
		variantDefault:       {},
		variantWebSearch:     {provider: "brave", secret: true},
		"web_search=searxng": {provider: "searxng", url: "https://search.example.com"},
	} {
		s := stack(t, variant)
		turns := map[string]bool{s.functionID(t, "api"): true, s.functionID(t, "step"): true}
		for id, fn := range s.resources("AWS::Lambda::Function") {
			vars, _ := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
			if _, ok := vars["WORKSPACE_BUCKET"]; !ok {
				continue // not a function of the agents
			}
			got := map[string]any{}
			for _, k := range []string{agentenv.WebSearchProviderVar, agentenv.WebSearchURLVar, agentenv.WebSearchKeyVar} {
				if v, ok := vars[k]; ok {
					got[k] = v
				}
			}
			want := map[string]any{}
			if tc.provider != "" {
				want[agentenv.WebSearchProviderVar] = tc.provider
			}
			if tc.url != "" {
				want[agentenv.WebSearchURLVar] = tc.url
			}
			if tc.secret && turns[id] {
				want[agentenv.WebSearchKeyVar] = "Lambdaclaw/web-search-key"
			}
			if diff := gocmp.Diff(want, got); diff != "" {
				t.Errorf("%s: function %s's web search variables (-want +got):\n%s", variant, id, diff)
			}
		}

		var secretID string
		for id, r := range s.resources("AWS::SecretsManager::Secret") {
			p := props(r)
			if name, _ := p["Name"].(string); name != "Lambdaclaw/web-search-key" {
				continue
			}
			secretID = id
			if p["SecretString"] != nil || p["GenerateSecretString"] != nil {
				t.Errorf("%s: the key's secret has a value: %v", variant, p)
			}
		}
		if (secretID != "") != tc.secret {
			t.Errorf("%s: the key's secret: %q, want one: %v", variant, secretID, tc.secret)
		}
		if secretID != "" {
			var roles []string
			for _, st := range s.statements() {
				for _, res := range st.resources {
					if render(res) == "${"+secretID+"}" && slices.Contains(st.actions, "secretsmanager:GetSecretValue") {
						roles = append(roles, st.roles...)
					}
				}
			}
			slices.Sort(roles)
			wantRoles := []string{"${" + s.roleOf(t, s.functionID(t, "api")) + "}", "${" + s.roleOf(t, s.functionID(t, "step")) + "}"}
			slices.Sort(wantRoles)
			if diff := gocmp.Diff(wantRoles, slices.Compact(roles)); diff != "" {
				t.Errorf("%s: the roles that may read the key (-want +got):\n%s", variant, diff)
			}
		}
		out, ok := s.json["Outputs"].(map[string]any)["WebSearchKeySecret"].(map[string]any)
		if ok != tc.secret || ok && out["Value"] != "Lambdaclaw/web-search-key" {
			t.Errorf("%s: WebSearchKeySecret output: %v", variant, out)
		}
	}
}

func TestWebSearchOptions(t *testing.T) {
	for ctx, want := range map[string]string{
		"google":         `tools.web_search.provider is "google"`,
		"searxng":        "searxng needs the url of its instance",
		"none,https://x": "web_search_url is set but web_search is not",
		"brave,ftp://x":  `tools.web_search.url "ftp://x"`,
	} {
		provider, url, _ := strings.Cut(ctx, ",")
		c := Config{WebSearch: provider, WebSearchURL: url}
		if err := c.checkWebSearch(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", ctx, err, want)
		}
	}
	c := Config{WebSearch: "tavily"}
	if err := c.checkWebSearch(); err != nil {
		t.Errorf("tavily without a url: %v", err)
	}
}
