package chat

import (
	"strings"
	"testing"
)

func TestCheckBytes(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00")
	webp := []byte("RIFF\x10\x00\x00\x00WEBPVP8 ")
	tests := []struct {
		mediaType string
		data      []byte
		err       string // "" when the bytes are what the type says
	}{
		{"image/png", png, ""},
		{"image/jpeg", []byte("\xff\xd8\xff\xdb"), ""},
		{"image/jpg", []byte("\xff\xd8\xff\xdb"), ""},
		{"image/gif", []byte("GIF87a.."), ""},
		{"image/webp", webp, ""},
		{"application/pdf", []byte("%PDF-1.4"), ""},
		{"audio/wav", []byte("anything"), ""},
		{"text/csv", []byte("a,b"), ""},
		{"image/png", []byte("\xff\xd8\xff\xdb"), "declared image/png but is image/jpeg"},
		{"image/webp", []byte("RIFF\x10\x00\x00\x00WAVEfmt "), "not of that type"},
		{"application/pdf", png, "is image/png"},
		{"image/tiff", png, "is image/png"},
	}
	for _, tt := range tests {
		err := CheckBytes(Part{Type: PartImage, MediaType: tt.mediaType, Data: tt.data})
		if (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("CheckBytes(%s, %q) = %v, want %q", tt.mediaType, tt.data, err, tt.err)
		}
	}
}

func TestLimits(t *testing.T) {
	var zero Limits
	if zero.Of(PartImage) != 20<<20 || zero.Message() != 50<<20 || zero.Count() != 20 {
		t.Errorf("zero Limits: %d, %d, %d; want the defaults", zero.Of(PartImage), zero.Message(), zero.Count())
	}
	l := Limits{MaxImageBytes: 1, MaxAudioBytes: 2, MaxFileBytes: 3}
	if l.Of(PartImage) != 1 || l.Of(PartAudio) != 2 || l.Of(PartFile) != 3 {
		t.Errorf("Limits.Of: %d, %d, %d; want 1, 2, 3", l.Of(PartImage), l.Of(PartAudio), l.Of(PartFile))
	}
}

func TestDataURL(t *testing.T) {
	p := Part{MediaType: "application/pdf", Data: []byte("%PDF")}
	if got := p.DataURL(); got != "data:application/pdf;base64,JVBERg==" {
		t.Errorf("DataURL = %q", got)
	}
}
