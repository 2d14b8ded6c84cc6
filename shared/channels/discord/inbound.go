package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
)

// Interaction types the channel answers.
const (
	interactionPing      = 1
	interactionCommand   = 2
	interactionComponent = 3
)

// Interaction is an interaction as Discord delivers it (the fields the
// channel reads).
type Interaction struct {
	ID            string `json:"id"`
	ApplicationID string `json:"application_id"`
	Type          int    `json:"type"`
	Data          *struct {
		// Name is an application command's name; Options its options.
		Name    string `json:"name,omitempty"`
		Options []struct {
			Name  string          `json:"name"`
			Type  int             `json:"type"`
			Value json.RawMessage `json:"value"`
		} `json:"options,omitempty"`
		// CustomID is a pressed button's custom_id.
		CustomID      string `json:"custom_id,omitempty"`
		ComponentType int    `json:"component_type,omitempty"`
	} `json:"data,omitempty"`
	GuildID string `json:"guild_id,omitempty"`
	// Channel is the partial channel the interaction came from.
	Channel   *Channel `json:"channel,omitempty"`
	ChannelID string   `json:"channel_id,omitempty"`
	// Member is the invoking member in a guild, User the invoking user
	// in a direct message.
	Member *struct {
		User User   `json:"user"`
		Nick string `json:"nick,omitempty"`
	} `json:"member,omitempty"`
	User  *User  `json:"user,omitempty"`
	Token string `json:"token"`
}

// user is who invoked the interaction.
func (in *Interaction) user() User {
	if in.Member != nil {
		return in.Member.User
	}
	if in.User != nil {
		return *in.User
	}
	return User{}
}

// channelID is the channel the interaction came from.
func (in *Interaction) channelID() string {
	if in.Channel != nil && in.Channel.ID != "" {
		return in.Channel.ID
	}
	return in.ChannelID
}

// commandText is the text an application command stands for: /ask's
// text option, or the command itself ("/reset"), which the engine
// answers as it answers the command typed.
func (in *Interaction) commandText() (string, error) {
	if in.Data == nil || in.Data.Name == "" {
		return "", fmt.Errorf("discord: application command without a name")
	}
	if in.Data.Name != "ask" {
		return "/" + in.Data.Name, nil
	}
	for _, o := range in.Data.Options {
		if o.Name != "text" {
			continue
		}
		var s string
		if err := json.Unmarshal(o.Value, &s); err != nil || strings.TrimSpace(s) == "" {
			return "", fmt.Errorf("discord: /ask text is not a string, or empty")
		}
		return strings.TrimSpace(s), nil
	}
	return "", fmt.Errorf("discord: /ask without text")
}

// snowflakeTime is when a snowflake id was made (milliseconds since
// Discord's epoch, 2015, in its top 42 bits).
func snowflakeTime(id string) time.Time {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil || n == 0 {
		return time.Time{}
	}
	return time.UnixMilli(int64(n>>22) + 1420070400000).UTC()
}

// channelGetter reads a channel (the Client).
type channelGetter interface {
	Channel(ctx context.Context, id string) (Channel, error)
}

// maxChannels bounds the channels conversations remembers.
const maxChannels = 4096

// conversations tells which guild channels are threads, and their
// parents, asking Discord once per channel.
type conversations struct {
	client channelGetter
	// download fetches a message's attachments (Client.Download).
	download func(ctx context.Context, url string, max int64) ([]byte, error)
	mu       sync.Mutex
	known    map[string]Channel
}

// lookup returns the channel id; given is what a payload said of it, if
// anything.
func (c *conversations) lookup(ctx context.Context, id string, given *Channel) (Channel, error) {
	if given != nil && given.ID == id && (!given.IsThread() || given.ParentID != "") {
		return *given, nil
	}
	c.mu.Lock()
	ch, ok := c.known[id]
	c.mu.Unlock()
	if ok {
		return ch, nil
	}
	ch, err := c.client.Channel(ctx, id)
	if err != nil {
		return Channel{}, fmt.Errorf("discord: channel %s: %w", id, err)
	}
	c.mu.Lock()
	if c.known == nil || len(c.known) >= maxChannels {
		c.known = map[string]Channel{}
	}
	c.known[id] = ch
	c.mu.Unlock()
	return ch, nil
}

// place fills in the Inbound's conversation: a direct message is the
// user's; in a guild the channel is the Principal, and a thread its own
// Thread under its parent channel.
func (c *conversations) place(ctx context.Context, in *channel.Inbound, guildID, channelID string, given *Channel) error {
	in.Workspace = guildID
	if guildID == "" {
		in.Principal = in.User
		return nil
	}
	in.Group = true
	ch, err := c.lookup(ctx, channelID, given)
	if err != nil {
		return err
	}
	in.Principal = "#" + channelID
	if ch.IsThread() && ch.ParentID != "" {
		in.Principal, in.Thread = "#"+ch.ParentID, channelID
	}
	return nil
}

// fromInteraction converts an application command or a pressed button.
func (c *conversations) fromInteraction(ctx context.Context, it *Interaction) (channel.Inbound, error) {
	u := it.user()
	ch := it.channelID()
	if it.ID == "" || u.ID == "" || !validID(ch) || it.Token == "" {
		return channel.Inbound{}, fmt.Errorf("discord: interaction without id, user, channel or token")
	}
	in := channel.Inbound{
		ID: it.ID, User: u.ID, Name: displayName(u), To: InteractionAddress(ch, it.Token),
		Addressed: true, At: snowflakeTime(it.ID),
	}
	switch it.Type {
	case interactionCommand:
		text, err := it.commandText()
		if err != nil {
			return channel.Inbound{}, err
		}
		in.Text = text
	case interactionComponent:
		if it.Data == nil || it.Data.CustomID == "" {
			return channel.Inbound{}, fmt.Errorf("discord: component interaction without custom_id")
		}
		in.Action = it.Data.CustomID
	default:
		return channel.Inbound{}, fmt.Errorf("discord: interaction type %d", it.Type)
	}
	return in, c.place(ctx, &in, it.GuildID, ch, it.Channel)
}

// fromMessage converts a message the Gateway delivered; ok is false for
// one the channel ignores (a bot's, a webhook's, an empty one). In a
// guild it is addressed when it mentions the bot or replies to the bot's
// message; the engine keeps the others as context (or answers them too,
// with groups respond: all).
func (c *conversations) fromMessage(ctx context.Context, m *Message, self string) (in channel.Inbound, ok bool, err error) {
	if m.Author.Bot || m.Author.ID == self || m.WebhookID != "" || m.ID == "" || !validID(m.ChannelID) {
		return channel.Inbound{}, false, nil
	}
	text := m.Content
	addressed := m.GuildID == ""
	for _, u := range m.Mentions {
		if u.ID == self {
			addressed = true
		}
	}
	if r := m.ReferencedMessage; r != nil && r.Author.ID == self {
		addressed = true
	}
	if self != "" {
		text = strings.NewReplacer("<@"+self+">", "", "<@!"+self+">", "").Replace(text)
	}
	text = strings.TrimSpace(text)
	if text == "" && len(m.Attachments) == 0 {
		return channel.Inbound{}, false, nil
	}
	in = channel.Inbound{
		ID: m.ID, User: m.Author.ID, Name: displayName(m.Author), To: ChannelAddress(m.ChannelID),
		Addressed: addressed, Text: text, At: snowflakeTime(m.ID),
	}
	if c.download != nil {
		in.Attachments = attachments(m, c.download)
	}
	if t, err := time.Parse(time.RFC3339, m.Timestamp); err == nil {
		in.At = t
	}
	if err := c.place(ctx, &in, m.GuildID, m.ChannelID, nil); err != nil {
		return channel.Inbound{}, false, err
	}
	return in, true, nil
}

func displayName(u User) string {
	if u.GlobalName != "" {
		return u.GlobalName
	}
	return u.Username
}
