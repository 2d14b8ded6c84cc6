package slack_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/slack"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/tests/fakeslack"
)

var (
	_ channel.Platform = (*slack.Client)(nil)
	_ channel.Editor   = (*slack.Client)(nil)
	_ channel.Deleter  = (*slack.Client)(nil)
)

func TestClientSendEditDelete(t *testing.T) {
	fake := fakeslack.New()
	defer fake.Close()
	c := slack.NewClient(fake.APIBase(), fakeslack.BotToken)
	ctx := context.Background()

	auth, err := c.AuthTest(ctx)
	if err != nil || auth.UserID != fakeslack.BotUserID || auth.TeamID != fakeslack.TeamID {
		t.Fatalf("AuthTest = %+v, %v", auth, err)
	}
	id, err := c.Send(ctx, channel.Outgoing{To: "D1", Text: "a <!channel> & <b>"})
	if err != nil {
		t.Fatal(err)
	}
	threaded, err := c.Send(ctx, channel.Outgoing{To: "C1/1700000000.000100", Text: "in the thread"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Edit(ctx, "D1", id, "edited > once"); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "C1/1700000000.000100", threaded); err != nil {
		t.Fatal(err)
	}
	want := []fakeslack.Message{
		{Channel: "D1", TS: id, Text: "edited &gt; once", Edits: 1},
		{Channel: "C1", TS: threaded, ThreadTS: "1700000000.000100", Text: "in the thread", Deleted: true},
	}
	if diff := cmp.Diff(want, fake.Messages()); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	// A message deleted or never sent cannot be edited: a final error.
	var ce *channel.Error
	if err := c.Edit(ctx, "C1", threaded, "x"); !errors.As(err, &ce) || ce.Code != "message_not_found" || !ce.Permanent {
		t.Errorf("Edit of a deleted message = %v, want a permanent message_not_found", err)
	}
}

// TestClientButtons sends buttons as a Block Kit actions block under the
// text in sections of at most 3,000 characters, which the fake checks
// as Slack does.
func TestClientButtons(t *testing.T) {
	fake := fakeslack.New()
	defer fake.Close()
	c := slack.NewClient(fake.APIBase(), fakeslack.BotToken)
	long := strings.Repeat("é", 3500)
	buttons := []channel.Button{{Label: "Yes", Value: "ap:1:yes"}, {Label: "No", Value: "ap:1:no"}, {Label: "Always", Value: "ap:1:always"}}
	if _, err := c.Send(context.Background(), channel.Outgoing{To: "D1", Text: long, Buttons: buttons}); err != nil {
		t.Fatal(err)
	}
	m := fake.Messages()[0]
	var blocks []struct {
		Type     string `json:"type"`
		Text     struct{ Text string }
		Elements []struct{ Value string }
	}
	if err := json.Unmarshal(m.Blocks, &blocks); err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 3 || blocks[0].Text.Text+blocks[1].Text.Text != long || blocks[2].Type != "actions" {
		t.Fatalf("blocks = %s", m.Blocks)
	}
	var values []string
	for _, e := range blocks[2].Elements {
		values = append(values, e.Value)
	}
	if diff := cmp.Diff([]string{"ap:1:yes", "ap:1:no", "ap:1:always"}, values); diff != "" {
		t.Errorf("button values (-want +got):\n%s", diff)
	}
	if m.Text != long {
		t.Errorf("fallback text is not the message's text")
	}
	for _, v := range []string{"ap:1:no", "ap:1:always"} {
		if _, err := fake.Press(m, "U1", v); err != nil {
			t.Error(err)
		}
	}
}

func TestClientErrors(t *testing.T) {
	fake := fakeslack.New()
	defer fake.Close()
	ctx := context.Background()
	c := slack.NewClient(fake.APIBase(), fakeslack.BotToken)
	tests := []struct {
		name   string
		client *slack.Client
		fail   *fakeslack.Failure
		to     string
		want   channel.Error
	}{
		{name: "rate limited", fail: &fakeslack.Failure{Status: http.StatusTooManyRequests, Error: "ratelimited", RetryAfter: 30},
			want: channel.Error{Status: 429, Code: "ratelimited", RetryAfter: 30 * time.Second}},
		{name: "not in channel", fail: &fakeslack.Failure{Error: "not_in_channel"},
			want: channel.Error{Status: 200, Code: "not_in_channel", Permanent: true}},
		{name: "unknown channel", to: "X1", want: channel.Error{Status: 200, Code: "channel_not_found", Permanent: true}},
		{name: "Slack's trouble", fail: &fakeslack.Failure{Error: "internal_error"}, want: channel.Error{Status: 200, Code: "internal_error"}},
		{name: "server error", fail: &fakeslack.Failure{Status: 503, Error: "service_unavailable"}, want: channel.Error{Status: 503, Code: "service_unavailable"}},
		{name: "bad token", client: slack.NewClient(fake.APIBase(), "xoxb-wrong"), want: channel.Error{Status: 200, Code: "invalid_auth", Permanent: true}},
		{name: "app token", client: slack.NewClient(fake.APIBase(), fakeslack.AppToken), want: channel.Error{Status: 200, Code: "not_allowed_token_type", Permanent: true}},
		{name: "no token", client: slack.NewClient(fake.APIBase(), ""), want: channel.Error{Status: 200, Code: "not_authed", Permanent: true}},
		{name: "text too long", to: "D1", want: channel.Error{Status: 200, Code: "msg_too_long", Permanent: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.fail != nil {
				fake.Fail("chat.postMessage", *tt.fail)
			}
			cl, to, text := tt.client, tt.to, "hi"
			if cl == nil {
				cl = c
			}
			if to == "" {
				to = "D1"
			}
			if tt.want.Code == "msg_too_long" {
				text = strings.Repeat("&", 10_000) // 50,000 characters escaped
			}
			_, err := cl.Send(ctx, channel.Outgoing{To: to, Text: text})
			var ce *channel.Error
			if !errors.As(err, &ce) {
				t.Fatalf("Send = %v, want a *channel.Error", err)
			}
			tt.want.Platform, tt.want.Method = "slack", "chat.postMessage"
			if diff := cmp.Diff(tt.want, *ce); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if strings.Contains(err.Error(), fakeslack.BotToken) {
				t.Error("the error shows the token")
			}
		})
	}
	for _, to := range []string{"", "/1.2", "C1/1.2/3", "C 1"} {
		var ce *channel.Error
		if _, err := c.Send(ctx, channel.Outgoing{To: to, Text: "x"}); !errors.As(err, &ce) || !ce.Permanent {
			t.Errorf("Send to %q = %v, want a permanent error", to, err)
		}
	}
	if n := len(fake.Messages()); n != 0 {
		t.Errorf("%d messages posted by failed sends", n)
	}
}
