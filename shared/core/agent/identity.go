package agent

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Identity derives the owner and the session of whoever talks to an agent
// (seed 004 "Cross-channel session sharing"), so that a session belongs to
// its owner and nobody else can reach it.
//
// A principal is a user on a channel, vouched for by an authority: the API
// key for the HTTP API and the WebSocket ("api", "ws"), nobody for channels
// that authenticate their users themselves (Telegram, "tg"). Its channel id
// carries all three: "api:<key id>/<session key>", "ws:<key id>/<user>",
// "tg:<chat id>". The same user name under two keys is two principals.
//
// The owner is the API key ("key:<key id>"), or the channel id for
// channels without one ("tg:<chat id>"). With sharing, ids the
// configuration links to one person meet in that person's session of an
// agent whatever the channel, and the person ("user:<name>") owns it.
type Identity struct {
	// PerChannel gives each channel its own sessions.
	PerChannel bool
	// Links maps a channel id ("tg:12345", "ws:key_ab12/ada") to a
	// person's name.
	Links map[string]string
}

// ChannelID is the id of user on channel, vouched for by authority (an API
// key id, or "" when the channel authenticates the user itself).
func ChannelID(channel, authority, user string) string {
	if authority == "" {
		return channel + ":" + user
	}
	return channel + ":" + authority + "/" + user
}

// Session returns the owner and the session of user on channel with agent.
func (id Identity) Session(agent, channel, authority, user string) (owner, sessionID string) {
	uid := ChannelID(channel, authority, user)
	switch name, linked := id.Links[uid]; {
	case linked:
		uid = "user:" + name
		owner = uid
	case authority != "":
		owner = "key:" + authority
	default:
		owner = uid
	}
	if id.PerChannel {
		uid = channel + "/" + uid
	}
	return owner, SessionID(agent, uid)
}

// MaxSessionKey bounds, in bytes, the name a client gives its conversation.
const MaxSessionKey = 256

// CheckSessionKey tells why sk, the name a client chose for its
// conversation (the HTTP API's session header, a WebSocket frame's user,
// the MCP tools' session_key), cannot be one: it is longer than
// MaxSessionKey bytes, not valid UTF-8, or holds a control character (a
// tab, a line break, NUL, DEL or a C1 control), which would read as another
// name in logs, the console and the delivery targets built from it. field
// names sk in the error.
func CheckSessionKey(field, sk string) error {
	switch {
	case len(sk) > MaxSessionKey:
		return fmt.Errorf("%s is longer than %d bytes", field, MaxSessionKey)
	case !utf8.ValidString(sk):
		return fmt.Errorf("%s is not valid UTF-8", field)
	}
	for i, r := range sk {
		if unicode.IsControl(r) {
			return fmt.Errorf("%s has a control character (%U at byte %d)", field, r, i)
		}
	}
	return nil
}
