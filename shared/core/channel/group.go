package channel

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// said is a group message not addressed to the bot, kept as context.
type said struct {
	Name string `json:"n"`
	Text string `json:"t"`
}

// contextKey is the state key of the context kept for in's conversation:
// the main conversation's for a message that starts a thread
// (Inbound.StartsThread).
func contextKey(in Inbound) string {
	if in.StartsThread {
		return threadKey(in, "")
	}
	return threadKey(in, in.Thread)
}

// threadKey is the state key of the context kept for a thread of in's
// Principal.
func threadKey(in Inbound, thread string) string {
	return "group/" + principal(in) + "/" + thread
}

// remember keeps in, a group message not addressed to the bot, as
// context of its conversation (and of the thread it starts, if it does):
// the latest Groups.Context of them, each cut to MaxContextBytes. Two
// messages remembered at once may keep only one of them: context is a
// help, not a record.
func (c *Channel) remember(ctx context.Context, in Inbound) error {
	if c.cfg.Groups.Context < 0 {
		return nil
	}
	keys := []string{contextKey(in)}
	if in.StartsThread {
		keys = append(keys, threadKey(in, in.Thread))
	}
	name := in.Name
	if name == "" {
		name = in.User
	}
	for _, key := range keys {
		kept, err := c.context(ctx, key)
		if err != nil {
			return err
		}
		kept = append(kept, said{Name: cut(name, 64), Text: cut(strings.TrimSpace(in.Text), MaxContextBytes)})
		if n := len(kept) - c.cfg.Groups.Context; n > 0 {
			kept = kept[n:]
		}
		b, err := json.Marshal(kept)
		if err != nil {
			return fmt.Errorf("group context: %w", err)
		}
		if err := c.cfg.Store.SetState(ctx, key, string(b)); err != nil {
			return fmt.Errorf("group context: %w", err)
		}
	}
	return nil
}

// context returns the messages kept under the state key key.
func (c *Channel) context(ctx context.Context, key string) ([]said, error) {
	v, err := c.cfg.Store.State(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("group context: %w", err)
	}
	var kept []said
	if v != "" && json.Unmarshal([]byte(v), &kept) != nil {
		kept = nil // unreadable: started afresh
	}
	return kept, nil
}

// withContext puts the messages kept for in's conversation before text,
// the message addressed to the bot.
func (c *Channel) withContext(ctx context.Context, in Inbound, text string) (string, error) {
	kept, err := c.context(ctx, contextKey(in))
	if err != nil || len(kept) == 0 {
		return text, err
	}
	var b strings.Builder
	b.WriteString("[Earlier messages in this group, not addressed to you:]\n")
	for _, s := range kept {
		fmt.Fprintf(&b, "%s: %s\n", s.Name, s.Text)
	}
	b.WriteString("[The message to you:]\n")
	b.WriteString(text)
	return b.String(), nil
}

// forget drops the context of in's conversation once it went with a
// message to the bot.
func (c *Channel) forget(ctx context.Context, in Inbound) error {
	if err := c.cfg.Store.SetState(ctx, contextKey(in), ""); err != nil {
		return fmt.Errorf("group context: %w", err)
	}
	return nil
}

// cut returns s cut to at most n bytes, between runes.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
