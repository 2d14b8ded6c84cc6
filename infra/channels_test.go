package main

import (
	"slices"
	"strings"
	"testing"
)

// channelRouteNames are the routes of the channels cfg turns on, as
// "METHOD /path".
func channelRouteNames(cfg Config) []string {
	var out []string
	for _, name := range cfg.Channels {
		for _, r := range channelRoutes[name] {
			for _, m := range r.methods {
				out = append(out, m+" /channels/"+name+"/"+r.path)
			}
		}
	}
	return out
}

// TestChannels holds the webhooks of -c slack=on, discord=on and
// whatsapp=on to their design: one buffered proxy integration of the
// channels function per route, the credentials' secrets created empty
// and read only by the functions that receive and send the channels'
// messages, each route's URL and each secret's name in the outputs.
func TestChannels(t *testing.T) {
	s := stack(t, variantChannels)
	if !slices.Equal(s.cfg.Channels, []string{"slack", "discord", "whatsapp"}) {
		t.Fatalf("channels %v", s.cfg.Channels)
	}
	routes := restPaths(s)
	fn := s.functionID(t, "channels")
	for _, name := range channelRouteNames(s.cfg) {
		r, ok := routes[name]
		if !ok {
			t.Errorf("no route %s; routes %v", name, keys(routes))
			continue
		}
		integ := r["Integration"].(map[string]any)
		if uri := render(integ["Uri"]); integ["Type"] != "AWS_PROXY" || !strings.Contains(uri, "${"+fn+".Arn}") {
			t.Errorf("%s: integration %v %s, want a proxy integration of the channels function", name, integ["Type"], uri)
		}
		if mode, ok := integ["ResponseTransferMode"]; ok && mode != "BUFFERED" {
			t.Errorf("%s: ResponseTransferMode %v, want buffered", name, mode)
		}
	}
	secrets := s.resources("AWS::SecretsManager::Secret")
	if len(secrets) != 3 {
		t.Errorf("%d secrets, want one per channel", len(secrets))
	}
	for id, r := range secrets {
		p := props(r)
		if _, ok := p["SecretString"]; ok {
			t.Errorf("secret %s has a value in the template", id)
		}
		if _, ok := p["GenerateSecretString"]; ok {
			t.Errorf("secret %s has a generated placeholder, want none", id)
		}
		if name, _ := p["Name"].(string); !strings.Contains(name, "/channels/") {
			t.Errorf("secret %s is named %v, want <stack>/channels/<name>", id, p["Name"])
		}
	}
	for _, name := range []string{"channels", "step"} {
		var read []string
		for _, r := range s.actionsOf(s.roleOf(t, s.functionID(t, name)))["secretsmanager:GetSecretValue"] {
			read = append(read, strings.TrimRight(strings.TrimLeft(r, "${"), "0123456789ABCDEF}"))
		}
		slices.Sort(read)
		if want := []string{"DiscordSecret", "SlackSecret", "WhatsAppSecret"}; !slices.Equal(read, want) {
			t.Errorf("%s reads secrets %v, want %v", name, read, want)
		}
	}
	for _, name := range []string{"api", "ws", "scheduler"} {
		if read := s.actionsOf(s.roleOf(t, s.functionID(t, name)))["secretsmanager:GetSecretValue"]; len(read) > 0 {
			t.Errorf("%s reads secrets %v, want none", name, read)
		}
	}
	outputs := s.template.ToJSON()
	out, _ := (*outputs)["Outputs"].(map[string]any)
	for _, id := range []string{"SlackEventsUrl", "SlackInteractiveUrl", "SlackSecretName", "DiscordInteractionsUrl", "DiscordSecretName",
		"WhatsAppWebhookUrl", "WhatsAppSecretName"} {
		if _, ok := out[id]; !ok {
			t.Errorf("no output %s", id)
		}
	}
}
