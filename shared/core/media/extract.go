// Package media reads what the files people send say: the text of plain
// text, CSV and Markdown files, and the text layer of a PDF (pdf.go, a
// small reader of its content streams, no dependency), so that a model
// that takes no files still reads a document.
package media

import (
	"errors"
	"fmt"
	"mime"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
)

// ErrNotText is the error of a file whose type has no text to extract
// (an image, an archive, an office document).
var ErrNotText = errors.New("no text can be extracted from this type of file")

// MaxText bounds the text extracted from one file, in bytes; the rest is
// cut and said so.
const MaxText = 256 << 10

// textTypes are the media types read as text as they are.
var textTypes = map[string]bool{
	"text/plain": true, "text/csv": true, "text/markdown": true, "text/tab-separated-values": true,
	"application/json": true, "application/csv": true,
}

// TypeOf returns the media type of a file: the one its platform gave,
// else the one its name's extension says, else the one its bytes say.
func TypeOf(name, mediaType string, data []byte) string {
	if mt, _, err := mime.ParseMediaType(mediaType); err == nil && mt != "application/octet-stream" {
		return mt
	}
	switch strings.ToLower(path.Ext(name)) {
	case ".md":
		return "text/markdown"
	case ".csv":
		return "text/csv"
	}
	if mt, _, err := mime.ParseMediaType(mime.TypeByExtension(path.Ext(name))); err == nil {
		return mt
	}
	if mt := chat.SniffMediaType(data); mt != "" {
		return mt
	}
	return "application/octet-stream"
}

// Extract returns the text of a file of mediaType: text files as they
// are (valid UTF-8 required), a PDF's text layer. It returns ErrNotText
// for other types, and an error saying what is wrong with a file that
// claims a type but cannot be read as it (a corrupt PDF, a text file that
// is not UTF-8, a PDF without a text layer). The text is cut at MaxText.
func Extract(mediaType string, data []byte) (string, error) {
	var text string
	switch {
	case textTypes[mediaType]:
		if !utf8.Valid(data) {
			return "", errors.New("the file is not UTF-8 text")
		}
		text = string(data)
	case mediaType == "application/pdf":
		t, err := PDFText(data)
		if err != nil {
			return "", err
		}
		text = t
	default:
		return "", ErrNotText
	}
	return cut(text, MaxText), nil
}

// cut returns text within max bytes, saying where it was cut.
func cut(text string, max int) string {
	if len(text) <= max {
		return text
	}
	i := max
	for i > 0 && !utf8.RuneStart(text[i]) {
		i--
	}
	return text[:i] + fmt.Sprintf("\n[cut: the text has %d bytes; only the first %d are given]", len(text), i)
}
