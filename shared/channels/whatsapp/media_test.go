package whatsapp

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/tests/fakewhatsapp"
)

// An image, a document and a voice note reach the engine with their
// media, fetched by id (GET /<media id>, then its URL with the token);
// a file goes out uploaded to /media and sent by its id, an image as an
// image and anything else as a document.
func TestMedia(t *testing.T) {
	fake := fakewhatsapp.New()
	t.Cleanup(fake.Close)
	p, err := New(Config{APIBase: fake.APIBase(), PhoneNumberID: fakewhatsapp.PhoneNumberID, AccessToken: fakewhatsapp.Token,
		AppSecret: fakewhatsapp.AppSecret, State: &memState{}})
	if err != nil {
		t.Fatal(err)
	}
	var got []channel.Inbound
	h := p.Webhook(func(_ context.Context, in channel.Inbound) error {
		got = append(got, in)
		return nil
	})
	photo, pdf, voice := []byte("\xff\xd8\xffphoto"), []byte("%PDF-1.4 bill"), []byte("OggS voice")
	for _, n := range []fakewhatsapp.Notification{
		fake.UserMedia("16505551234", "Sheena", "image", "image/jpeg", "", "what is this?", false, photo),
		fake.UserMedia("16505551234", "Sheena", "document", "application/pdf", "bill.pdf", "", false, pdf),
		fake.UserMedia("16505551234", "Sheena", "audio", "audio/ogg; codecs=opus", "", "", true, voice),
	} {
		if code := serve(h, fakewhatsapp.Sign(fakewhatsapp.AppSecret, n.Body), n.Body); code != 200 {
			t.Fatalf("status %d", code)
		}
	}
	type att struct {
		Text            string
		Kind            channel.AttachmentKind
		Name, MediaType string
		Data            string
	}
	var atts []att
	for _, in := range got {
		for _, a := range in.Attachments {
			data, err := a.Fetch(t.Context(), 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			atts = append(atts, att{in.Text, a.Kind, a.Name, a.MediaType, string(data)})
		}
	}
	want := []att{{"what is this?", channel.AttachImage, "", "image/jpeg", string(photo)},
		{"", channel.AttachFile, "bill.pdf", "application/pdf", string(pdf)},
		{"", channel.AttachVoice, "voice.ogg", "audio/ogg", string(voice)}}
	if d := cmp.Diff(want, atts); d != "" {
		t.Fatalf("attachments (-want +got):\n%s", d)
	}
	if _, err := got[0].Attachments[0].Fetch(t.Context(), 3); !errors.Is(err, channel.ErrTooLarge) {
		t.Errorf("over the limit: %v", err)
	}

	png := []byte("\x89PNG\r\n\x1a\nchart")
	for _, f := range []channel.File{{Name: "chart.png", MediaType: "image/png", Data: png, Caption: "the chart"},
		{Name: "data.csv", MediaType: "text/csv", Data: []byte("a,b\n")}} {
		if _, err := p.SendFile(t.Context(), "16505551234", f); err != nil {
			t.Fatal(err)
		}
	}
	sent := fake.Sent("16505551234")
	type out struct{ Type, Text, Filename, Media string }
	var outs []out
	for _, s := range sent {
		outs = append(outs, out{s.Type, s.Text, s.Filename, string(s.Media)})
	}
	if d := cmp.Diff([]out{{"image", "the chart", "", string(png)}, {"document", "", "data.csv", "a,b\n"}}, outs); d != "" {
		t.Fatalf("sent (-want +got):\n%s", d)
	}
}
