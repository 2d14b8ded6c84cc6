package config

import "fmt"

// Groups says how a messaging channel behaves in groups (channel.Groups).
type Groups struct {
	// Respond is "mention" (the default: answer a message that mentions
	// the bot or replies to it) or "all" (answer every message).
	Respond string `yaml:"respond"`
	// Context is how many of the latest messages not addressed to the
	// bot go with the next one that is, as context: 0 to 100, 20 when
	// not set.
	Context *int `yaml:"context"`
}

// validate checks the section of the channel named in errors.
func (g Groups) validate(channel string) error {
	switch g.Respond {
	case "", "mention", "all":
	default:
		return fmt.Errorf("config: %s.groups.respond is %q; want mention or all", channel, g.Respond)
	}
	if g.Context != nil && (*g.Context < 0 || *g.Context > 100) {
		return fmt.Errorf("config: %s.groups.context is %d; want 0 to 100", channel, *g.Context)
	}
	return nil
}

// ContextSize is Context as channel.Groups counts it: 0 for the default,
// -1 for none.
func (g Groups) ContextSize() int {
	switch {
	case g.Context == nil:
		return 0
	case *g.Context == 0:
		return -1
	}
	return *g.Context
}
