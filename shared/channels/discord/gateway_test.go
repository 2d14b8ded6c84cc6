package discord_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/discord"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/tests/fakediscord"
)

// memState is a State in memory.
type memState struct {
	mu sync.Mutex
	m  map[string]string
}

func (s *memState) State(_ context.Context, key string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key], nil
}

func (s *memState) SetState(_ context.Context, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]string{}
	}
	s.m[key] = value
	return nil
}

// runGateway runs a Gateway until the test ends or stop is called; done
// is closed with Run's error once it returned.
func runGateway(t *testing.T, f *fakediscord.Server, token string, state discord.State, handle func(context.Context, channel.Inbound) error) (stop func(), done <-chan error) {
	t.Helper()
	g, err := discord.NewGateway(discord.Config{
		Client: discord.NewClient(f.APIBase(), token, fakediscord.AppID), Handle: handle, State: state, Log: slog.New(slog.NewTextHandler(t.Output(), nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	g.MinDelay = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	go func() { ch <- g.Run(ctx) }()
	stop = func() {
		cancel()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Error("the gateway did not stop")
		}
	}
	t.Cleanup(cancel)
	return stop, ch
}

func waitFor(t *testing.T, f *fakediscord.Server, what string, cond func() bool) {
	t.Helper()
	if !f.Wait(10*time.Second, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestGatewayMessages(t *testing.T) {
	f := newFake(t)
	var rec recorder
	runGateway(t, f, fakediscord.Token, nil, rec.handle)
	waitFor(t, f, "READY", f.Connected)

	dmMsg := f.MessageCreate("", dm, alice, "hello there")
	chatter := f.MessageCreate(guild, general, bob, "lunch anyone?")
	mention := f.MessageCreate(guild, general, alice, "<@"+fakediscord.BotID+"> what is 2+2?", fakediscord.BotID)
	reply := f.MessageCreate(guild, thread, bob, "and 3+3?")
	reply["type"] = 19
	reply["message_reference"] = map[string]any{"message_id": "1100000000000000900", "channel_id": thread, "guild_id": guild}
	reply["referenced_message"] = map[string]any{"id": "1100000000000000900", "channel_id": thread, "content": "4", "author": fakediscord.Bot, "type": 0}
	own := f.MessageCreate(guild, general, fakediscord.BotID, "my own words")
	otherBot := f.MessageCreate(guild, general, "1100000000000000555", "beep")
	otherBot["author"].(map[string]any)["bot"] = true
	for _, m := range []map[string]any{dmMsg, chatter, mention, reply, own, otherBot} {
		if _, err := f.Dispatch("MESSAGE_CREATE", m); err != nil {
			t.Fatal(err)
		}
	}
	inbound := func(m map[string]any, principal, thread, text string, group, addressed bool) channel.Inbound {
		a := m["author"].(map[string]any)
		ch := m["channel_id"].(string)
		g, _ := m["guild_id"].(string)
		return channel.Inbound{ID: m["id"].(string), Workspace: g, User: a["id"].(string), Name: a["username"].(string),
			Principal: principal, Thread: thread, To: discord.ChannelAddress(ch), Group: group, Addressed: addressed, Text: text}
	}
	want := []channel.Inbound{
		inbound(dmMsg, alice, "", "hello there", false, true),
		inbound(chatter, "#"+general, "", "lunch anyone?", true, false),
		inbound(mention, "#"+general, "", "what is 2+2?", true, true),
		inbound(reply, "#"+general, thread, "and 3+3?", true, true),
	}
	waitFor(t, f, "the messages", func() bool { return len(rec.got()) >= len(want) })
	if diff := cmp.Diff(want, rec.got(), cmpopts.IgnoreFields(channel.Inbound{}, "At")); diff != "" {
		t.Errorf("inbounds (-want +got):\n%s", diff)
	}
	for _, in := range rec.got() {
		if time.Since(in.At) > time.Minute {
			t.Errorf("%s at %v, want the message's timestamp", in.ID, in.At)
		}
	}
	if n := f.Identifies(); n != 1 {
		t.Errorf("identified %d times, want 1", n)
	}
}

func TestGatewayHeartbeatsAndResumes(t *testing.T) {
	f := newFake(t)
	f.SetHeartbeatInterval(100)
	var rec recorder
	runGateway(t, f, fakediscord.Token, nil, rec.handle)
	waitFor(t, f, "READY", f.Connected)
	waitFor(t, f, "heartbeats", func() bool { return f.Heartbeats() >= 3 })
	if _, err := f.Dispatch("MESSAGE_CREATE", f.MessageCreate("", dm, alice, "one")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, "the first message", func() bool { return len(rec.got()) == 1 })

	// A heartbeat not acknowledged: the connection is dead; the client
	// drops it and resumes from the last event it had.
	seq := f.Seq()
	f.NoAck(true)
	waitFor(t, f, "a RESUME", func() bool { return len(f.Resumes()) >= 1 })
	f.NoAck(false)
	if got := f.Resumes()[0]; got != seq {
		t.Errorf("resumed at seq %d, want %d", got, seq)
	}
	waitFor(t, f, "RESUMED", f.Connected)

	// Asked to reconnect (op 7): resumes again.
	n := len(f.Resumes())
	op(t, f, 7, nil)
	waitFor(t, f, "a second RESUME", func() bool { return len(f.Resumes()) > n && f.Connected() })

	// A heartbeat asked for (op 1) is sent at once.
	beats := f.Heartbeats()
	op(t, f, 1, nil)
	waitFor(t, f, "the asked-for heartbeat", func() bool { return f.Heartbeats() > beats })

	// The session is gone (op 9, not resumable): identifies afresh.
	op(t, f, 9, false)
	waitFor(t, f, "a second IDENTIFY", func() bool { return f.Identifies() == 2 && f.Connected() })
	if _, err := f.Dispatch("MESSAGE_CREATE", f.MessageCreate("", dm, alice, "two")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, "the second message", func() bool { return len(rec.got()) == 2 })
	if got := rec.got(); got[1].Text != "two" {
		t.Errorf("second message %+v", got[1])
	}
}

// op sends a bare opcode once a client is connected (a slow heartbeat
// acknowledgement may have made it reconnect).
func op(t *testing.T, f *fakediscord.Server, n int, d any) {
	t.Helper()
	if !f.Wait(10*time.Second, func() bool { return f.Connected() && f.Op(n, d) == nil }) {
		t.Fatalf("could not send op %d", n)
	}
}

func TestGatewayRestartResumesWhereItLeft(t *testing.T) {
	f := newFake(t)
	var state memState
	var first recorder
	stop, _ := runGateway(t, f, fakediscord.Token, &state, first.handle)
	waitFor(t, f, "READY", f.Connected)
	if _, err := f.Dispatch("MESSAGE_CREATE", f.MessageCreate("", dm, alice, "before")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, "the first message", func() bool { return len(first.got()) == 1 })
	stop()
	waitFor(t, f, "the disconnection", func() bool { return !f.Connected() })

	// Sent while the process is down: the session replays it.
	missed := f.MessageCreate("", dm, alice, "while you were away")
	if _, err := f.Dispatch("MESSAGE_CREATE", missed); err != nil {
		t.Fatal(err)
	}
	var second recorder
	runGateway(t, f, fakediscord.Token, &state, second.handle)
	waitFor(t, f, "the missed message", func() bool { return len(second.got()) >= 1 })
	var texts []string
	for _, in := range second.got() {
		texts = append(texts, in.Text)
	}
	if diff := cmp.Diff([]string{"while you were away"}, texts); diff != "" {
		t.Errorf("after the restart (-want +got):\n%s", diff)
	}
	if n := f.Identifies(); n != 1 {
		t.Errorf("identified %d times, want 1 (then resumed)", n)
	}
	var s struct {
		Seq int64 `json:"seq"`
	}
	v, _ := state.State(context.Background(), discord.KeyGatewaySession)
	if err := json.Unmarshal([]byte(v), &s); err != nil || s.Seq == 0 {
		t.Errorf("kept session %q", v)
	}
}

func TestGatewayTriesAgain(t *testing.T) {
	f := newFake(t)
	var rec recorder
	failures := 2
	var mu sync.Mutex
	runGateway(t, f, fakediscord.Token, nil, func(ctx context.Context, in channel.Inbound) error {
		mu.Lock()
		defer mu.Unlock()
		if failures > 0 {
			failures--
			return errors.New("database is locked")
		}
		return rec.handle(ctx, in)
	})
	waitFor(t, f, "READY", f.Connected)
	if _, err := f.Dispatch("MESSAGE_CREATE", f.MessageCreate("", dm, alice, "are you there?")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, "the message, handed over at the third try", func() bool { return len(rec.got()) == 1 })
}

func TestGatewayGivesUp(t *testing.T) {
	f := newFake(t)
	_, done := runGateway(t, f, "not-the-token-0123456789abcdef", nil, (&recorder{}).handle)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "bot token") || strings.Contains(err.Error(), "not-the-token") {
			t.Errorf("Run = %v, want a refused token, not shown", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run kept trying with a bad token")
	}

	// A kept session resumed with a token Discord refuses: closed 4004.
	state := &memState{}
	state.SetState(context.Background(), discord.KeyGatewaySession,
		`{"session_id":"abc","resume_gateway_url":"ws`+strings.TrimPrefix(f.URL, "http")+`/gateway","seq":3}`)
	_, done = runGateway(t, f, "not-the-token-0123456789abcdef", state, (&recorder{}).handle)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "4004") {
			t.Errorf("Run = %v, want authentication failed (4004)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run kept trying with a bad token")
	}
}

func TestGatewayInteractions(t *testing.T) {
	f := newFake(t)
	var rec recorder
	runGateway(t, f, fakediscord.Token, nil, rec.handle)
	waitFor(t, f, "READY", f.Connected)
	it := f.SlashCommand("", dm, alice, "ask", "via the gateway")
	press := f.ButtonPress("", dm, alice, "1100000000000000999", "ap:1:no")
	for _, x := range []fakediscord.Interaction{it, press} {
		f.Register(x)
		if _, err := f.Dispatch("INTERACTION_CREATE", x); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, f, "the interactions", func() bool { return len(rec.got()) == 2 })
	if diff := cmp.Diff([][]int{{5}, {6}}, [][]int{f.Responses(it.ID()), f.Responses(press.ID())}); diff != "" {
		t.Errorf("callbacks (-want +got):\n%s", diff)
	}
	got := rec.got()
	if got[0].Text != "via the gateway" || got[0].To != discord.InteractionAddress(dm, it.Token()) || got[1].Action != "ap:1:no" {
		t.Errorf("inbounds %+v", got)
	}
}
