package awsapi

import (
	"cmp"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// Error is an error a service answered: its HTTP status, its code (such
// as ResourceNotFoundException or ExecutionAlreadyExists) and message.
type Error struct {
	Service, Operation string
	Status             int
	Code, Message      string
	RequestID          string
	// Header is the answer's header (Retry-After, say); nil for an
	// exception in an event stream.
	Header http.Header
	// Body is the answer's body, for the members of an error beyond its
	// code and message (DynamoDB's CancellationReasons, say).
	Body []byte
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s %s: %s", e.Service, e.Operation, e.Code)
	if e.Message != "" {
		s += ": " + e.Message
	}
	var about []string
	if e.Status != 0 {
		about = append(about, fmt.Sprintf("HTTP %d", e.Status))
	}
	if e.RequestID != "" {
		about = append(about, "request "+e.RequestID)
	}
	if len(about) > 0 {
		s += " (" + strings.Join(about, ", ") + ")"
	}
	return s
}

// TooLargeError is an answer with a body larger than the client reads:
// its HTTP status, and the bound.
type TooLargeError struct {
	Service, Operation string
	Status             int
	Limit              int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s %s: the response (HTTP %d) is larger than %d bytes", e.Service, e.Operation, e.Status, e.Limit)
}

// Status returns the HTTP status of the answer err came with: a
// service's error, an answer too large, or one whose body was cut off;
// 0 when there was none (an exception in an event stream, say).
func Status(err error) int {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Status
	}
	if e, ok := errors.AsType[*TooLargeError](err); ok {
		return e.Status
	}
	if e, ok := errors.AsType[*connError](err); ok {
		return e.status
	}
	return 0
}

// Code returns the service's error code of err, "" when err is not a
// service's error.
func Code(err error) string {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return ""
}

// HasCode reports whether err is a service's error with one of codes.
func HasCode(err error, codes ...string) bool {
	c := Code(err)
	return c != "" && slices.Contains(codes, c)
}

// decodeError reads the error a service answered with status: the code
// in the X-Amzn-Errortype header or the body's __type (awsJson,
// restJson1), in x-amzn-query-error for a service compatible with the
// query protocol, in <Error><Code> (query) or in <Code> of the <Error>
// (restXml, S3). An answer without one (S3's 404 to a HEAD) has its
// status's text ("NotFound").
func (s Service) decodeError(op string, status int, h http.Header, body []byte) *Error {
	e := &Error{Service: s.Name, Operation: op, Status: status, RequestID: cmp.Or(h.Get("X-Amzn-Requestid"), h.Get("X-Amz-Request-Id")), Header: h, Body: body}
	switch s.protocol {
	case restXML:
		var x struct{ Code, Message string }
		if xml.Unmarshal(body, &x) == nil {
			e.Code, e.Message = x.Code, x.Message
		}
	case query:
		var x struct {
			Code      string `xml:"Error>Code"`
			Message   string `xml:"Error>Message"`
			RequestID string `xml:"RequestId"`
		}
		if xml.Unmarshal(body, &x) == nil {
			e.Code, e.Message = x.Code, x.Message
			if x.RequestID != "" {
				e.RequestID = x.RequestID
			}
		}
	default:
		var j struct {
			Type     string `json:"__type"`
			Code     string `json:"code"`
			Message  string `json:"message"`
			MessageU string `json:"Message"`
		}
		_ = json.Unmarshal(body, &j)
		e.Code = sanitizeCode(cmp.Or(h.Get("X-Amzn-Errortype"), j.Type, j.Code))
		e.Message = cmp.Or(j.Message, j.MessageU)
		if s.queryCompatible {
			// "AWS.SimpleQueueService.NonExistentQueue;Sender"
			if code, _, _ := strings.Cut(h.Get("X-Amzn-Query-Error"), ";"); code != "" {
				e.Code = code
			}
		}
	}
	if e.Code == "" {
		e.Code = strings.ReplaceAll(http.StatusText(status), " ", "")
		if e.Code == "" {
			e.Code = fmt.Sprintf("HTTP%d", status)
		}
	}
	return e
}

// sanitizeCode takes the code out of a type such as
// "com.amazonaws.sfn#ExecutionAlreadyExists" or
// "ResourceNotFoundException:http://internal.amazon.com/…", as the SDK does.
func sanitizeCode(t string) string {
	t, _, _ = strings.Cut(t, ":")
	if i := strings.LastIndexByte(t, '#'); i >= 0 {
		t = t[i+1:]
	}
	return strings.TrimSpace(t)
}
