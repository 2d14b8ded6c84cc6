package config

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// Slack configures the Slack channel (channels.slack): a Slack app's bot
// in one workspace, reached by the Events API and interactivity Request
// URLs (mode events; shared/channels/slack's EventsPath and
// InteractivePath) or by Socket Mode (mode socket, no public URL).
type Slack struct {
	Enabled bool `yaml:"enabled"`
	// BotToken is the bot user's OAuth token (xoxb-).
	BotToken Secret `yaml:"bot_token"`
	// SigningSecret signs what Slack posts to the Request URLs (mode
	// events).
	SigningSecret Secret `yaml:"signing_secret"`
	// AppToken is an app-level token with connections:write (xapp-), for
	// Socket Mode.
	AppToken Secret `yaml:"app_token"`
	// Mode is "events" (the default: Slack posts to this server) or
	// "socket" (this server connects to Slack).
	Mode string `yaml:"mode"`
	// APIBase is the Web API's base URL (empty: https://slack.com/api).
	APIBase string `yaml:"api_base"`
	// Agent answers the bot (default "default"); Autonomy of its runs
	// (default supervised).
	Agent    string `yaml:"agent"`
	Autonomy string `yaml:"autonomy"`
	// AllowedUsers are the Slack user ids (U0123ABCD, or T…:U… for a user
	// of one workspace) that may talk to the agent; AccessCodes each let
	// one more in.
	AllowedUsers []string `yaml:"allowed_users"`
	AccessCodes  []Secret `yaml:"access_codes"`
	// Groups says when the bot answers in channels.
	Groups Groups `yaml:"groups"`
}

// resolve reads the section's secrets.
func (s *Slack) resolve(home string, getenv func(string) string) error {
	for name, sec := range map[string]*Secret{"bot_token": &s.BotToken, "signing_secret": &s.SigningSecret, "app_token": &s.AppToken} {
		if err := sec.resolve(home, getenv); err != nil {
			return fmt.Errorf("config: channels.slack.%s: %w", name, err)
		}
	}
	for i := range s.AccessCodes {
		if err := s.AccessCodes[i].resolve(home, getenv); err != nil {
			return fmt.Errorf("config: channels.slack.access_codes: %w", err)
		}
	}
	return nil
}

// validate checks an enabled section and fills in its defaults.
func (s *Slack) validate() error {
	if !s.Enabled {
		return nil
	}
	if s.Agent == "" {
		s.Agent = DefaultAgent
	}
	if s.Autonomy == "" {
		s.Autonomy = "supervised"
	}
	if _, err := tool.ParseAutonomy(s.Autonomy); err != nil {
		return fmt.Errorf("config: channels.slack.autonomy: %w", err)
	}
	if s.Mode == "" {
		s.Mode = "events"
	}
	type rule struct {
		secret *Secret
		prefix string
	}
	need := map[string]rule{"bot_token": {&s.BotToken, "xoxb-"}}
	switch s.Mode {
	case "events":
		need["signing_secret"] = rule{&s.SigningSecret, ""}
	case "socket":
		need["app_token"] = rule{&s.AppToken, "xapp-"}
	default:
		return fmt.Errorf("config: channels.slack.mode is %q; want events or socket", s.Mode)
	}
	for name, n := range need {
		switch v := n.secret.Value(); {
		case !n.secret.Set():
			return fmt.Errorf("config: channels.slack.%s is missing; give a reference such as {env: SLACK_%s}", name, strings.ToUpper(name))
		case v == "":
			return fmt.Errorf("config: channels.slack.%s: %s is empty", name, n.secret.Source())
		case !strings.HasPrefix(v, n.prefix):
			return fmt.Errorf("config: channels.slack.%s: the value in %s does not start with %s", name, n.secret.Source(), n.prefix)
		}
	}
	if s.APIBase != "" {
		if u, err := url.Parse(s.APIBase); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("config: channels.slack.api_base is %q; want an http(s) URL such as https://slack.com/api", s.APIBase)
		}
	}
	for _, u := range s.AllowedUsers {
		team, user, scoped := strings.Cut(u, ":")
		if !scoped {
			user = team
		}
		if !slackID(user, "UW") || (scoped && !slackID(team, "TE")) {
			return fmt.Errorf("config: channels.slack.allowed_users: %q is not a Slack user id (U0123ABCD, from the user's profile: Copy member ID)", u)
		}
	}
	for _, c := range s.AccessCodes {
		if v := c.Value(); v != "" && len(v) < 8 {
			return fmt.Errorf("config: channels.slack.access_codes: the code in %s is shorter than 8 characters", c.Source())
		}
	}
	return s.Groups.validate("channels.slack")
}

// slackID reports whether s looks like a Slack id whose first letter is
// one of kinds.
func slackID(s, kinds string) bool {
	if len(s) < 3 || len(s) > 32 || !strings.ContainsRune(kinds, rune(s[0])) {
		return false
	}
	for _, r := range s {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}
