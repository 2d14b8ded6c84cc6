package opensearch

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// ErrIndexNotFound matches (with errors.Is) an *Error for a missing index:
// OpenSearch's index_not_found_exception.
var ErrIndexNotFound = errors.New("index not found")

// ErrForbidden matches (with errors.Is) an *Error with status 401 or 403:
// a missing or wrong SigV4 signature, or credentials the domain's access
// policy or the collection's data access policy does not admit.
var ErrForbidden = errors.New("access denied")

// maxReason bounds how much of a server's error text is kept.
const maxReason = 500

// Error is an error response from OpenSearch (or from the AWS front end
// that signs requests in and out of it).
type Error struct {
	// Op names the operation: "create index", "bulk", "search", …
	Op string
	// Status is the HTTP status.
	Status int
	// Type is error.type, such as index_not_found_exception; empty when the
	// body had none (AWS's own {"message": …} bodies).
	Type string
	// Reason is error.reason, or the body's message.
	Reason string
	// RootCause is the first of error.root_cause, when it says more than
	// Type and Reason.
	RootCause string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "opensearch %s: status %d", e.Op, e.Status)
	if e.Type != "" {
		b.WriteString(": " + e.Type)
	}
	if e.Reason != "" {
		b.WriteString(": " + e.Reason)
	}
	if e.RootCause != "" {
		b.WriteString(" (root cause: " + e.RootCause + ")")
	}
	return b.String()
}

// Is reports whether e is ErrIndexNotFound or ErrForbidden.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrIndexNotFound:
		return e.Type == "index_not_found_exception"
	case ErrForbidden:
		return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
	}
	return false
}

// Retryable reports whether the same request may succeed later: rate
// limits (429, also sent when a node's write queue is full) and server
// errors.
func (e *Error) Retryable() bool {
	return e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// parseError turns an error response into an *Error. It understands
// OpenSearch's {"error": {"root_cause": […], "type", "reason"}, "status"},
// the older {"error": "text", "status"}, and the {"message": …} bodies AWS
// sends when it rejects a request before OpenSearch sees it (a bad
// signature, an access policy).
func parseError(op string, status int, body []byte) *Error {
	e := &Error{Op: op, Status: status}
	var wire struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Reason  string          `json:"reason"`
	}
	if json.Unmarshal(body, &wire) != nil {
		e.Reason = truncate(string(body))
		if e.Reason == "" {
			e.Reason = http.StatusText(status)
		}
		return e
	}
	var detail struct {
		RootCause []struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		} `json:"root_cause"`
		Type   string `json:"type"`
		Reason string `json:"reason"`
	}
	var text string
	switch {
	case len(wire.Error) > 0 && json.Unmarshal(wire.Error, &detail) == nil:
		e.Type, e.Reason = detail.Type, truncate(detail.Reason)
		if len(detail.RootCause) > 0 {
			rc := detail.RootCause[0]
			if rc.Type != detail.Type || rc.Reason != detail.Reason {
				e.RootCause = truncate(strings.TrimPrefix(rc.Type+": "+rc.Reason, ": "))
			}
		}
	case len(wire.Error) > 0 && json.Unmarshal(wire.Error, &text) == nil:
		e.Reason = truncate(text)
	case wire.Message != "":
		e.Reason = truncate(wire.Message)
	case wire.Reason != "":
		e.Reason = truncate(wire.Reason)
	}
	if e.Reason == "" && e.Type == "" {
		e.Reason = http.StatusText(status)
	}
	return e
}

// BulkError reports the actions of a _bulk request that failed although
// the request as a whole succeeded (HTTP 200 with "errors": true).
type BulkError struct {
	// Actions is the number of actions in the request.
	Actions int
	// Failed lists the failed actions in request order.
	Failed []BulkFailure
}

// BulkFailure is one failed action of a _bulk request.
type BulkFailure struct {
	Action string // "index" or "delete"
	ID     string // the document id; OpenSearch's own for Serverless inserts
	Status int
	Type   string
	Reason string
}

func (e *BulkError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "opensearch bulk: %d of %d actions failed", len(e.Failed), e.Actions)
	for i, f := range e.Failed {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(e.Failed)-i)
			break
		}
		fmt.Fprintf(&b, "; %s %q: status %d: %s: %s", f.Action, f.ID, f.Status, f.Type, f.Reason)
	}
	return b.String()
}

// Retryable reports whether every failure is one that may pass when sent
// again (429 from a full write queue, 5xx).
func (e *BulkError) Retryable() bool {
	for _, f := range e.Failed {
		if f.Status != http.StatusTooManyRequests && f.Status < 500 {
			return false
		}
	}
	return len(e.Failed) > 0
}

func truncate(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxReason {
		return s
	}
	cut := maxReason
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
