package chat

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"fmt"
	"strings"
)

// PartType is the kind of a message's part.
type PartType string

// The kinds of parts. Text is a message's Content, never a Part; it is
// named here for the lists of what a model takes.
const (
	PartText  PartType = "text"
	PartImage PartType = "image"
	PartAudio PartType = "audio"
	PartFile  PartType = "file"
)

// Part is a piece of a message other than its text: an image, an audio
// clip or a file. Its bytes are inline (Data, of MediaType), kept beside
// the session (Ref, which history holds instead of the bytes, and the
// loop reads back for the model), or, for an image only, at an https URL
// the model's provider fetches.
type Part struct {
	Type PartType `json:"type"`
	// MediaType is the type of Data, such as image/png, audio/wav or
	// application/pdf.
	MediaType string `json:"media_type,omitempty"`
	// Data are the part's bytes (base64 in JSON).
	Data []byte `json:"data,omitempty"`
	// URL is an https image's address, when Data is empty.
	URL string `json:"url,omitempty"`
	// Ref names the bytes kept beside the session (media.Store), when
	// Data is empty.
	Ref string `json:"ref,omitempty"`
	// Name is a file's name.
	Name string `json:"name,omitempty"`
	// Detail is an image's detail for the model: auto, low or high.
	Detail string `json:"detail,omitempty"`
}

// Size is the number of bytes the part carries.
func (p Part) Size() int { return len(p.Data) + len(p.URL) }

// Limits bound the parts of one message. The zero value of a field
// means its default (DefaultLimits), which keeps a request's parts
// within a small machine's memory.
type Limits struct {
	// MaxImageBytes, MaxAudioBytes and MaxFileBytes bound one part of
	// each kind.
	MaxImageBytes int
	MaxAudioBytes int
	MaxFileBytes  int
	// MaxMessageBytes bounds all the parts of a message together.
	MaxMessageBytes int
	// MaxParts bounds how many parts a message has.
	MaxParts int
}

// DefaultLimits are the limits of parts unless configured otherwise.
var DefaultLimits = Limits{
	MaxImageBytes:   20 << 20,
	MaxAudioBytes:   20 << 20,
	MaxFileBytes:    20 << 20,
	MaxMessageBytes: 50 << 20,
	MaxParts:        20,
}

// Of returns the limit of one part of kind t.
func (l Limits) Of(t PartType) int {
	switch t {
	case PartImage:
		return cmp.Or(l.MaxImageBytes, DefaultLimits.MaxImageBytes)
	case PartAudio:
		return cmp.Or(l.MaxAudioBytes, DefaultLimits.MaxAudioBytes)
	}
	return cmp.Or(l.MaxFileBytes, DefaultLimits.MaxFileBytes)
}

// Message returns the limit of all a message's parts together.
func (l Limits) Message() int { return cmp.Or(l.MaxMessageBytes, DefaultLimits.MaxMessageBytes) }

// Count returns the most parts a message may have.
func (l Limits) Count() int { return cmp.Or(l.MaxParts, DefaultLimits.MaxParts) }

// signatures are the magic numbers of the media types whose bytes
// SniffMediaType recognises.
var signatures = []struct {
	mediaType string
	match     func([]byte) bool
}{
	{"image/png", prefix("\x89PNG\r\n\x1a\n")},
	{"image/jpeg", prefix("\xff\xd8\xff")},
	{"image/gif", func(b []byte) bool {
		return bytes.HasPrefix(b, []byte("GIF87a")) || bytes.HasPrefix(b, []byte("GIF89a"))
	}},
	{"image/webp", func(b []byte) bool { return len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP" }},
	{"application/pdf", prefix("%PDF-")},
}

func prefix(p string) func([]byte) bool {
	return func(b []byte) bool { return bytes.HasPrefix(b, []byte(p)) }
}

// SniffMediaType returns the media type data's magic number says (PNG,
// JPEG, GIF, WebP, PDF), or "" for bytes of none of these.
func SniffMediaType(data []byte) string {
	for _, s := range signatures {
		if s.match(data) {
			return s.mediaType
		}
	}
	return ""
}

// Sniffable reports whether SniffMediaType knows mediaType, so that bytes
// claiming it can be checked.
func Sniffable(mediaType string) bool {
	for _, s := range signatures {
		if s.mediaType == mediaType {
			return true
		}
	}
	return false
}

// CheckBytes reports a part whose bytes are not what its media type
// says: a type SniffMediaType knows whose magic number is missing, or
// bytes of a known type declared as another. Types it does not know
// (audio, text, office documents) are not checked.
func CheckBytes(p Part) error {
	if len(p.Data) == 0 {
		return nil
	}
	declared := strings.ToLower(p.MediaType)
	if declared == "image/jpg" {
		declared = "image/jpeg"
	}
	got := SniffMediaType(p.Data)
	switch {
	case Sniffable(declared) && got != declared:
		return fmt.Errorf("the data is declared %s but is %s", p.MediaType, cmp.Or(got, "not of that type"))
	case got != "" && !Sniffable(declared) && strings.HasPrefix(declared, "image/"):
		return fmt.Errorf("the data is declared %s but is %s", p.MediaType, got)
	}
	return nil
}

// DataURL is the part's bytes as a base64 data: URL (RFC 2397).
func (p Part) DataURL() string {
	return "data:" + p.MediaType + ";base64," + base64.StdEncoding.EncodeToString(p.Data)
}
