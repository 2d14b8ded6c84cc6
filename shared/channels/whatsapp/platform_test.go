package whatsapp

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/tests/fakewhatsapp"
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

// platform returns a Platform on a fake whose clock is clk's, with tpl as
// its template.
func platform(t *testing.T, f *fakewhatsapp.Server, clk *clock, st State, tpl Template) *Platform {
	t.Helper()
	f.SetNow(clk.Now)
	p, err := New(Config{APIBase: f.APIBase(), PhoneNumberID: fakewhatsapp.PhoneNumberID, AccessToken: fakewhatsapp.Token,
		AppSecret: fakewhatsapp.AppSecret, VerifyToken: fakewhatsapp.VerifyToken, Template: tpl, State: st, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestNewRefuses(t *testing.T) {
	ok := Config{PhoneNumberID: "1", AccessToken: "t", State: &memState{}}
	for name, mod := range map[string]func(*Config){
		"no phone number id":     func(c *Config) { c.PhoneNumberID = "" },
		"no token":               func(c *Config) { c.AccessToken = "" },
		"no state":               func(c *Config) { c.State = nil },
		"template with no lang":  func(c *Config) { c.Template = Template{Name: "x"} },
		"template with no name:": func(c *Config) { c.Template = Template{Language: "en"} },
	} {
		c := ok
		mod(&c)
		if _, err := New(c); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
	if _, err := New(ok); err != nil {
		t.Error(err)
	}
}

// TestWindow sends replies within and after the customer service window,
// with and without a template.
func TestWindow(t *testing.T) {
	const tplName = "reply_waiting"
	start := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	type step struct {
		// wrote is a message from the user (by the webhook) before the send.
		wrote bool
		// after moves the clock on before the send.
		after time.Duration
		// wantType is the type of the message sent, "" for none.
		wantType string
		// wantErr is a part of the permanent error's message.
		wantErr string
	}
	tests := []struct {
		name  string
		tpl   Template
		steps []step
	}{
		{name: "within the window", steps: []step{
			{wrote: true, wantType: "text"},
			{after: 23 * time.Hour, wantType: "text"},
		}},
		{name: "closed without a template", steps: []step{
			{wrote: true, after: 24 * time.Hour, wantErr: "none is configured"},
			{wrote: true, wantType: "text"},
		}},
		{name: "closed with a template: sent once until the user writes", tpl: Template{Name: tplName, Language: "en_US"}, steps: []step{
			{wrote: true, after: 25 * time.Hour, wantType: "template"},
			{wantErr: "was sent already"},
			{after: 48 * time.Hour, wantErr: "was sent already"},
			{wrote: true, wantType: "text"},
			{after: 24 * time.Hour, wantType: "template"},
		}},
		{name: "never wrote: WhatsApp refuses, the template goes", tpl: Template{Name: tplName, Language: "en_US"}, steps: []step{
			{wantType: "template"},
			{wantErr: "was sent already"},
		}},
		{name: "never wrote, no template", steps: []step{
			{wantErr: "no message from them is recorded"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fakewhatsapp.New()
			defer f.Close()
			clk := &clock{t: time.Now()}
			clk.Advance(start.Sub(clk.Now()))
			st := &memState{}
			p := platform(t, f, clk, st, tt.tpl)
			h := p.Webhook(func(context.Context, channel.Inbound) error { return nil })
			for i, s := range tt.steps {
				if s.wrote {
					n := f.UserText(user, "Ada", "hello")
					if code := serve(h, fakewhatsapp.Sign(fakewhatsapp.AppSecret, n.Body), n.Body); code != 200 {
						t.Fatalf("step %d: delivery = %d", i, code)
					}
				}
				clk.Advance(s.after)
				before := len(f.Sent(user))
				id, err := p.Send(context.Background(), channel.Outgoing{To: user, Text: "the answer"})
				sent := f.Sent(user)[before:]
				if s.wantErr != "" {
					var ce *channel.Error
					if !errors.As(err, &ce) || !ce.Permanent || !strings.Contains(ce.Message, s.wantErr) || ce.Code != strconv.Itoa(CodeReengagement) {
						t.Errorf("step %d: error = %v, want a permanent one saying %q", i, err, s.wantErr)
					}
					if len(sent) != 0 {
						t.Errorf("step %d: sent %+v", i, sent)
					}
					continue
				}
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if len(sent) != 1 || sent[0].Type != s.wantType || sent[0].ID != id {
					t.Fatalf("step %d: sent %+v (id %s), want one %s", i, sent, id, s.wantType)
				}
				if s.wantType == "template" && (sent[0].Template != tplName || sent[0].Language != "en_US") {
					t.Errorf("step %d: template %+v", i, sent[0])
				}
			}
		})
	}
}

// TestWindowRecordsLatest keeps the latest message's time when Meta
// delivers an older one after it.
func TestWindowRecordsLatest(t *testing.T) {
	clk := &clock{t: time.Now()}
	st := &memState{}
	f := fakewhatsapp.New()
	defer f.Close()
	p := platform(t, f, clk, st, Template{})
	ctx := context.Background()
	now := clk.Now().Truncate(time.Second)
	for _, at := range []time.Time{now.Add(-time.Hour), now, now.Add(-2 * time.Hour)} {
		if err := p.recordIn(ctx, user, at); err != nil {
			t.Fatal(err)
		}
	}
	got, err := p.lastIn(ctx, user)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(now.UTC(), got.UTC()); d != "" {
		t.Errorf("last in (-want +got):\n%s", d)
	}
}

// TestNoEdits: WhatsApp cannot edit or delete a sent message, so the
// engine streams no drafts to it.
func TestNoEdits(t *testing.T) {
	p, err := New(Config{PhoneNumberID: "1", AccessToken: "t", State: &memState{}})
	if err != nil {
		t.Fatal(err)
	}
	var pl channel.Platform = p
	if _, ok := pl.(channel.Editor); ok {
		t.Error("the platform is an Editor")
	}
	if _, ok := pl.(channel.Deleter); ok {
		t.Error("the platform is a Deleter")
	}
	if pl.Name() != "whatsapp" || pl.MaxLen() != 4096 {
		t.Errorf("name %q, max len %d", pl.Name(), pl.MaxLen())
	}
}

// clock is a test's clock, moved on by Advance.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
