package llmtest

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// The media of the suite's cases: a PNG image and a PDF document, as
// their magic numbers begin them.
var (
	PNG      = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01")
	PDF      = []byte("%PDF-1.7\n1 0 obj << /Type /Catalog >> endobj\n%%EOF")
	image    = chat.Part{Type: chat.PartImage, MediaType: "image/png", Data: PNG}
	document = chat.Part{Type: chat.PartFile, MediaType: "application/pdf", Data: PDF, Name: "quarterly report"}
)

// testMedia checks that a user's images and documents reach the model,
// in history too, each with its type, bytes and (a document's) name;
// and that a part of a kind the provider's input leaves out is refused
// as an unsupported parameter is: llm.CheckParts and Generate with an
// *llm.UnsupportedError, without a call.
func testMedia(t *testing.T, h Harness) {
	both := llm.Accepts{chat.PartImage, chat.PartFile}
	tests := []struct {
		name  string
		input llm.Accepts
		msgs  []chat.Message
	}{
		{"image", nil, []chat.Message{{Role: chat.User, Content: "What is in this picture?", Parts: []chat.Part{image}}}},
		{"document", both, []chat.Message{{Role: chat.User, Content: "Summarise the report.", Parts: []chat.Part{document}}}},
		{"both in history", both, []chat.Message{
			{Role: chat.System, Content: "You are terse."},
			{Role: chat.User, Content: "Does the chart match the report?", Parts: []chat.Part{image, document}},
			{Role: chat.Assistant, Content: "Yes."},
			{Role: chat.User, Content: "Thanks"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			modes(t, func(t *testing.T, stream bool) {
				p, s := h.start(t, Config{Input: tt.input}, Answer{Pieces: []Piece{Text("ok")}, Finish: "stop", Usage: usage})
				req := llm.Request{Messages: tt.msgs}
				if err := llm.CheckParts(p, tt.msgs); err != nil {
					t.Fatalf("CheckParts: %v", err)
				}
				if _, _, err := generate(t, p, req, stream); err != nil {
					t.Fatalf("Generate: %v", err)
				}
				calls := s.received()
				if len(calls) != 1 {
					t.Fatalf("%d calls, want 1", len(calls))
				}
				if diff := cmp.Diff(tt.msgs, calls[0].call.Messages); diff != "" {
					t.Errorf("messages received (-want +got):\n%s", diff)
				}
			})
		})
	}
	t.Run("refused", func(t *testing.T) {
		modes(t, func(t *testing.T, stream bool) {
			p, s := h.start(t, Config{Input: llm.Accepts{chat.PartImage}}, Answer{Pieces: []Piece{Text("ok")}, Finish: "stop", Usage: usage})
			msgs := []chat.Message{{Role: chat.User, Content: "Hi"}, {Role: chat.User, Content: "Summarise.", Parts: []chat.Part{image, document}}}
			var u *llm.UnsupportedError
			if err := llm.CheckParts(p, msgs); !errors.As(err, &u) || u.Provider != Name || u.Param != "messages[1].parts[1] (file)" || u.Reason == "" {
				t.Fatalf("CheckParts = %#v, want an *llm.UnsupportedError of provider %s naming messages[1].parts[1] (file)", err, Name)
			}
			_, _, err := generate(t, p, llm.Request{Messages: msgs}, stream)
			h.checkError(t, err, llm.Error{}, u.Error())
			if n := len(s.received()); n != 0 {
				t.Errorf("%d calls made with a part the provider refuses", n)
			}
		})
	})
}
