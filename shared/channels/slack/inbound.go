package slack

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
)

// Bot is the app's bot in its workspace, as auth.test tells it.
type Bot struct {
	// UserID is the bot's user: its mention addresses it and its own
	// messages are ignored. When empty, an event's authorizations tell it.
	UserID string
	// TeamID is the workspace the bot token belongs to; when set, a
	// delivery from another workspace is refused.
	TeamID string
}

// Parser turns what Slack delivers into channel.Inbound.
type Parser struct {
	Bot Bot
	// Download fetches a shared file (Client.Download); without it a
	// message's files are not read.
	Download func(ctx context.Context, url string, max int64) ([]byte, error)
}

// callback is the outer event of the Events API (and of Socket Mode's
// events_api envelopes): an event_callback, or the url_verification
// handshake.
type callback struct {
	Type           string `json:"type"`
	Challenge      string `json:"challenge"`
	TeamID         string `json:"team_id"`
	EventID        string `json:"event_id"`
	Authorizations []struct {
		UserID string `json:"user_id"`
		IsBot  bool   `json:"is_bot"`
	} `json:"authorizations"`
	Event *event `json:"event"`
}

// event is the inner event of the kinds the channel reads: message (in a
// DM, and in channels with message.channels) and app_mention.
type event struct {
	Type        string `json:"type"`
	Subtype     string `json:"subtype"`
	User        string `json:"user"`
	BotID       string `json:"bot_id"`
	Text        string `json:"text"`
	TS          string `json:"ts"`
	ThreadTS    string `json:"thread_ts"`
	Channel     string `json:"channel"`
	ChannelType string `json:"channel_type"`
	// Files are shared with the message (the subtype file_share).
	Files []file `json:"files"`
}

// errForeignTeam is a delivery from a workspace other than the bot's.
var errForeignTeam = fmt.Errorf("slack: delivery from another workspace")

// Event reads an event_callback. ok is false for an event the channel
// does not act on: a bot's message (its own included), an edit, a
// deletion or another subtype, a conversation kind it does not serve.
// The ID of a message is its workspace, channel and ts rather than the
// event's id: with message.channels, a mention arrives twice (message
// and app_mention, two event ids), and Slack's retries of either carry
// the same message.
func (p Parser) Event(cb callback) (in channel.Inbound, ok bool, err error) {
	if p.Bot.TeamID != "" && cb.TeamID != p.Bot.TeamID {
		return in, false, errForeignTeam
	}
	e := cb.Event
	if cb.Type != "event_callback" || e == nil || e.Subtype != "" && e.Subtype != "file_share" || e.BotID != "" || e.User == "" || e.Channel == "" || e.TS == "" {
		return in, false, nil
	}
	bot := p.Bot.UserID
	if bot == "" {
		for _, a := range cb.Authorizations {
			if a.IsBot {
				bot = a.UserID
				break
			}
		}
	}
	if e.User == bot {
		return in, false, nil
	}
	mention := bot != "" && strings.Contains(e.Text, "<@"+bot)
	in = channel.Inbound{
		ID:        cb.TeamID + ":" + e.Channel + ":" + e.TS,
		Workspace: cb.TeamID,
		User:      e.User,
		Text:      text(e.Text, bot),
		At:        tsTime(e.TS),
	}
	in.Attachments = p.attachments(e.Files)
	switch {
	case e.Type == "message" && e.ChannelType == "im":
		in.Principal, in.Addressed, in.Thread = e.User, true, e.ThreadTS
	case e.Type == "app_mention" || (e.Type == "message" && (e.ChannelType == "channel" || e.ChannelType == "group" || e.ChannelType == "mpim")):
		in.Principal, in.Group = "#"+e.Channel, true
		// Unaddressed messages (message.channels) are context, or
		// answered too with the engine's groups.respond "all".
		in.Addressed = e.Type == "app_mention" || mention
		// A new message in a channel starts a thread: the reply goes
		// there, and the thread's later messages are the same session;
		// the channel's earlier messages are its context.
		in.Thread = e.ThreadTS
		if in.Thread == "" {
			in.Thread, in.StartsThread = e.TS, true
		}
	default:
		return channel.Inbound{}, false, nil
	}
	in.To = Address{Channel: e.Channel, Thread: in.Thread}.String()
	return in, true, nil
}

// text is a message's text as the agent reads it: the bot's mentions
// removed, Slack's markup of links, channels and special mentions made
// plain (<https://x|label> is "label (https://x)", <#C1|general>
// "#general", <!here> "@here"; other users' mentions stay <@U123>), and
// its entities unescaped.
func text(s, bot string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '<')
		j := strings.IndexByte(s[max(i, 0):], '>')
		if i < 0 || j < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		b.WriteString(plain(s[i+1:i+j], bot))
		s = s[i+j+1:]
	}
	return strings.TrimSpace(unescaper.Replace(b.String()))
}

// plain is the text of one piece of markup, between < and >.
func plain(m, bot string) string {
	ref, label, _ := strings.Cut(m, "|")
	switch {
	case ref == "@"+bot && bot != "":
		return ""
	case strings.HasPrefix(ref, "@"):
		return "<" + ref + ">"
	case strings.HasPrefix(ref, "#"):
		return "#" + or(label, ref[1:])
	case strings.HasPrefix(ref, "!subteam^"):
		return or(label, "@group")
	case strings.HasPrefix(ref, "!date^"):
		return label
	case strings.HasPrefix(ref, "!"):
		return "@" + ref[1:]
	case strings.HasPrefix(ref, "mailto:"):
		return or(label, ref[len("mailto:"):])
	case label == "" || label == ref:
		return ref
	}
	return label + " (" + ref + ")"
}

func or(s, alt string) string {
	if s != "" {
		return s
	}
	return alt
}

// tsTime reads a Slack ts ("1700000000.000100", seconds.micros).
func tsTime(ts string) time.Time {
	sec, frac, _ := strings.Cut(ts, ".")
	s, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		return time.Time{}
	}
	us, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	return time.Unix(s, us*1000).UTC()
}

// interaction is an interactivity payload (block_actions, the kind the
// channel reads).
type interaction struct {
	Type string `json:"type"`
	Team struct {
		ID string `json:"id"`
	} `json:"team"`
	User struct {
		ID       string `json:"id"`
		Username string `json:"username"`
		Name     string `json:"name"`
	} `json:"user"`
	TriggerID string `json:"trigger_id"`
	Container struct {
		Type      string `json:"type"`
		MessageTS string `json:"message_ts"`
		ThreadTS  string `json:"thread_ts"`
		ChannelID string `json:"channel_id"`
	} `json:"container"`
	Channel struct {
		ID string `json:"id"`
	} `json:"channel"`
	Message *struct {
		Text     string            `json:"text"`
		TS       string            `json:"ts"`
		ThreadTS string            `json:"thread_ts"`
		Blocks   []json.RawMessage `json:"blocks"`
	} `json:"message"`
	Actions []struct {
		Type     string  `json:"type"`
		ActionID string  `json:"action_id"`
		BlockID  string  `json:"block_id"`
		Value    string  `json:"value"`
		ActionTS string  `json:"action_ts"`
		Text     textObj `json:"text"`
	} `json:"actions"`
}

// Action reads a press of one of the channel's buttons: the Inbound's
// Action is the button's value, its conversation (Principal, To, Thread)
// the message's, and its ID the press's trigger id. ok is false for any
// other interaction.
func (p Parser) Action(it interaction) (in channel.Inbound, ok bool, err error) {
	if p.Bot.TeamID != "" && it.Team.ID != p.Bot.TeamID {
		return in, false, errForeignTeam
	}
	if it.Type != "block_actions" || len(it.Actions) == 0 || it.User.ID == "" {
		return in, false, nil
	}
	a := it.Actions[0]
	if a.Type != "button" || a.BlockID != actionsBlockID || a.Value == "" || it.Container.Type != "message" {
		return in, false, nil
	}
	ch, ts, thread := it.Container.ChannelID, it.Container.MessageTS, it.Container.ThreadTS
	if ch == "" {
		ch = it.Channel.ID
	}
	if m := it.Message; m != nil && thread == "" {
		thread = m.ThreadTS
	}
	if thread == ts {
		thread = "" // the message is a thread's parent, not in one
	}
	if ch == "" || ts == "" {
		return in, false, nil
	}
	id := it.TriggerID
	if id == "" {
		id = ch + ":" + ts + ":" + a.ActionTS
	}
	in = channel.Inbound{
		ID: "action:" + id, Workspace: it.Team.ID, User: it.User.ID, Name: it.User.Name,
		Principal: it.User.ID, Thread: thread, Addressed: true, Action: a.Value, At: tsTime(a.ActionTS),
	}
	if !strings.HasPrefix(ch, "D") {
		in.Principal, in.Group = "#"+ch, true
	}
	in.To = Address{Channel: ch, Thread: thread}.String()
	return in, true, nil
}
