package channel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/media"
)

// AttachmentKind is what an attachment is to the agent.
type AttachmentKind string

// The kinds of attachments.
const (
	// AttachImage is a photo: the model sees it as an image part.
	AttachImage AttachmentKind = "image"
	// AttachVoice is a voice note or an audio file: the model reads its
	// transcript (Media.Transcriber).
	AttachVoice AttachmentKind = "voice"
	// AttachFile is a document: the model reads its text where its
	// format has one (media.Extract), else gets it as a file part.
	AttachFile AttachmentKind = "file"
)

// Attachment is a file a message carries. Its bytes are fetched only
// once the sender is let in.
type Attachment struct {
	Kind AttachmentKind
	// Name is the file's name, if the platform gives one; MediaType its
	// type as the platform says it.
	Name, MediaType string
	// Size is the file's size as the platform says it; 0 if it does not.
	Size int64
	// Fetch downloads the file, failing with ErrTooLarge when it has more
	// than max bytes. An error the platform answered is an *Error.
	Fetch func(ctx context.Context, max int64) ([]byte, error)
}

// ErrTooLarge is the error of a Fetch beyond its limit.
var ErrTooLarge = errors.New("the file is larger than allowed")

// ReadAtMost reads a download of at most max bytes; a longer one is
// ErrTooLarge.
func ReadAtMost(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, ErrTooLarge
	}
	return data, nil
}

// Media says what a channel does with the files people send.
type Media struct {
	// Limits bound each file by kind (an image, audio, other files), all
	// of a message's files together and their number; zero fields are
	// chat.DefaultLimits.
	Limits chat.Limits
	// Transcriber turns voice notes into text; without one they are
	// refused, saying so.
	Transcriber Transcriber
}

// Transcriber turns speech into text (an OpenAI-compatible
// /audio/transcriptions endpoint: openai.Transcriber).
type Transcriber interface {
	Transcribe(ctx context.Context, audio []byte, mediaType, name string) (string, error)
}

// refusal is a file the channel does not take: its message is the reply,
// and nothing of the message is kept.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

func refuse(format string, args ...any) error {
	return &refusal{fmt.Sprintf(format, args...) + " Nothing of the message was kept."}
}

// attach fetches in's attachments and returns the message's parts and
// its text with the transcripts and the documents' text after it. A file
// it does not take is a *refusal; another error means the delivery is to
// be retried.
func (c *Channel) attach(ctx context.Context, in Inbound, text string) ([]chat.Part, string, error) {
	lim := c.cfg.Media.Limits
	if n := len(in.Attachments); n > lim.Count() {
		return nil, "", refuse("Your message has %d files, of at most %d.", n, lim.Count())
	}
	var parts []chat.Part
	texts := []string{text}
	total := 0
	for _, a := range in.Attachments {
		what := a.what()
		data, err := c.fetch(ctx, a, what)
		if err != nil {
			return nil, "", err
		}
		if total += len(data); total > lim.Message() {
			return nil, "", refuse("Your files are too large together: more than %s.", size(lim.Message()))
		}
		c.log.Info("attachment", "kind", a.Kind, "bytes", len(data), "to", in.To)
		switch a.Kind {
		case AttachImage:
			mt := chat.SniffMediaType(data)
			if !strings.HasPrefix(mt, "image/") {
				return nil, "", refuse("Your %s is not a PNG, JPEG, GIF or WebP image.", what)
			}
			parts = append(parts, chat.Part{Type: chat.PartImage, MediaType: mt, Data: data})
		case AttachVoice:
			t, err := c.cfg.Media.Transcriber.Transcribe(ctx, data, a.MediaType, a.Name)
			if err != nil {
				c.log.Warn("transcription failed", "err", err, "to", in.To)
				return nil, "", refuse("Your %s could not be transcribed: %v.", what, err)
			}
			texts = append(texts, "[voice note, transcribed]\n"+strings.TrimSpace(t))
		default:
			part, t, err := document(a, data)
			if err != nil {
				return nil, "", refuse("Your %s could not be read: %v.", what, err)
			}
			if t != "" {
				texts = append(texts, t)
			} else {
				parts = append(parts, part)
			}
		}
	}
	return parts, strings.TrimSpace(strings.Join(texts, "\n\n")), nil
}

// fetch downloads a within the limit of its kind.
func (c *Channel) fetch(ctx context.Context, a Attachment, what string) ([]byte, error) {
	max := c.cfg.Media.Limits.Of(a.Kind.part())
	if a.Size > int64(max) {
		return nil, refuse("Your %s is too large: %s, of at most %s.", what, size(int(a.Size)), size(max))
	}
	if a.Kind == AttachVoice && c.cfg.Media.Transcriber == nil {
		return nil, refuse("Voice notes cannot be heard here: no transcription is configured.")
	}
	data, err := a.Fetch(ctx, int64(max))
	var pe *Error
	switch {
	case errors.Is(err, ErrTooLarge):
		return nil, refuse("Your %s is too large: more than %s.", what, size(max))
	case errors.As(err, &pe) && pe.Permanent:
		return nil, refuse("Your %s could not be downloaded: %s.", what, pe.Message)
	case err != nil:
		return nil, fmt.Errorf("fetch %s: %w", what, err)
	}
	return data, nil
}

// document is a file's text (headed by its name), or, for a format
// without text, the file as a part (an image file as an image).
func document(a Attachment, data []byte) (chat.Part, string, error) {
	mt := media.TypeOf(a.Name, a.MediaType, data)
	part := chat.Part{Type: chat.PartFile, MediaType: mt, Name: a.Name, Data: data}
	if err := chat.CheckBytes(part); err != nil {
		return part, "", err
	}
	t, err := media.Extract(mt, data)
	switch {
	case errors.Is(err, media.ErrNotText):
		if strings.HasPrefix(chat.SniffMediaType(data), "image/") {
			part.Type, part.Name = chat.PartImage, ""
		}
		return part, "", nil
	case err != nil:
		return part, "", err
	}
	return part, fmt.Sprintf("[file %s]\n%s", a.Name, t), nil
}

// part is the kind of message part whose limit bounds a.
func (k AttachmentKind) part() chat.PartType {
	switch k {
	case AttachImage:
		return chat.PartImage
	case AttachVoice:
		return chat.PartAudio
	}
	return chat.PartFile
}

// what names a in a reply.
func (a Attachment) what() string {
	switch {
	case a.Kind == AttachImage:
		return "photo"
	case a.Kind == AttachVoice:
		return "voice note"
	case a.Name != "":
		return "file " + a.Name
	}
	return "file"
}

// size is n bytes for people.
func size(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KB", (n+1023)>>10)
}
