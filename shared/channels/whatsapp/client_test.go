package whatsapp

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/tests/fakewhatsapp"
)

const user = "4915112345678"

// fake starts the fake Cloud API with user's window open.
func fake(t *testing.T) *fakewhatsapp.Server {
	t.Helper()
	f := fakewhatsapp.New()
	t.Cleanup(f.Close)
	f.UserText(user, "Ada", "hi")
	return f
}

func TestClientSends(t *testing.T) {
	f := fake(t)
	c := NewClient(f.APIBase(), fakewhatsapp.PhoneNumberID, fakewhatsapp.Token)
	ctx := context.Background()
	long := strings.Repeat("é", 1500)
	var ids []string
	for _, send := range []func() (string, error){
		func() (string, error) { return c.SendText(ctx, user, "hello") },
		func() (string, error) {
			return c.SendButtons(ctx, user, long, []channel.Button{{Label: "Yes", Value: "ap:1:yes"}, {Label: "Always allow this tool", Value: "ap:1:always"}})
		},
		func() (string, error) { return c.SendTemplate(ctx, user, "reply_waiting", "en_US") },
	} {
		id, err := send()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	want := []fakewhatsapp.Sent{
		{ID: ids[0], To: user, Type: "text", Text: "hello"},
		{ID: ids[1], To: user, Type: "interactive", Text: strings.Repeat("é", 1023) + "…",
			Buttons: []fakewhatsapp.Button{{ID: "ap:1:yes", Title: "Yes"}, {ID: "ap:1:always", Title: "Always allow this t…"}}},
		{ID: ids[2], To: user, Type: "template", Template: "reply_waiting", Language: "en_US"},
	}
	if d := cmp.Diff(want, f.Sent(user)); d != "" {
		t.Errorf("sent (-want +got):\n%s", d)
	}
	// A group gets text, and an approval's text without its buttons.
	for _, send := range []func() (string, error){
		func() (string, error) { return c.SendText(ctx, GroupPrefix+fakewhatsapp.GroupID, "hello all") },
		func() (string, error) {
			return c.SendButtons(ctx, GroupPrefix+fakewhatsapp.GroupID, "approve?", []channel.Button{{Label: "Yes", Value: "ap:1:yes"}})
		},
	} {
		if _, err := send(); err != nil {
			t.Fatal(err)
		}
	}
	var group []string
	for _, m := range f.Sent(fakewhatsapp.GroupID) {
		group = append(group, m.Type+": "+m.Text)
	}
	if d := cmp.Diff([]string{"text: hello all", "text: approve?"}, group); d != "" {
		t.Errorf("sent to the group (-want +got):\n%s", d)
	}
	p, err := c.PhoneNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != fakewhatsapp.PhoneNumberID || p.VerifiedName == "" || p.DisplayPhoneNumber == "" {
		t.Errorf("phone number = %+v", p)
	}
}

func TestClientErrors(t *testing.T) {
	tests := []struct {
		name    string
		token   string
		phone   string
		fail    []fakewhatsapp.Failure
		buttons int
		want    *channel.Error
		// wantPosts is how many POSTs reached the fake.
		wantPosts int
	}{
		{name: "bad token", token: "wrong", want: &channel.Error{Status: 401, Code: "190"}, wantPosts: 0},
		{name: "unknown phone number id", phone: "999", want: &channel.Error{Status: 400, Code: "100", Permanent: true}},
		{name: "rate limit", fail: []fakewhatsapp.Failure{fakewhatsapp.RateLimit}, want: &channel.Error{Status: 400, Code: "130429", RetryAfter: 2 * time.Second}, wantPosts: 1},
		{name: "pair rate limit", fail: []fakewhatsapp.Failure{{Status: 400, Code: 131056, Message: "(#131056) (Business Account, Consumer Account) pair rate limit hit"}},
			want: &channel.Error{Status: 400, Code: "131056", RetryAfter: 6 * time.Second}, wantPosts: 1},
		{name: "app rate limit", fail: []fakewhatsapp.Failure{{Status: 400, Code: 4, Message: "(#4) Application request limit reached"}},
			want: &channel.Error{Status: 400, Code: "4", RetryAfter: time.Minute}, wantPosts: 1},
		{name: "window closed", fail: []fakewhatsapp.Failure{fakewhatsapp.WindowClosed}, want: &channel.Error{Status: 400, Code: "131047", Permanent: true}, wantPosts: 1},
		{name: "server error", fail: []fakewhatsapp.Failure{{Status: 500, Code: 131000, Message: "Something went wrong"}}, want: &channel.Error{Status: 500, Code: "131000"}, wantPosts: 1},
		{name: "too many buttons", buttons: 4, want: &channel.Error{Permanent: true}, wantPosts: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := fake(t)
			f.FailNext(tt.fail...)
			token, phone := fakewhatsapp.Token, fakewhatsapp.PhoneNumberID
			if tt.token != "" {
				token = tt.token
			}
			if tt.phone != "" {
				phone = tt.phone
			}
			c := NewClient(f.APIBase(), phone, token)
			var err error
			if tt.buttons > 0 {
				bs := make([]channel.Button, tt.buttons)
				for i := range bs {
					bs[i] = channel.Button{Label: "b", Value: "v"}
				}
				_, err = c.SendButtons(context.Background(), user, "pick", bs)
			} else {
				_, err = c.SendText(context.Background(), user, "hello")
			}
			var got *channel.Error
			if !errors.As(err, &got) {
				t.Fatalf("error = %v, want a *channel.Error", err)
			}
			if d := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(channel.Error{}, "Platform", "Method", "Message")); d != "" {
				t.Errorf("error (-want +got):\n%s", d)
			}
			if got.Message == "" || strings.Contains(got.Message, token) {
				t.Errorf("message = %q", got.Message)
			}
			if n := f.Posts(); n != tt.wantPosts {
				t.Errorf("posts = %d, want %d", n, tt.wantPosts)
			}
		})
	}
}
