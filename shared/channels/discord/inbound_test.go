package discord

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
)

// countingChannels answers channel lookups from a map and counts them.
type countingChannels struct {
	m     map[string]Channel
	calls int
}

func (s *countingChannels) Channel(_ context.Context, id string) (Channel, error) {
	s.calls++
	ch, ok := s.m[id]
	if !ok {
		return Channel{}, &channel.Error{Platform: Name, Method: "get channel", Status: 404, Code: "10003", Message: "Unknown Channel", Permanent: true}
	}
	return ch, nil
}

// The example payloads of Discord's documentation (application commands:
// "Slash command interaction"; messages: "Example Message").
const (
	docsCommand = `{
    "type": 2,
    "token": "A_UNIQUE_TOKEN",
    "member": {
        "user": {
            "id": "53908232506183680",
            "username": "Mason",
            "avatar": "a_d5efa99b3eeaa7dd43acca82f5692432",
            "discriminator": "1337",
            "public_flags": 131141
        },
        "roles": ["539082325061836999"],
        "premium_since": null,
        "permissions": "2147483647",
        "pending": false,
        "nick": null,
        "mute": false,
        "joined_at": "2017-03-13T19:19:14.040000+00:00",
        "is_pending": false,
        "deaf": false
    },
    "id": "786008729715212338",
    "guild_id": "290926798626357999",
    "app_permissions": "442368",
    "guild_locale": "en-US",
    "locale": "en-US",
    "data": {
        "options": [{
            "type": 3,
            "name": "cardname",
            "value": "The Gitrog Monster"
        }],
        "type": 1,
        "name": "cardsearch",
        "id": "771825006014889984"
    },
    "channel_id": "645027906669510667"
}`
	docsMessage = `{
  "reactions": [
    {
      "count": 1,
      "me": false,
      "emoji": {
        "id": null,
        "name": "🔥"
      }
    }
  ],
  "attachments": [],
  "tts": false,
  "embeds": [],
  "timestamp": "2017-07-11T17:27:07.299000+00:00",
  "mention_everyone": false,
  "id": "334385199974967042",
  "pinned": false,
  "edited_timestamp": null,
  "author": {
    "username": "Mason",
    "discriminator": "9999",
    "id": "53908099506183680",
    "avatar": "a_bab14f271d565501444b2ca3be944b25"
  },
  "mention_roles": [],
  "content": "Supa Hot",
  "channel_id": "290926798999357250",
  "mentions": [],
  "type": 0
}`
)

func TestDocsPayloads(t *testing.T) {
	lookups := &countingChannels{m: map[string]Channel{"645027906669510667": {ID: "645027906669510667", Type: 0, GuildID: "290926798626357999"}}}
	c := conversations{client: lookups}
	ctx := context.Background()

	var it Interaction
	if err := json.Unmarshal([]byte(docsCommand), &it); err != nil {
		t.Fatal(err)
	}
	got, err := c.fromInteraction(ctx, &it)
	if err != nil {
		t.Fatal(err)
	}
	want := channel.Inbound{ID: "786008729715212338", Workspace: "290926798626357999", User: "53908232506183680", Name: "Mason",
		Principal: "#645027906669510667", To: "i/645027906669510667/A_UNIQUE_TOKEN", Group: true, Addressed: true,
		Text: "/cardsearch", At: time.Date(2020, 12, 8, 23, 18, 4, 500_000_000, time.UTC)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	// The channel is looked up once.
	if _, err := c.fromInteraction(ctx, &it); err != nil || lookups.calls != 1 {
		t.Errorf("second lookup: %v, %d calls; want 1", err, lookups.calls)
	}

	var m Message
	if err := json.Unmarshal([]byte(docsMessage), &m); err != nil {
		t.Fatal(err)
	}
	gotMsg, ok, err := c.fromMessage(ctx, &m, "1098765432109876544")
	if err != nil || !ok {
		t.Fatalf("fromMessage: %v, %v", ok, err)
	}
	wantMsg := channel.Inbound{ID: "334385199974967042", User: "53908099506183680", Name: "Mason", Principal: "53908099506183680",
		To: "c/290926798999357250", Addressed: true, Text: "Supa Hot", At: time.Date(2017, 7, 11, 17, 27, 7, 299_000_000, time.UTC)}
	if diff := cmp.Diff(wantMsg, gotMsg, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}

func TestSnowflakeTime(t *testing.T) {
	// Discord's documented example: 175928847299117063 was made at
	// 2016-04-30 11:18:25.796 UTC.
	if got, want := snowflakeTime("175928847299117063"), time.Date(2016, 4, 30, 11, 18, 25, 796_000_000, time.UTC); !got.Equal(want) {
		t.Errorf("snowflakeTime = %v, want %v", got, want)
	}
	if got := snowflakeTime("x"); !got.IsZero() {
		t.Errorf("snowflakeTime(x) = %v, want zero", got)
	}
}
