package scrub

import (
	"regexp"
	"strings"
)

// maxHold bounds how much text a Stream holds back while it waits for the
// end of a possible secret (an open quoted value or PEM block). Past it the
// held text is scrubbed and emitted as it is.
const maxHold = 256 << 10

// holdRE matches the end of a line that could still be the beginning of a
// multi-word secret: a credential key waiting for its separator or value, an
// Authorization header waiting for its scheme or value, a quoted value not
// yet closed, or a Bearer prefix. It must match every prefix, ending in
// whitespace, of a match of the key assignment, Authorization and Bearer
// patterns; it may match more, which only delays output.
var holdRE = regexp.MustCompile(`(?i)(?:` + keyNames + `|authorization|bearer)\\?["']?[ \t]*` +
	`(?:(?::=|=>|[:=])[ \t]*(?:\\?"(?:[^"\\\r\n]|\\.)*|\\?'[^'\r\n]*|[a-z]+[ \t]+)?)?$`)

// pemPartialRE matches the end of a line holding a PEM header that is still
// arriving and has been cut at a space.
var pemPartialRE = regexp.MustCompile(`-----BEGIN[A-Z0-9 ]*$`)

// Stream scrubs text that arrives in pieces, such as a model's streamed
// reply. It emits scrubbed text as soon as no secret can span the point it
// has reached, and holds back the rest: the last, possibly incomplete, word;
// a credential key with its value still to come; an open quoted value; an
// unterminated PEM private key block.
//
// Everything a Stream emits, concatenated, equals Scrub of everything
// written, as long as no held construct grows beyond 256 KiB.
//
// A Stream is not safe for concurrent use.
type Stream struct {
	emit    func(string)
	pending string
}

// NewStream returns a Stream that passes scrubbed text to emit. emit is never
// called with an empty string.
func NewStream(emit func(string)) *Stream {
	return &Stream{emit: emit}
}

// Write adds the next piece of text.
func (s *Stream) Write(delta string) {
	if delta == "" {
		return
	}
	old := len(s.pending)
	s.pending += delta
	if len(s.pending) > maxHold {
		s.Flush()
		return
	}
	// Whether a cut is safe depends only on the text before it, and cuts
	// are made after whitespace, so only whitespace in delta can create a
	// safe cut that earlier calls did not already reject.
	if !strings.ContainsAny(delta, " \t\r\n\f") {
		return
	}
	for c := len(s.pending); c > old; c-- {
		if !isSpace(s.pending[c-1]) {
			continue
		}
		if safeCut(s.pending[:c]) {
			s.out(Scrub(s.pending[:c]))
			s.pending = s.pending[c:]
			return
		}
	}
}

// Flush emits everything held back, scrubbed. Text written afterwards is
// scrubbed as if it started a new text.
func (s *Stream) Flush() {
	if s.pending == "" {
		return
	}
	s.out(Scrub(s.pending))
	s.pending = ""
}

func (s *Stream) out(text string) {
	if text != "" {
		s.emit(text)
	}
}

// isSpace reports whether c is one of the bytes the patterns treat as
// whitespace (regexp's \s).
func isSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\f':
		return true
	}
	return false
}

// safeCut reports whether no secret can span the end of prefix, which ends in
// whitespace, whatever text follows. Patterns other than the PEM block cannot
// cross a line break, so only the last line needs checking for them.
func safeCut(prefix string) bool {
	if openPEM(prefix) {
		return false
	}
	line := prefix[strings.LastIndexByte(prefix, '\n')+1:]
	return line == "" || !holdRE.MatchString(line)
}

// openPEM reports whether a PEM private key block is open at the end of
// prefix: its header has arrived, or is arriving, and its END line has not.
func openPEM(prefix string) bool {
	if !strings.Contains(prefix, "-----BEGIN") {
		return false
	}
	if m := pemRE.FindAllStringSubmatchIndex(prefix, -1); len(m) > 0 && m[len(m)-1][2] < 0 {
		return true
	}
	return pemPartialRE.MatchString(prefix[strings.LastIndexByte(prefix, '\n')+1:])
}
