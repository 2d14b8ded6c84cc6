package slack

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
)

// The samples are Slack's documented payloads (api.slack.com/events/
// app_mention, message.im, block_actions), the bot being U0LAN0Z89.
const (
	sampleMention = `{"token":"ZZZZZZWSxiZZZ2yIvs3peJ","team_id":"T123ABC456","api_app_id":"A123ABC456",
	 "event":{"type":"app_mention","user":"U123ABC456","text":"What is the hour of the pearl, <@U0LAN0Z89>?",
	  "ts":"1515449522.000016","channel":"C123ABC456","event_ts":"1515449522000016"},
	 "type":"event_callback","event_id":"Ev123ABC456","event_time":1515449522000016,"authed_users":["U0LAN0Z89"],
	 "authorizations":[{"enterprise_id":null,"team_id":"T123ABC456","user_id":"U0LAN0Z89","is_bot":true,"is_enterprise_install":false}]}`
	sampleIM = `{"token":"XXYYZZ","team_id":"T123ABC456","api_app_id":"A123ABC456",
	 "event":{"type":"message","channel":"D024BE91L","user":"U2147483697","text":"Hello hello can you hear me? 1 &lt; 2 &amp;&amp; 3 &gt; 2",
	  "ts":"1355517523.000005","event_ts":"1355517523.000005","channel_type":"im"},
	 "type":"event_callback","event_id":"Ev0PV52K21","event_time":1355517523,
	 "authorizations":[{"enterprise_id":null,"team_id":"T123ABC456","user_id":"U0LAN0Z89","is_bot":true,"is_enterprise_install":false}]}`
)

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// withEvent is sampleIM with its inner event's fields replaced.
func withEvent(t *testing.T, fields map[string]any) callback {
	cb := decode[callback](t, sampleIM)
	ev := map[string]any{}
	b, _ := json.Marshal(cb.Event)
	json.Unmarshal(b, &ev)
	for k, v := range fields {
		if v == nil {
			delete(ev, k)
		} else {
			ev[k] = v
		}
	}
	b, _ = json.Marshal(ev)
	cb.Event = nil
	json.Unmarshal(b, &cb.Event)
	return cb
}

func TestParserEvent(t *testing.T) {
	imAt := time.Unix(1355517523, 5000).UTC()
	tests := []struct {
		name   string
		parser Parser
		cb     callback
		want   channel.Inbound
		ok     bool
		err    error
	}{{
		name: "a DM is the user's, addressed, unescaped",
		cb:   decode[callback](t, sampleIM),
		want: channel.Inbound{ID: "T123ABC456:D024BE91L:1355517523.000005", Workspace: "T123ABC456", User: "U2147483697",
			Principal: "U2147483697", To: "D024BE91L", Addressed: true, Text: "Hello hello can you hear me? 1 < 2 && 3 > 2", At: imAt},
		ok: true,
	}, {
		name: "a DM in a thread is that thread's",
		cb:   withEvent(t, map[string]any{"thread_ts": "1355517000.000001"}),
		want: channel.Inbound{ID: "T123ABC456:D024BE91L:1355517523.000005", Workspace: "T123ABC456", User: "U2147483697",
			Principal: "U2147483697", To: "D024BE91L/1355517000.000001", Thread: "1355517000.000001", Addressed: true,
			Text: "Hello hello can you hear me? 1 < 2 && 3 > 2", At: imAt},
		ok: true,
	}, {
		name: "a mention in a channel is the channel's and starts a thread",
		cb:   decode[callback](t, sampleMention),
		want: channel.Inbound{ID: "T123ABC456:C123ABC456:1515449522.000016", Workspace: "T123ABC456", User: "U123ABC456",
			Principal: "#C123ABC456", To: "C123ABC456/1515449522.000016", Thread: "1515449522.000016", StartsThread: true, Group: true, Addressed: true,
			Text: "What is the hour of the pearl, ?", At: time.Unix(1515449522, 16000).UTC()},
		ok: true,
	}, {
		name: "a channel message without a mention is context",
		cb:   withEvent(t, map[string]any{"channel": "C1", "channel_type": "channel", "thread_ts": "1355517000.000001"}),
		want: channel.Inbound{ID: "T123ABC456:C1:1355517523.000005", Workspace: "T123ABC456", User: "U2147483697",
			Principal: "#C1", To: "C1/1355517000.000001", Thread: "1355517000.000001", Group: true,
			Text: "Hello hello can you hear me? 1 < 2 && 3 > 2", At: imAt},
		ok: true,
	}, {
		name: "a channel message mentioning the bot is addressed (message.channels)",
		cb:   withEvent(t, map[string]any{"channel": "C1", "channel_type": "channel", "text": "<@U0LAN0Z89|claw> hi <@U999>"}),
		want: channel.Inbound{ID: "T123ABC456:C1:1355517523.000005", Workspace: "T123ABC456", User: "U2147483697",
			Principal: "#C1", To: "C1/1355517523.000005", Thread: "1355517523.000005", StartsThread: true, Group: true, Addressed: true, Text: "hi <@U999>", At: imAt},
		ok: true,
	}, {
		name: "the bot's own message is ignored",
		cb:   withEvent(t, map[string]any{"user": "U0LAN0Z89"}),
	}, {
		name:   "the bot's own message is ignored (bot user from auth.test)",
		parser: Parser{Bot: Bot{UserID: "U2147483697"}},
		cb:     decode[callback](t, sampleIM),
	}, {
		name: "another bot's message is ignored",
		cb:   withEvent(t, map[string]any{"bot_id": "B123"}),
	}, {
		name: "an edit is ignored",
		cb:   withEvent(t, map[string]any{"subtype": "message_changed"}),
	}, {
		name: "a message without a user is ignored",
		cb:   withEvent(t, map[string]any{"user": nil}),
	}, {
		name: "an unknown conversation kind is ignored",
		cb:   withEvent(t, map[string]any{"channel_type": "app_home"}),
	}, {
		name: "another event type is ignored",
		cb:   withEvent(t, map[string]any{"type": "reaction_added"}),
	}, {
		name:   "another workspace is refused",
		parser: Parser{Bot: Bot{TeamID: "T999"}},
		cb:     decode[callback](t, sampleIM),
		err:    errForeignTeam,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := tt.parser.Event(tt.cb)
			if err != tt.err || ok != tt.ok {
				t.Fatalf("Event = ok %v, err %v; want ok %v, err %v", ok, err, tt.ok, tt.err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Event (-want +got):\n%s", diff)
			}
		})
	}
}

// sampleAction is Slack's documented block_actions payload, pressing a
// button of the channel's actions block in a DM thread.
const sampleAction = `{"type":"block_actions","team":{"id":"T9TK3CUKW","domain":"example"},
 "user":{"id":"UA8RXUSPL","username":"jtorrance","name":"jtorrance","team_id":"T9TK3CUKW"},
 "api_app_id":"AABA1ABCD","token":"9s8d9as89d8as9d8as989",
 "container":{"type":"message","message_ts":"1548261231.000200","channel_id":"DBR2V3XEX","is_ephemeral":false,"thread_ts":"1548261000.000100"},
 "trigger_id":"12321423423.333649436676.d8c1bb837935619ccad0f624c448ffb3",
 "channel":{"id":"DBR2V3XEX","name":"directmessage"},
 "message":{"bot_id":"BAH5CA16Z","type":"message","text":"Run ls?","user":"UAJ2RU415","ts":"1548261231.000200","thread_ts":"1548261000.000100",
  "blocks":[{"type":"section","block_id":"s1","text":{"type":"plain_text","text":"Run ls?"}},{"type":"actions","block_id":"lc_actions","elements":[]}]},
 "response_url":"https://hooks.slack.com/actions/AABA1ABCD/1232321423432/D09sSasdasdAS9091209",
 "actions":[{"action_id":"lc_0","block_id":"lc_actions","text":{"type":"plain_text","text":"Yes","emoji":true},
  "value":"ap:42:yes","type":"button","action_ts":"1548426417.840180"}]}`

func withAction(t *testing.T, edit func(*interaction)) interaction {
	it := decode[interaction](t, sampleAction)
	edit(&it)
	return it
}

func TestParserAction(t *testing.T) {
	pressed := channel.Inbound{ID: "action:12321423423.333649436676.d8c1bb837935619ccad0f624c448ffb3", Workspace: "T9TK3CUKW",
		User: "UA8RXUSPL", Name: "jtorrance", Principal: "UA8RXUSPL", To: "DBR2V3XEX/1548261000.000100", Thread: "1548261000.000100",
		Addressed: true, Action: "ap:42:yes", At: time.Unix(1548426417, 840180000).UTC()}
	inChannel := pressed
	inChannel.Principal, inChannel.Group, inChannel.To = "#CBR2V3XEX", true, "CBR2V3XEX/1548261000.000100"
	mainDM := pressed
	mainDM.To, mainDM.Thread = "DBR2V3XEX", ""
	tests := []struct {
		name   string
		parser Parser
		it     interaction
		want   channel.Inbound
		ok     bool
		err    error
	}{
		{name: "a press in a DM thread", it: decode[interaction](t, sampleAction), want: pressed, ok: true},
		{name: "a press in a channel's thread is the channel's", it: withAction(t, func(it *interaction) {
			it.Container.ChannelID, it.Channel.ID = "CBR2V3XEX", "CBR2V3XEX"
		}), want: inChannel, ok: true},
		{name: "a press outside threads, the thread taken from the message", it: withAction(t, func(it *interaction) {
			it.Container.ThreadTS, it.Message.ThreadTS = "", ""
		}), want: mainDM, ok: true},
		{name: "a prompt that became a thread's parent is not in that thread", it: withAction(t, func(it *interaction) {
			it.Container.ThreadTS, it.Message.ThreadTS = "", "1548261231.000200"
		}), want: mainDM, ok: true},
		{name: "another app's block is ignored", it: withAction(t, func(it *interaction) { it.Actions[0].BlockID = "other" })},
		{name: "a select menu is ignored", it: withAction(t, func(it *interaction) { it.Actions[0].Type = "static_select" })},
		{name: "a view submission is ignored", it: withAction(t, func(it *interaction) { it.Type = "view_submission" })},
		{name: "a press in a view is ignored", it: withAction(t, func(it *interaction) { it.Container.Type = "view" })},
		{name: "another workspace is refused", parser: Parser{Bot: Bot{TeamID: "T1"}}, it: decode[interaction](t, sampleAction), err: errForeignTeam},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := tt.parser.Action(tt.it)
			if err != tt.err || ok != tt.ok {
				t.Fatalf("Action = ok %v, err %v; want ok %v, err %v", ok, err, tt.ok, tt.err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Action (-want +got):\n%s", diff)
			}
		})
	}
}

func TestText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"<@UBOT> hello", "hello"},
		{"hi <@UBOT|claw>, and <@U999>", "hi , and <@U999>"},
		{"see <https://example.com/a?b=1&amp;c=2|the page> and <https://x.org>", "see the page (https://example.com/a?b=1&c=2) and https://x.org"},
		{"in <#C123|general> or <#C456>", "in #general or #C456"},
		{"<!here> <!channel> <!subteam^S1|@ops>", "@here @channel @ops"},
		{"mail <mailto:a@b.org|a@b.org>", "mail a@b.org"},
		{"1 &lt; 2 &amp;&amp; 3 &gt; 2", "1 < 2 && 3 > 2"},
		{"no markup, a < alone", "no markup, a < alone"},
		{"<https://same.org|https://same.org>", "https://same.org"},
	}
	for _, tt := range tests {
		if got := text(tt.in, "UBOT"); got != tt.want {
			t.Errorf("text(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
