package gateway_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/channels/gateway"
	"github.com/lambdaclaw/lambdaclaw/shared/core/agent"
	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/store"
)

// Bytes of each kind, as their magic numbers begin them.
var (
	pngBytes  = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	jpegBytes = []byte("\xff\xd8\xff\xe0\x00\x10JFIF")
	pdfBytes  = []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj")
	wavBytes  = []byte("RIFF\x24\x00\x00\x00WAVEfmt ")
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// userContent is a chat completion whose one user message has content.
func userContent(content string) string {
	return `{"model":"default","messages":[{"role":"user","content":` + content + `}]}`
}

func TestCompletionMediaAccepted(t *testing.T) {
	tests := []struct {
		name    string
		content string
		text    string
		parts   []chat.Part
	}{
		{"an https image", `[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"https://example.com/y.png","detail":"low"}}]`,
			"what is this?", []chat.Part{{Type: chat.PartImage, URL: "https://example.com/y.png", Detail: "low"}}},
		{"a data: URL image", `[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + b64(pngBytes) + `"}},{"type":"text","text":"and this?"}]`,
			"and this?", []chat.Part{{Type: chat.PartImage, MediaType: "image/png", Data: pngBytes}}},
		{"image/jpg read as image/jpeg", `[{"type":"image_url","image_url":{"url":"data:image/jpg;base64,` + b64(jpegBytes) + `"}}]`,
			"", []chat.Part{{Type: chat.PartImage, MediaType: "image/jpeg", Data: jpegBytes}}},
		{"audio", `[{"type":"input_audio","input_audio":{"data":"` + b64(wavBytes) + `","format":"wav"}}]`,
			"", []chat.Part{{Type: chat.PartAudio, MediaType: "audio/wav", Data: wavBytes}}},
		{"a file as a data: URL", `[{"type":"text","text":"summarise"},{"type":"file","file":{"filename":"dir/report.pdf","file_data":"data:application/pdf;base64,` + b64(pdfBytes) + `"}}]`,
			"summarise", []chat.Part{{Type: chat.PartFile, MediaType: "application/pdf", Data: pdfBytes, Name: "report.pdf"}}},
		{"a file as plain base64", `[{"type":"file","file":{"filename":"notes.csv","file_data":"` + b64([]byte("a,b\n1,2\n")) + `"}}]`,
			"", []chat.Part{{Type: chat.PartFile, MediaType: "text/csv", Data: []byte("a,b\n1,2\n"), Name: "notes.csv"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.runner.events = done
			if w := f.do("POST", "/v1/chat/completions", f.token, userContent(tt.content)); w.Code != http.StatusOK {
				t.Fatalf("status %d: %s", w.Code, w.Body)
			}
			want := []chat.Message{{Role: chat.User, Content: tt.text, Parts: tt.parts}}
			if diff := cmp.Diff(want, f.runner.inputs[0].Messages); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompletionMediaRefused(t *testing.T) {
	image := func(url string) string { return `[{"type":"image_url","image_url":{"url":"` + url + `"}}]` }
	big := b64(make([]byte, 2048))
	tests := []struct {
		name    string
		content string
		role    string // "user" when empty
		status  int
		code    string
		param   string
		mention string
	}{
		{"a data: URL that lies about its type", image("data:image/png;base64," + b64(jpegBytes)), "", 400, "invalid_media",
			"messages[0].content[0].image_url.url", "declared image/png but is image/jpeg"},
		{"a PDF said to be an image", image("data:image/webp;base64," + b64(pdfBytes)), "", 400, "invalid_media",
			"messages[0].content[0].image_url.url", "is application/pdf"},
		{"an image that is no image", image("data:image/gif;base64," + b64([]byte("hello there"))), "", 400, "invalid_media",
			"messages[0].content[0].image_url.url", "not of that type"},
		{"a PDF file that is none", `[{"type":"file","file":{"file_data":"data:application/pdf;base64,` + b64(pngBytes) + `"}}]`, "", 400, "invalid_media",
			"messages[0].content[0].file.file_data", "is image/png"},
		{"a data: URL not an image", image("data:text/plain;base64," + b64([]byte("hi"))), "", 400, "invalid_value", "messages[0].content[0].image_url.url", "not an image"},
		{"a data: URL not base64", image("data:image/png,abc"), "", 400, "invalid_value", "messages[0].content[0].image_url.url", "must be base64"},
		{"broken base64", image("data:image/png;base64,@@@"), "", 400, "invalid_value", "messages[0].content[0].image_url.url", "not valid base64"},
		{"an image over plain http", image("http://example.com/a.png"), "", 400, "invalid_value", "messages[0].content[0].image_url.url", "https"},
		{"a file: URL", image("file:///etc/passwd"), "", 400, "invalid_value", "messages[0].content[0].image_url.url", "https"},
		{"an unknown detail", `[{"type":"image_url","image_url":{"url":"https://x.example/a.png","detail":"max"}}]`, "", 400, "invalid_value", "messages[0].content[0].image_url.url", "detail"},
		{"image_url not an object", `[{"type":"image_url","image_url":"https://x.example/a.png"}]`, "", 400, "invalid_value", "messages[0].content[0].image_url", "object"},
		{"an audio format", `[{"type":"input_audio","input_audio":{"data":"` + b64(wavBytes) + `","format":"ogg"}}]`, "", 400, "invalid_value", "messages[0].content[0].input_audio.format", "wav or mp3"},
		{"a file by id", `[{"type":"file","file":{"file_id":"file-1"}}]`, "", 400, "invalid_value", "messages[0].content[0].file.file_id", "file_data"},
		{"a file without data", `[{"type":"file","file":{"filename":"a.pdf"}}]`, "", 400, "invalid_value", "messages[0].content[0].file.file_data", "required"},
		{"an image in a system message", image("https://x.example/a.png"), "system", 400, "invalid_value", "messages[0].content[0].type", "user's message"},
		{"an image over its limit", image("data:image/png;base64," + big), "", 413, "request_too_large", "messages[0].content[0].image_url.url", "limit of 1024 bytes"},
		{"a file over its limit", `[{"type":"file","file":{"file_data":"` + big + `"}}]`, "", 413, "request_too_large", "messages[0].content[0].file.file_data", "limit of 1024 bytes"},
		{"too many parts", strings.Repeat(`[`, 1) + strings.TrimSuffix(strings.Repeat(`{"type":"image_url","image_url":{"url":"https://x.example/a.png"}},`, 4), ",") + `]`, "", 413, "request_too_large", "messages[0].content", "more than 3"},
		{"a message over its limit", `[{"type":"input_audio","input_audio":{"format":"wav","data":"` + b64(make([]byte, 1000)) + `"}},{"type":"input_audio","input_audio":{"format":"mp3","data":"` + b64(make([]byte, 1000)) + `"}}]`,
			"", 413, "request_too_large", "messages[0].content", "limit of 1500 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, func(c *gateway.Config) {
				c.Media = chat.Limits{MaxImageBytes: 1024, MaxAudioBytes: 1024, MaxFileBytes: 1024, MaxMessageBytes: 1500, MaxParts: 3}
			})
			f.runner.events = done
			role := tt.role
			if role == "" {
				role = "user"
			}
			body := `{"model":"default","messages":[{"role":"` + role + `","content":` + tt.content + `}]}`
			w := f.do("POST", "/v1/chat/completions", f.token, body)
			got, msg := decodeError(t, w)
			if diff := cmp.Diff(apiErr{tt.status, "invalid_request_error", tt.code}, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			var e struct{ Error struct{ Param string } }
			if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error.Param != tt.param {
				t.Errorf("param %q, want %q (%v)", e.Error.Param, tt.param, err)
			}
			if !strings.Contains(msg, tt.mention) {
				t.Errorf("message %q does not say %q", msg, tt.mention)
			}
			if len(f.runner.inputs) != 0 {
				t.Errorf("a refused request started a run: %+v", f.runner.inputs)
			}
		})
	}
}

func TestResponsesMedia(t *testing.T) {
	f := newRespFixture(t)
	f.answer(done...)
	input := `[{"role":"user","content":[{"type":"input_text","text":"compare"},` +
		`{"type":"input_image","image_url":"data:image/png;base64,` + b64(pngBytes) + `","detail":"high"},` +
		`{"type":"input_image","image_url":"https://example.com/b.jpg","detail":"auto"},` +
		`{"type":"input_file","filename":"a.pdf","file_data":"data:application/pdf;base64,` + b64(pdfBytes) + `"}]}]`
	if w := f.post(f.token, `{"model":"default","input":`+input+`}`); w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	want := []chat.Message{{Role: chat.User, Content: "compare", Parts: []chat.Part{
		{Type: chat.PartImage, MediaType: "image/png", Data: pngBytes, Detail: "high"},
		{Type: chat.PartImage, URL: "https://example.com/b.jpg", Detail: "auto"},
		{Type: chat.PartFile, MediaType: "application/pdf", Data: pdfBytes, Name: "a.pdf"},
	}}}
	if diff := cmp.Diff(want, f.runner.delivered()[0].Messages); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	for _, tt := range []struct{ name, input, param string }{
		{"a lying image", `[{"role":"user","content":[{"type":"input_image","detail":"auto","image_url":"data:image/jpeg;base64,` + b64(pngBytes) + `"}]}]`, "input[0].content[0].image_url"},
		{"an image by file id", `[{"role":"user","content":[{"type":"input_image","detail":"auto","file_id":"file-1"}]}]`, "input[0].content[0].file_id"},
		{"a file by URL", `[{"role":"user","content":[{"type":"input_file","file_url":"https://example.com/a.pdf"}]}]`, "input[0].content[0].file_url"},
		{"an image in an assistant message", `[{"role":"assistant","content":[{"type":"input_image","detail":"auto","image_url":"https://example.com/b.jpg"}]}]`, "input[0].content[0].type"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(f.runner.delivered())
			got := refusalOf(t, f.post(f.token, `{"model":"default","input":`+tt.input+`}`))
			if got.Status != http.StatusBadRequest || got.Param != tt.param {
				t.Errorf("refusal %+v, want 400 naming %s", got, tt.param)
			}
			if n := len(f.runner.delivered()); n != before {
				t.Errorf("a refused request started a run")
			}
		})
	}
}

// A part the agent's model cannot take is refused by the runner (the
// loop's llm.CheckParts) with an *agent.InputError: a 400 naming it.
func TestMediaRefusedByModel(t *testing.T) {
	f := newFixture(t)
	f.runner.err = &agent.InputError{Message: `agent "default" cannot take this input: messages[0].parts[0] (audio) is not supported by the model provider p: its model takes [text image]`}
	w := f.do("POST", "/v1/chat/completions", f.token, userContent(`[{"type":"input_audio","input_audio":{"format":"mp3","data":"`+b64([]byte("ID3"))+`"}}]`))
	got, msg := decodeError(t, w)
	if diff := cmp.Diff(apiErr{http.StatusBadRequest, "invalid_request_error", "invalid_value"}, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if !strings.Contains(msg, "audio") || !strings.Contains(msg, `"default"`) {
		t.Errorf("message %q names neither the part nor the agent", msg)
	}
}

// A message the store cannot keep (a DynamoDB item over 400 KB) is 413,
// saying why.
func TestMessageTooLargeToStore(t *testing.T) {
	f := newFixture(t)
	f.runner.err = fmt.Errorf("enqueue: dynamo: message is 512000 bytes: %w", store.ErrTooLarge)
	got, msg := decodeError(t, f.do("POST", "/v1/chat/completions", f.token, userContent(`[{"type":"image_url","image_url":{"url":"data:image/png;base64,`+b64(pngBytes)+`"}}]`)))
	if diff := cmp.Diff(apiErr{http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large"}, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if !strings.Contains(msg, "400 KB") {
		t.Errorf("message %q does not say the limit", msg)
	}
}
