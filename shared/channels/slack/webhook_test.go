package slack_test

import (
	"bytes"
	"context"
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

	"github.com/lambdaclaw/lambdaclaw/shared/channels/slack"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/tests/fakeslack"
)

// TestSign checks Sign against Slack's documented example
// (api.slack.com/authentication/verifying-requests-from-slack).
func TestSign(t *testing.T) {
	body := "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
	got := slack.Sign("8f742231b10e8888abcd99yyyzzz85a5", "1531420618", []byte(body))
	if want := "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"; got != want {
		t.Errorf("Sign = %s, want %s", got, want)
	}
}

func TestVerify(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"type":"event_callback"}`)
	headers := func(secret string, at time.Time, b []byte) http.Header {
		h := http.Header{}
		s := strconv.FormatInt(at.Unix(), 10)
		h.Set(slack.TimestampHeader, s)
		h.Set(slack.SignatureHeader, slack.Sign(secret, s, b))
		return h
	}
	tests := []struct {
		name string
		h    http.Header
		want error
	}{
		{"good", headers("secret", now, body), nil},
		{"four minutes old", headers("secret", now.Add(-4*time.Minute), body), nil},
		{"six minutes old (replayed)", headers("secret", now.Add(-6*time.Minute), body), slack.ErrStale},
		{"six minutes ahead", headers("secret", now.Add(6*time.Minute), body), slack.ErrStale},
		{"another secret", headers("other", now, body), slack.ErrForged},
		{"another body", headers("secret", now, []byte(`{"type":"event_callback" }`)), slack.ErrForged},
		{"missing", http.Header{}, slack.ErrUnsigned},
		{"no timestamp", func() http.Header { h := headers("secret", now, body); h.Del(slack.TimestampHeader); return h }(), slack.ErrUnsigned},
		{"bad timestamp", func() http.Header { h := headers("secret", now, body); h.Set(slack.TimestampHeader, "soon"); return h }(), slack.ErrForged},
		{"another version", func() http.Header {
			h := headers("secret", now, body)
			h.Set(slack.SignatureHeader, "v1="+strings.TrimPrefix(h.Get(slack.SignatureHeader), "v0="))
			return h
		}(), slack.ErrForged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := slack.Verify("secret", tt.h, body, now); !errors.Is(err, tt.want) {
				t.Errorf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
	if err := slack.Verify("", headers("", now, body), body, now); !errors.Is(err, slack.ErrForged) {
		t.Errorf("Verify without a secret = %v, want %v", err, slack.ErrForged)
	}
}

// recorder is a Handle that records what it is given, but refuses the
// messages whose text is in refuse.
type recorder struct {
	mu     sync.Mutex
	ins    []channel.Inbound
	refuse map[string]bool
}

func (r *recorder) handle(_ context.Context, in channel.Inbound) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refuse[in.Text] {
		return errors.New("store down")
	}
	r.ins = append(r.ins, in)
	return nil
}

func (r *recorder) got() []channel.Inbound {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]channel.Inbound(nil), r.ins...)
}

// testNow is the clock of the receivers and of the fake's signatures.
var testNow = time.Unix(1_800_000_000, 0)

// endpoint starts a fake and serves a Receiver of its deliveries, which
// records what it hands over.
func endpoint(t *testing.T) (*fakeslack.Server, *recorder, *httptest.Server) {
	t.Helper()
	fake := fakeslack.New()
	t.Cleanup(fake.Close)
	fake.Now = func() time.Time { return testNow }
	rec := &recorder{}
	r := &slack.Receiver{
		SigningSecret: fakeslack.SigningSecret,
		Parser:        slack.Parser{Bot: slack.Bot{UserID: fakeslack.BotUserID, TeamID: fakeslack.TeamID}},
		Handle:        rec.handle,
		Client:        slack.NewClient(fake.APIBase(), fakeslack.BotToken),
		Now:           func() time.Time { return testNow },
	}
	mux := http.NewServeMux()
	mux.Handle(slack.EventsPath, r.Events())
	mux.Handle(slack.InteractivePath, r.Interactive())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return fake, rec, srv
}

func TestEvents(t *testing.T) {
	now := testNow
	fake, rec, srv := endpoint(t)
	url := srv.URL + slack.EventsPath

	// The url_verification handshake is answered with its challenge.
	resp := post(t, fake, url, fakeslack.URLVerification("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"))
	if want := `{"challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"}` + "\n"; resp != want {
		t.Errorf("url_verification answered %q, want %q", resp, want)
	}

	dm := fake.DM("D1", "U1", "1800000000.000100", "", "hello &lt;there&gt;")
	for _, c := range []struct {
		name       string
		body       []byte
		secret     string
		at         time.Time
		retry      int
		wantStatus int
	}{
		{"forged", dm, "not-the-secret", now, 0, http.StatusUnauthorized},
		{"replayed", dm, fakeslack.SigningSecret, now.Add(-10 * time.Minute), 0, http.StatusUnauthorized},
		{"delivered", dm, fakeslack.SigningSecret, now, 0, http.StatusOK},
		{"retried", dm, fakeslack.SigningSecret, now, 1, http.StatusOK},
		{"another workspace", bytes.Replace(dm, []byte(fakeslack.TeamID), []byte("T0OTHER"), -1), fakeslack.SigningSecret, now, 0, http.StatusForbidden},
		{"not JSON", []byte("{"), fakeslack.SigningSecret, now, 0, http.StatusBadRequest},
		{"too large", bytes.Repeat([]byte(" "), 2<<20), fakeslack.SigningSecret, now, 0, http.StatusRequestEntityTooLarge},
	} {
		status, err := fake.DeliverSigned(url, c.body, false, c.retry, c.secret, c.at)
		if err != nil || status != c.wantStatus {
			t.Errorf("%s: status %d, %v; want %d", c.name, status, err, c.wantStatus)
		}
	}
	// Both deliveries of the message reach the engine with one ID, which
	// it drops the second time.
	want := channel.Inbound{ID: fakeslack.TeamID + ":D1:1800000000.000100", Workspace: fakeslack.TeamID, User: "U1",
		Principal: "U1", To: "D1", Addressed: true, Text: "hello <there>", At: time.Unix(1800000000, 100000).UTC()}
	if diff := cmp.Diff([]channel.Inbound{want, want}, rec.got()); diff != "" {
		t.Errorf("handled (-want +got):\n%s", diff)
	}

	// A failure to take the event answers 500, so that Slack retries.
	rec.mu.Lock()
	rec.refuse = map[string]bool{"hi": true}
	rec.mu.Unlock()
	if status, _ := fake.Deliver(url, fake.Mention("C1", "U1", "1800000000.000200", "", "hi"), false, 0); status != http.StatusInternalServerError {
		t.Errorf("failed handle: status %d, want 500", status)
	}
	// GET is not a delivery.
	if r, err := http.Get(url); err != nil || r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %v %v", r.StatusCode, err)
	}
}

func post(t *testing.T, fake *fakeslack.Server, url string, body []byte) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	ts := strconv.FormatInt(fake.Now().Unix(), 10)
	req.Header.Set(slack.TimestampHeader, ts)
	req.Header.Set(slack.SignatureHeader, slack.Sign(fakeslack.SigningSecret, ts, body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return b.String()
}

func TestInteractive(t *testing.T) {
	now := testNow
	fake, rec, srv := endpoint(t)
	url := srv.URL + slack.InteractivePath
	client := slack.NewClient(fake.APIBase(), fakeslack.BotToken)
	ctx := context.Background()

	buttons := []channel.Button{{Label: "Yes", Value: "ap:7:yes"}, {Label: "No", Value: "ap:7:no"}}
	if _, err := client.Send(ctx, channel.Outgoing{To: "D1/1799999999.000001", Text: "Run `ls`?", Buttons: buttons}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Send(ctx, channel.Outgoing{To: "C1/1799999999.000002", Text: "Run `rm`?", Buttons: buttons}); err != nil {
		t.Fatal(err)
	}
	msgs := fake.Messages()
	press, err := fake.Press(msgs[0], "U1", "ap:7:no")
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := fake.DeliverSigned(url, press, true, 0, "forged", now); status != http.StatusUnauthorized {
		t.Errorf("forged press: status %d, want 401", status)
	}
	if status, err := fake.Deliver(url, press, true, 0); status != http.StatusOK || err != nil {
		t.Fatalf("press: status %d, %v", status, err)
	}
	chPress, _ := fake.Press(msgs[1], "U2", "ap:7:yes")
	if status, err := fake.Deliver(url, chPress, true, 0); status != http.StatusOK || err != nil {
		t.Fatalf("press in a channel: status %d, %v", status, err)
	}
	got := rec.got()
	if len(got) != 2 {
		t.Fatalf("handled %d presses, want 2", len(got))
	}
	want := []channel.Inbound{
		{Workspace: fakeslack.TeamID, User: "U1", Name: "user-U1", Principal: "U1", To: "D1/1799999999.000001",
			Thread: "1799999999.000001", Addressed: true, Action: "ap:7:no"},
		{Workspace: fakeslack.TeamID, User: "U2", Name: "user-U2", Principal: "#C1", To: "C1/1799999999.000002",
			Thread: "1799999999.000002", Group: true, Addressed: true, Action: "ap:7:yes"},
	}
	for i := range got {
		if !strings.HasPrefix(got[i].ID, "action:") || got[i].ID == got[1-i].ID {
			t.Errorf("press %d: ID %q, want a distinct action: id", i, got[i].ID)
		}
		got[i].ID, got[i].At = "", time.Time{}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("presses (-want +got):\n%s", diff)
	}
	// The DM's prompt shows the choice instead of its buttons; the
	// channel's keeps its buttons (another member may not be allowed).
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	msgs, err = fake.WaitFor(wctx, func(ms []fakeslack.Message) bool { return ms[0].Edits > 0 })
	if err != nil {
		t.Fatal("the DM's prompt was not edited")
	}
	var blocks []map[string]any
	if err := json.Unmarshal(msgs[0].Blocks, &blocks); err != nil {
		t.Fatal(err)
	}
	wantBlocks := []map[string]any{
		{"type": "section", "text": map[string]any{"type": "plain_text", "text": "Run `ls`?", "emoji": true}},
		{"type": "context", "elements": []any{map[string]any{"type": "mrkdwn", "text": "<@U1> chose *No*"}}},
	}
	if diff := cmp.Diff(wantBlocks, blocks); diff != "" || msgs[0].Edits != 1 {
		t.Errorf("DM prompt after the press, %d edits (-want +got):\n%s", msgs[0].Edits, diff)
	}
	if m := msgs[1]; m.Edits != 0 {
		t.Errorf("channel prompt edited %d times", m.Edits)
	}
	for _, c := range []struct {
		name string
		body string
		want int
	}{
		{"no payload", "", http.StatusBadRequest},
		{"bad payload", "{", http.StatusBadRequest},
	} {
		status, _ := fake.DeliverSigned(url, []byte(c.body), true, 0, fakeslack.SigningSecret, now)
		if status != c.want {
			t.Errorf("%s: status %d, want %d", c.name, status, c.want)
		}
	}
}
