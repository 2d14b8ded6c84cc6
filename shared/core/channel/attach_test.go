package channel

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/adapters/sqlite"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/media/mediatest"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
	"github.com/lambdaclaw/lambdaclaw/shared/core/tool"
)

// transcriber transcribes audio as its bytes, or fails.
type transcriber struct{ err error }

func (t transcriber) Transcribe(_ context.Context, audio []byte, mediaType, _ string) (string, error) {
	if t.err != nil {
		return "", t.err
	}
	return mediaType + ": " + string(audio), nil
}

// file is an attachment of data whose fetches are counted.
func file(kind AttachmentKind, name, mediaType string, data []byte, fetches *int) Attachment {
	return Attachment{Kind: kind, Name: name, MediaType: mediaType, Fetch: func(_ context.Context, max int64) ([]byte, error) {
		*fetches++
		if int64(len(data)) > max {
			return nil, ErrTooLarge
		}
		return data, nil
	}}
}

func TestAttachments(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\nrest")
	pdf := mediatest.PDF(true, "Total: 42 EUR")
	type want struct {
		Text  string
		Parts []chat.Part
		Reply string
	}
	for _, tc := range []struct {
		name  string
		text  string
		atts  func(*int) []Attachment
		trans Transcriber
		err   error // Deliver's
		want  want
	}{
		{"photo with caption", "what is this?", func(n *int) []Attachment {
			return []Attachment{file(AttachImage, "", "", png, n)}
		}, nil, nil, want{Text: "what is this?", Parts: []chat.Part{{Type: chat.PartImage, MediaType: "image/png", Data: png}}}},
		{"pdf as its text", "", func(n *int) []Attachment {
			return []Attachment{file(AttachFile, "bill.pdf", "application/pdf", pdf, n)}
		}, nil, nil, want{Text: "[file bill.pdf]\nTotal: 42 EUR"}},
		{"voice note transcribed", "", func(n *int) []Attachment {
			return []Attachment{file(AttachVoice, "", "audio/ogg", []byte("call mum"), n)}
		}, transcriber{}, nil, want{Text: "[voice note, transcribed]\naudio/ogg: call mum"}},
		{"zip as a file part", "", func(n *int) []Attachment {
			return []Attachment{file(AttachFile, "a.zip", "application/zip", []byte("PK\x03\x04"), n)}
		}, nil, nil, want{Parts: []chat.Part{{Type: chat.PartFile, MediaType: "application/zip", Name: "a.zip", Data: []byte("PK\x03\x04")}}}},
		{"image sent as a document", "", func(n *int) []Attachment {
			return []Attachment{file(AttachFile, "x.png", "image/png", png, n)}
		}, nil, nil, want{Parts: []chat.Part{{Type: chat.PartImage, MediaType: "image/png", Data: png}}}},
		{"photo too large as said", "", func(n *int) []Attachment {
			a := file(AttachImage, "", "", png, n)
			a.Size = 50 << 20
			return []Attachment{a}
		}, nil, nil, want{Reply: "Your photo is too large: 50.0 MB, of at most 1.0 MB. Nothing of the message was kept."}},
		{"photo too large as fetched", "", func(n *int) []Attachment {
			return []Attachment{file(AttachImage, "", "", append(png, make([]byte, 1<<20)...), n)}
		}, nil, nil, want{Reply: "Your photo is too large: more than 1.0 MB. Nothing of the message was kept."}},
		{"photo that is no image", "", func(n *int) []Attachment {
			return []Attachment{file(AttachImage, "", "", []byte("<html>"), n)}
		}, nil, nil, want{Reply: "Your photo is not a PNG, JPEG, GIF or WebP image. Nothing of the message was kept."}},
		{"corrupt pdf", "", func(n *int) []Attachment {
			return []Attachment{file(AttachFile, "x.pdf", "application/pdf", []byte("%PDF-1.4 garbage"), n)}
		}, nil, nil, want{Reply: "Your file x.pdf could not be read: the PDF is corrupt or empty: no content stream could be read. Nothing of the message was kept."}},
		{"a pdf that lies", "", func(n *int) []Attachment {
			return []Attachment{file(AttachFile, "x.pdf", "application/pdf", png, n)}
		}, nil, nil, want{Reply: "Your file x.pdf could not be read: the data is declared application/pdf but is image/png. Nothing of the message was kept."}},
		{"voice without transcription", "", func(n *int) []Attachment {
			return []Attachment{file(AttachVoice, "", "audio/ogg", []byte("x"), n)}
		}, nil, nil, want{Reply: "Voice notes cannot be heard here: no transcription is configured. Nothing of the message was kept."}},
		{"transcription fails", "", func(n *int) []Attachment {
			return []Attachment{file(AttachVoice, "", "audio/ogg", []byte("x"), n)}
		}, transcriber{errors.New("503 busy")}, nil, want{Reply: "Your voice note could not be transcribed: 503 busy. Nothing of the message was kept."}},
		{"too many files", "", func(n *int) []Attachment {
			return []Attachment{file(AttachImage, "", "", png, n), file(AttachImage, "", "", png, n), file(AttachImage, "", "", png, n)}
		}, nil, nil, want{Reply: "Your message has 3 files, of at most 2. Nothing of the message was kept."}},
		{"model takes no images", "", func(n *int) []Attachment {
			return []Attachment{file(AttachImage, "", "", png, n)}
		}, nil, &agent.InputError{Message: `agent "main" cannot take this input: image`}, want{Reply: `Not taken: agent "main" cannot take this input: image`}},
		{"too large for the store", "", func(n *int) []Attachment {
			return []Attachment{file(AttachImage, "", "", png, n)}
		}, nil, fmt.Errorf("enqueue: %w", store.ErrTooLarge), want{Reply: "Your message is too large to keep here: enqueue: record too large for the store. Nothing of it was kept."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &runner{err: tc.err}
			db, err := sqlite.Open(filepath.Join(t.TempDir(), "ch.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			st := db.Channel("test")
			c, err := New(Config{Platform: nowhere{}, Store: st, Runner: r, Agent: "main", Autonomy: tool.Supervised, AllowedUsers: []string{"u1"},
				Media: Media{Limits: chat.Limits{MaxImageBytes: 1 << 20, MaxParts: 2}, Transcriber: tc.trans}})
			if err != nil {
				t.Fatal(err)
			}
			var fetches int
			handle(t, c, Inbound{ID: "1", User: "u1", Principal: "u1", To: "c1", Addressed: true, Text: tc.text, Attachments: tc.atts(&fetches)})
			var got want
			if len(r.inputs) == 1 {
				m := r.inputs[0].Messages[0]
				got.Text, got.Parts = m.Content, m.Parts
			}
			if rs := replies(t, st)["c1"]; len(rs) > 0 {
				got.Reply = rs[0]
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Fatalf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestAttachmentsOfStrangers: nothing is downloaded for a sender who is
// not let in.
func TestAttachmentsOfStrangers(t *testing.T) {
	r := &runner{}
	c, st := newTestChannel(t, r, Groups{})
	var fetches int
	handle(t, c, Inbound{ID: "1", User: "stranger", Principal: "stranger", To: "c9", Addressed: true,
		Attachments: []Attachment{file(AttachImage, "", "", []byte("\x89PNG\r\n\x1a\n"), &fetches)}})
	if fetches != 0 || len(r.inputs) != 0 {
		t.Fatalf("fetches = %d, inputs = %d; want none", fetches, len(r.inputs))
	}
	if got := replies(t, st)["c9"]; len(got) != 1 || !strings.Contains(got[0], "access code") {
		t.Fatalf("replies = %q", got)
	}
}
