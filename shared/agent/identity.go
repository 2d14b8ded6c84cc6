package agent

// Identity derives session ids from who is talking to which agent, on
// which channel (seed 004 "Cross-channel session sharing"). User ids are
// prefixed by their channel ("tg:12345", "ws:alice", "api:key") so that
// channels never collide. With sharing, the same user on any channel meets
// the same session of an agent; a person is the same user across channels
// when the configuration links their channel ids to one name.
type Identity struct {
	// PerChannel gives each channel its own sessions.
	PerChannel bool
	// Links maps a channel user id ("tg:12345") to a person's name.
	Links map[string]string
}

// SessionID returns the session of user on channel with agent.
func (id Identity) SessionID(agent, channel, user string) string {
	uid := channel + ":" + user
	if name, ok := id.Links[uid]; ok {
		uid = "user:" + name
	}
	if id.PerChannel {
		uid = channel + "/" + uid
	}
	return SessionID(agent, uid)
}
