package config

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// headerName is the form of an HTTP header's name (RFC 9110's token).
var headerName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$") })

// A2A configures the remote A2A agents that agents use as tools
// (adapters/remotea2a): each is the tool <name>__ask, described by the
// agent's card.
type A2A struct {
	// Agents are the remote agents by name.
	Agents map[string]A2AAgent `yaml:"agents"`
	// CallTimeout bounds one call of a remote agent (default 120s).
	CallTimeout Duration `yaml:"call_timeout"`
}

// A2AAgent is one remote agent.
type A2AAgent struct {
	// URL is the agent's card (…/.well-known/agent-card.json). Its origin
	// is trusted; the endpoints the card names elsewhere, and redirects,
	// are held to web_fetch's address rules.
	URL string `yaml:"url"`
	// Token, when set, is sent to the card's origin only: as
	// "Authorization: Bearer <token>", or as the value of Header when set.
	Token  Secret `yaml:"token"`
	Header string `yaml:"header"`
	// ReadOnly declares that asking the agent changes nothing, so that a
	// call runs at every autonomy without approval; otherwise each call
	// is an external effect, approved as an MCP tool's is.
	ReadOnly bool `yaml:"read_only"`
}

// Timeout returns CallTimeout with its default.
func (a A2A) Timeout() time.Duration {
	if a.CallTimeout > 0 {
		return time.Duration(a.CallTimeout)
	}
	return 120 * time.Second
}

// validate checks the section.
func (a *A2A) validate() error {
	if a.CallTimeout < 0 {
		return fmt.Errorf("config: a2a.call_timeout must not be negative")
	}
	for _, name := range slices.Sorted(maps.Keys(a.Agents)) {
		at := "config: a2a.agents." + name
		if !mcpServerName().MatchString(name) || strings.Contains(name, "__") {
			return fmt.Errorf("%s: the name must be 1 to 32 letters, digits, _ or -, starting with a letter or digit, without \"__\" (the separator of <name>__ask)", at)
		}
		ag := a.Agents[name]
		u, err := url.Parse(ag.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return fmt.Errorf("%s: url %q is not an http:// or https:// URL of the agent's card", at, ag.URL)
		}
		if ag.Header != "" && !headerName().MatchString(ag.Header) {
			return fmt.Errorf("%s: header %q is not a header name", at, ag.Header)
		}
	}
	return nil
}
