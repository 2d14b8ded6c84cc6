package llm

import (
	"fmt"
	"io"

	"github.com/lambdaclaw/lambdaclaw/shared/core/chat"
)

// DefaultMaxReplyBytes caps a reply when a provider is given no limit.
const DefaultMaxReplyBytes = 1 << 20

// FinishLength is the finish reason of a reply cut at its size limit, the
// one OpenAI gives a reply cut at max_tokens.
const FinishLength = "length"

// replyBodyMargin is the room left in a response body, or in one streamed
// event, for what surrounds the reply: ids, model, usage, tool-call names.
const replyBodyMargin = 64 << 10

// ReplyBodyBound is the most a provider reads of one response body, or of
// one streamed event, for a reply capped at limit bytes. The reply arrives
// inside JSON strings, and escaping can make it longer than the text it
// carries: 2× for quotes and backslashes, and 3× for text outside ASCII
// from servers that escape every non-ASCII character (\u00e9 for the
// 2-byte é, a surrogate pair for a 4-byte emoji). 3× the limit leaves room
// for all of that, and the margin for the fields around the reply; only
// text made mostly of escaped control characters or HTML-escaped <, > and
// & within the limit can exceed it.
func ReplyBodyBound(limit int) int64 {
	return 3*int64(limit) + replyBodyMargin
}

// ReplyTooLargeError is why a call failed whose answer was larger than
// ReplyBodyBound allows, so that it could not be read. It names the limit
// only: never a URL or a key.
type ReplyTooLargeError struct {
	// Limit is the reply limit in bytes.
	Limit int
}

func (e *ReplyTooLargeError) Error() string {
	return fmt.Sprintf("the model's reply is larger than the %d-byte limit", e.Limit)
}

// LimitBody returns body failing with a *ReplyTooLargeError as soon as
// more than ReplyBodyBound(limit) bytes of it are read: its reader never
// gets more than the bound.
func LimitBody(body io.ReadCloser, limit int) io.ReadCloser {
	left := ReplyBodyBound(limit)
	return ScanBody(body, func(p []byte) error {
		left -= int64(len(p))
		if left < 0 {
			return &ReplyTooLargeError{Limit: limit}
		}
		return nil
	})
}

// ScanBody returns body passing every piece read to check before the
// reader gets it: the first error check returns fails that read and every
// later one. Adapters bound what they read with it, by size or by the
// framing of a stream.
func ScanBody(body io.ReadCloser, check func(p []byte) error) io.ReadCloser {
	return &scannedBody{rc: body, check: check}
}

type scannedBody struct {
	rc    io.ReadCloser
	check func([]byte) error
	err   error
}

func (b *scannedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	if b.err = b.check(p[:n]); b.err != nil {
		return 0, b.err
	}
	return n, err
}

func (b *scannedBody) Close() error { return b.rc.Close() }

// ReplyBudget counts a reply's bytes against its limit while the reply is
// assembled: content, refusal and tool calls (ids, names and arguments)
// all count. The zero ReplyBudget has no room; use NewReplyBudget.
type ReplyBudget struct {
	left int
	cut  bool
}

// NewReplyBudget returns a budget of limit bytes, DefaultMaxReplyBytes
// when limit is not positive.
func NewReplyBudget(limit int) ReplyBudget {
	if limit <= 0 {
		limit = DefaultMaxReplyBytes
	}
	return ReplyBudget{left: limit}
}

// Take charges s and returns what of it fits: all of s, or, when s is
// longer than the room left, its longest prefix that ends on a rune
// boundary. From the first s that does not fit whole, the reply is cut:
// Cut reports true and Take returns "".
func (b *ReplyBudget) Take(s string) string {
	if b.cut {
		return ""
	}
	if len(s) <= b.left {
		b.left -= len(s)
		return s
	}
	b.cut = true
	n := b.left
	for n > 0 && s[n]&0xC0 == 0x80 {
		n-- // s[n] continues a rune: cut before that rune starts
	}
	b.left -= n
	return s[:n]
}

// TakeAll charges s and reports true if s fits whole; otherwise the reply
// is cut, as with Take, and nothing of s is kept.
func (b *ReplyBudget) TakeAll(s string) bool {
	if b.cut || len(s) > b.left {
		b.cut = true
		return false
	}
	b.left -= len(s)
	return true
}

// Cut reports whether part of the reply did not fit.
func (b *ReplyBudget) Cut() bool { return b.cut }

// CapReply cuts a complete reply to limit bytes (DefaultMaxReplyBytes when
// not positive) as a streamed one is cut: its content first, on a rune
// boundary, then its tool calls in order. A tool call that does not fit
// whole is dropped with the ones after it, since a call cut short must
// never run. It reports whether anything was cut; the reply's finish
// reason is then FinishLength.
func CapReply(msg *chat.Message, limit int) bool {
	b := NewReplyBudget(limit)
	msg.Content = b.Take(msg.Content)
	for i, tc := range msg.ToolCalls {
		if !b.TakeAll(tc.ID) || !b.TakeAll(tc.Name) || !b.TakeAll(tc.Arguments) {
			msg.ToolCalls = msg.ToolCalls[:i:i]
			if i == 0 {
				msg.ToolCalls = nil
			}
			break
		}
	}
	return b.Cut()
}
