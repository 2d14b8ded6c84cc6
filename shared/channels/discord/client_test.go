package discord_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/discord"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/tests/fakediscord"
)

// The client is the port's Platform with all its optional abilities.
var (
	_ channel.Platform = (*discord.Client)(nil)
	_ channel.Editor   = (*discord.Client)(nil)
	_ channel.Deleter  = (*discord.Client)(nil)
	_ channel.Typer    = (*discord.Client)(nil)
)

const (
	guild   = "1100000000000000001"
	general = "1100000000000000002"
	thread  = "1100000000000000003"
	dm      = "1100000000000000004"
	hidden  = "1100000000000000005"
	alice   = "1100000000000000101"
	bob     = "1100000000000000102"
)

func newFake(t *testing.T) *fakediscord.Server {
	t.Helper()
	f := fakediscord.New()
	t.Cleanup(f.Close)
	f.AddChannel(fakediscord.Channel{ID: general, GuildID: guild, Type: 0})
	f.AddChannel(fakediscord.Channel{ID: thread, GuildID: guild, ParentID: general, Type: 11})
	f.AddChannel(fakediscord.Channel{ID: dm, Type: 1})
	f.AddChannel(fakediscord.Channel{ID: hidden, GuildID: guild, Type: 0, NoAccess: true})
	return f
}

func TestClientSendEditDeleteTyping(t *testing.T) {
	f := newFake(t)
	c := discord.NewClient(f.APIBase(), fakediscord.Token, fakediscord.AppID)
	ctx := context.Background()
	to := discord.ChannelAddress(general)
	id, err := c.Send(ctx, channel.Outgoing{To: to, Text: "Run `rm -rf build`?", Buttons: []channel.Button{
		{Label: "Yes", Value: "ap:7:yes"}, {Label: "No", Value: "ap:7:no"}, {Label: "Always", Value: "ap:7:always"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Edit(ctx, to, id, "Run `rm -rf build`? (answered)"); err != nil {
		t.Fatal(err)
	}
	draft, err := c.Send(ctx, channel.Outgoing{To: to, Text: "thinking"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, to, draft); err != nil {
		t.Fatal(err)
	}
	if err := c.Typing(ctx, to); err != nil {
		t.Fatal(err)
	}
	want := []fakediscord.Message{{ID: id, ChannelID: general, Content: "Run `rm -rf build`? (answered)", Edits: 1,
		Buttons: []string{"ap:7:yes", "ap:7:no", "ap:7:always"}, Labels: []string{"Yes", "No", "Always"}, Styles: []int{1, 4, 1}}}
	if diff := cmp.Diff(want, f.Messages(general)); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if n := f.Typing(general); n != 1 {
		t.Errorf("typing shown %d times, want 1", n)
	}
}

func TestClientFollowUps(t *testing.T) {
	f := newFake(t)
	c := discord.NewClient(f.APIBase(), fakediscord.Token, fakediscord.AppID)
	ctx := context.Background()
	it := f.SlashCommand(guild, general, alice, "ask", "hi")
	to := discord.InteractionAddress(general, it.Token())

	// Before the interaction is answered its webhook is unknown: worth
	// retrying (the deferral may be on its way), not permanent.
	_, err := c.Send(ctx, channel.Outgoing{To: to, Text: "early"})
	var ce *channel.Error
	if !errors.As(err, &ce) || ce.Code != "10015" || ce.Permanent {
		t.Fatalf("follow-up before the deferral: %v, want a retryable Unknown Webhook", err)
	}
	if strings.Contains(err.Error(), it.Token()) {
		t.Errorf("error shows the interaction token: %v", err)
	}

	h := newEndpoint(t, f, func(context.Context, channel.Inbound) error { return nil })
	if r, err := f.Deliver(h.URL, it); err != nil || r.Type != 5 {
		t.Fatalf("deliver: %+v, %v", r, err)
	}
	id, err := c.Send(ctx, channel.Outgoing{To: to, Text: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Edit(ctx, to, id, "hello there"); err != nil {
		t.Fatal(err)
	}
	if err := c.Typing(ctx, to); err != nil {
		t.Fatal(err)
	}
	// Once the token expired, replies go to the channel as the bot.
	f.ExpireToken(it.Token())
	late, err := c.Send(ctx, channel.Outgoing{To: to, Text: "later"})
	if err != nil {
		t.Fatal(err)
	}
	want := []fakediscord.Message{
		{ID: id, ChannelID: general, Content: "hello there", Token: it.Token(), Edits: 1},
		{ID: late, ChannelID: general, Content: "later"},
	}
	if diff := cmp.Diff(want, f.Messages(general)); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestClientErrors(t *testing.T) {
	f := newFake(t)
	ctx := context.Background()
	good := discord.NewClient(f.APIBase(), fakediscord.Token, fakediscord.AppID)
	tests := []struct {
		name   string
		client *discord.Client
		limit  []fakediscord.RateLimit
		msg    channel.Outgoing
		want   *channel.Error
	}{
		{name: "bad token", client: discord.NewClient(f.APIBase(), "bad-token-0123456789abcdef", fakediscord.AppID),
			msg:  channel.Outgoing{To: discord.ChannelAddress(general), Text: "x"},
			want: &channel.Error{Platform: "discord", Method: "create message", Status: 401, Message: "401: Unauthorized", Permanent: true}},
		{name: "rate limited", limit: []fakediscord.RateLimit{{RetryAfter: 1.5}},
			msg:  channel.Outgoing{To: discord.ChannelAddress(general), Text: "x"},
			want: &channel.Error{Platform: "discord", Method: "create message", Status: 429, Message: "You are being rate limited.", RetryAfter: 1500 * time.Millisecond}},
		{name: "globally rate limited", limit: []fakediscord.RateLimit{{RetryAfter: 0.25, Global: true}},
			msg:  channel.Outgoing{To: discord.ChannelAddress(general), Text: "x"},
			want: &channel.Error{Platform: "discord", Method: "create message", Status: 429, Message: "You are being rate limited. (global)", RetryAfter: 250 * time.Millisecond}},
		{name: "missing access", msg: channel.Outgoing{To: discord.ChannelAddress(hidden), Text: "x"},
			want: &channel.Error{Platform: "discord", Method: "create message", Status: 403, Code: "50001", Message: "Missing Access", Permanent: true}},
		{name: "unknown channel", msg: channel.Outgoing{To: discord.ChannelAddress("1999"), Text: "x"},
			want: &channel.Error{Platform: "discord", Method: "create message", Status: 404, Code: "10003", Message: "Unknown Channel", Permanent: true}},
		{name: "too long", msg: channel.Outgoing{To: discord.ChannelAddress(general), Text: strings.Repeat("é", 2001)},
			want: &channel.Error{Platform: "discord", Method: "create message", Status: 400, Code: "50035", Message: "Invalid Form Body", Permanent: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.client
			if c == nil {
				c = good
			}
			f.RateLimitNext("POST /channels/{id}/messages", tt.limit...)
			_, err := c.Send(ctx, tt.msg)
			var got *channel.Error
			if !errors.As(err, &got) {
				t.Fatalf("Send: %v, want a *channel.Error", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
	if got := len(f.Messages(general)); got != 0 {
		t.Errorf("%d messages posted, want none", got)
	}
}

func TestClientRefusesBadInput(t *testing.T) {
	f := newFake(t)
	c := discord.NewClient(f.APIBase(), fakediscord.Token, fakediscord.AppID)
	ctx := context.Background()
	six := make([]channel.Button, 6)
	for i := range six {
		six[i] = channel.Button{Label: "b", Value: "v"}
	}
	for _, msg := range []channel.Outgoing{
		{To: "", Text: "x"},
		{To: "c/general", Text: "x"},
		{To: "i/" + general + "/", Text: "x"},
		{To: "x/" + general, Text: "x"},
		{To: discord.ChannelAddress(general), Text: "x", Buttons: six},
		{To: discord.ChannelAddress(general), Text: "x", Buttons: []channel.Button{{Label: "b", Value: strings.Repeat("v", 101)}}},
	} {
		if _, err := c.Send(ctx, msg); err == nil {
			t.Errorf("Send(%+v) succeeded", msg)
		}
	}
	if err := c.Edit(ctx, discord.ChannelAddress(general), "../../x", "t"); err == nil {
		t.Error("Edit of a message id that is no snowflake succeeded")
	}
	if n := f.Calls("POST /channels/{id}/messages"); n != 0 {
		t.Errorf("%d calls reached Discord, want none", n)
	}
}

func TestClientApplicationAndCommands(t *testing.T) {
	f := newFake(t)
	c := discord.NewClient(f.APIBase(), fakediscord.Token, fakediscord.AppID)
	ctx := context.Background()
	app, err := c.Application(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if app.ID != fakediscord.AppID || app.VerifyKey != f.PublicKeyHex() || app.Bot == nil || app.Bot.ID != fakediscord.BotID {
		t.Errorf("application = %+v", app)
	}
	got, err := c.RegisterCommands(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cmd := range got {
		names = append(names, cmd.Name)
	}
	if diff := cmp.Diff([]string{"ask", "reset", "stop", "help"}, names); diff != "" {
		t.Errorf("registered (-want +got):\n%s", diff)
	}
	var sent []discord.Command
	if err := json.Unmarshal(f.Commands(), &sent); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(discord.Commands(), sent, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("sent (-want +got):\n%s", diff)
	}
}

// The README shows the commands' JSON for registering them by hand: it is
// what RegisterCommands sends.
func TestReadmeCommands(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "```json\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README.md has no json block")
	}
	var got []discord.Command
	if err := json.Unmarshal([]byte(block), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(discord.Commands(), got); diff != "" {
		t.Errorf("README's commands (-want +got):\n%s", diff)
	}
}
