package awsapi

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"unicode"
	"unicode/utf8"
)

// EventStream reads an answer in AWS's event-stream framing
// (application/vnd.amazon.eventstream), as ConverseStream streams it.
// Each message is a prelude (its total length, its headers' length and
// the CRC32 of those 8 bytes, big-endian), its headers, its payload and
// the CRC32 of all before it. The :message-type header says what it is:
// an event named by :event-type, an exception named by :exception-type,
// or an error (:error-code, :error-message).
type EventStream struct {
	svc  Service
	op   string
	body io.ReadCloser
	// maxLen bounds a message; a longer one is a *TooLargeError.
	maxLen int64
	// buf holds the message being read; it grows to the longest.
	buf []byte
}

// Event is an event of a stream: its :event-type and its payload.
type Event struct {
	Type    string
	Payload []byte
}

// MaxEventLen bounds a message of an event stream as the SDK's decoder
// does: 16 MiB of payload and 128 KiB of headers, with the prelude and
// the CRC.
const MaxEventLen = 16<<20 + 128<<10 + 16

// eventPreludeLen is the length of a message's prelude, and
// minEventLen that of a message without headers or payload.
const (
	eventPreludeLen = 12
	minEventLen     = eventPreludeLen + 4
)

// newEventStream reads the event-stream body of op of svc's answer.
func newEventStream(svc Service, op string, body io.ReadCloser) *EventStream {
	return &EventStream{svc: svc, op: op, body: body, maxLen: MaxEventLen}
}

// Next returns the next event; its payload is valid until the next
// call. The end of the stream between two messages is io.EOF, inside one
// io.ErrUnexpectedEOF. A message longer than the stream's bound is a
// *TooLargeError, found before any of it past its prelude is read. An
// exception or error message is an *Error with the service's code (an
// exception type such as "throttlingException" read as its shape,
// ThrottlingException) and the payload's message.
func (s *EventStream) Next() (Event, error) {
	var prelude [eventPreludeLen]byte
	if _, err := io.ReadFull(s.body, prelude[:]); err != nil {
		return Event{}, err
	}
	total := binary.BigEndian.Uint32(prelude[0:4])
	headersLen := binary.BigEndian.Uint32(prelude[4:8])
	switch {
	case total < minEventLen:
		return Event{}, s.invalid(fmt.Sprintf("a message of %d bytes, shorter than its prelude", total))
	case int64(total) > s.maxLen:
		return Event{}, &TooLargeError{Service: s.svc.Name, Operation: s.op, Status: http.StatusOK, Limit: s.maxLen}
	case crc32.ChecksumIEEE(prelude[:8]) != binary.BigEndian.Uint32(prelude[8:12]):
		return Event{}, s.invalid("the prelude's checksum does not match")
	case headersLen > total-minEventLen:
		return Event{}, s.invalid(fmt.Sprintf("%d bytes of headers in a message of %d", headersLen, total))
	}
	if cap(s.buf) < int(total) {
		s.buf = make([]byte, total)
	}
	msg := s.buf[:total]
	copy(msg, prelude[:])
	if _, err := io.ReadFull(s.body, msg[eventPreludeLen:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Event{}, err
	}
	if crc32.ChecksumIEEE(msg[:total-4]) != binary.BigEndian.Uint32(msg[total-4:]) {
		return Event{}, s.invalid("the message's checksum does not match")
	}
	headers, err := eventHeaders(msg[eventPreludeLen : eventPreludeLen+headersLen])
	if err != nil {
		return Event{}, s.invalid(err.Error())
	}
	payload := msg[eventPreludeLen+headersLen : total-4]
	switch t := headers[":message-type"]; t {
	case "event":
		return Event{Type: headers[":event-type"], Payload: payload}, nil
	case "exception":
		var body struct {
			Message  string `json:"message"`
			MessageU string `json:"Message"`
		}
		_ = json.Unmarshal(payload, &body)
		return Event{}, &Error{Service: s.svc.Name, Operation: s.op, Code: exceptionCode(headers[":exception-type"]), Message: body.Message + body.MessageU}
	case "error":
		return Event{}, &Error{Service: s.svc.Name, Operation: s.op, Code: headers[":error-code"], Message: headers[":error-message"]}
	default:
		return Event{}, s.invalid(fmt.Sprintf("a message of type %q", t))
	}
}

// Close closes the stream's body.
func (s *EventStream) Close() error { return s.body.Close() }

func (s *EventStream) invalid(why string) error {
	return fmt.Errorf("%s %s: invalid event stream: %s", s.svc.Name, s.op, why)
}

// exceptionCode is the shape of an exception's member name:
// throttlingException is a ThrottlingException.
func exceptionCode(t string) string {
	r, n := utf8.DecodeRuneInString(t)
	return string(unicode.ToUpper(r)) + t[n:]
}

// eventHeaderSizes are the value lengths of the header types of fixed
// length, by type: true, false, byte, short, integer, long, (byte array,
// string: a 2-byte length first), timestamp, uuid.
var eventHeaderSizes = [...]int{0, 0, 1, 2, 4, 8, -1, -1, 8, 16}

// eventHeaders reads a message's headers, keeping the string ones.
func eventHeaders(b []byte) (map[string]string, error) {
	h := map[string]string{}
	for len(b) > 0 {
		n := int(b[0])
		if len(b) < 1+n+1 {
			return nil, errors.New("a header cut short")
		}
		name, typ := string(b[1:1+n]), b[1+n]
		b = b[2+n:]
		if int(typ) >= len(eventHeaderSizes) {
			return nil, fmt.Errorf("header %s of unknown type %d", name, typ)
		}
		size := eventHeaderSizes[typ]
		if size < 0 {
			if len(b) < 2 {
				return nil, errors.New("a header cut short")
			}
			size = int(binary.BigEndian.Uint16(b))
			b = b[2:]
		}
		if len(b) < size {
			return nil, errors.New("a header cut short")
		}
		if typ == 7 {
			h[name] = string(b[:size])
		}
		b = b[size:]
	}
	return h, nil
}
