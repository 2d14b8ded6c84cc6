package cloudtest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// awsJSON answers a request of the awsJson protocols (1.0, 1.1) in their
// content type: a result as JSON, an error as the SDKs read it (the type
// in X-Amzn-Errortype and __type, and a message).
type awsJSON struct {
	w           http.ResponseWriter
	contentType string
}

func (a awsJSON) ok(v any) {
	a.w.Header().Set("Content-Type", a.contentType)
	json.NewEncoder(a.w).Encode(v)
}

func (a awsJSON) fail(status int, typ, msg string) {
	a.w.Header().Set("Content-Type", a.contentType)
	a.w.Header().Set("X-Amzn-Errortype", typ)
	a.w.WriteHeader(status)
	json.NewEncoder(a.w).Encode(map[string]string{"__type": typ, "message": msg})
}

// startFake serves h until the test ends; then it cancels the returned
// context, waits for wg (what the fake started) and stops serving.
func startFake(t testing.TB, h http.HandlerFunc, wg *sync.WaitGroup) (context.Context, string) {
	ctx, cancel := context.WithCancel(context.Background())
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		srv.Close()
	})
	return ctx, srv.URL
}
