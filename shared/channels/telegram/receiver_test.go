package telegram_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/telegram"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/tests/faketelegram"
)

// TestReceiverInbound: updates as Telegram sends them become the engine's
// Inbound: a private message, a group message (addressed when it mentions
// the bot, the mention removed, or replies to it), a forum topic's
// message (its own thread and address), a button press; updates from
// bots, without text or of other kinds are dropped.
func TestReceiverInbound(t *testing.T) {
	at := time.Unix(1773480600, 0).UTC()
	msg := func(id int64, chat int64, kind, text string) map[string]any {
		u := faketelegram.Message(id, chat, 42, kind, text)
		u["message"].(map[string]any)["date"] = at.Unix()
		return u
	}
	replyToBot := msg(4, -100, "supergroup", "and then?")
	replyToBot["message"].(map[string]any)["reply_to_message"] = map[string]any{"message_id": 1, "date": at.Unix(), "from": faketelegram.Bot,
		"chat": map[string]any{"id": -100, "type": "supergroup"}, "text": "earlier answer"}
	fromBot := msg(8, 42, "private", "hi")
	fromBot["message"].(map[string]any)["from"] = faketelegram.Bot
	dm := channel.Inbound{ID: "1", User: "42", Name: "U", Principal: "42", To: "42", Addressed: true, Text: "hello", At: at}
	tests := []struct {
		name   string
		update map[string]any
		want   []channel.Inbound
	}{
		{"private", msg(1, 42, "private", "hello"), []channel.Inbound{dm}},
		{"group, not addressed", msg(2, -100, "group", "hello all"),
			[]channel.Inbound{{ID: "2", User: "42", Name: "U", Principal: "-100", To: "-100", Group: true, Text: "hello all", At: at}}},
		{"group, mentioned", msg(3, -100, "supergroup", "@ClawBot what now?"),
			[]channel.Inbound{{ID: "3", User: "42", Name: "U", Principal: "-100", To: "-100", Group: true, Addressed: true, Text: "what now?", At: at}}},
		{"group, a reply to the bot", replyToBot,
			[]channel.Inbound{{ID: "4", User: "42", Name: "U", Principal: "-100", To: "-100", Group: true, Addressed: true, Text: "and then?", At: at}}},
		{"forum topic", faketelegram.InTopic(msg(5, -100, "supergroup", "@clawbot in a topic"), 77),
			[]channel.Inbound{{ID: "5", User: "42", Name: "U", Principal: "-100", To: "-100/77", Thread: "77", Group: true, Addressed: true, Text: "in a topic", At: at}}},
		{"button press", faketelegram.Callback(6, 42, 42, "private", 10, "ap:tg-1-0:yes"),
			[]channel.Inbound{{ID: "6", User: "42", Name: "U", Principal: "42", To: "42", Addressed: true, Action: "ap:tg-1-0:yes"}}},
		{"no text", msg(7, 42, "private", ""), nil},
		{"from a bot", fromBot, nil},
		{"another kind", map[string]any{"update_id": 9, "edited_message": msg(9, 42, "private", "x")["message"]}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := faketelegram.New()
			t.Cleanup(tg.Close)
			var got []channel.Inbound
			rx := telegram.NewReceiver(telegram.NewClient(tg.URL, faketelegram.Token), nil, func(_ context.Context, in channel.Inbound) error {
				got = append(got, in)
				return nil
			}, nil)
			b, _ := json.Marshal(tt.update)
			var u telegram.Update
			if err := json.Unmarshal(b, &u); err != nil {
				t.Fatal(err)
			}
			if err := rx.Handle(t.Context(), u); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("inbound (-want +got):\n%s", d)
			}
			if n := tg.Calls("answerCallbackQuery"); (n == 1) != (tt.update["callback_query"] != nil) {
				t.Errorf("answerCallbackQuery called %d times", n)
			}
		})
	}
}
