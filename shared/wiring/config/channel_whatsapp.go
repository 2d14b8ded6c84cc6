package config

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// WhatsApp configures the WhatsApp channel (channels.whatsapp): a
// business phone number of the WhatsApp Cloud API, whose webhook is
// WhatsAppWebhookPath.
type WhatsApp struct {
	Enabled bool `yaml:"enabled"`
	// PhoneNumberID is the business number's id (not the number itself).
	PhoneNumberID string `yaml:"phone_number_id"`
	// AccessToken is the Graph API bearer token (a system user's).
	AccessToken Secret `yaml:"access_token"`
	// AppSecret is the Meta app's secret, which signs the webhook.
	AppSecret Secret `yaml:"app_secret"`
	// VerifyToken is the token given to Meta with the webhook's URL.
	VerifyToken Secret `yaml:"verify_token"`
	// APIBase is the Graph API with its version (empty: the adapter's).
	APIBase string `yaml:"api_base"`
	// Template, when named, is sent in place of a reply once the user's
	// 24-hour customer service window has closed.
	Template WhatsAppTemplate `yaml:"template"`
	// Agent answers the number (default "default"); Autonomy of its runs
	// (default supervised).
	Agent    string `yaml:"agent"`
	Autonomy string `yaml:"autonomy"`
	// AllowedUsers are the WhatsApp ids (wa_id: the phone number, digits
	// only) that may talk to the agent; AccessCodes each let one more in.
	AllowedUsers []string `yaml:"allowed_users"`
	AccessCodes  []Secret `yaml:"access_codes"`
	// Groups says when the agent answers in groups (of the Groups API).
	Groups Groups `yaml:"groups"`
}

// WhatsAppTemplate names an approved message template and its language
// code (en_US).
type WhatsAppTemplate struct {
	Name     string `yaml:"name"`
	Language string `yaml:"language"`
}

// WhatsAppWebhookPath is the local server's webhook route (GET and POST).
const WhatsAppWebhookPath = "/channels/whatsapp/webhook"

// resolve reads the section's secrets.
func (w *WhatsApp) resolve(home string, getenv func(string) string) error {
	for name, s := range map[string]*Secret{"access_token": &w.AccessToken, "app_secret": &w.AppSecret, "verify_token": &w.VerifyToken} {
		if err := s.resolve(home, getenv); err != nil {
			return fmt.Errorf("config: channels.whatsapp.%s: %w", name, err)
		}
	}
	for i := range w.AccessCodes {
		if err := w.AccessCodes[i].resolve(home, getenv); err != nil {
			return fmt.Errorf("config: channels.whatsapp.access_codes: %w", err)
		}
	}
	return nil
}

// validate checks an enabled section and fills in its defaults.
func (w *WhatsApp) validate() error {
	if err := w.Groups.validate("channels.whatsapp"); err != nil {
		return err
	}
	if !w.Enabled {
		return nil
	}
	if w.Agent == "" {
		w.Agent = DefaultAgent
	}
	if w.Autonomy == "" {
		w.Autonomy = "supervised"
	}
	if _, err := tool.ParseAutonomy(w.Autonomy); err != nil {
		return fmt.Errorf("config: channels.whatsapp.autonomy: %w", err)
	}
	if !only(w.PhoneNumberID, 1, 32, "0123456789") {
		return fmt.Errorf("config: channels.whatsapp.phone_number_id is %q; want the number's id (digits) from the app's WhatsApp > API Setup page", w.PhoneNumberID)
	}
	for name, s := range map[string]Secret{"access_token": w.AccessToken, "app_secret": w.AppSecret, "verify_token": w.VerifyToken} {
		switch {
		case !s.Set():
			return fmt.Errorf("config: channels.whatsapp.%s is missing; give a reference such as {env: WHATSAPP_%s}", name, strings.ToUpper(name))
		case s.Value() == "":
			return fmt.Errorf("config: channels.whatsapp.%s: %s is empty", name, s.Source())
		}
	}
	if w.APIBase != "" {
		if u, err := url.Parse(w.APIBase); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("config: channels.whatsapp.api_base is %q; want an http(s) URL such as https://graph.facebook.com/v21.0", w.APIBase)
		}
	}
	t := w.Template
	if t != (WhatsAppTemplate{}) && (!only(t.Name, 1, 512, "abcdefghijklmnopqrstuvwxyz0123456789_") || !only(t.Language, 2, 16, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")) {
		return fmt.Errorf("config: channels.whatsapp.template needs the name of an approved template (lower case, digits, _) and its language code (en_US); got %q, %q", t.Name, t.Language)
	}
	for _, u := range w.AllowedUsers {
		if !only(u, 6, 15, "0123456789") {
			return fmt.Errorf("config: channels.whatsapp.allowed_users: %q is not a WhatsApp id (the phone number with its country code, digits only)", u)
		}
	}
	for _, c := range w.AccessCodes {
		if v := c.Value(); v != "" && len(v) < 8 {
			return fmt.Errorf("config: channels.whatsapp.access_codes: the code in %s is shorter than 8 characters", c.Source())
		}
	}
	return nil
}

// only reports whether s is min to max bytes, all of them in set.
func only(s string, min, max int, set string) bool {
	if len(s) < min || len(s) > max {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune(set, r) {
			return false
		}
	}
	return true
}
