package bedrock

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// limitBodies returns the call option that bounds what a call reads of its
// response, before the SDK reads any of it: a successful ConverseStream
// response per event-stream message when frames is set, any other body
// whole (the SDK reads a Converse answer, and an error, whole).
func limitBodies(limit int, frames bool) func(*bedrockruntime.Options) {
	return func(o *bedrockruntime.Options) {
		o.HTTPClient = limitedClient{next: o.HTTPClient, limit: limit, frames: frames}
	}
}

// limitedClient wraps the bodies of the responses next receives.
type limitedClient struct {
	next   bedrockruntime.HTTPClient
	limit  int
	frames bool
}

func (c limitedClient) Do(req *http.Request) (*http.Response, error) {
	res, err := c.next.Do(req)
	if res == nil || res.Body == nil {
		return res, err
	}
	if c.frames && res.StatusCode < 300 {
		res.Body = limitFrames(res.Body, c.limit)
	} else {
		res.Body = llm.LimitBody(res.Body, c.limit)
	}
	return res, err
}

// eventPreludeLen is the length of an event-stream message's prelude: its
// total length, its headers' length and their CRC, 4 bytes each.
const eventPreludeLen = 12

// minEventLen is the length of an event-stream message without headers or
// payload: its prelude and the message CRC.
const minEventLen = eventPreludeLen + 4

// limitFrames returns body failing as soon as an event-stream message
// says it is longer than llm.ReplyBodyBound(limit), with a
// *llm.ReplyTooLargeError, or shorter than an empty message. The SDK's
// decoder trusts the length a message starts with and reads that much
// into memory; this refuses the message before a byte of it is read.
func limitFrames(body io.ReadCloser, limit int) io.ReadCloser {
	bound := llm.ReplyBodyBound(limit)
	// length holds the bytes read so far of the current message's total
	// length, have their count; left is what remains of the message
	// after its length.
	var length [4]byte
	var have int
	var left int64
	return llm.ScanBody(body, func(p []byte) error {
		for len(p) > 0 {
			if left > 0 {
				skip := min(left, int64(len(p)))
				p = p[skip:]
				left -= skip
				continue
			}
			length[have] = p[0]
			have++
			p = p[1:]
			if have < len(length) {
				continue
			}
			have = 0
			total := int64(binary.BigEndian.Uint32(length[:]))
			switch {
			case total > bound:
				return &llm.ReplyTooLargeError{Limit: limit}
			case total < minEventLen:
				return fmt.Errorf("invalid event stream: a message of %d bytes, shorter than its prelude", total)
			}
			left = total - int64(len(length))
		}
		return nil
	})
}
