package telegram_test

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/telegram"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/tests/faketelegram"
)

// TestPlatformSend: a message goes to its chat, or its forum topic, with
// its buttons as an inline keyboard; an edit and a deletion reach it; a
// bad address is refused before any call; Telegram's refusals are
// *channel.Error, a rate limit with its retry_after.
func TestPlatformSend(t *testing.T) {
	tg := faketelegram.New()
	t.Cleanup(tg.Close)
	p := telegram.NewPlatform(telegram.NewClient(tg.URL, faketelegram.Token), nil)
	ctx := t.Context()
	buttons := []channel.Button{{Label: "Yes", Value: "ap:r-0:yes"}, {Label: "No", Value: "ap:r-0:no"}}
	if _, err := p.Send(ctx, channel.Outgoing{To: "-100/77", Text: "in the topic", Buttons: buttons}); err != nil {
		t.Fatal(err)
	}
	id, err := p.Send(ctx, channel.Outgoing{To: "42", Text: "draft"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Edit(ctx, "42", id, "edited"); err != nil {
		t.Fatal(err)
	}
	want := []faketelegram.Sent{{ChatID: -100, MessageID: 101, ThreadID: 77, Text: "in the topic",
		Buttons: []faketelegram.Button{{Text: "Yes", CallbackData: "ap:r-0:yes"}, {Text: "No", CallbackData: "ap:r-0:no"}}}}
	if d := cmp.Diff(want, tg.Messages(-100)); d != "" {
		t.Errorf("topic (-want +got):\n%s", d)
	}
	if got := tg.Messages(42); len(got) != 1 || got[0].Text != "edited" {
		t.Errorf("chat 42: %+v", got)
	}
	if err := p.Delete(ctx, "42", id); err != nil || len(tg.Messages(42)) != 0 {
		t.Errorf("delete: %v, left %+v", err, tg.Messages(42))
	}
	for _, to := range []string{"", "abc", "42/x", "42/-1", "0"} {
		if _, err := p.Send(ctx, channel.Outgoing{To: to, Text: "x"}); err == nil {
			t.Errorf("Send to %q succeeded", to)
		}
	}
	if n := tg.Calls("sendMessage"); n != 2 {
		t.Errorf("%d sendMessage calls, want 2 (bad addresses call nothing)", n)
	}
	tg.FailNext("sendMessage", faketelegram.Failure{Code: 429, RetryAfter: 3}, faketelegram.Failure{Code: 403, Description: "Forbidden: bot was blocked by the user"})
	var pe *channel.Error
	if _, err := p.Send(ctx, channel.Outgoing{To: "42", Text: "x"}); !errors.As(err, &pe) || pe.RetryAfter != 3*time.Second || pe.Permanent {
		t.Errorf("rate limit: %#v", err)
	}
	if _, err := p.Send(ctx, channel.Outgoing{To: "42", Text: "x"}); !errors.As(err, &pe) || !pe.Permanent || pe.Status != 403 {
		t.Errorf("blocked: %#v", err)
	}
}
