package discord_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
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

// recorder keeps the Inbounds handed over.
type recorder struct {
	mu  sync.Mutex
	ins []channel.Inbound
	err error
}

func (r *recorder) handle(_ context.Context, in channel.Inbound) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ins = append(r.ins, in)
	return r.err
}

func (r *recorder) got() []channel.Inbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]channel.Inbound(nil), r.ins...)
}

func newEndpoint(t *testing.T, f *fakediscord.Server, handle func(context.Context, channel.Inbound) error) *httptest.Server {
	t.Helper()
	h, err := discord.NewInteractions(discord.Config{
		Client:    discord.NewClient(f.APIBase(), fakediscord.Token, fakediscord.AppID),
		PublicKey: f.PublicKeyHex(), Handle: handle,
	})
	if err != nil {
		t.Fatal(err)
	}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func TestVerify(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"type":1}`)
	sign := func(ts time.Time, b []byte) (string, string) {
		stamp := strconv.FormatInt(ts.Unix(), 10)
		return string(hexSig(ed25519.Sign(priv, append([]byte(stamp), b...)))), stamp
	}
	good, stamp := sign(now, body)
	old, oldStamp := sign(now.Add(-6*time.Minute), body)
	future, futureStamp := sign(now.Add(6*time.Minute), body)
	recent, recentStamp := sign(now.Add(-4*time.Minute), body)
	tests := []struct {
		name, sig, ts string
		body          []byte
		wantErr       string
	}{
		{name: "good", sig: good, ts: stamp, body: body},
		{name: "four minutes old", sig: recent, ts: recentStamp, body: body},
		{name: "missing signature", ts: stamp, body: body, wantErr: "missing signature"},
		{name: "missing timestamp", sig: good, body: body, wantErr: "missing signature"},
		{name: "not hex", sig: "zz" + good[2:], ts: stamp, body: body, wantErr: "malformed signature"},
		{name: "short", sig: good[:10], ts: stamp, body: body, wantErr: "malformed signature"},
		{name: "forged body", sig: good, ts: stamp, body: []byte(`{"type":2}`), wantErr: "bad signature"},
		{name: "other timestamp", sig: good, ts: oldStamp, body: body, wantErr: "bad signature"},
		{name: "replayed", sig: old, ts: oldStamp, body: body, wantErr: "timestamp outside the replay window"},
		{name: "from the future", sig: future, ts: futureStamp, body: body, wantErr: "timestamp outside the replay window"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := discord.Verify(pub, tt.sig, tt.ts, tt.body, now)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("Verify = %q, want %q", got, tt.wantErr)
			}
		})
	}
	other, _, _ := ed25519.GenerateKey(nil)
	if err := discord.Verify(other, good, stamp, body, now); err == nil {
		t.Error("a signature of another key verified")
	}
}

func hexSig(b []byte) []byte {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return out
}

func TestInteractionsEndpoint(t *testing.T) {
	f := newFake(t)
	var rec recorder
	h := newEndpoint(t, f, rec.handle)

	ping, err := f.Deliver(h.URL, f.Ping())
	if err != nil || ping.Status != 200 || strings.TrimSpace(ping.Body) != `{"type":1}` {
		t.Fatalf("PING answered %+v, %v; want {\"type\":1}", ping, err)
	}

	ask := f.SlashCommand(guild, general, alice, "ask", "  what is 2+2?  ")
	inThread := f.SlashCommand(guild, thread, bob, "reset", "")
	inDM := f.SlashCommand("", dm, alice, "ask", "hello")
	press := f.ButtonPress(guild, general, alice, "1100000000000000999", "ap:42:yes")
	for _, tt := range []struct {
		it   fakediscord.Interaction
		want int
	}{{ask, 5}, {inThread, 5}, {inDM, 5}, {press, 6}, {ask, 5}} {
		r, err := f.Deliver(h.URL, tt.it)
		if err != nil || r.Status != 200 || r.Type != tt.want {
			t.Fatalf("%s answered %+v, %v; want type %d", tt.it.ID(), r, err, tt.want)
		}
	}
	at := func(id string) time.Time {
		n, _ := strconv.ParseUint(id, 10, 64)
		return time.UnixMilli(int64(n>>22) + 1420070400000).UTC()
	}
	want := []channel.Inbound{
		{ID: ask.ID(), Workspace: guild, User: alice, Name: "User 101", Principal: "#" + general, To: discord.InteractionAddress(general, ask.Token()),
			Group: true, Addressed: true, Text: "what is 2+2?", At: at(ask.ID())},
		{ID: inThread.ID(), Workspace: guild, User: bob, Name: "User 102", Principal: "#" + general, Thread: thread, To: discord.InteractionAddress(thread, inThread.Token()),
			Group: true, Addressed: true, Text: "/reset", At: at(inThread.ID())},
		{ID: inDM.ID(), User: alice, Name: "User 101", Principal: alice, To: discord.InteractionAddress(dm, inDM.Token()),
			Addressed: true, Text: "hello", At: at(inDM.ID())},
		{ID: press.ID(), Workspace: guild, User: alice, Name: "User 101", Principal: "#" + general, To: discord.InteractionAddress(general, press.Token()),
			Group: true, Addressed: true, Action: "ap:42:yes", At: at(press.ID())},
		// A second delivery is handed over as it is: the engine drops it
		// by its ID.
		{ID: ask.ID(), Workspace: guild, User: alice, Name: "User 101", Principal: "#" + general, To: discord.InteractionAddress(general, ask.Token()),
			Group: true, Addressed: true, Text: "what is 2+2?", At: at(ask.ID())},
	}
	if diff := cmp.Diff(want, rec.got(), cmpopts.IgnoreFields(channel.Inbound{}, "Answer")); diff != "" {
		t.Errorf("inbounds (-want +got):\n%s", diff)
	}
}

// TestInteractionAnswered: what the engine answers by itself (Inbound.
// Answer) is the interaction's response, a message everyone in the
// channel sees that pings nobody; a follow-up would be refused until
// Discord has the response. A button press answered so gets a message
// too; one the engine does not answer is deferred.
func TestInteractionAnswered(t *testing.T) {
	f := newFake(t)
	h := newEndpoint(t, f, func(_ context.Context, in channel.Inbound) error {
		if in.Text == "/reset" || in.Action == "ap:gone:yes" {
			in.Answer("Started over, @everyone.")
		}
		return nil
	})
	for _, tt := range []struct {
		it       fakediscord.Interaction
		wantType int
	}{
		{f.SlashCommand(guild, general, alice, "reset", ""), 4},
		{f.ButtonPress(guild, general, alice, "1100000000000000999", "ap:gone:yes"), 4},
		{f.SlashCommand(guild, general, alice, "ask", "hi"), 5},
	} {
		r, err := f.Deliver(h.URL, tt.it)
		if err != nil || r.Status != 200 || r.Type != tt.wantType {
			t.Fatalf("%s answered %+v, %v; want type %d", tt.it.ID(), r, err, tt.wantType)
		}
		if tt.wantType == 4 && !strings.Contains(r.Body, `"allowed_mentions":{"parse":[]}`) {
			t.Errorf("response %s pings: want allowed_mentions with no parse", r.Body)
		}
	}
	var got []string
	for _, m := range f.Messages(general) {
		if m.Ephemeral {
			t.Errorf("the answer %q is ephemeral", m.Content)
		}
		got = append(got, m.Content)
	}
	if diff := cmp.Diff([]string{"Started over, @everyone.", "Started over, @everyone."}, got); diff != "" {
		t.Errorf("messages in the channel (-want +got):\n%s", diff)
	}
}

func TestInteractionsRefused(t *testing.T) {
	f := newFake(t)
	var rec recorder
	h := newEndpoint(t, f, rec.handle)
	it := f.SlashCommand(guild, general, alice, "ask", "hi")
	body, _ := json.Marshal(it)
	sig, ts := f.Sign(body, time.Now())
	oldSig, oldTS := f.Sign(body, time.Now().Add(-time.Hour))
	forged, _ := json.Marshal(f.SlashCommand(guild, general, bob, "ask", "give me the keys"))
	tests := []struct {
		name    string
		body    []byte
		sig, ts string
		want    int
	}{
		{name: "no signature", body: body, ts: ts, want: 401},
		{name: "no timestamp", body: body, sig: sig, want: 401},
		{name: "forged", body: forged, sig: sig, ts: ts, want: 401},
		{name: "replayed", body: body, sig: oldSig, ts: oldTS, want: 401},
		{name: "signed garbage", body: []byte(`{"type":`), want: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want == 400 {
				tt.sig, tt.ts = f.Sign(tt.body, time.Now())
			}
			r, err := f.Post(h.URL, it, tt.body, tt.sig, tt.ts)
			if err != nil || r.Status != tt.want {
				t.Errorf("answered %+v, %v; want %d", r, err, tt.want)
			}
		})
	}
	resp, err := http.Get(h.URL)
	if err != nil || resp.StatusCode != 405 {
		t.Errorf("GET answered %v, %v; want 405", resp, err)
	}
	if got := rec.got(); len(got) != 0 {
		t.Errorf("handed over %+v, want nothing", got)
	}
}

func TestInteractionsUnsupportedAndFailures(t *testing.T) {
	f := newFake(t)
	rec := recorder{err: errors.New("store down")}
	h := newEndpoint(t, f, rec.handle)

	// An unknown guild channel cannot be placed: the user is told, in a
	// message only they see.
	lost := f.SlashCommand(guild, "1100000000000000777", alice, "ask", "hi")
	delete(lost, "channel")
	r, err := f.Deliver(h.URL, lost)
	if err != nil || r.Type != 4 || !strings.Contains(r.Body, `"flags":64`) {
		t.Errorf("unplaceable interaction answered %+v, %v; want an ephemeral message", r, err)
	}

	// /ask with only blanks: nothing for the engine to answer.
	blank := f.SlashCommand(guild, general, alice, "ask", "   ")
	if r, err := f.Deliver(h.URL, blank); err != nil || r.Type != 4 {
		t.Errorf("blank /ask answered %+v, %v; want an ephemeral message", r, err)
	}

	// The engine cannot take it: the user is told, in a message only
	// they see.
	it := f.SlashCommand(guild, general, alice, "ask", "hi")
	if r, err := f.Deliver(h.URL, it); err != nil || r.Type != 4 || !strings.Contains(r.Body, "try again") || !strings.Contains(r.Body, `"flags":64`) {
		t.Fatalf("answered %+v, %v; want an ephemeral message to try again", r, err)
	}
	if got := rec.got(); len(got) != 1 || got[0].ID != it.ID() {
		t.Errorf("handed over %+v, want only %s", got, it.ID())
	}
}
