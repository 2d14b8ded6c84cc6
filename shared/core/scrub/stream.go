package scrub

import (
	"bytes"
	"strings"
)

// maxHold bounds how much text a Stream holds back while it waits for the
// end of a possible secret (an open quoted value or PEM block). Past it the
// held text is scrubbed and emitted as it is.
const maxHold = 256 << 10

// pemPartialExpr matches the end of a line holding a PEM header that is still
// arriving and has been cut at a space.
const pemPartialExpr = `-----BEGIN[A-Z0-9 ]*$`

// Stream scrubs text that arrives in pieces, such as a model's streamed
// reply. It emits scrubbed text up to a point no secret can span, and holds
// back the rest: the last, possibly incomplete, word; a credential key or an
// Authorization or Cookie header with its value still to come; an open
// quoted value; a command line whose password flag may follow (docker
// login, mysql); an unterminated PEM private key block.
//
// Everything a Stream emits, concatenated, equals Scrub of everything
// written, as long as no held construct grows beyond 256 KiB.
//
// A Stream is not safe for concurrent use.
type Stream struct {
	emit    func(string)
	pending []byte
	// before is the end of the text already emitted, unscrubbed: the
	// context of what comes next (see contextLen).
	before []byte
	// nextCheck is the length pending must reach before the next look for a
	// cut. Looking costs time linear in what is held, so while a large
	// construct is held the looks are spaced out geometrically.
	nextCheck int
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
	s.pending = append(s.pending, delta...)
	if len(s.pending) > maxHold {
		s.Flush()
		return
	}
	// Cuts are made only after whitespace, so a delta without any cannot
	// offer a new one.
	if len(s.pending) < s.nextCheck || !strings.ContainsAny(delta, " \t\r\n\f") {
		return
	}
	s.cut()
}

// cut emits the longest prefix of pending it finds safe: the text up to the
// last whitespace, or else up to the construct that holds it back.
func (s *Stream) cut() {
	c := lastCut(s.pending, len(s.pending))
	for range 2 {
		if c == 0 {
			break
		}
		block := blocked(s.pending[:c])
		if block < 0 {
			s.out(s.pending[:c])
			s.pending = append(s.pending[:0], s.pending[c:]...)
			s.nextCheck = 0
			return
		}
		c = lastCut(s.pending, block)
	}
	if n := len(s.pending); n > 1<<10 {
		s.nextCheck = n + n/4
	}
}

// Flush emits everything held back, scrubbed. Text written afterwards is
// scrubbed as if it started a new text.
func (s *Stream) Flush() {
	if len(s.pending) > 0 {
		s.out(s.pending)
	}
	s.pending = s.pending[:0]
	s.before = s.before[:0]
	s.nextCheck = 0
}

// out emits raw, scrubbed in the context of what was emitted before.
func (s *Stream) out(raw []byte) {
	from := len(s.before)
	s.before = append(s.before, raw...)
	if text := scrubFrom(string(s.before), from); text != "" {
		s.emit(text)
	}
	if n := len(s.before); n > contextLen {
		keep := s.before[n-contextLen:]
		if cap(s.before) > 16*contextLen {
			// Do not keep a buffer the size of a large held construct.
			s.before = nil
		}
		s.before = append(s.before[:0], keep...)
	}
}

// lastCut returns the largest c <= n such that p[c-1] is whitespace (regexp's
// \s), or 0.
func lastCut(p []byte, n int) int {
	for c := n; c > 0; c-- {
		switch p[c-1] {
		case ' ', '\t', '\n', '\r', '\f':
			return c
		}
	}
	return 0
}

// blocked reports where a secret that could span the end of prefix starts,
// whatever text follows, or -1 if none can. prefix ends in whitespace.
// Patterns other than the PEM block cannot cross a line break, so only the
// last line is checked for them.
func blocked(prefix []byte) int {
	start := openPEM(prefix)
	line := bytes.LastIndexByte(prefix, '\n') + 1
	if at := holdStart(string(prefix[line:])); at >= 0 && (start < 0 || line+at < start) {
		start = line + at
	}
	return start
}

// openPEM returns where a PEM private key block open at the end of prefix
// starts, or -1: its header has arrived, or is arriving, and its END line
// has not.
func openPEM(prefix []byte) int {
	if !bytes.Contains(prefix, []byte("-----BEGIN")) {
		return -1
	}
	pem()
	if m := pemRE.FindAllSubmatchIndex(prefix, -1); len(m) > 0 && m[len(m)-1][2] < 0 {
		return m[len(m)-1][0]
	}
	line := bytes.LastIndexByte(prefix, '\n') + 1
	if loc := pemPartialRE.FindIndex(prefix[line:]); loc != nil {
		return line + loc[0]
	}
	return -1
}
