package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/obs"
)

// Guardrails are an agent's rules that every call of its tools is
// checked against before it runs, whoever asked for the call (the model,
// a script through the bridge, the memory flush), whatever the run's
// autonomy and approvals. They fail closed: arguments a rule cannot read
// block the call.
type Guardrails struct {
	// DenyTools are tools the agent may never call.
	DenyTools []string
	// Filters block a call whose serialized arguments (the JSON object,
	// escapes resolved) a pattern matches.
	Filters []Filter
	// Scopes confine an argument of a tool to listed hosts or prefixes.
	Scopes []Scope
}

// Filter is a pattern over the arguments of calls of Tool ("*": every
// tool).
type Filter struct {
	Tool    string
	Pattern *regexp.Regexp
}

// Scope confines the argument Arg of Tool's calls: a URL to one of Hosts
// ("example.com", or "*.example.com" for its subdomains), or a text to
// one starting with one of Prefixes. A call without the argument, or
// with one that is not a string (or not an http or https URL for Hosts),
// is blocked.
type Scope struct {
	Tool     string
	Arg      string
	Hosts    []string
	Prefixes []string
}

// guard checks the call c of run st of agent a against the agent's
// guardrails and the tools the run's key denies, and returns the rule
// that blocks it (empty when none does) with the refusal the model is
// given.
func guard(a *Agent, st RunState, c chat.ToolCall) (rule, refusal string) {
	refuse := func(rule string) (string, string) {
		return rule, fmt.Sprintf("refused by a guardrail (%s): this %s call may not run; do not retry it, tell the user", rule, c.Name)
	}
	if st.Key != nil && slices.Contains(st.Key.DenyTools, c.Name) {
		return refuse("key deny_tools")
	}
	g := a.Guardrails
	if g == nil {
		return "", ""
	}
	if slices.Contains(g.DenyTools, c.Name) {
		return refuse("deny_tools")
	}
	var args map[string]any
	var flat string
	read := func() bool {
		if args != nil {
			return true
		}
		raw := strings.TrimSpace(c.Arguments)
		if raw == "" {
			raw = "{}"
		}
		if err := json.Unmarshal([]byte(raw), &args); err != nil || args == nil {
			return false
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(args); err != nil {
			return false
		}
		flat = strings.TrimSuffix(b.String(), "\n")
		return true
	}
	for i, f := range g.Filters {
		if f.Tool != "*" && f.Tool != c.Name {
			continue
		}
		name := fmt.Sprintf("filters.%s[%d]", f.Tool, i)
		if !read() {
			return refuse(name + ": arguments not a JSON object")
		}
		if f.Pattern.MatchString(flat) {
			return refuse(name)
		}
	}
	for _, s := range g.Scopes {
		if s.Tool != c.Name {
			continue
		}
		name := fmt.Sprintf("scopes.%s.%s", s.Tool, s.Arg)
		if !read() {
			return refuse(name + ": arguments not a JSON object")
		}
		v, ok := args[s.Arg].(string)
		if !ok || !s.allows(v) {
			return refuse(name)
		}
	}
	return "", ""
}

// allows reports whether v is within the scope.
func (s Scope) allows(v string) bool {
	if len(s.Prefixes) > 0 && !slices.ContainsFunc(s.Prefixes, func(p string) bool { return strings.HasPrefix(v, p) }) {
		return false
	}
	if len(s.Hosts) == 0 {
		return true
	}
	u, err := url.Parse(strings.TrimSpace(v))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
		return false
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	return host != "" && slices.ContainsFunc(s.Hosts, func(h string) bool {
		h = strings.ToLower(h)
		if rest, ok := strings.CutPrefix(h, "*."); ok {
			return strings.HasSuffix(host, "."+rest)
		}
		return host == h
	})
}

// blocked checks call c before it runs (callTool) and events a call a
// guardrail blocks, with the rule; it returns the refusal, empty when the
// call may go on.
func (l *Loop) blocked(a *Agent, st RunState, c chat.ToolCall) string {
	rule, refusal := guard(a, st, c)
	if rule != "" {
		l.emit(obs.Event{Type: obs.ToolCallBlocked, SessionID: st.SessionID, RunID: st.RunID, Attrs: []slog.Attr{
			slog.String("agent", a.Name), slog.String("tool_name", c.Name), slog.String("call_id", c.ID), slog.String("rule", rule)}})
	}
	return refusal
}
