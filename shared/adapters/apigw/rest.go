// Package apigw adapts lambdaclaw to Amazon API Gateway: it serves an
// http.Handler behind a REST API whose Lambda proxy integration streams
// responses, sends WebSocket frames to clients through the API Gateway
// Management API (PostToConnection), and handles the events of a WebSocket
// API ($connect, $disconnect and messages).
package apigw

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/core"
)

// StreamHandler is a Lambda handler for a REST API Lambda proxy integration
// in STREAM mode (responseTransferMode STREAM: API Gateway invokes the
// function with InvokeWithResponseStream).
type StreamHandler func(context.Context, events.APIGatewayProxyRequest) (*events.LambdaFunctionURLStreamingResponse, error)

// Stream serves h behind a streaming REST API. The request is the ordinary
// proxy event (payload format 1.0), converted by aws-lambda-go-api-proxy;
// the response is the streaming integration's format, a JSON prelude with
// the status and headers, eight NUL bytes, then the body as h writes it,
// which aws-lambda-go produces for a *events.LambdaFunctionURLStreamingResponse.
// Every Write reaches the client without buffering, so server-sent events
// stream; the writer implements http.Flusher as a no-op for handlers that
// flush. A header set more than once is sent comma-joined, Set-Cookie as
// cookies. A panic in h before any output gives a 500; log receives it.
func Stream(h http.Handler, log *slog.Logger) StreamHandler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, ev events.APIGatewayProxyRequest) (*events.LambdaFunctionURLStreamingResponse, error) {
		var acc core.RequestAccessor
		req, err := acc.EventToRequestWithContext(ctx, ev)
		if err != nil {
			return nil, fmt.Errorf("apigw: convert request %s %s: %w", ev.HTTPMethod, ev.Path, err)
		}
		pr, pw := io.Pipe()
		ready := make(chan prelude, 1)
		w := &streamWriter{body: pw, ready: ready}
		go func() {
			defer pw.Close()
			defer func() {
				if v := recover(); v != nil {
					log.Error("handler panicked", "method", ev.HTTPMethod, "path", ev.Path, "panic", fmt.Sprint(v))
					w.header = http.Header{"Content-Type": {"application/json"}}
					w.WriteHeader(http.StatusInternalServerError)
				}
				w.WriteHeader(http.StatusOK) // a handler that wrote nothing
			}()
			h.ServeHTTP(w, req)
		}()
		p := <-ready
		resp := &events.LambdaFunctionURLStreamingResponse{StatusCode: p.status, Body: pr}
		for k, v := range p.header {
			if k == "Set-Cookie" {
				resp.Cookies = v
				continue
			}
			if resp.Headers == nil {
				resp.Headers = map[string]string{}
			}
			resp.Headers[k] = strings.Join(v, ",")
		}
		return resp, nil
	}
}

// prelude is the status and headers, known at the first write.
type prelude struct {
	status int
	header http.Header
}

// streamWriter is an http.ResponseWriter whose body goes down a pipe to
// the Lambda runtime as it is written.
type streamWriter struct {
	header http.Header
	body   io.Writer
	once   sync.Once
	ready  chan<- prelude
}

func (w *streamWriter) Header() http.Header {
	if w.header == nil {
		w.header = http.Header{}
	}
	return w.header
}

// WriteHeader sends the prelude; later calls are ignored, as net/http does.
func (w *streamWriter) WriteHeader(status int) {
	w.once.Do(func() { w.ready <- prelude{status: status, header: w.Header().Clone()} })
}

func (w *streamWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// Flush implements http.Flusher: writes are never buffered.
func (w *streamWriter) Flush() {}

// BaseURL is the URL a client reached the REST API at, without the
// request's own path: https, the host, and what API Gateway adds in front
// of a resource's path (the stage, or a custom domain's base path), read
// from the proxy event's request context. Links the function gives out
// (the A2A agent cards' endpoints) start with it.
func BaseURL(r *http.Request) string {
	prefix := ""
	if rc, ok := core.GetAPIGatewayContextFromContext(r.Context()); ok {
		prefix, _ = strings.CutSuffix(rc.Path, r.URL.Path)
	}
	return "https://" + r.Host + strings.TrimSuffix(prefix, "/")
}
