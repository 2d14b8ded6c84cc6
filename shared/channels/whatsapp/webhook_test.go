package whatsapp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/tests/fakewhatsapp"
)

// Samples of Meta's webhook reference (messages field), for the fake's
// phone number id.
const (
	sampleText   = `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},"contacts":[{"profile":{"name":"Sheena Nelson"},"wa_id":"16505551234"}],"messages":[{"from":"16505551234","id":"wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=","timestamp":"1749416383","type":"text","text":{"body":"Does it come in another color?"}}]},"field":"messages"}]}]}`
	sampleButton = `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},"contacts":[{"profile":{"name":"Sheena Nelson"},"wa_id":"16505551234"}],"messages":[{"context":{"from":"15550783881","id":"wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBJDQjZCMzlEQUE4OTJBMTE4RTUA"},"from":"16505551234","id":"wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUZCMTY0MDc2MUYwNzBDNTY5MAA=","timestamp":"1750025136","type":"interactive","interactive":{"type":"button_reply","button_reply":{"id":"ap:42:yes","title":"Yes"}}}]},"field":"messages"}]}]}`
	sampleStatus = `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},"statuses":[{"id":"wamid.HBgLMTY1MDM4Nzk0MzkVAgARGBI3MTE5MjVBOTE3MDk5QUVFM0YA","status":"delivered","timestamp":"1750263773","recipient_id":"16505551234","conversation":{"id":"6ceb9d929c1a1ae1e5a9d0e1e8fbd1a5","origin":{"type":"utility"}},"pricing":{"billable":true,"pricing_model":"PMP","category":"utility"}}]},"field":"messages"}]}]}`
	sampleImage  = `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},"contacts":[{"profile":{"name":"Sheena Nelson"},"wa_id":"16505551234"}],"messages":[{"from":"16505551234","id":"wamid.IMG","timestamp":"1750090702","type":"image","image":{"mime_type":"image/jpeg","sha256":"SDTnnnZq1lLs0Kd2Fj2k7uhSpUksrw+qdUgKSWKmu5Q=","id":"1003383421387256"}}]},"field":"messages"}]}]}`
	sampleGroup  = `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"value":{"messaging_product":"whatsapp","metadata":{"display_phone_number":"15550783881","phone_number_id":"106540352242922"},"contacts":[{"profile":{"name":"Sheena Nelson"},"wa_id":"16505551234"}],"messages":[{"from":"16505551234","group_id":"Y2FwaV9ncm91cDoxNzA1NTU1MDEzOToxMjAzNjM0MDQ2OTQyMzM4MjAZD","id":"wamid.GRP","timestamp":"1750090702","type":"text","text":{"body":"hello group"}}]},"field":"messages"}]}]}`
)

// serve posts body with signature (none when empty) to h and returns the
// status.
func serve(h http.Handler, signature string, body []byte) int {
	req := httptest.NewRequest(http.MethodPost, WebhookPath, strings.NewReader(string(body)))
	if signature != "" {
		req.Header.Set(SignatureHeader, signature)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code
}

func TestWebhookDelivery(t *testing.T) {
	sign := func(body string) string { return fakewhatsapp.Sign(fakewhatsapp.AppSecret, []byte(body)) }
	other := strings.ReplaceAll(sampleText, fakewhatsapp.PhoneNumberID, "999999")
	text := channel.Inbound{ID: "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=", Workspace: fakewhatsapp.PhoneNumberID,
		User: "16505551234", Name: "Sheena Nelson", Principal: "16505551234", To: "16505551234", Addressed: true,
		Text: "Does it come in another color?", At: time.Unix(1749416383, 0)}
	press := channel.Inbound{ID: "wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQUZCMTY0MDc2MUYwNzBDNTY5MAA=", Workspace: fakewhatsapp.PhoneNumberID,
		User: "16505551234", Name: "Sheena Nelson", Principal: "16505551234", To: "16505551234", Addressed: true,
		Action: "ap:42:yes", At: time.Unix(1750025136, 0)}
	image := channel.Inbound{ID: "wamid.IMG", Workspace: fakewhatsapp.PhoneNumberID, User: "16505551234", Name: "Sheena Nelson",
		Principal: "16505551234", To: "16505551234", Addressed: true, At: time.Unix(1750090702, 0),
		Attachments: []channel.Attachment{{Kind: channel.AttachImage, MediaType: "image/jpeg"}}}
	const groupID = "Y2FwaV9ncm91cDoxNzA1NTU1MDEzOToxMjAzNjM0MDQ2OTQyMzM4MjAZD"
	group := channel.Inbound{ID: "wamid.GRP", Workspace: fakewhatsapp.PhoneNumberID, User: "16505551234", Name: "Sheena Nelson",
		Principal: "#" + groupID, To: "g:" + groupID, Group: true, Text: "hello group", At: time.Unix(1750090702, 0)}
	mention := strings.Replace(sampleGroup, `"hello group"`, `"@15550783881 what do you think?"`, 1)
	mentioned := group
	mentioned.Addressed, mentioned.Text = true, "what do you think?"
	reply := strings.Replace(sampleGroup, `"group_id"`, `"context":{"from":"15550783881","id":"wamid.BOT"},"group_id"`, 1)
	replied := group
	replied.Addressed = true
	tests := []struct {
		name      string
		signature string
		body      string
		handleErr error
		wantCode  int
		want      []channel.Inbound
		// wantLastIn is the recorded time of the user's last message.
		wantLastIn string
	}{
		{name: "text", signature: sign(sampleText), body: sampleText, wantCode: 200, want: []channel.Inbound{text}, wantLastIn: "1749416383"},
		{name: "button press", signature: sign(sampleButton), body: sampleButton, wantCode: 200, want: []channel.Inbound{press}, wantLastIn: "1750025136"},
		{name: "status", signature: sign(sampleStatus), body: sampleStatus, wantCode: 200},
		{name: "image: handed on with its media", signature: sign(sampleImage), body: sampleImage, wantCode: 200, want: []channel.Inbound{image}, wantLastIn: "1750090702"},
		{name: "group message", signature: sign(sampleGroup), body: sampleGroup, wantCode: 200, want: []channel.Inbound{group}},
		{name: "group message mentioning the number", signature: sign(mention), body: mention, wantCode: 200, want: []channel.Inbound{mentioned}},
		{name: "group message replying to the number", signature: sign(reply), body: reply, wantCode: 200, want: []channel.Inbound{replied}},
		{name: "another phone number: ignored", signature: sign(other), body: other, wantCode: 200},
		{name: "missing signature", body: sampleText, wantCode: 401},
		{name: "forged signature", signature: fakewhatsapp.Sign("not-the-app-secret", []byte(sampleText)), body: sampleText, wantCode: 403},
		{name: "signature of another body", signature: sign(sampleButton), body: sampleText, wantCode: 403},
		{name: "sha1 signature", signature: "sha1=" + strings.TrimPrefix(sign(sampleText), "sha256="), body: sampleText, wantCode: 403},
		{name: "not hex", signature: "sha256=zz", body: sampleText, wantCode: 403},
		{name: "not JSON", signature: sign(`{"entry":`), body: `{"entry":`, wantCode: 400},
		{name: "too large", signature: "sha256=00", body: `{"x":"` + strings.Repeat("a", MaxBody) + `"}`, wantCode: 413},
		{name: "handle fails: Meta delivers again", signature: sign(sampleText), body: sampleText, handleErr: errors.New("busy"), wantCode: 500, want: []channel.Inbound{text}, wantLastIn: "1749416383"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &memState{}
			p, err := New(Config{PhoneNumberID: fakewhatsapp.PhoneNumberID, AccessToken: "t", AppSecret: fakewhatsapp.AppSecret, State: st})
			if err != nil {
				t.Fatal(err)
			}
			var got []channel.Inbound
			h := p.Webhook(func(_ context.Context, in channel.Inbound) error {
				got = append(got, in)
				return tt.handleErr
			})
			if code := serve(h, tt.signature, []byte(tt.body)); code != tt.wantCode {
				t.Errorf("status = %d, want %d", code, tt.wantCode)
			}
			if d := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(channel.Attachment{}, "Fetch")); d != "" {
				t.Errorf("handled (-want +got):\n%s", d)
			}
			if last, _ := st.State(context.Background(), lastInKey("16505551234")); last != tt.wantLastIn {
				t.Errorf("last in = %q, want %q", last, tt.wantLastIn)
			}
		})
	}
}

func TestWebhookVerify(t *testing.T) {
	tests := []struct {
		name, mode, token, challenge, configured string
		wantCode                                 int
		wantBody                                 string
	}{
		{name: "subscribe", mode: "subscribe", token: fakewhatsapp.VerifyToken, challenge: "1158201444", configured: fakewhatsapp.VerifyToken, wantCode: 200, wantBody: "1158201444"},
		{name: "wrong token", mode: "subscribe", token: "guess", challenge: "1", configured: fakewhatsapp.VerifyToken, wantCode: 403},
		{name: "wrong mode", mode: "unsubscribe", token: fakewhatsapp.VerifyToken, challenge: "1", configured: fakewhatsapp.VerifyToken, wantCode: 403},
		{name: "no token configured", mode: "subscribe", challenge: "1", wantCode: 403},
		{name: "no challenge", mode: "subscribe", token: fakewhatsapp.VerifyToken, configured: fakewhatsapp.VerifyToken, wantCode: 403},
		{name: "challenge too long", mode: "subscribe", token: fakewhatsapp.VerifyToken, challenge: strings.Repeat("9", maxChallenge+1), configured: fakewhatsapp.VerifyToken, wantCode: 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(Config{PhoneNumberID: "1", AccessToken: "t", VerifyToken: tt.configured, State: &memState{}})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p.Webhook(func(context.Context, channel.Inbound) error { return nil }))
			defer srv.Close()
			code, body, err := fakewhatsapp.Verify(srv.URL, tt.mode, tt.token, tt.challenge)
			if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantCode || (tt.wantBody != "" && body != tt.wantBody) {
				t.Errorf("answer = %d %q, want %d %q", code, body, tt.wantCode, tt.wantBody)
			}
		})
	}
	p, _ := New(Config{PhoneNumberID: "1", AccessToken: "t", State: &memState{}})
	rec := httptest.NewRecorder()
	p.Webhook(nil).ServeHTTP(rec, httptest.NewRequest(http.MethodPut, WebhookPath+"?"+url.Values{}.Encode(), nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("PUT = %d", rec.Code)
	}
}

// TestWebhookFailedStatusSendsTemplate: WhatsApp accepted a reply, then
// reported it failed for the closed window (131047): the template goes
// once, unless the user wrote since.
func TestWebhookFailedStatusSendsTemplate(t *testing.T) {
	f := fakewhatsapp.New()
	defer f.Close()
	clk := &clock{t: time.Now()}
	p := platform(t, f, clk, &memState{}, Template{Name: "reply_waiting", Language: "en"})
	h := p.Webhook(func(context.Context, channel.Inbound) error { return nil })
	deliver := func(n fakewhatsapp.Notification) {
		t.Helper()
		if code := serve(h, fakewhatsapp.Sign(fakewhatsapp.AppSecret, n.Body), n.Body); code != 200 {
			t.Fatalf("delivery = %d", code)
		}
	}
	deliver(f.UserText(user, "Ada", "hi")) // the window opens: a failed status now sends nothing
	deliver(f.Status("wamid.A", user, "failed", CodeReengagement))
	if n := len(f.Sent(user)); n != 0 {
		t.Fatalf("sent %d messages within the window", n)
	}
	clk.Advance(30 * time.Hour)
	deliver(f.Status("wamid.B", user, "failed", CodeReengagement))
	deliver(f.Status("wamid.C", user, "failed", CodeReengagement))
	deliver(f.Status("wamid.D", user, "failed", 131026))
	deliver(f.Status("wamid.E", fakewhatsapp.GroupID, "failed", CodeReengagement))
	sent := f.Sent(user)
	if len(sent) != 1 || sent[0].Template != "reply_waiting" {
		t.Errorf("sent %+v, want the template once", sent)
	}
}
