package main

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"

	"github.com/lambdaclaw/lambdaclaw/shared/wiring/agentenv"
	"github.com/lambdaclaw/lambdaclaw/shared/wiring/config"
)

// The web_search tool of a deployment (-c web_search=searxng|brave|tavily,
// -c web_search_url=…) is the tools.web_search section of a local
// configuration: every function gets the provider and its endpoint
// (WEB_SEARCH_PROVIDER, WEB_SEARCH_URL), and builds the tool. Brave's and
// Tavily's key is a secret: the stack creates the Secrets Manager secret
// <stack>/web-search-key without a value, which the operator puts
// afterwards (aws secretsmanager put-secret-value); only the functions
// that run turns, api and step, may read it (WEB_SEARCH_KEY_SECRET), at
// the first search. Until it has a value a search answers the model that
// the key is not set.

// webSearchSecretName is the name of the secret holding the key.
func webSearchSecretName(stack string) string { return stack + "/web-search-key" }

// checkWebSearch checks the web_search options with the functions' own
// check of tools.web_search (the key comes from the secret).
func (c *Config) checkWebSearch() error {
	switch c.WebSearch {
	case "", "none":
		c.WebSearch = ""
		if c.WebSearchURL != "" {
			return fmt.Errorf("context %s is set but %s is not: name the provider (searxng, brave or tavily)", ctxWebSearchURL, ctxWebSearch)
		}
		return nil
	}
	ws := config.WebSearch{Provider: c.WebSearch, URL: c.WebSearchURL,
		KeyFunc: func(context.Context) (string, error) { return "", nil }}
	if err := ws.Check(); err != nil {
		return fmt.Errorf("context %s, %s: %w", ctxWebSearch, ctxWebSearchURL, err)
	}
	return nil
}

// checkAgentsSearch refuses an agent of the agents file that names
// web_search when the deployment has no provider for it.
func (c *Config) checkAgentsSearch() error {
	if c.WebSearch != "" {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(c.Agents)) {
		if slices.Contains(c.Agents[name].Tools, "web_search") {
			return fmt.Errorf("context %s: agent %q uses web_search, which needs -c %s=searxng|brave|tavily", ctxAgentsFile, name, ctxWebSearch)
		}
	}
	return nil
}

// webSearchKey creates the secret of the provider's key, for a provider
// that takes one.
func (s *builder) webSearchKey() {
	if s.cfg.WebSearch == "" || s.cfg.WebSearch == "searxng" {
		return
	}
	secret := awssecretsmanager.NewSecret(s.stack, jsii.String("WebSearchKey"), &awssecretsmanager.SecretProps{
		SecretName:  jsii.String(webSearchSecretName(*s.stack.StackName())),
		Description: jsii.String("lambdaclaw: the " + s.cfg.WebSearch + " API key of the web_search tool (put it with aws secretsmanager put-secret-value)"),
	})
	// Without a value, as the MCP servers' secrets (mcp.go).
	secret.Node().DefaultChild().(awssecretsmanager.CfnSecret).AddPropertyDeletionOverride(jsii.String("GenerateSecretString"))
	s.webSearchSecret = secret
}

// webSearchEnv is the provider's environment of every function.
func (s *builder) webSearchEnv() map[string]*string {
	if s.cfg.WebSearch == "" {
		return nil
	}
	env := map[string]*string{agentenv.WebSearchProviderVar: jsii.String(s.cfg.WebSearch)}
	if s.cfg.WebSearchURL != "" {
		env[agentenv.WebSearchURLVar] = jsii.String(s.cfg.WebSearchURL)
	}
	return env
}

// grantWebSearch gives fn, which runs turns, the key's secret.
func (s *builder) grantWebSearch(fn awslambda.Function) {
	if s.webSearchSecret == nil {
		return
	}
	s.webSearchSecret.GrantRead(fn, nil)
	fn.AddEnvironment(jsii.String(agentenv.WebSearchKeyVar), jsii.String(webSearchSecretName(*s.stack.StackName())), nil)
}
