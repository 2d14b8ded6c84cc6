package a2a

import (
	"cmp"
	"net/http"
	"strings"
)

// CardPath is where a client looks for an agent's card, under the
// agent's base URL.
const CardPath = "/.well-known/agent-card.json"

// Card is an Agent Card of version 1.0, with the fields of version 0.3
// beside them when it is served to a client of that version (a card both
// read: version 1.0 clients take supportedInterfaces).
type Card struct {
	Name                string                    `json:"name"`
	Description         string                    `json:"description"`
	Version             string                    `json:"version"`
	SupportedInterfaces []Interface               `json:"supportedInterfaces,omitempty"`
	Capabilities        Capabilities              `json:"capabilities"`
	DefaultInputModes   []string                  `json:"defaultInputModes"`
	DefaultOutputModes  []string                  `json:"defaultOutputModes"`
	Skills              []Skill                   `json:"skills"`
	SecuritySchemes     map[string]map[string]any `json:"securitySchemes,omitempty"`
	// SecurityRequirements lists each scheme with its scopes as a bare
	// list ({"schemes":{"bearer":[]}}): what a2a-go reads, and what
	// a2a-js reads as an empty scope list.
	SecurityRequirements []map[string]map[string][]string `json:"securityRequirements,omitempty"`

	// Version 0.3.
	ProtocolVersion    string                `json:"protocolVersion,omitempty"`
	URL                string                `json:"url,omitempty"`
	PreferredTransport string                `json:"preferredTransport,omitempty"`
	Security           []map[string][]string `json:"security,omitempty"`
}

// Interface is where and how an agent is reached.
type Interface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

// Capabilities are the optional parts of the protocol an agent serves.
type Capabilities struct {
	Streaming         bool `json:"streaming,omitempty"`
	PushNotifications bool `json:"pushNotifications,omitempty"`
}

// Skill is something an agent can do.
type Skill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
}

// Endpoint returns the JSON-RPC URL of version 1.0 a card names: its
// supported interface for JSONRPC at 1.0, else its 0.3 url.
func (c Card) Endpoint() string {
	for _, i := range c.SupportedInterfaces {
		if strings.EqualFold(i.ProtocolBinding, "JSONRPC") && i.ProtocolVersion == Version {
			return i.URL
		}
	}
	return ""
}

// card is the card of agent name for a client of the request's version,
// whose JSON-RPC endpoint is endpoint.
func (h *Handler) card(r *http.Request, name, endpoint string) Card {
	c := Card{
		Name:        name,
		Description: cmp.Or(h.describe(r, name), "The lambdaclaw agent "+name+": send it a message and it answers, using its tools."),
		Version:     cmp.Or(h.cfg.Version, "dev"),
		SupportedInterfaces: []Interface{
			{URL: endpoint, ProtocolBinding: "JSONRPC", ProtocolVersion: Version},
			{URL: endpoint, ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"},
		},
		Capabilities:       Capabilities{Streaming: true},
		DefaultInputModes:  []string{"text/plain", "application/json"},
		DefaultOutputModes: []string{"text/plain"},
		Skills:             []Skill{},
		SecuritySchemes: map[string]map[string]any{"bearer": {"httpAuthSecurityScheme": map[string]any{
			"scheme": "Bearer", "description": "a lambdaclaw API key (lambdaclaw keys create)",
		}}},
		SecurityRequirements: []map[string]map[string][]string{{"schemes": {"bearer": {}}}},
	}
	if h.cfg.Skills != nil {
		for _, s := range h.cfg.Skills(r.Context(), name) {
			c.Skills = append(c.Skills, Skill{ID: s.Name, Name: s.Name, Description: s.Description, Tags: []string{}})
		}
	}
	if !atLeastV1(r.Header.Get(VersionHeader)) {
		c.ProtocolVersion, c.URL, c.PreferredTransport = LegacyCard, endpoint, "JSONRPC"
		c.SecuritySchemes["bearer"] = map[string]any{"type": "http", "scheme": "bearer", "description": "a lambdaclaw API key (lambdaclaw keys create)",
			"httpAuthSecurityScheme": c.SecuritySchemes["bearer"]["httpAuthSecurityScheme"]}
		c.Security = []map[string][]string{{"bearer": {}}}
	}
	return c
}

func (h *Handler) describe(r *http.Request, name string) string {
	if h.cfg.Describe == nil {
		return ""
	}
	return h.cfg.Describe(r.Context(), name)
}

// atLeastV1 says whether the A2A-Version v is 1.0 or later; without one a
// client speaks 0.3.
func atLeastV1(v string) bool {
	major, _, _ := strings.Cut(strings.TrimSpace(v), ".")
	return major != "" && major != "0"
}

// baseURL is the URL the request reached the server at, without a path:
// Config.BaseURL, else the request's scheme (X-Forwarded-Proto behind a
// proxy) and host.
func (h *Handler) baseURL(r *http.Request) string {
	if h.cfg.BaseURL != nil {
		return strings.TrimSuffix(h.cfg.BaseURL(r), "/")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := r.Header.Get("X-Forwarded-Proto"); p == "https" || p == "http" {
		scheme = p
	}
	return scheme + "://" + r.Host
}
