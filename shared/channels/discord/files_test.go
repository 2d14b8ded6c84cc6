package discord

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/channel"
	"github.com/lambdaclaw/lambdaclaw/tests/fakediscord"
)

// A message's attachments (a photo, a voice message, a document) reach
// the engine, fetched from their signed CDN URLs; a file goes out as a
// message with an attachment (multipart payload_json and files[0]).
func TestFiles(t *testing.T) {
	fake := fakediscord.New()
	t.Cleanup(fake.Close)
	fake.AddChannel(fakediscord.Channel{ID: "700000000000000001", Type: 1})
	client := NewClient(fake.APIBase(), fakediscord.Token, fakediscord.AppID)
	c := conversations{client: &countingChannels{m: map[string]Channel{"700000000000000001": {ID: "700000000000000001", Type: 1}}}, download: client.Download}

	photo, voice := []byte("\x89PNG\r\n\x1a\nphoto"), []byte("OggS voice")
	raw := fake.MessageCreate("", "700000000000000001", "800000000000000001", "")
	raw["attachments"] = []any{fake.AddAttachment("700000000000000001", "cat.png", "image/png", photo),
		fake.AddAttachment("700000000000000001", "voice-message.ogg", "audio/ogg", voice)}
	raw["flags"] = IsVoiceMessage
	b, _ := json.Marshal(raw)
	var m Message
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	in, ok, err := c.fromMessage(t.Context(), &m, fakediscord.BotID)
	if err != nil || !ok {
		t.Fatalf("fromMessage: %v, %v", ok, err)
	}
	type att struct {
		Kind            channel.AttachmentKind
		Name, MediaType string
		Data            string
	}
	var got []att
	for _, a := range in.Attachments {
		data, err := a.Fetch(t.Context(), 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, att{a.Kind, a.Name, a.MediaType, string(data)})
	}
	want := []att{{channel.AttachImage, "cat.png", "image/png", string(photo)}, {channel.AttachVoice, "voice-message.ogg", "audio/ogg", string(voice)}}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("attachments (-want +got):\n%s", d)
	}
	if _, err := in.Attachments[0].Fetch(t.Context(), 4); !errors.Is(err, channel.ErrTooLarge) {
		t.Errorf("over the limit: %v", err)
	}
	var pe *channel.Error
	if _, err := client.Download(t.Context(), "https://evil.example/x.png", 1<<20); !errors.As(err, &pe) || !pe.Permanent {
		t.Errorf("another host: %v", err)
	}

	if _, err := client.SendFile(t.Context(), ChannelAddress("700000000000000001"), channel.File{Name: "chart.png", MediaType: "image/png", Data: photo, Caption: "the chart"}); err != nil {
		t.Fatal(err)
	}
	sent := fake.Messages("700000000000000001")
	if len(sent) != 1 || sent[0].Content != "the chart" || !cmp.Equal(sent[0].Files, []fakediscord.File{{Name: "chart.png", ContentType: "image/png", Data: photo}}) {
		t.Fatalf("sent %+v", sent)
	}
	if _, err := client.SendFile(t.Context(), ChannelAddress("700000000000000001"), channel.File{Name: "big.bin", Data: make([]byte, 10<<20+1)}); !errors.As(err, &pe) || pe.Status != 413 {
		t.Errorf("a file over 10 MiB: %v", err)
	}
}
