package bedrock

import (
	"context"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

func TestCheckPart(t *testing.T) {
	isolateAWS(t, "")
	c, err := NewConverse(context.Background(), ConverseConfig{Name: "br", Region: "eu-west-3", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		part    chat.Part
		refused string // "" when taken
	}{
		{chat.Part{Type: chat.PartImage, MediaType: "image/webp", Data: []byte("x")}, ""},
		{chat.Part{Type: chat.PartFile, MediaType: "text/markdown", Data: []byte("# x")}, ""},
		{chat.Part{Type: chat.PartFile, MediaType: "application/vnd.openxmlformats-officedocument.wordprocessingml.document", Data: []byte("x")}, ""},
		{chat.Part{Type: chat.PartImage, URL: "https://example.com/a.png"}, "data: URL"},
		{chat.Part{Type: chat.PartImage, MediaType: "image/tiff", Data: []byte("x")}, "not image/tiff"},
		{chat.Part{Type: chat.PartFile, MediaType: "application/zip", Data: []byte("x")}, "not application/zip"},
		{chat.Part{Type: chat.PartAudio, MediaType: "audio/wav", Data: []byte("x")}, "no audio"},
	}
	for _, tt := range tests {
		err := c.CheckPart(tt.part)
		switch {
		case tt.refused == "" && err != nil:
			t.Errorf("%s refused: %v", tt.part.Describe(), err)
		case tt.refused != "" && (!llm.IsUnsupported(err) || !strings.Contains(err.Error(), tt.refused)):
			t.Errorf("%s: error %v, want an unsupported error saying %q", tt.part.Describe(), err, tt.refused)
		}
	}
}

func TestDocumentName(t *testing.T) {
	for name, want := range map[string]string{
		"report.pdf":                     "report",
		"Q3 — figures (v2).xlsx":         "Q3 figures (v2)",
		"a__b..c.txt":                    "a b c",
		"":                               "document 3",
		".hidden":                        "hidden",
		strings.Repeat("é", 300) + ".md": strings.Repeat("é", 200),
	} {
		if got := documentName(name, 3); got != want {
			t.Errorf("documentName(%q) = %q, want %q", name, got, want)
		}
	}
}
