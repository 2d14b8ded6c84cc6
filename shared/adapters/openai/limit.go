package openai

import (
	"io"
	"net/http"

	"github.com/openai/openai-go/v3/option"

	"github.com/lambdaclaw/lambdaclaw/shared/core/llm"
)

// limitBodies returns the middleware that bounds what a call reads of its
// response, before the SDK reads any of it. The SDK reads an error
// response whole, so its body is bounded as a whole; a successful one is
// bounded per server-sent event when events is set.
func limitBodies(limit int, events bool) option.RequestOption {
	return option.WithMiddleware(func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(req)
		if res == nil || res.Body == nil {
			return res, err
		}
		if events && res.StatusCode < 400 {
			res.Body = limitEvents(res.Body, limit)
		} else {
			res.Body = llm.LimitBody(res.Body, limit)
		}
		return res, err
	})
}

// limitEvents returns body failing with a *llm.ReplyTooLargeError as soon
// as one server-sent event (its lines up to the blank line that ends it)
// passes llm.ReplyBodyBound(limit) bytes. The SDK's decoder keeps a whole
// event in memory, lines joined, so this bounds what a stream holds while
// letting the stream itself run as long as it needs to.
func limitEvents(body io.ReadCloser, limit int) io.ReadCloser {
	bound := llm.ReplyBodyBound(limit)
	// line counts the bytes of the current line, event those of the
	// current event; last is the byte read before.
	var line, event int64
	var last byte
	return llm.ScanBody(body, func(p []byte) error {
		for _, c := range p {
			if c == '\n' {
				// A line that is empty, once the SDK's line splitter has
				// dropped a trailing \r, ends the event.
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
