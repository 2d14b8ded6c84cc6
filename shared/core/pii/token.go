package pii

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync"
)

// MaxValueBytes bounds a value that gets a token; a longer match is
// redacted as <KIND> instead (Redact), not kept in the session's map.
const MaxValueBytes = 256

// tokenRe matches a token: <KIND_n>.
var tokenRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`<([A-Z][A-Z0-9]*)_([1-9][0-9]{0,5})>`) })

// maxTokenLen is the longest a token can be, for Stream's hold-back.
const maxTokenLen = 1 + 24 + 1 + 6 + 1

// Replace returns text with each match replaced by token(m), which
// returns the token of text[m.Start:m.End].
func Replace(text string, ms []Match, token func(m Match, value string) string) string {
	if len(ms) == 0 {
		return text
	}
	var b strings.Builder
	at := 0
	for _, m := range ms {
		b.WriteString(text[at:m.Start])
		b.WriteString(token(m, text[m.Start:m.End]))
		at = m.End
	}
	b.WriteString(text[at:])
	return b.String()
}

// Redact is the placeholder of a value that has no token: <KIND>.
func Redact(kind string) string { return "<" + kind + ">" }

// Reveal returns text with each token value knows replaced by its value;
// other tokens, and text that only looks like one, stay.
func Reveal(text string, value func(token string) (string, bool)) string {
	if !strings.Contains(text, "<") {
		return text
	}
	return tokenRe().ReplaceAllStringFunc(text, func(tok string) string {
		if v, ok := value(tok); ok {
			return v
		}
		return tok
	})
}

// RevealJSON is Reveal for JSON text, such as a tool call's arguments: a
// value replaces a token inside a string escaped as JSON needs.
func RevealJSON(text string, value func(token string) (string, bool)) string {
	return Reveal(text, func(tok string) (string, bool) {
		v, ok := value(tok)
		if !ok {
			return "", false
		}
		b, _ := json.Marshal(v)
		return string(b[1 : len(b)-1]), true
	})
}

// Stream reveals tokens in text that comes in pieces, as a model's
// streamed answer: a piece that ends within what may be the start of a
// token is held back until the next piece completes or ends it.
type Stream struct {
	emit  func(string)
	value func(token string) (string, bool)
	held  string
}

// NewStream returns a Stream that passes revealed text to emit.
func NewStream(emit func(string), value func(token string) (string, bool)) *Stream {
	return &Stream{emit: emit, value: value}
}

// Write takes the next piece.
func (s *Stream) Write(piece string) {
	text := s.held + piece
	cut := len(text)
	if i := strings.LastIndexByte(text, '<'); i >= 0 && partialToken(text[i:]) {
		cut = i
	}
	s.held = text[cut:]
	if cut > 0 {
		s.emit(Reveal(text[:cut], s.value))
	}
}

// Flush passes on what is held back.
func (s *Stream) Flush() {
	if s.held != "" {
		s.emit(Reveal(s.held, s.value))
		s.held = ""
	}
}

// partialToken says whether t, which starts with '<', may be the start of
// a token not yet complete.
func partialToken(t string) bool {
	if len(t) >= maxTokenLen || strings.IndexByte(t, '>') >= 0 {
		return false
	}
	underscore := false
	for i := 1; i < len(t); i++ {
		c := t[i]
		switch {
		case c >= 'A' && c <= 'Z' && !underscore, c >= '0' && c <= '9' && i > 1:
		case c == '_' && !underscore && i > 1:
			underscore = true
		default:
			return false
		}
	}
	return true
}
