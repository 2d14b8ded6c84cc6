package bedrock

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
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
			t.Errorf("%s refused: %v", tt.part.MediaType+" "+string(tt.part.Type), err)
		case tt.refused != "" && (!llm.IsUnsupported(err) || !strings.Contains(err.Error(), tt.refused)):
			t.Errorf("%s: error %v, want an unsupported error saying %q", tt.part.MediaType+" "+string(tt.part.Type), err, tt.refused)
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

// With an images client, an image given by URL is fetched and sent as an
// image block of its bytes; one that is no image, or not there, fails the
// call without a call to Bedrock.
func TestFetchImages(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	web := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/a.png":
			w.Write(png)
		case "/page":
			w.Write([]byte("<html>not an image</html>"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(web.Close)
	f := newFakeBedrock(t, converseAnswer("a cat", "end_turn"))
	isolateAWS(t, "")
	c, err := NewConverse(context.Background(), ConverseConfig{Name: "br", Region: "eu-west-3", Model: converseTestModel, Endpoint: f.URL, Images: web.Client()})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []chat.Message{{Role: chat.User, Content: "what is it?", Parts: []chat.Part{{Type: chat.PartImage, URL: web.URL + "/a.png"}}}}
	if err := llm.CheckParts(c, msgs); err != nil {
		t.Fatalf("CheckParts: %v", err)
	}
	if _, err := c.Generate(t.Context(), llm.Request{Messages: msgs}, nil); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	calls := f.recorded()
	if len(calls) != 1 {
		t.Fatalf("%d calls, want 1", len(calls))
	}
	want := `{"image":{"format":"png","source":{"bytes":"` + base64.StdEncoding.EncodeToString(png) + `"}}}`
	if got := calls[0].raw; !strings.Contains(string(got), want) {
		t.Errorf("request %s does not hold %s", got, want)
	}
	if msgs[0].Parts[0].Data != nil {
		t.Error("fetching changed the caller's message")
	}
	for _, path := range []string{"/page", "/gone"} {
		msgs[0].Parts[0].URL = web.URL + path
		if _, err := c.Generate(t.Context(), llm.Request{Messages: msgs}, nil); err == nil || llm.IsRetryable(err) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: Generate = %v, want a lasting error naming it", path, err)
		}
	}
	if n := len(f.recorded()); n != 1 {
		t.Errorf("%d calls, want only the first", n)
	}
}
