package openai

import (
	"bufio"
	"bytes"
	"io"

	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// limitEvents returns body failing with a *llm.ReplyTooLargeError as soon
// as one server-sent event (its lines up to the blank line that ends it)
// passes llm.ReplyBodyBound(limit) bytes. An eventReader keeps a whole
// event in memory, so this bounds what a stream holds while letting the
// stream itself run as long as it needs to.
func limitEvents(body io.ReadCloser, limit int) io.ReadCloser {
	bound := llm.ReplyBodyBound(limit)
	// line counts the bytes of the current line, event those of the
	// current event; last is the byte read before.
	var line, event int64
	var last byte
	return llm.ScanBody(body, func(p []byte) error {
		for _, c := range p {
			if c == '\n' {
				// A line that is empty, once the eventReader has dropped
				// a trailing \r, ends the event.
				if line == 0 || (line == 1 && last == '\r') {
					event = 0
				}
				line = 0
			} else {
				line++
				event++
				if event > bound {
					return &llm.ReplyTooLargeError{Limit: limit}
				}
			}
			last = c
		}
		return nil
	})
}

// eventReader reads the data of server-sent events: the values of an
// event's "data" lines, each followed by a newline, up to the blank line
// that ends it. Other fields and comments are ignored; lines end with
// "\n" or "\r\n".
type eventReader struct {
	lines *bufio.Scanner
	data  []byte
}

// newEventReader reads the events of body, which limitEvents has bounded
// for limit: no line can be longer than its bound.
func newEventReader(body io.Reader, limit int) *eventReader {
	lines := bufio.NewScanner(body)
	lines.Buffer(nil, int(llm.ReplyBodyBound(limit))+2)
	return &eventReader{lines: lines}
}

// next returns the data of the next event, valid until the following
// call; io.EOF when the stream ends (an event it cuts short is dropped).
func (r *eventReader) next() ([]byte, error) {
	r.data = r.data[:0]
	for r.lines.Scan() {
		line := r.lines.Bytes()
		if len(line) == 0 {
			if len(r.data) > 0 {
				return r.data, nil
			}
			continue
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		if string(name) == "data" {
			value, _ = bytes.CutPrefix(value, []byte(" "))
			r.data = append(append(r.data, value...), '\n')
		}
	}
	if err := r.lines.Err(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}
