package gateway

import (
	"context"
	"crypto/rand"
	"log/slog"
	"net/http"
	"strings"
)

// RequestIDHeader carries a request's id on its response. A client may
// send its own (at most 64 letters, digits, '.', '_' or '-'); otherwise
// the gateway makes one, "req_" and 26 random characters. Server errors
// quote the id and the log lines about them carry it as request_id.
const RequestIDHeader = "X-Request-Id"

const maxRequestID = 64

type requestIDKey struct{}

// newRequestID returns client when it is a safe id, else a new one.
func newRequestID(client string) string {
	if validRequestID(client) {
		return client
	}
	return "req_" + strings.ToLower(rand.Text())
}

// validRequestID accepts ids that are safe in a header, a log line and a
// message: short, and only letters, digits, '.', '_' and '-'.
func validRequestID(s string) bool {
	if s == "" || len(s) > maxRequestID {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// requestID returns the id ServeHTTP gave the request.
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// withRequestID appends the request id to a message for the client.
func withRequestID(msg, id string) string {
	if id == "" {
		return msg
	}
	return msg + " (request id " + id + ")"
}

// log returns the gateway's logger with the request's id.
func (g *Gateway) log(r *http.Request) *slog.Logger {
	return g.cfg.Log.With("request_id", requestID(r.Context()))
}
