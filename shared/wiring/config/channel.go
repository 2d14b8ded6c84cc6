package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// channelSection is what every channels.<name> section does.
type channelSection interface {
	resolve(home string, getenv func(string) string) error
	validate() error
	enabled() bool
}

func (d *Discord) enabled() bool  { return d.Enabled }
func (w *WhatsApp) enabled() bool { return w.Enabled }
func (s *Slack) enabled() bool    { return s.Enabled }

// ChannelNames are the names of the channels' sections, as in
// channels.<name>.
var ChannelNames = []string{"slack", "discord", "whatsapp"}

// section is c's section called name.
func (c *Channels) section(name string) (channelSection, error) {
	switch name {
	case "slack":
		return &c.Slack, nil
	case "discord":
		return &c.Discord, nil
	case "whatsapp":
		return &c.WhatsApp, nil
	}
	return nil, fmt.Errorf("config: no channel %q; the channels are %s", name, strings.Join(ChannelNames, ", "))
}

// Enabled reports whether the section called name is enabled.
func (c *Channels) Enabled(name string) bool {
	s, err := c.section(name)
	return err == nil && s.enabled()
}

// ParseChannel reads one channel's section, the YAML under
// channels.<name> of a config file, as Load does: secret references are
// resolved with getenv and the section is validated. {file: …}
// references are refused (ChannelSecret turns them into variables). The
// section must be enabled. The result has only that section set.
func ParseChannel(name string, data []byte, getenv func(string) string) (*Channels, error) {
	c := &Channels{}
	s, err := c.section(name)
	if err != nil {
		return nil, err
	}
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return nil, fmt.Errorf("config: channels.%s: %w", name, err)
	}
	if err := references(&n, strings.ToUpper(name), func(ref *yaml.Node, _ string) error {
		if ref.Content[0].Value == "file" {
			return fmt.Errorf("config: channels.%s: line %d: a {file: …} reference cannot be read here; give {env: NAME} and the value with it", name, ref.Line)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(s); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config: channels.%s: %w", name, err)
	}
	if !s.enabled() {
		return nil, fmt.Errorf("config: channels.%s is not enabled (enabled: true)", name)
	}
	if err := s.resolve("", getenv); err != nil {
		return nil, err
	}
	if err := s.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// ChannelSecret is the content of a channel's secret on AWS, made from
// its section of the config file c was loaded from: a JSON object whose
// "config" is the section's YAML as in the file but for {file: …}
// references, which become {env: …} ones, and whose "env" holds the
// values of all its references by variable name, read from getenv and the
// files (relative to c.Home). vars are those names, sorted. The section
// must be valid: ParseChannelSecret reads the secret back.
func ChannelSecret(c *Config, name string, getenv func(string) string) (secret []byte, vars []string, err error) {
	if _, err := c.Channels.section(name); err != nil {
		return nil, nil, err
	}
	b, err := os.ReadFile(c.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, nil, fmt.Errorf("config %s: %w", c.Path, err)
	}
	n := child(child(&doc, "channels"), name)
	if n == nil {
		return nil, nil, fmt.Errorf("config %s has no channels.%s section", c.Path, name)
	}
	env := map[string]string{}
	err = references(n, strings.ToUpper(name), func(ref *yaml.Node, path string) error {
		kind, v := ref.Content[0].Value, ref.Content[1].Value
		s := Secret{Env: v}
		if kind == "file" {
			s = Secret{File: v}
		}
		if err := s.resolve(c.Home, getenv); err != nil {
			return fmt.Errorf("config: channels.%s: %w", name, err)
		}
		if kind == "file" {
			// The variable is named after where the reference is.
			v = path
			ref.Content[0].Value, ref.Content[1].Value = "env", v
		}
		env[v] = s.Value()
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	out, err := yaml.Marshal(n)
	if err != nil {
		return nil, nil, fmt.Errorf("config: channels.%s: %w", name, err)
	}
	if _, err := ParseChannel(name, out, func(k string) string { return env[k] }); err != nil {
		return nil, nil, err
	}
	secret, err = json.Marshal(channelSecret{Config: string(out), Env: env})
	if err != nil {
		return nil, nil, err
	}
	return secret, slices.Sorted(maps.Keys(env)), nil
}

// channelSecret is the JSON of a channel's secret.
type channelSecret struct {
	Config string            `json:"config"`
	Env    map[string]string `json:"env"`
}

// ParseChannelSecret reads a channel's secret that ChannelSecret made:
// the section, its references resolved from the secret's values and
// validated (ParseChannel).
func ParseChannelSecret(name string, secret []byte) (*Channels, error) {
	var s channelSecret
	if err := json.Unmarshal(secret, &s); err != nil {
		return nil, fmt.Errorf("config: the secret of channels.%s is not {\"config\": …, \"env\": …}: %w", name, err)
	}
	return ParseChannel(name, []byte(s.Config), func(k string) string { return s.Env[k] })
}

// child is the value of key in the mapping n (a document's mapping when
// n is the document), nil without one.
func child(n *yaml.Node, key string) *yaml.Node {
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// references calls fn on every secret reference under n (a mapping of
// the one key env or file), with path the upper-case name of where it is
// (DISCORD_BOT_TOKEN, DISCORD_ACCESS_CODES_1).
func references(n *yaml.Node, path string, fn func(ref *yaml.Node, path string) error) error {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for i, c := range n.Content {
			p := path
			if n.Kind == yaml.SequenceNode {
				p += "_" + strconv.Itoa(i)
			}
			if err := references(c, p, fn); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		if len(n.Content) == 2 && slices.Contains([]string{"env", "file"}, n.Content[0].Value) && n.Content[1].Kind == yaml.ScalarNode {
			return fn(n, path)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := references(n.Content[i+1], path+"_"+strings.ToUpper(n.Content[i].Value), fn); err != nil {
				return err
			}
		}
	}
	return nil
}

// SecretValues are the values of the secrets of ss that are set.
func SecretValues(ss []Secret) []string {
	var out []string
	for _, s := range ss {
		if v := s.Value(); v != "" {
			out = append(out, v)
		}
	}
	return out
}
