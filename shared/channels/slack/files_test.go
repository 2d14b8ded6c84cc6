package slack_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/slack"
	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/tests/fakeslack"
)

// A message sharing files (file_share) carries them as attachments that
// download with the bot token; a file goes out by files upload v2.
func TestFiles(t *testing.T) {
	fake := fakeslack.New()
	t.Cleanup(fake.Close)
	fake.Now = func() time.Time { return testNow }
	client := slack.NewClient(fake.APIBase(), fakeslack.BotToken)
	rec := &recorder{}
	r := &slack.Receiver{SigningSecret: fakeslack.SigningSecret, Handle: rec.handle, Client: client, Now: func() time.Time { return testNow },
		Parser: slack.Parser{Bot: slack.Bot{UserID: fakeslack.BotUserID, TeamID: fakeslack.TeamID}, Download: client.Download}}
	srv := httptest.NewServer(r.Events())
	t.Cleanup(srv.Close)

	photo, pdf := []byte("\x89PNG\r\n\x1a\nphoto"), []byte("%PDF-1.4 a report")
	post(t, fake, srv.URL, fake.DMFiles("D1", "U1", "1800000000.000100", "look", fake.AddFile("a.png", "image/png", photo),
		fake.AddFile("r.pdf", "application/pdf", pdf), fake.AddFile("note.webm", "audio/webm", []byte("voice"))))
	ins := rec.got()
	if len(ins) != 1 {
		t.Fatalf("handed %d messages", len(ins))
	}
	type att struct {
		Kind            channel.AttachmentKind
		Name, MediaType string
		Size            int64
		Data            string
	}
	var got []att
	for _, a := range ins[0].Attachments {
		data, err := a.Fetch(t.Context(), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, att{a.Kind, a.Name, a.MediaType, a.Size, string(data)})
	}
	want := []att{{channel.AttachImage, "a.png", "image/png", int64(len(photo)), string(photo)},
		{channel.AttachFile, "r.pdf", "application/pdf", int64(len(pdf)), string(pdf)},
		{channel.AttachVoice, "note.webm", "audio/webm", 5, "voice"}}
	if d := cmp.Diff(want, got); d != "" || ins[0].Text != "look" {
		t.Fatalf("attachments (-want +got):\n%s; text %q", d, ins[0].Text)
	}
	if _, err := ins[0].Attachments[0].Fetch(t.Context(), 3); !errors.Is(err, channel.ErrTooLarge) {
		t.Errorf("a file over the limit: %v", err)
	}
	// Without the right token Slack answers its sign-in page; the token
	// goes to no other host.
	u := fake.AddFile("x.png", "image/png", photo)["url_private_download"].(string)
	var pe *channel.Error
	if _, err := slack.NewClient(fake.APIBase(), "xoxb-wrong").Download(t.Context(), u, 1<<20); !errors.As(err, &pe) || !pe.Permanent {
		t.Errorf("a wrong token: %v", err)
	}
	if _, err := client.Download(t.Context(), "https://evil.example/files-pri/x", 1<<20); !errors.As(err, &pe) || pe.Message != "not a Slack file URL" {
		t.Errorf("another host: %v", err)
	}

	if _, err := client.SendFile(t.Context(), "C1/1800000000.000100", channel.File{Name: "chart.png", MediaType: "image/png", Data: photo, Caption: "the chart"}); err != nil {
		t.Fatal(err)
	}
	msgs := fake.Messages()
	if len(msgs) != 1 || string(msgs[0].File) != string(photo) || msgs[0].Channel != "C1" || msgs[0].ThreadTS != "1800000000.000100" ||
		msgs[0].Text != "the chart" || msgs[0].FileName != "chart.png" {
		t.Fatalf("shared: %+v", msgs)
	}
	fake.Fail("files.completeUploadExternal", fakeslack.Failure{Status: http.StatusTooManyRequests, Error: "ratelimited", RetryAfter: 3})
	if _, err := client.SendFile(t.Context(), "C1", channel.File{Name: "c.png", Data: photo}); !errors.As(err, &pe) || pe.RetryAfter != 3*time.Second {
		t.Errorf("a rate limit: %v", err)
	}
}
