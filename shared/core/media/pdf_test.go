package media_test

import (
	"bytes"
	"compress/zlib"
	"strings"
	"testing"

	"github.com/lambdaclaw/lambdaclaw/shared/core/media"
	"github.com/lambdaclaw/lambdaclaw/shared/core/media/mediatest"
)

func TestPDFText(t *testing.T) {
	for _, tc := range []struct {
		name string
		pdf  []byte
		want string
	}{
		{"flate", mediatest.PDF(true, "Invoice 2026-114", "Total: 42.00 EUR (paid)"), "Invoice 2026-114\nTotal: 42.00 EUR (paid)"},
		{"uncompressed", mediatest.PDF(false, `a \ backslash`), `a \ backslash`},
		{"TJ with kerning and hex", pdfWith("BT [(Hel) -20 (lo) -300 <576f726c64>] TJ ET"), "Hello World"},
		{"octal escapes and UTF-16", pdfWith("BT (caf\\351) Tj T* <FEFF00E9007400E9> Tj ET"), "café\nété"},
		{"inline image skipped", pdfWith("BI /W 1 /H 1 ID \x00(x)\x00 EI BT (after) Tj ET"), "after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := media.PDFText(tc.pdf)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("text = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPDFTextRefuses(t *testing.T) {
	good := mediatest.PDF(true, "some text")
	corrupt := bytes.Clone(good)
	i := bytes.Index(corrupt, []byte("stream\n")) + len("stream\n")
	copy(corrupt[i:], "garbage!")
	var bomb bytes.Buffer
	w := zlib.NewWriter(&bomb)
	w.Write(bytes.Repeat([]byte("(x) Tj "), 4<<20))
	w.Close()
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"not a PDF", []byte("GIF89a..."), "not a PDF"},
		{"corrupt stream", corrupt, "the PDF is corrupt"},
		{"truncated", good[:20], "no content stream"},
		{"no text", pdfWith("0 0 1 1 re f"), "no text layer"},
		{"glyph ids", pdfWith("BT <0001000200030004000500060007> Tj ET"), "cannot decode"},
		{"bomb", pdfStream(" /Filter /FlateDecode", bomb.Bytes()), "inflates beyond"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := media.PDFText(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestExtract(t *testing.T) {
	if got, err := media.Extract("text/csv", []byte("a,b\n1,2\n")); err != nil || got != "a,b\n1,2\n" {
		t.Fatalf("csv = %q, %v", got, err)
	}
	if _, err := media.Extract("text/plain", []byte{0xff, 0xfe, 0x00}); err == nil || !strings.Contains(err.Error(), "not UTF-8") {
		t.Fatalf("latin-1 text: %v", err)
	}
	if _, err := media.Extract("application/zip", []byte("PK")); err != media.ErrNotText {
		t.Fatalf("zip: %v", err)
	}
	long, err := media.Extract("text/plain", []byte(strings.Repeat("é", media.MaxText)))
	if err != nil || len(long) > media.MaxText+100 || !strings.Contains(long, "[cut: the text has") {
		t.Fatalf("long text: %d bytes, %v", len(long), err)
	}
	for _, tc := range []struct{ name, given, want string }{
		{"report.pdf", "", "application/pdf"},
		{"notes.md", "application/octet-stream", "text/markdown"},
		{"data.csv", "", "text/csv"},
		{"x", "text/plain; charset=utf-8", "text/plain"},
	} {
		if got := media.TypeOf(tc.name, tc.given, nil); got != tc.want {
			t.Errorf("TypeOf(%q, %q) = %q, want %q", tc.name, tc.given, got, tc.want)
		}
	}
}

// pdfWith is a PDF whose one content stream is content, uncompressed.
func pdfWith(content string) []byte { return pdfStream("", []byte(content)) }

func pdfStream(filter string, stream []byte) []byte {
	return []byte("%PDF-1.4\n4 0 obj\n<< /Length 1" + filter + " >>\nstream\n" + string(stream) + "\nendstream\nendobj\n%%EOF\n")
}
