package slack_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/slack"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/tests/fakeslack"
)

func TestSocketMode(t *testing.T) {
	fake := fakeslack.New()
	defer fake.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := slack.NewClient(fake.APIBase(), fakeslack.BotToken)
	rec := &recorder{}
	s := &slack.Socket{Client: client, AppToken: fakeslack.AppToken, Receiver: &slack.Receiver{
		Parser: slack.Parser{Bot: slack.Bot{UserID: fakeslack.BotUserID, TeamID: fakeslack.TeamID}},
		Handle: rec.handle, Client: client,
	}}
	done := make(chan error, 1)
	runCtx, stop := context.WithCancel(ctx)
	go func() { done <- s.Run(runCtx) }()
	if err := fake.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}

	// A message is handed over, then acknowledged.
	id, err := fake.SocketSend(ctx, "events_api", fake.DM("D1", "U1", "1800000000.000100", "", "hello"))
	if err != nil {
		t.Fatal(err)
	}
	if err := fake.WaitAck(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := rec.got(); len(got) != 1 || got[0].Text != "hello" || got[0].To != "D1" {
		t.Fatalf("handled %+v", got)
	}

	// One the engine could not take is not acknowledged, so that Slack
	// delivers it again; the next is (envelopes are handled in order).
	rec.mu.Lock()
	rec.refuse = map[string]bool{"lost?": true}
	rec.mu.Unlock()
	failed, _ := fake.SocketSend(ctx, "events_api", fake.DM("D1", "U1", "1800000000.000200", "", "lost?"))
	// Another workspace's event is acknowledged and dropped.
	foreign := fake.DM("D1", "U1", "1800000000.000300", "", "from afar")
	foreign = []byte(string(foreign[:len(foreign)-1]) + `,"team_id":"T0OTHER"}`)
	other, _ := fake.SocketSend(ctx, "events_api", foreign)
	if err := fake.WaitAck(ctx, other); err != nil {
		t.Fatal(err)
	}
	if fake.Acked(failed) {
		t.Error("an envelope whose handling failed was acknowledged")
	}

	// Slack refreshes the connection: the client opens another.
	if err := fake.Disconnect(ctx, "refresh_requested"); err != nil {
		t.Fatal(err)
	}
	if err := fake.WaitConnections(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Send(ctx, channel.Outgoing{To: "D1", Text: "Run ls?", Buttons: []channel.Button{{Label: "Yes", Value: "ap:9:yes"}}}); err != nil {
		t.Fatal(err)
	}
	press, err := fake.Press(fake.Messages()[0], "U1", "ap:9:yes")
	if err != nil {
		t.Fatal(err)
	}
	id, _ = fake.SocketSend(ctx, "interactive", press)
	if err := fake.WaitAck(ctx, id); err != nil {
		t.Fatal(err)
	}
	got := rec.got()
	if len(got) != 2 || got[1].Action != "ap:9:yes" || got[1].Principal != "U1" || got[1].To != "D1" {
		t.Fatalf("handled %+v", got)
	}
	if _, err := fake.WaitFor(ctx, func(ms []fakeslack.Message) bool { return ms[0].Edits == 1 }); err != nil {
		t.Error("the prompt was not marked answered")
	}
	stop()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

// TestSocketModeBadToken stops at a token Slack refuses, rather than
// trying again forever.
func TestSocketModeBadToken(t *testing.T) {
	fake := fakeslack.New()
	defer fake.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := slack.NewClient(fake.APIBase(), fakeslack.BotToken)
	s := &slack.Socket{Client: client, AppToken: fakeslack.BotToken, Receiver: &slack.Receiver{Handle: (&recorder{}).handle}}
	var ce *channel.Error
	if err := s.Run(ctx); !errors.As(err, &ce) || ce.Code != "not_allowed_token_type" {
		t.Errorf("Run = %v, want not_allowed_token_type", err)
	}
}

// TestSocketModeRetries reconnects after a failure, waiting Backoff.
func TestSocketModeRetries(t *testing.T) {
	fake := fakeslack.New()
	defer fake.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fake.Fail("apps.connections.open", fakeslack.Failure{Error: "internal_error"})
	fake.Fail("apps.connections.open", fakeslack.Failure{Error: "internal_error"})
	var waits []int
	s := &slack.Socket{Client: slack.NewClient(fake.APIBase(), fakeslack.BotToken), AppToken: fakeslack.AppToken,
		Receiver: &slack.Receiver{Handle: (&recorder{}).handle},
		Backoff:  func(n int) time.Duration { waits = append(waits, n); return 0 }}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	if err := fake.WaitConnections(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// Socket Mode turned off is a failure too, after a greeting that
	// started the count again.
	if err := fake.Disconnect(ctx, "link_disabled"); err != nil {
		t.Fatal(err)
	}
	if err := fake.WaitConnections(ctx, 2); err != nil {
		t.Fatal(err)
	}
	stop()
	<-done
	if diff := cmp.Diff([]int{1, 2, 1}, waits); diff != "" {
		t.Errorf("backoffs (-want +got):\n%s", diff)
	}
}
