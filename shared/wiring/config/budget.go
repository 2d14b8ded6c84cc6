package config

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Budgets configures how token budgets are counted (agents' budget, API
// keys' --daily-tokens and --monthly-tokens; agent.Budgets).
type Budgets struct {
	// ResetHour is the hour (UTC, 0–23) at which daily budgets are
	// replenished, and monthly ones on the first of the month; default 0,
	// midnight UTC.
	ResetHour int `yaml:"reset_hour"`
	// ReplyCap is the most tokens a reply may use when the request sets
	// no max tokens, which a model call reserves of its budgets with its
	// prompt (default 4096).
	ReplyCap int `yaml:"reply_cap"`
	// NotifyBelow is the part of a budget left (0–1) below which Notify
	// is told, once per budget and period; 0 tells nobody.
	NotifyBelow float64 `yaml:"notify_below"`
	// Notify are where the notice goes: webhook:<url> (a JSON POST) or
	// telegram:<chat id>, as a heartbeat's deliver.
	Notify []string `yaml:"notify"`
}

// Check validates the budgets' settings.
func (b Budgets) Check() error {
	switch {
	case b.ResetHour < 0 || b.ResetHour > 23:
		return fmt.Errorf("config: budgets.reset_hour is %d; want an hour of the day in UTC, 0 to 23", b.ResetHour)
	case b.ReplyCap < 0:
		return fmt.Errorf("config: budgets.reply_cap must not be negative")
	case b.NotifyBelow < 0 || b.NotifyBelow >= 1:
		return fmt.Errorf("config: budgets.notify_below is %v; want the part of a budget left, between 0 and 1", b.NotifyBelow)
	case b.NotifyBelow > 0 && len(b.Notify) == 0:
		return fmt.Errorf("config: budgets.notify_below is set but budgets.notify names nobody (webhook:<url> or telegram:<chat id>)")
	}
	for _, n := range b.Notify {
		kind, rest, _ := strings.Cut(n, ":")
		if (kind != "webhook" && kind != "telegram") || rest == "" {
			return fmt.Errorf("config: budgets.notify: %q is not webhook:<url> or telegram:<chat id>", n)
		}
	}
	return nil
}

// AgentBudget limits the tokens an agent's model calls spend, counted
// from the providers' usage; zero is no limit.
type AgentBudget struct {
	DailyTokens   int64 `yaml:"daily_tokens" json:"daily_tokens,omitempty"`
	MonthlyTokens int64 `yaml:"monthly_tokens" json:"monthly_tokens,omitempty"`
}

// Guardrails are rules every call of an agent's tools is checked against
// before it runs, fail-closed (agent.Guardrails).
type Guardrails struct {
	// DenyTools are tools the agent may never call.
	DenyTools []string `yaml:"deny_tools" json:"deny_tools,omitempty"`
	// Filters are, per tool ("*": every tool), regular expressions (Go's
	// syntax) over a call's arguments as JSON; a match blocks the call.
	Filters map[string][]string `yaml:"filters" json:"filters,omitempty"`
	// Scopes confine, per tool, arguments to hosts (a URL's) or prefixes.
	Scopes map[string]map[string]ArgScope `yaml:"scopes" json:"scopes,omitempty"`
}

// ArgScope is what one argument may be: a URL of one of Hosts
// ("example.com", "*.example.com"), and/or a text starting with one of
// Prefixes.
type ArgScope struct {
	Hosts    []string `yaml:"hosts" json:"hosts,omitempty"`
	Prefixes []string `yaml:"prefixes" json:"prefixes,omitempty"`
}

// checkGuards validates the agent's budget and guardrails.
func (a AgentConfig) checkGuards() error {
	if b := a.Budget; b != nil && (b.DailyTokens < 0 || b.MonthlyTokens < 0) {
		return fmt.Errorf("budget: token limits must not be negative")
	}
	g := a.Guardrails
	if g == nil {
		return nil
	}
	for _, tool := range slices.Sorted(maps.Keys(g.Filters)) {
		for i, p := range g.Filters[tool] {
			if _, err := regexp.Compile(p); err != nil {
				return fmt.Errorf("guardrails: filters.%s[%d]: %q is not a regular expression: %w", tool, i, p, err)
			}
		}
	}
	for _, tool := range slices.Sorted(maps.Keys(g.Scopes)) {
		for _, arg := range slices.Sorted(maps.Keys(g.Scopes[tool])) {
			s := g.Scopes[tool][arg]
			if len(s.Hosts) == 0 && len(s.Prefixes) == 0 {
				return fmt.Errorf("guardrails: scopes.%s.%s lists no hosts and no prefixes", tool, arg)
			}
			for _, h := range s.Hosts {
				if bare := strings.TrimPrefix(h, "*."); bare == "" || strings.ContainsAny(bare, "/:*@ ") {
					return fmt.Errorf("guardrails: scopes.%s.%s: host %q is not a host name (example.com, or *.example.com for its subdomains)", tool, arg, h)
				}
			}
		}
	}
	return nil
}
